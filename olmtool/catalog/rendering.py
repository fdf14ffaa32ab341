"""``opm render``: bundle directories and images (bundle or catalog) as declcfg blobs.

A bundle becomes the olm.bundle blob opm v1.26 writes (:mod:`olmtool.catalog.opm_bundle`
has its rules): name from the CSV, package from annotations.yaml, properties derived from
the CSV, CRDs, API services, the metadata files' dependencies and properties and the CSV's
olm.properties annotation (sorted by type, then by value as opm holds it), then either one
olm.bundle.object per manifest (base64 of Go's JSON) or a single olm.csv.metadata, and
relatedImages from the CSV and the operator's containers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmtool.bundle import Bundle as BundleFiles
from olmtool.bundle import (
    fetch_image,
    image_bundle,
    load_bundle,
    open_bundle,
    resolve_source,
    unpacked_image,
)
from olmtool.bundle import format as fmt
from olmtool.catalog import declcfg as dc
from olmtool.catalog import opm_bundle
from olmtool.catalog import properties as props
from olmtool.catalog.choices import BundlePayload
from olmtool.catalog.load import read_catalog_text, walk_catalog
from olmtool.catalog.opm_bundle import dig
from olmtool.catalog.opmtext import load_catalog_as_opm, load_texts_as_opm
from olmtool.errors import InputError, display_path
from olmtool.images import Image, Source, SourceKind, expand_image, pull_all

CATALOG_LABEL = "operators.operatorframework.io.index.configs.v1"
SKIP_RANGE_ANNOTATION = "olm.skipRange"
# Loader findings about files opm's bundle parser passes over (validation still reports
# them): hidden files and directories in manifests/, files that are no Kubernetes object,
# CSVs after the first.
_SKIPPED_BY_OPM = frozenset(
    {"loader/hidden-file", "loader/subdirectory", "loader/manifest-parse", "loader/multiple-csvs"}
)

# olm.csv.metadata's fields: (key in the property, where it lives in the CSV).
_CSV_METADATA_FIELDS = (
    ("annotations", "metadata.annotations"),
    ("apiServiceDefinitions", "spec.apiservicedefinitions"),
    ("crdDescriptions", "spec.customresourcedefinitions"),
    ("description", "spec.description"),
    ("displayName", "spec.displayName"),
    ("installModes", "spec.installModes"),
    ("keywords", "spec.keywords"),
    ("labels", "metadata.labels"),
    ("links", "spec.links"),
    ("maintainers", "spec.maintainers"),
    ("maturity", "spec.maturity"),
    ("minKubeVersion", "spec.minKubeVersion"),
    ("nativeAPIs", "spec.nativeAPIs"),
    ("provider", "spec.provider"),
)


@dataclass(frozen=True)
class RenderedBundle:
    """A rendered olm.bundle plus what publishing needs from the bundle's metadata."""

    bundle: dc.Bundle
    channels: tuple[str, ...]
    default_channel: str
    replaces: str
    skips: tuple[str, ...]
    skip_range: str
    description: str
    icon: dc.Icon | None


def render(
    sources: Iterable[str | Path], *, payload: BundlePayload = BundlePayload.objects
) -> dc.DeclarativeConfig:
    """Every source (bundle dir, FBC dir or file, bundle or catalog image) as one config.

    Images in registries are pulled a few at a time ahead of rendering (shared
    connections); rendering and its errors keep the order of ``sources``."""
    config = dc.DeclarativeConfig()
    resolved = [resolve_source(str(source)) for source in sources]
    in_registries = [source.text for source in resolved if source.kind is SourceKind.image]
    pulled = pull_all(in_registries) if len(in_registries) > 1 else None
    for source in resolved:
        image = next(pulled) if pulled and source.kind is SourceKind.image else None
        config.extend(render_source(source, payload=payload, pulled=image))
    return config


def render_source(
    source: str | Source,
    *,
    payload: BundlePayload = BundlePayload.objects,
    pulled: Image | None = None,
) -> dc.DeclarativeConfig:
    """One source: a bundle directory, an FBC directory or file, or a bundle or catalog
    image (in a registry or an OCI layout), told apart by :mod:`olmtool.bundle.source`;
    ``pulled`` is the image's content when it was pulled already."""
    resolved = resolve_source(source) if isinstance(source, str) else source
    if resolved.kind is SourceKind.directory:
        assert resolved.path is not None
        if resolved.path.is_dir() and (resolved.path / fmt.MANIFESTS_DIR).is_dir():
            bundle = render_bundle_dir(resolved.path, payload=payload).bundle
            return dc.DeclarativeConfig(bundles=[bundle])
        return load_catalog_as_opm(resolved.path)  # values and other blobs as opm holds them
    return render_image(resolved, payload=payload, pulled=pulled)


def render_bundle_dir(
    root: Path, *, image: str = "", payload: BundlePayload = BundlePayload.objects
) -> RenderedBundle:
    """The olm.bundle for a bundle directory; ``image`` is its pull spec, if known."""
    files = load_bundle(root)
    return render_bundle(files, image=image, payload=payload)


def render_opened(
    source: str | Path,
    *,
    base: Path | None = None,
    payload: BundlePayload = BundlePayload.objects,
    image: str = "",
    image_pattern: str = "",
) -> RenderedBundle:
    """The olm.bundle for any bundle source (loaded once). An image's pull spec is the
    reference given; for a directory or layout it is ``image``, or ``image_pattern``
    filled in with the bundle's ``{package}`` and ``{version}``."""
    resolved = resolve_source(source, base=base)
    if resolved.kind is SourceKind.image:
        image, image_pattern = resolved.text, ""
    with open_bundle(resolved) as files:
        rendered = render_bundle(files, image=image, payload=payload)
        if image_pattern:  # the pattern needs the version, known only once rendered
            bundle = rendered.bundle
            image = expand_image(image_pattern, package=bundle.package, version=bundle.version)
            rendered = render_bundle(files, image=image, payload=payload)
    return rendered


def render_image(
    source: str | Source,
    *,
    payload: BundlePayload = BundlePayload.objects,
    pulled: Image | None = None,
) -> dc.DeclarativeConfig:
    """A catalog image gives its FBC, a bundle image its olm.bundle."""
    if isinstance(source, str):
        source = resolve_source(source)
    reference = source.text
    image = pulled if pulled is not None else fetch_image(source)
    labels = image.labels
    if CATALOG_LABEL in labels:
        with unpacked_image(source, pulled=image) as (root, _):
            return _image_catalog(reference, root, labels[CATALOG_LABEL])
    if fmt.PACKAGE not in labels:
        raise InputError(
            f"image {reference} is neither a bundle nor a catalog image (no {fmt.PACKAGE} or {CATALOG_LABEL} label)"
        )
    files = image_bundle(image, label=reference)
    pull_spec = reference if source.kind is SourceKind.image else ""
    return dc.DeclarativeConfig(
        bundles=[render_bundle(files, image=pull_spec, payload=payload).bundle]
    )


def _image_catalog(reference: str, root: Path, configs_label: str) -> dc.DeclarativeConfig:
    """The FBC under a catalog image's configs directory, files named ``ref:/configs/...``.

    Read like a catalog directory (.indexignore applies; symlinks stay inside the configs
    directory, FIFOs and devices are refused: an image is someone else's tree).
    """
    configs = root / configs_label.lstrip("/")
    prefix = f"{reference}:{configs_label.rstrip('/')}/"

    def name(path: Path) -> str:
        return prefix + (path.relative_to(configs).as_posix() if path != configs else "")

    texts = {}
    if configs.is_dir():
        files, problems = walk_catalog(configs, name=name)
        for problem in problems:
            if problem.severity == "error":
                raise InputError(problem.message, path=problem.file, line=problem.line)
        for path in files:
            try:
                texts[name(path)] = read_catalog_text(path, configs)
            except InputError as exc:
                raise InputError(exc.message, path=name(path)) from None
    return load_texts_as_opm(texts)  # property values and other blobs as opm holds them


def render_bundle(
    files: BundleFiles, *, image: str = "", payload: BundlePayload = BundlePayload.objects
) -> RenderedBundle:
    """Render a loaded bundle; a bundle too broken to render is an InputError."""
    where = files.display("") if files.label else display_path(files.root)
    fatal = [
        p
        for p in files.problems
        if p.severity == "error"
        and p.check.startswith(("format/", "loader/"))
        and p.check not in _SKIPPED_BY_OPM
    ]
    if fatal:
        raise InputError(
            f"not a valid bundle: {fatal[0].message}",
            path=fatal[0].file or where,
            line=fatal[0].line,
        )
    csv = opm_bundle.first_csv(files)
    if csv is None:  # load_bundle reported it, but be explicit
        raise InputError("not a valid bundle: no ClusterServiceVersion", path=where)
    annotations = files.annotations or {}
    package = annotations.get(fmt.PACKAGE, "")
    if not package:
        raise InputError(
            f"not a valid bundle: metadata/annotations.yaml has no {fmt.PACKAGE}", path=where
        )
    document = csv.document
    version = str(dig(document, "spec.version") or "")
    if not version:
        raise InputError(
            "the ClusterServiceVersion has no spec.version", path=files.display(csv.file)
        )
    objects = opm_bundle.bundle_objects(files)
    properties = opm_bundle.properties(files, document, objects, package)
    if payload is BundlePayload.objects:
        payload_properties = [props.bundle_object(m) for m in objects]
    else:
        payload_properties = [dc.Property(dc.PROP_CSV_METADATA, csv_metadata(document))]
    bundle = dc.Bundle(
        name=csv.name,
        package=package,
        image=image,
        properties=opm_bundle.with_objects(properties, payload_properties),
        related_images=opm_bundle.related_images(document, image),
        origin=dc.Origin(where),
    )
    spec = document.get("spec") or {}
    icons = spec.get("icon") or []
    icon = None
    if icons and isinstance(icons[0], dict):
        icon = dc.Icon(str(icons[0].get("base64data") or ""), str(icons[0].get("mediatype") or ""))
    return RenderedBundle(
        bundle=bundle,
        channels=tuple(c for c in annotations.get(fmt.CHANNELS, "").split(",") if c),
        default_channel=annotations.get(fmt.DEFAULT_CHANNEL, ""),
        replaces=str(spec.get("replaces") or ""),
        skips=tuple(str(s) for s in spec.get("skips") or []),
        skip_range=str(
            (dig(document, "metadata.annotations") or {}).get(SKIP_RANGE_ANNOTATION) or ""
        ),
        description=str(spec.get("description") or ""),
        icon=icon,
    )


def csv_metadata(csv: dict[str, Any]) -> dict[str, Any]:
    """The olm.csv.metadata value: the CSV fields OLM v1 and consoles show."""
    value: dict[str, Any] = {}
    for key, dotted in _CSV_METADATA_FIELDS:
        found = dig(csv, dotted)
        if found not in (None, "", [], {}):
            value[key] = found
    return value
