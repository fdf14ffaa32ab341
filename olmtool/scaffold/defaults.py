"""``olmtool init``'s defaults: a leaf module (no imports), read by the CLI while it
defines its options and by :mod:`olmtool.scaffold.names`."""

DEFAULT_VERSION = "0.1.0"
DEFAULT_API_VERSION = "v1alpha1"
# Channel names not prefixed stable, fast or candidate draw a good-practices warning.
DEFAULT_CHANNEL = "stable"
# The local cluster's registry (`olmtool cluster up`), as its node pulls it.
DEFAULT_IMAGE = "localhost:5000/{package}:{version}"
# Not operator-sdk's AllNamespaces-only default: OwnNamespace is what `olmtool install`
# uses when not told otherwise, SingleNamespace costs nothing more, and AllNamespaces
# keeps the bundle installable by OLM v1 (which requires it). MultiNamespace is left out,
# as OLM discourages it.
DEFAULT_INSTALL_MODES: tuple[str, ...] = ("OwnNamespace", "SingleNamespace", "AllNamespaces")
