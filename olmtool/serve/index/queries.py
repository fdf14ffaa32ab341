"""Read-only queries over a built index: the registry semantics of opm's ``pkg/cache``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from olmtool.catalog import RawBlob, decode_blob
from olmtool.catalog import declcfg as dc
from olmtool.errors import ServiceError
from olmtool.safefiles import read_regular
from olmtool.serve.index.data import (
    GVK,
    BundleSummary,
    ChannelSummary,
    Entry,
    EntryRef,
    IndexData,
    PackageSummary,
)
from olmtool.serve.index.store import BlobRef, BlobStore
from olmtool.serve.limits import echo


class NotFoundError(ServiceError, LookupError):
    """A package, channel, bundle or provider a request named is not in the catalog."""


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
            raise NotFoundError(f'package "{echo(name)}" not found') from None

    def channel(self, package: str, channel: str) -> ChannelSummary:
        try:
            return self.package(package).channels[channel]
        except KeyError:
            raise NotFoundError(
                f'package "{echo(package)}", channel "{echo(channel)}" not found'
            ) from None

    def entry(self, package: str, channel: str, bundle: str) -> tuple[ChannelSummary, Entry]:
        found = self.channel(package, channel)
        try:
            return found, found.entries[bundle]
        except KeyError:
            raise NotFoundError(
                f'package "{echo(package)}", channel "{echo(channel)}", '
                f'bundle "{echo(bundle)}" not found'
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
            raise NotFoundError(f'no channel entries found that replace "{echo(name)}"')
        return found

    def bundle_that_replaces(
        self, name: str, package: str, channel: str
    ) -> tuple[ChannelSummary, Entry]:
        found = self.channel(package, channel)
        for entry in found.entries.values():
            if entry.replaces == name or name in entry.skips:
                return found, entry
        raise NotFoundError(
            f'no entry found that replaces "{echo(name)}" in package "{echo(package)}", '
            f'channel "{echo(channel)}"'
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
        return read_regular(target, root=base)

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
    return f'group "{echo(group)}" version "{echo(version)}" kind "{echo(kind)}"'


def _decode(data: dict[str, Any], origin: dc.Origin, kind: str) -> Any:
    """A stored blob as its declcfg dataclass (it decoded when the index was built)."""
    config = dc.DeclarativeConfig()
    problem = decode_blob(RawBlob(data, origin), config)
    if problem is not None:
        raise ServiceError(problem.message, path=origin.file or None, line=origin.line)
    return getattr(config, kind)[0]
