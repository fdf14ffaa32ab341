"""foo-operator: an operator for Widget resources (demo.example.com)."""
