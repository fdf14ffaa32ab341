"""What the index keeps per package, channel and bundle: lean summaries, and the whole
(:class:`IndexData`) that the cache directory pickles."""

from __future__ import annotations

from dataclasses import dataclass, field

from olmtool.serve.index.store import BlobRef

FORMAT = 3  # bump when IndexData or the store layout changes: old caches are rebuilt

GVK = tuple[str, str, str]  # (group, version, kind), as the API orders them


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
    yaml_source: bool = False  # read from YAML: opm serves its property values re-encoded
    # property index -> value text as opm holds it, where the parsed value cannot give it
    # back (escapes, number text in a JSON file); None for nearly every bundle
    raw_values: dict[int, str] | None = None


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
