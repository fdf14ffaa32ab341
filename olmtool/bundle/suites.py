"""The names of the validation suites (a leaf module: the CLI's help lists them without
importing the checks)."""

DEFAULT_SUITES = ("loader", "format", "content", "csv", "crd", "bundle", "objects")
OPTIONAL_SUITES = ("operatorhub", "good-practices", "deprecated-apis")
