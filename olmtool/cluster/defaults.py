"""Defaults of the local cluster that callers name without starting anything (a leaf
module: the CLI builds its options from it)."""

DEFAULT_NAME = "olmtool"
DEFAULT_REGISTRY_PORT = 5000
