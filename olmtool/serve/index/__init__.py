"""A memory-lean, read-only index of a file-based catalog, built once for the servers.

Start-up reads every blob once, appends it as one line of compact JSON to a *blob store*
(:mod:`~olmtool.serve.index.store`, a plain file that is also, byte for byte, catalogd's
``/api/v1/all`` body), resolves and checks the catalog through the catalog model exactly
as ``olmtool catalog validate`` does (:mod:`~olmtool.serve.index.build`) and keeps per
bundle only what routing and filtering need (:mod:`~olmtool.serve.index.data`): names,
version, channel entries, provided and required GVKs, and where the blob sits in the
store. Queries (:mod:`~olmtool.serve.index.queries`) re-read a full bundle on demand.
With a cache directory (:mod:`~olmtool.serve.index.cache`) the store and the index
outlive the process.

>>> index = build_index("catalog/")                                    # doctest: +SKIP
>>> index.channel("etcd", "stable").head                               # doctest: +SKIP
'etcdoperator.v0.9.4'
"""

from olmtool.serve.index.build import InvalidCatalogError, build_index
from olmtool.serve.index.cache import DIGEST_FILE, INDEX_FILE, STORE_FILE
from olmtool.serve.index.data import GVK, BundleSummary, ChannelSummary, Entry, EntryRef
from olmtool.serve.index.queries import CatalogIndex, NotFoundError
from olmtool.serve.index.store import BlobRef

# What the servers (grpc_server, http) and tests use; the rest stays inside the package.
__all__ = [
    "DIGEST_FILE",
    "GVK",
    "INDEX_FILE",
    "STORE_FILE",
    "BlobRef",
    "BundleSummary",
    "CatalogIndex",
    "ChannelSummary",
    "Entry",
    "EntryRef",
    "InvalidCatalogError",
    "NotFoundError",
    "build_index",
]
