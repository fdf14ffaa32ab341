"""olmtool: package Kubernetes operators for the Operator Lifecycle Manager.

The command line (``olmtool``) is a thin layer over the subpackages, which are
usable from Python:

>>> from olmtool import crd
>>> crd.generate_crds(crd.load_resources(["etcd_operator.api"], search_path=["operator"]))
"""

__version__ = "0.1.0"

from olmtool.errors import InputError, OlmtoolError, SchemaError

__all__ = ["InputError", "OlmtoolError", "SchemaError", "__version__"]
