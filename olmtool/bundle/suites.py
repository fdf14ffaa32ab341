"""The names of the validation suites (a leaf module: the CLI's help lists them without
importing the checks)."""

DEFAULT_SUITES = ("loader", "format", "content", "csv", "crd", "bundle", "objects")
OPTIONAL_SUITES = ("operatorhub", "good-practices", "deprecated-apis")
# Suites asking whether a target installs the bundle, not how good it is: selected by
# name only (``all`` is every quality suite, and a bundle may rightly target OLM v0 only).
TARGET_SUITES = ("olm-v1",)
