"""A memory-lean, read-only index of a file-based catalog, built once for the servers.

Why not keep the loaded catalog: a real catalog is hundreds of MB of JSON, most of it the
base64 CSVs and CRDs of ``olm.bundle.object`` properties that only ``GetBundle`` and its
friends return. Held as Python dicts that is several GB. So start-up reads every blob
once, appends it as one line of compact JSON to a *blob store* (a plain file that is also,
byte for byte, catalogd's ``/api/v1/all`` body) and keeps per bundle only what routing and
filtering need: names, version, channel entries, provided and required GVKs, and where the
blob sits in the store. A full bundle is re-read and parsed on demand (:meth:`load_bundle`).

With a cache directory the store and the index outlive the process, keyed by a sha256
digest of the catalog files (``opm serve --cache-dir`` keeps an FNV-64a digest likewise).

>>> index = build_index("catalog/")                                    # doctest: +SKIP
>>> index.channel("etcd", "stable").head                               # doctest: +SKIP
'etcdoperator.v0.9.4'
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from olmtool import __version__
from olmtool.catalog import declcfg as dc
from olmtool.catalog import load
from olmtool.catalog.model import channel_head
from olmtool.errors import InputError, display_path
from olmtool.versions import parse_version

FORMAT = 1  # bump when IndexData or the store layout changes: old caches are rebuilt
STORE_FILE = "blobs.jsonl"
INDEX_FILE = "index.pickle"
DIGEST_FILE = "digest"

GVK = tuple[str, str, str]  # (group, version, kind), as the API orders them


class NotFoundError(LookupError):
    """A package, channel, bundle or provider a request named is not in the catalog."""


# --- what is kept per blob ---------------------------------------------------------------


@dataclass(slots=True)
class BlobRef:
    """One blob's meta keys and its line in the blob store (offset, length incl. newline)."""

    schema: str
    package: str
    name: str
    offset: int
    length: int


@dataclass(slots=True)
class Entry:
    """A channel entry: the edges into one bundle."""

    name: str
    replaces: str = ""
    skips: tuple[str, ...] = ()
    skip_range: str = ""


@dataclass(slots=True)
class ChannelSummary:
    name: str
    package: str
    head: str
    entries: dict[str, Entry]  # by bundle name, in file order
    deprecation: str = ""


@dataclass(slots=True)
class BundleSummary:
    name: str
    package: str
    image: str
    version: str
    provides: tuple[GVK, ...]
    requires: tuple[GVK, ...]
    blob: BlobRef
    source: str  # the catalog file it came from, relative to the root (for object refs)
    deprecation: str = ""


@dataclass(slots=True)
class PackageSummary:
    name: str
    default_channel: str
    blob: BlobRef
    channels: dict[str, ChannelSummary] = field(default_factory=dict)  # sorted by name
    bundles: dict[str, BundleSummary] = field(default_factory=dict)
    deprecation: str = ""


@dataclass(frozen=True, slots=True)
class EntryRef:
    """A channel entry as the API's ChannelEntry message names it."""

    package: str
    channel: str
    bundle: str
    replaces: str


@dataclass
class IndexData:
    """Everything but the blob store: what the cache pickles."""

    root: str
    packages: dict[str, PackageSummary]  # sorted by name
    blobs: list[BlobRef]  # in file order
    modified: float  # newest catalog file's mtime: catalogd's Last-Modified
    build_seconds: float = 0.0


# --- the blob store ------------------------------------------------------------------------


class BlobStore:
    """Append-only file of compact JSON lines, read back with positional reads.

    ``os.pread`` needs no seek, so request threads share one descriptor without a lock.
    Without a path the file is anonymous (unlinked at creation, gone when closed).
    """

    def __init__(self, file: BinaryIO, size: int) -> None:
        self._file = file
        self.size = size

    @classmethod
    def create(cls, path: Path | None = None) -> BlobStore:
        # The store outlives this call: close() closes the file.
        file = path.open("w+b") if path is not None else tempfile.TemporaryFile("w+b")  # noqa: SIM115
        return cls(file, 0)

    @classmethod
    def open(cls, path: Path) -> BlobStore:
        file = path.open("rb")
        return cls(file, os.fstat(file.fileno()).st_size)

    def append(self, data: bytes) -> int:
        offset = self.size
        self._file.write(data)
        self.size += len(data)
        return offset

    def seal(self) -> None:
        """Make appended data visible to :meth:`read` (it bypasses the write buffer)."""
        self._file.flush()

    def read(self, offset: int, length: int) -> bytes:
        data = os.pread(self._file.fileno(), length, offset)
        while len(data) < length:  # short reads only happen on exotic filesystems
            more = os.pread(self._file.fileno(), length - len(data), offset + len(data))
            if not more:
                raise OSError(f"blob store truncated at {offset + len(data)}")
            data += more
        return data

    def chunks(self, refs: Iterable[BlobRef] | None = None, size: int = 1 << 20) -> Iterator[bytes]:
        """The whole store (``refs`` None) or the given blobs, in pieces of about ``size``."""
        if refs is None:
            for offset in range(0, self.size, size):
                yield self.read(offset, min(size, self.size - offset))
            return
        pending: list[bytes] = []
        pending_size = 0
        for ref in refs:
            pending.append(self.read(ref.offset, ref.length))
            pending_size += ref.length
            if pending_size >= size:
                yield b"".join(pending)
                pending, pending_size = [], 0
        if pending:
            yield b"".join(pending)

    def close(self) -> None:
        self._file.close()


# --- the index ------------------------------------------------------------------------------


class CatalogIndex:
    """Read-only queries over one catalog; the registry semantics of opm's ``pkg/cache``."""

    def __init__(
        self, data: IndexData, store: BlobStore, digest: str = "", *, cached: bool = False
    ) -> None:
        self.data = data
        self.store = store
        self.digest = digest
        self.cached = cached  # loaded from a cache directory rather than built

    # - lookups

    @property
    def packages(self) -> dict[str, PackageSummary]:
        return self.data.packages

    @property
    def bundle_count(self) -> int:
        return sum(len(p.bundles) for p in self.packages.values())

    def package(self, name: str) -> PackageSummary:
        try:
            return self.packages[name]
        except KeyError:
            raise NotFoundError(f'package "{name}" not found') from None

    def channel(self, package: str, channel: str) -> ChannelSummary:
        try:
            return self.package(package).channels[channel]
        except KeyError:
            raise NotFoundError(f'package "{package}", channel "{channel}" not found') from None

    def entry(self, package: str, channel: str, bundle: str) -> tuple[ChannelSummary, Entry]:
        found = self.channel(package, channel)
        try:
            return found, found.entries[bundle]
        except KeyError:
            raise NotFoundError(
                f'package "{package}", channel "{channel}", bundle "{bundle}" not found'
            ) from None

    def bundle(self, package: str, name: str) -> BundleSummary:
        return self.packages[package].bundles[name]

    def channel_entries(self) -> Iterator[tuple[ChannelSummary, Entry]]:
        """Every (channel, entry): packages and channels by name, entries in file order."""
        for package in self.packages.values():
            for channel in package.channels.values():
                for entry in channel.entries.values():
                    yield channel, entry

    # - graph queries (pkg/cache/pkgs.go)

    def entries_that_replace(self, name: str) -> list[EntryRef]:
        """One entry per bundle that replaces ``name`` and one per bundle that skips it."""
        found = []
        for channel, entry in self.channel_entries():
            if entry.replaces == name:
                found.append(EntryRef(channel.package, channel.name, entry.name, entry.replaces))
            found.extend(
                EntryRef(channel.package, channel.name, entry.name, entry.replaces)
                for skip in entry.skips
                if skip == name and skip != entry.replaces
            )
        if not found:
            raise NotFoundError(f'no channel entries found that replace "{name}"')
        return found

    def bundle_that_replaces(
        self, name: str, package: str, channel: str
    ) -> tuple[ChannelSummary, Entry]:
        found = self.channel(package, channel)
        for entry in found.entries.values():
            if entry.replaces == name or name in entry.skips:
                return found, entry
        raise NotFoundError(
            f'no entry found that replaces "{name}" in package "{package}", channel "{channel}"'
        )

    def entries_that_provide(self, gvk: GVK) -> list[EntryRef]:
        """Every channel entry whose bundle provides ``gvk``, skips included as edges."""
        found = []
        for channel, entry in self.channel_entries():
            if gvk in self.bundle(channel.package, entry.name).provides:
                found.extend(_entry_edges(channel, entry, any_skip=True))
        if not found:
            raise NotFoundError(f"no channel entries found that provide {_gvk_text(gvk)}")
        return found

    def latest_entries_that_provide(self, gvk: GVK) -> list[EntryRef]:
        """Like :meth:`entries_that_provide` for channel heads only (as opm does)."""
        found = []
        for package in self.packages.values():
            for channel in package.channels.values():
                head = channel.entries[channel.head]
                if gvk in package.bundles[head.name].provides:
                    found.extend(_entry_edges(channel, head, any_skip=False))
        if not found:
            raise NotFoundError(f"no channel entries found that provide {_gvk_text(gvk)}")
        return found

    def default_bundle_that_provides(self, gvk: GVK) -> tuple[ChannelSummary, Entry]:
        """The head providing ``gvk`` of the first package (by name) whose default it is."""
        for ref in sorted(self.latest_entries_that_provide(gvk), key=lambda r: r.package):
            if ref.channel == self.packages[ref.package].default_channel:
                return self.entry(ref.package, ref.channel, ref.bundle)
        raise NotFoundError(f"no default channel head found that provides {_gvk_text(gvk)}")

    # - blobs

    def read_blob(self, ref: BlobRef) -> dict[str, Any]:
        return json.loads(self.store.read(ref.offset, ref.length))

    def load_bundle(self, summary: BundleSummary) -> dc.Bundle:
        """The bundle's full blob, parsed again: only requests that return it pay for it."""
        return _decode(self.read_blob(summary.blob), dc.Origin(summary.source), "bundles")

    def load_package(self, summary: PackageSummary) -> dc.Package:
        return _decode(self.read_blob(summary.blob), dc.Origin(), "packages")

    def read_source(self, source: str, ref: str) -> bytes:
        """A file an ``olm.bundle.object`` ``ref`` names, relative to its blob's file."""
        root = Path(self.data.root)
        base = root if root.is_dir() else root.parent
        target = (base / source).parent / ref
        if Path(ref).is_absolute() or not target.resolve().is_relative_to(base.resolve()):
            raise ValueError(f"object ref {ref!r} leaves the catalog")
        return target.read_bytes()

    def find_blobs(self, schema: str = "", package: str = "", name: str = "") -> list[BlobRef]:
        """Blobs matching every non-empty filter, in file order (catalogd's metas)."""
        return [
            ref
            for ref in self.data.blobs
            if (not schema or ref.schema == schema)
            and (not package or ref.package == package)
            and (not name or ref.name == name)
        ]

    def close(self) -> None:
        self.store.close()


def _entry_edges(channel: ChannelSummary, entry: Entry, *, any_skip: bool) -> list[EntryRef]:
    """The entry itself (with its replaces) plus one edge per skip not already replaced.

    opm keeps a skip edge for heads only when the skipped bundle is in the same channel.
    """
    edges = [EntryRef(channel.package, channel.name, entry.name, entry.replaces)]
    edges.extend(
        EntryRef(channel.package, channel.name, entry.name, skip)
        for skip in entry.skips
        if skip != entry.replaces and (any_skip or skip in channel.entries)
    )
    return edges


def _gvk_text(gvk: GVK) -> str:
    group, version, kind = gvk
    return f'group "{group}" version "{version}" kind "{kind}"'


# --- building -------------------------------------------------------------------------------


def build_index(root: str | Path, *, cache_dir: str | Path | None = None) -> CatalogIndex:
    """Index the catalog below ``root``; InputError (file:line) when it does not load.

    With ``cache_dir``, an index built earlier from identical files is reused and a new
    one is left there for next time.
    """
    root = Path(root)
    files = load.catalog_files(root)
    if cache_dir is None:
        return _build(root, files, BlobStore.create())
    cache = Path(cache_dir)
    digest = catalog_digest(root, files)
    cached = _open_cache(cache, digest)
    if cached is not None:
        cached.data.root = str(root)  # same files, maybe moved: object refs resolve here
        return cached
    cache.mkdir(parents=True, exist_ok=True)
    (cache / DIGEST_FILE).unlink(missing_ok=True)  # a build cut short leaves no valid cache
    index = _build(root, files, BlobStore.create(cache / STORE_FILE), digest)
    with (cache / INDEX_FILE).open("wb") as out:
        pickle.dump(index.data, out, protocol=pickle.HIGHEST_PROTOCOL)
    (cache / DIGEST_FILE).write_text(digest + "\n", encoding="utf-8")
    return index


def catalog_digest(root: Path, files: list[Path]) -> str:
    """sha256 over every catalog file's path and content, olmtool's version and FORMAT."""
    outer = hashlib.sha256(f"olmtool {__version__} index {FORMAT}\0".encode())
    base = root if root.is_dir() else root.parent
    for path in files:
        with path.open("rb") as data:
            inner = hashlib.file_digest(data, "sha256").digest()
        outer.update(path.relative_to(base).as_posix().encode() + b"\0" + inner)
    return outer.hexdigest()


def _open_cache(cache: Path, digest: str) -> CatalogIndex | None:
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


def _build(root: Path, files: list[Path], store: BlobStore, digest: str = "") -> CatalogIndex:
    started = time.perf_counter()
    builder = _Builder(root, store)
    try:
        for path in files:
            builder.add_file(path)
        data = builder.finish()
    except BaseException:
        store.close()
        raise
    store.seal()
    data.build_seconds = time.perf_counter() - started
    return CatalogIndex(data, store, digest)


def _file_blobs(path: Path, file: str) -> Iterator[tuple[dict[str, Any], int]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=file) from None
    if text.lstrip().startswith("{"):
        yield from load.iter_json_stream(text, file)
        return
    blobs, problems = load.parse_blobs(text, file)
    if problems:
        raise InputError(problems[0].message, path=file, line=problems[0].line)
    for blob in blobs:
        yield blob.data, blob.origin.line or 1


def _decode(data: dict[str, Any], origin: dc.Origin, kind: str) -> Any:
    """One blob as its declcfg dataclass, or InputError with the loader's message."""
    config = dc.DeclarativeConfig()
    problem = load.decode_blob(load.RawBlob(data, origin), config)
    if problem is not None:
        raise InputError(problem.message, path=origin.file, line=origin.line)
    return getattr(config, kind)[0]


@dataclass
class _Pending:
    """A blob kept (small) until every file is read, with its origin for error messages."""

    value: Any
    origin: dc.Origin


class _Builder:
    """Reads blob after blob into the store and the summaries, then checks the model."""

    def __init__(self, root: Path, store: BlobStore) -> None:
        self.root = root
        self.base = root if root.is_dir() else root.parent
        self.store = store
        self.blobs: list[BlobRef] = []
        self.packages: dict[str, _Pending] = {}
        self.channels: list[_Pending] = []
        self.bundles: dict[tuple[str, str], _Pending] = {}
        self.deprecations: list[_Pending] = []
        self.gvks: dict[GVK, GVK] = {}  # one tuple per distinct GVK, shared by bundles
        self.modified = 0.0

    def add_file(self, path: Path) -> None:
        file = display_path(path)
        source = sys.intern(path.relative_to(self.base).as_posix())
        self.modified = max(self.modified, path.stat().st_mtime)
        for data, line in _file_blobs(path, file):
            self.add_blob(data, dc.Origin(file, line), source)

    def add_blob(self, data: dict[str, Any], origin: dc.Origin, source: str) -> None:
        meta, duplicate = load.meta_keys(data)
        if duplicate:
            raise InputError(duplicate, path=origin.file, line=origin.line)
        schema = meta.get("schema")
        if not isinstance(schema, str) or not schema:
            raise InputError('blob has no "schema" key', path=origin.file, line=origin.line)
        line = dc.to_json(data, indent=None).encode() + b"\n"
        ref = BlobRef(
            sys.intern(schema),
            sys.intern(str(meta.get("package") or "")),
            sys.intern(str(meta.get("name") or "")),
            self.store.append(line),
            len(line),
        )
        self.blobs.append(ref)
        if schema == dc.SCHEMA_PACKAGE:
            self._add_package(_decode(data, origin, "packages"), origin, ref)
        elif schema == dc.SCHEMA_CHANNEL:
            self.channels.append(_Pending(_decode(data, origin, "channels"), origin))
        elif schema == dc.SCHEMA_BUNDLE:
            self._add_bundle(_decode(data, origin, "bundles"), origin, ref, source)
        elif schema == dc.SCHEMA_DEPRECATIONS:
            self.deprecations.append(_Pending(_decode(data, origin, "deprecations"), origin))

    def _add_package(self, package: dc.Package, origin: dc.Origin, ref: BlobRef) -> None:
        if not package.name:
            raise InputError("olm.package blob has no name", path=origin.file, line=origin.line)
        if package.name in self.packages:
            first = self.packages[package.name].origin
            raise _error(f'duplicate package "{package.name}" (first at {first})', origin)
        summary = PackageSummary(ref.name, sys.intern(package.default_channel), ref)
        self.packages[package.name] = _Pending(summary, origin)

    def _add_bundle(self, bundle: dc.Bundle, origin: dc.Origin, ref: BlobRef, source: str) -> None:
        where = f'package "{bundle.package}" bundle "{bundle.name}"'
        if not bundle.package:
            raise _error(f'bundle "{bundle.name}": package name must be set', origin)
        packages = bundle.properties_of(dc.PROP_PACKAGE)
        if len(packages) != 1:
            raise _error(
                f'{where} must have exactly 1 "olm.package" property, found {len(packages)}',
                origin,
            )
        value = packages[0].value if isinstance(packages[0].value, dict) else {}
        if value.get("packageName") != bundle.package:
            raise _error(
                f'{where}: "olm.package" property names package "{value.get("packageName")}"',
                origin,
            )
        version = str(value.get("version") or "")
        try:
            parse_version(version)
        except ValueError as exc:
            raise _error(f"{where}: {exc}", origin) from None
        key = (bundle.package, bundle.name)
        if key in self.bundles:
            raise _error(f"duplicate {where} (first at {self.bundles[key].origin})", origin)
        summary = BundleSummary(
            name=ref.name,
            package=sys.intern(bundle.package),
            image=bundle.image,
            version=version,
            provides=self._gvks(bundle, dc.PROP_GVK, origin),
            requires=self._gvks(bundle, dc.PROP_GVK_REQUIRED, origin),
            blob=ref,
            source=source,
        )
        self.bundles[key] = _Pending(summary, origin)

    def _gvks(self, bundle: dc.Bundle, type_: str, origin: dc.Origin) -> tuple[GVK, ...]:
        found = []
        for prop in bundle.properties_of(type_):
            value = prop.value if isinstance(prop.value, dict) else None
            if value is None or not all(isinstance(value.get(k), str) for k in ("version", "kind")):
                raise _error(
                    f'bundle "{bundle.name}": {type_} needs string group, version and kind', origin
                )
            gvk = (str(value.get("group") or ""), value["version"], value["kind"])
            found.append(self.gvks.setdefault(gvk, gvk))
        return tuple(found)

    def finish(self) -> IndexData:
        packages = {name: self.packages[name].value for name in sorted(self.packages)}
        for pending in self.channels:
            self._attach_channel(pending.value, pending.origin, packages)
        for (package_name, name), pending in self.bundles.items():
            package = packages.get(package_name)
            if package is None:
                raise _error(
                    f'unknown package "{package_name}" for bundle "{name}"', pending.origin
                )
            if not any(name in c.entries for c in package.channels.values()):
                raise _error(
                    f'package "{package_name}", bundle "{name}" not found in any channel entries',
                    pending.origin,
                )
            package.bundles[name] = pending.value
        for name, package in packages.items():
            package.channels = dict(sorted(package.channels.items()))
            self._check_package(package, self.packages[name].origin)
        for pending in self.deprecations:
            self._attach_deprecation(pending.value, pending.origin, packages)
        return IndexData(str(self.root), packages, self.blobs, self.modified)

    def _attach_channel(
        self, channel: dc.Channel, origin: dc.Origin, packages: dict[str, PackageSummary]
    ) -> None:
        package = packages.get(channel.package)
        if package is None:
            raise _error(
                f'unknown package "{channel.package}" for channel "{channel.name}"', origin
            )
        if not channel.name:
            raise _error(f'package "{channel.package}" has a channel with no name', origin)
        if channel.name in package.channels:
            raise _error(f'package "{channel.package}": duplicate channel "{channel.name}"', origin)
        try:
            head = channel_head(channel)
        except ValueError as exc:
            raise _error(f'package "{channel.package}": {exc}', origin) from None
        entries: dict[str, Entry] = {}
        for item in channel.entries:
            if item.name in entries:
                raise _error(
                    f'package "{channel.package}", channel "{channel.name}": '
                    f'duplicate entry "{item.name}"',
                    origin,
                )
            name = self._bundle_name(channel.package, item.name)
            entries[name] = Entry(
                name,
                sys.intern(item.replaces),
                tuple(sys.intern(s) for s in item.skips),
                item.skip_range,
            )
            if (channel.package, item.name) not in self.bundles:
                raise _error(
                    f'no olm.bundle blob found in package "{channel.package}" for '
                    f'olm.channel "{channel.name}" entry "{item.name}"',
                    origin,
                )
        package.channels[channel.name] = ChannelSummary(
            sys.intern(channel.name), package.name, entries[head].name, entries
        )

    def _bundle_name(self, package: str, name: str) -> str:
        """The bundle's own name object, so that entries share it instead of a copy."""
        pending = self.bundles.get((package, name))
        return pending.value.name if pending is not None else sys.intern(name)

    @staticmethod
    def _check_package(package: PackageSummary, origin: dc.Origin) -> None:
        if not package.default_channel:
            raise _error(f'package "{package.name}": default channel must be set', origin)
        if package.default_channel not in package.channels:
            raise _error(
                f'package "{package.name}": default channel "{package.default_channel}" not found',
                origin,
            )

    @staticmethod
    def _attach_deprecation(
        deprecation: dc.Deprecation, origin: dc.Origin, packages: dict[str, PackageSummary]
    ) -> None:
        package = packages.get(deprecation.package)
        if package is None:
            raise _error(f'olm.deprecations for unknown package "{deprecation.package}"', origin)
        for entry in deprecation.entries:
            schema, name = entry.reference.schema, entry.reference.name
            if schema == dc.SCHEMA_PACKAGE:
                package.deprecation = entry.message
            elif schema == dc.SCHEMA_CHANNEL and name in package.channels:
                package.channels[name].deprecation = entry.message
            elif schema == dc.SCHEMA_BUNDLE and name in package.bundles:
                package.bundles[name].deprecation = entry.message
            else:
                raise _error(
                    f'package "{package.name}": cannot deprecate {schema} "{name}": not found',
                    origin,
                )


def _error(message: str, origin: dc.Origin) -> InputError:
    return InputError(message, path=origin.file or None, line=origin.line)
