"""Building the index: stream the catalog's blobs into the store, resolve and check them
as ``olmtool catalog validate`` does, and keep lean summaries of the model.

Why not keep the loaded catalog: a real catalog is hundreds of MB of JSON, most of it the
base64 CSVs and CRDs of ``olm.bundle.object`` properties that only ``GetBundle`` and its
friends return. Held as Python dicts that is several GB. So every blob is read once,
appended to the blob store, checked while it is whole (:func:`inspect_bundle`) and fed to
the model builder, which keeps a lean record of it. A catalog that does not validate is
refused (:class:`InvalidCatalogError`) with validate's findings; warnings never refuse.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from olmtool.catalog import (
    CHECKS,
    Finding,
    RawBlob,
    Report,
    catalog_files,
    check_model,
    decode_blob,
    inspect_bundle,
    iter_json_spans,
    may_differ,
    meta_keys,
    parse_blobs,
    raw_property_texts,
    read_catalog_text,
    report,
)
from olmtool.catalog import declcfg as dc
from olmtool.catalog.model import ModelBuilder
from olmtool.catalog.model import Package as ModelPackage
from olmtool.errors import InputError, display_path
from olmtool.serve.index.cache import catalog_digest, new_store, open_cache, save_cache
from olmtool.serve.index.data import (
    BundleSummary,
    ChannelSummary,
    Entry,
    IndexData,
    PackageSummary,
)
from olmtool.serve.index.queries import CatalogIndex
from olmtool.serve.index.store import BlobRef, BlobStore

# Findings that do not refuse a catalog. What `opm serve` serves, olmtool serves: the
# checks opm does not make ("extra" in CHECKS, origin olmtool) are olmtool's own opinion
# (warnings) and never block serving. image-missing: opm refuses a bundle with neither an
# image nor olm.bundle.object properties, but olmtool serves such bundles (a CSV
# synthesized from olm.csv.metadata), as it always has.
SERVED_DESPITE = frozenset(
    {"image-missing", *(check for check, (_, what) in CHECKS.items() if what.startswith("extra:"))}
)

# olm.bundle.object payloads are not decoded at start-up (that would double it): a broken
# one fails the requests that return it (gRPC INTERNAL naming the bundle), and the CSV
# comparison behind the replaces-mismatch warning is validate's alone.
_inspect = functools.partial(inspect_bundle, decode_objects=False, extra=False)


# A JSON blob in its file: (the file's text, start, end, whether it holds a float)
_Span = tuple[str, int, int, bool]


def _value_texts(bundle: dc.Bundle, raw: _Span | None) -> bool | dict[int, str] | None:
    """True for a bundle read from YAML; else the property values whose raw JSON text the
    parsed value does not give back (opm serves the text), or None when there are none."""
    if raw is None:
        return True
    text, start, end, has_float = raw
    if not may_differ(text, has_float, start, end):
        return None
    texts = raw_property_texts(text[start:end])
    differing = {
        index: text
        for index, (text, prop) in enumerate(zip(texts, bundle.properties, strict=False))
        if prop.type != dc.PROP_BUNDLE_OBJECT and text != dc.to_json(prop.value, indent=None)
    }
    return differing or None


class InvalidCatalogError(InputError):
    """The catalog does not validate, so it is not served.

    The message is the first error ``olmtool catalog validate`` lists (its package and
    object, message and check id), the path and line those of its blob, and how many
    errors follow; ``report`` holds every finding, for the whole error tree.
    """

    def __init__(self, report: Report) -> None:
        errors = [f for f in report.errors if f.check not in SERVED_DESPITE]
        first = errors[0]
        subject = [f'package "{first.package}"'] if first.package else []
        subject += [first.scope] if first.scope else []
        message = ": ".join([*subject, f"{first.message} [{first.check}]"])
        if len(errors) > 1:
            more = len(errors) - 1
            message += f" (and {more} more error{'s' if more > 1 else ''})"
        super().__init__(message, path=first.file, line=first.line)
        self.report = report


def build_index(root: str | Path, *, cache_dir: str | Path | None = None) -> CatalogIndex:
    """Index the catalog below ``root``; :class:`InvalidCatalogError` (an InputError naming
    file and line) when it does not validate.

    With ``cache_dir``, an index built earlier from identical files is reused and a new
    one is left there for next time.

    >>> index = build_index("catalog/")                                    # doctest: +SKIP
    >>> index.channel("etcd", "stable").head                               # doctest: +SKIP
    'etcdoperator.v0.9.4'
    """
    root = Path(root)
    files = catalog_files(root)
    if cache_dir is None:
        return _build(root, files, BlobStore.create())
    cache = Path(cache_dir)
    digest = catalog_digest(root, files)
    cached = open_cache(cache, digest)
    if cached is not None:
        cached.data.root = str(root)  # same files, maybe moved: object refs resolve here
        return cached
    index = _build(root, files, new_store(cache), digest)
    save_cache(cache, index)
    return index


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


class _Builder:
    """Reads blob after blob into the store and the model, then summarises the model."""

    def __init__(self, root: Path, store: BlobStore) -> None:
        self.root = root
        self.base = root if root.is_dir() else root.parent
        self.store = store
        self.model = ModelBuilder(inspect_bundle=_inspect)
        self.load_findings: list[Finding] = []  # what the loader would report
        self.blobs: list[BlobRef] = []
        self.package_blobs: dict[str, BlobRef] = {}
        self.bundle_blobs: dict[tuple[str, str], tuple[BlobRef, str]] = {}
        # how opm holds each bundle's property values: from YAML, or the raw JSON texts
        self.value_texts: dict[tuple[str, str], bool | dict[int, str] | None] = {}
        self.modified = 0.0

    def add_file(self, path: Path) -> None:
        file = display_path(path)
        source = sys.intern(path.relative_to(self.base).as_posix())
        self.modified = max(self.modified, path.stat().st_mtime)
        for data, origin, raw in self._file_blobs(path, file):
            self.add_blob(data, origin, source, raw)

    def _file_blobs(
        self, path: Path, file: str
    ) -> Iterator[tuple[dict[str, Any], dc.Origin, _Span | None]]:
        """The blobs of one file, as the loader reads them, each with where its text is
        when the file is JSON (None: YAML); a parse problem is a finding and ends the
        file. JSON is read one object at a time, never held twice."""
        try:
            text = read_catalog_text(path, self.base)
        except InputError as exc:
            self.load_findings.append(Finding("parse", "error", exc.message, file))
            return
        if text.lstrip().startswith("{"):
            try:
                for data, line, start, end, floats in iter_json_spans(text, file):
                    yield data, dc.Origin(file, line), (text, start, end, floats)
            except InputError as exc:
                self.load_findings.append(Finding("parse", "error", exc.message, file, exc.line))
            return
        blobs, problems = parse_blobs(text, file)
        self.load_findings.extend(problems)
        for blob in blobs:
            yield blob.data, blob.origin, None

    def add_blob(
        self,
        data: dict[str, Any],
        origin: dc.Origin,
        source: str,
        raw: _Span | None = None,
    ) -> None:
        """One blob into the store and the model; ``raw`` where its JSON text is (None:
        read from YAML)."""
        config = dc.DeclarativeConfig()
        problem = decode_blob(RawBlob(data, origin), config)
        if problem is not None:
            self.load_findings.append(problem)
            return
        meta, _ = meta_keys(data)
        if raw is not None and not raw[3]:  # JSON without floats: the fast writer
            line = dc.to_compact_json_without_floats(data) + b"\n"
        else:
            line = dc.to_json(data, indent=None).encode() + b"\n"
        ref = BlobRef(
            sys.intern(str(meta["schema"])),
            sys.intern(str(meta.get("package") or "")),
            sys.intern(str(meta.get("name") or "")),
            self.store.append(line),
            len(line),
        )
        self.blobs.append(ref)
        for package in config.packages:
            self.model.add_package(package)
            self.package_blobs.setdefault(package.name, ref)
        for bundle in config.bundles:  # the full blob is dropped after this: keep it lean
            if self.model.add_bundle(bundle) is not None:
                self.bundle_blobs[(bundle.package, bundle.name)] = (ref, source)
                self.value_texts[(bundle.package, bundle.name)] = _value_texts(bundle, raw)
        for channel in config.channels:
            self.model.add_channel(channel)
        for deprecation in config.deprecations:
            self.model.add_deprecation(deprecation)

    def finish(self) -> IndexData:
        catalog = self.model.finish()
        # opm's checks only: olmtool's extra ones never refuse serving, so skip their cost
        checked = report(
            [*self.load_findings, *catalog.findings, *check_model(catalog, extra=False)]
        )
        if any(f.check not in SERVED_DESPITE for f in checked.errors):
            raise InvalidCatalogError(checked)
        packages = {
            name: self._summary(catalog.packages[name]) for name in sorted(catalog.packages)
        }
        return IndexData(str(self.root), packages, self.blobs, self.modified)

    def _summary(self, package: ModelPackage) -> PackageSummary:
        """What serving keeps of a validated package: names, heads, edges, blob refs."""
        bundles = {}
        for name, bundle in package.bundles.items():
            ref, source = self.bundle_blobs[(package.name, name)]
            texts = self.value_texts[(package.name, name)]
            bundles[name] = BundleSummary(
                name=bundle.name,
                package=bundle.package,
                image=bundle.image,
                version=bundle.version,
                provides=bundle.provides,
                requires=bundle.requires,
                blob=ref,
                source=source,
                deprecation=bundle.deprecation or "",
                yaml_source=texts is True,
                raw_values=texts if isinstance(texts, dict) else None,
            )
        channels = {}
        for name in sorted(package.channels):
            channel = package.channels[name]
            entries = {
                e.name: Entry(e.name, e.replaces, e.skips, e.skip_range) for e in channel.entries
            }
            head = channel.head
            assert head is not None  # a channel without one head does not validate
            channels[name] = ChannelSummary(
                channel.name, package.name, head, entries, channel.deprecation or ""
            )
        return PackageSummary(
            package.name,
            package.default_channel_name,
            self.package_blobs[package.name],
            channels,
            bundles,
            package.deprecation or "",
        )
