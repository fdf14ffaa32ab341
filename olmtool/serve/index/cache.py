"""The cache directory: an index built once, reused while the catalog files are the same.

Keyed by a sha256 digest of the catalog files (``opm serve --cache-dir`` keeps an FNV-64a
digest likewise); the blob store is a file there and the rest of the index is pickled.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

from olmtool import __version__
from olmtool.serve.index.data import FORMAT, IndexData
from olmtool.serve.index.queries import CatalogIndex
from olmtool.serve.index.store import BlobStore

STORE_FILE = "blobs.jsonl"
INDEX_FILE = "index.pickle"
DIGEST_FILE = "digest"


def catalog_digest(root: Path, files: list[Path]) -> str:
    """sha256 over every catalog file's path and content, olmtool's version and FORMAT."""
    outer = hashlib.sha256(f"olmtool {__version__} index {FORMAT}\0".encode())
    base = root if root.is_dir() else root.parent
    for path in files:
        with path.open("rb") as data:
            inner = hashlib.file_digest(data, "sha256").digest()
        outer.update(path.relative_to(base).as_posix().encode() + b"\0" + inner)
    return outer.hexdigest()


def open_cache(cache: Path, digest: str) -> CatalogIndex | None:
    """The cached index when its digest matches (cached files are trusted: they are yours)."""
    try:
        if (cache / DIGEST_FILE).read_text(encoding="utf-8").strip() != digest:
            return None
        with (cache / INDEX_FILE).open("rb") as data:
            index_data = pickle.load(data)
        store = BlobStore.open(cache / STORE_FILE)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
        return None
    if not isinstance(index_data, IndexData):
        store.close()
        return None
    return CatalogIndex(index_data, store, digest, cached=True)


def new_store(cache: Path) -> BlobStore:
    """A fresh store in ``cache``; the digest goes first, so a build cut short is no cache."""
    cache.mkdir(parents=True, exist_ok=True)
    (cache / DIGEST_FILE).unlink(missing_ok=True)
    return BlobStore.create(cache / STORE_FILE)


def save_cache(cache: Path, index: CatalogIndex) -> None:
    """The index beside its store, then the digest that makes both valid."""
    with (cache / INDEX_FILE).open("wb") as out:
        pickle.dump(index.data, out, protocol=pickle.HIGHEST_PROTOCOL)
    (cache / DIGEST_FILE).write_text(index.digest + "\n", encoding="utf-8")
