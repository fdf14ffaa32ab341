"""Publishing: bundles (or a template) -> ``<catalog>/<package>/``, catalog.Dockerfile, image.

Every package is assembled in memory, validated, and only then swapped into place, so a
broken bundle or graph leaves the existing catalog exactly as it was.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import semver

from olmtool.catalog import declcfg as dc
from olmtool.catalog.channels import (
    STRANDED,
    channels_from_bundles,
    head_findings,
    version_key,
)
from olmtool.catalog.choices import OpmCompat
from olmtool.catalog.load import load_catalog_strict
from olmtool.catalog.publish_guard import check_package, refuse_empty_images
from olmtool.catalog.rendering import (
    CATALOG_LABEL,
    BundlePayload,
    RenderedBundle,
    render_opened,
)
from olmtool.catalog.settings import CatalogSettings, DeprecationSetting, PackageSource
from olmtool.catalog.write import CatalogFormat, write_package
from olmtool.errors import ArgumentError, InputError, OlmtoolError, display_path
from olmtool.findings import Finding
from olmtool.fsutil import TreeDiff, is_staging, remove_stale, write_atomic
from olmtool.images import Image, build_image, looks_like_path, names_registry
from olmtool.waivers import WaivedFinding, Waiver

if TYPE_CHECKING:
    from olmtool.images import WheelSource

CONFIGS_DIR = "/configs"


@dataclass
class PublishResult:
    root: Path
    packages: dict[str, TreeDiff] = field(default_factory=dict)
    dockerfile: Path | None = None
    dockerfile_stale: bool = False
    warnings: list[Finding] = field(default_factory=list)
    waived: list[WaivedFinding] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        return self.dockerfile_stale or any(d.stale for d in self.packages.values())


# --- rendering a package's bundles ---------------------------------------------------------


def render_sources(
    source: PackageSource, base: Path, payload: BundlePayload
) -> list[RenderedBundle]:
    """Each bundle directory (globs expanded, sorted) or image of a package source."""
    rendered = []
    for pattern in source.bundles:
        for item in _expand(pattern, base):
            rendered.append(render_opened(item, payload=payload, image_pattern=source.image or ""))
    if not rendered:
        raise InputError(
            f"catalog package {source.name!r}: its bundles match nothing ({', '.join(source.bundles)})"
        )
    for item in rendered:
        if item.bundle.package != source.name:
            raise InputError(
                f"bundle {item.bundle.name} belongs to package {item.bundle.package!r}, not {source.name!r}",
                path=item.bundle.origin.file,
            )
    return rendered


def _expand(pattern: str, base: Path) -> list[str]:
    """An image reference as itself; anything else as a glob of bundle directories (the
    rule of :mod:`olmtool.bundle.source`: a text written as a path is never an image)."""
    if names_registry(pattern) and not looks_like_path(pattern, base=base):
        return [pattern]
    matches = sorted(glob.glob(str(base / pattern)))
    # a hidden pattern could match what a killed ``bundle build`` left: never a bundle
    return [m for m in matches if Path(m).is_dir() and not is_staging(Path(m).name)]


def package_from_bundles(
    source: PackageSource,
    bundles: list[RenderedBundle],
    channels: list[dc.Channel],
    warnings: list[Finding] | None = None,
) -> dc.Package:
    """The olm.package blob: description and icon of the newest bundle, and the default
    channel as opm's replaces mode picks it (``SemverPackageManifest``): the one channel of
    a single-channel package, else the default channel annotation of the newest bundle
    that has one (a warning says so when that is not the newest bundle)."""
    ordered = sorted(bundles, key=version_key)
    newest = ordered[-1]
    default = source.default_channel
    if not default and len(channels) == 1:
        default = channels[0].name
    if not default:
        declaring = [b for b in ordered if b.default_channel]
        if declaring:
            default = declaring[-1].default_channel
            if declaring[-1] is not newest and warnings is not None:
                warnings.append(
                    Finding(
                        "publish-default-channel",
                        "warning",
                        f"the newest bundle, {newest.bundle.name}, declares no default channel; "
                        f"{default!r} is taken from {declaring[-1].bundle.name}, the newest "
                        "bundle that declares one, as opm's replaces mode does",
                        package=source.name,
                    )
                )
    return dc.Package(
        name=source.name, default_channel=default, icon=newest.icon, description=newest.description
    )


def deprecations(package: str, settings: list[DeprecationSetting]) -> list[dc.Deprecation]:
    if not settings:
        return []
    entries = []
    for item in settings:
        if item.package:
            reference = dc.DeprecationReference(dc.SCHEMA_PACKAGE)
        elif item.channel:
            reference = dc.DeprecationReference(dc.SCHEMA_CHANNEL, item.channel)
        else:
            reference = dc.DeprecationReference(dc.SCHEMA_BUNDLE, item.bundle or "")
        entries.append(dc.DeprecationEntry(reference, item.message))
    return [dc.Deprecation(package=package, entries=entries)]


def assemble_package(
    source: PackageSource,
    base: Path,
    payload: BundlePayload,
    warnings: list[Finding] | None = None,
    opm_compat: OpmCompat = OpmCompat.latest,
) -> dc.DeclarativeConfig:
    """One package's FBC from its bundles or its template (read and rendered as the opm
    ``opm_compat`` names does); what publishing chose or ignored where opm does the same
    is added to ``warnings``."""
    if source.template:
        path = base / source.template
        config = _from_template(
            path, payload, source.name, warnings, opm_compat, image_pattern=source.image or ""
        )
        wrong = sorted({p for p in config.package_names() if p != source.name})
        if wrong:
            raise InputError(
                f"the template renders package(s) {', '.join(wrong)}, not {source.name!r}",
                path=path,
            )
    else:
        bundles = render_sources(source, base, payload)
        channels = channels_from_bundles(source.name, bundles, warnings)
        package = package_from_bundles(source, bundles, channels, warnings)
        config = dc.DeclarativeConfig(
            packages=[package], channels=channels, bundles=[b.bundle for b in bundles]
        )
    if source.default_channel:
        for package in config.packages:
            package.default_channel = source.default_channel
    config.deprecations.extend(deprecations(source.name, source.deprecations))
    return config


def _from_template(
    path: Path,
    payload: BundlePayload,
    package: str,
    warnings: list[Finding] | None,
    opm_compat: OpmCompat,
    *,
    image_pattern: str = "",
) -> dc.DeclarativeConfig:
    from olmtool.catalog.templates import load_template, render_template

    template = load_template(path, opm_compat)
    for key, line in getattr(template, "ignored", ()):
        if warnings is not None:
            warnings.append(
                Finding(
                    "publish-template-key",
                    "warning",
                    f"{key}: not a key of the template; ignored, as opm ignores it",
                    file=display_path(path),
                    line=line,
                    package=package,
                )
            )
    return render_template(template, template_renderer(path.parent, payload, image_pattern))


def template_renderer(
    base: Path, payload: BundlePayload, image_pattern: str = ""
) -> Callable[[str], dc.Bundle]:
    """Render a template's bundle reference: a directory (relative to the template) or
    an OCI layout, whose pull spec is ``image_pattern`` filled in (the package's
    ``image:``), or an image (its own reference)."""

    def renderer(reference: str) -> dc.Bundle:
        rendered = render_opened(reference, base=base, payload=payload, image_pattern=image_pattern)
        return rendered.bundle

    return renderer


# --- publishing ---------------------------------------------------------------------------


def publish(
    settings: CatalogSettings,
    base: Path,
    *,
    check: bool = False,
    waivers: Sequence[Waiver] = (),
    allow_empty_image: bool = False,
    output: Path | None = None,
) -> PublishResult:
    """Regenerate every configured package under the catalog root, and the Dockerfile.

    ``waivers`` (olmtool.yaml's ``validate.ignore``) accept validation findings; a bundle
    without image is refused unless ``allow_empty_image``. ``output`` is a catalog root
    to write (or, with ``check``, compare) instead of the configured one (a variant of
    the catalog without a second config file); its Dockerfile goes beside it,
    ``<output>.Dockerfile``, whatever ``catalog.dockerfile`` says."""
    if output is not None:
        output = Path(os.path.abspath(output))
        if output.exists() and not output.is_dir():
            raise ArgumentError(
                f"{display_path(output)} is not a directory (the catalog root to write)",
                argument="output_dir",
            )
    root = output if output is not None else base / settings.output
    fmt = CatalogFormat(settings.format)
    payload = BundlePayload(settings.payload)
    result = PublishResult(root)
    assembled = {
        source.name: assemble_package(
            source, base, payload, result.warnings, OpmCompat(settings.opm_compat)
        )
        for source in settings.packages
    }
    if not allow_empty_image:
        refuse_empty_images(assembled)
    for name, config in assembled.items():
        stranded = [w for w in result.warnings if w.check == STRANDED and w.package == name]
        report = check_package(config, name, waivers, explain=stranded)
        result.warnings += report.warnings
        result.waived += report.waived
    for name, config in assembled.items():
        result.packages[name] = write_package(config, root, name, fmt, check=check)
    # The Dockerfile depends on the settings only (the root's name, the base image), never
    # on the catalog's contents, and is written after the packages: a run killed in
    # between leaves a complete catalog and a Dockerfile naming an existing root, which
    # ``--check`` reports stale until the next publish rewrites it.
    if output is not None:
        result.dockerfile = output.parent / f"{output.name}.Dockerfile"
        text = dockerfile(output.name, settings.base_image)
    else:
        configured = settings.dockerfile or f"{settings.output.rstrip('/')}.Dockerfile"
        result.dockerfile = base / configured
        text = dockerfile(Path(settings.output).name, settings.base_image)
    current = result.dockerfile.read_text(encoding="utf-8") if result.dockerfile.is_file() else None
    result.dockerfile_stale = current != text
    if result.dockerfile_stale and not check:
        write_atomic(result.dockerfile, text)
    elif not check:
        remove_stale(result.dockerfile)
    return result


@dataclass
class AddResult:
    """What ``catalog add`` changed: the package's new config and its files on disk."""

    config: dc.DeclarativeConfig
    bundle: dc.Bundle
    channels: list[str]
    difference: TreeDiff
    warnings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "bundle": self.bundle.name,
            "package": self.bundle.package,
            "channels": self.channels,
            "changed": self.difference.changed,
            "warnings": [w.as_dict() for w in self.warnings],
        }


def add_bundle(
    root: Path,
    bundle_source: str,
    *,
    image: str | None = None,
    channels: list[str] | None = None,
    fmt: CatalogFormat | None = None,
    payload: BundlePayload = BundlePayload.objects,
) -> AddResult:
    """``catalog add``: put one bundle into its package's channels in an existing catalog.

    ``channels`` default to the bundle's annotated ones; ``image`` is the pull spec to
    record for a bundle directory (an image's own reference is recorded otherwise).
    """
    rendered = render_opened(bundle_source, payload=payload, image=image or "")
    bundle = rendered.bundle
    package_dir = root / bundle.package
    existing = load_catalog_strict(package_dir) if package_dir.is_dir() else dc.DeclarativeConfig()
    config = existing.for_package(bundle.package)
    if any(b.name == bundle.name for b in config.bundles):
        raise InputError(f"bundle {bundle.name} is already in the catalog", path=package_dir)
    config.bundles.append(bundle)
    wanted = channels or list(rendered.channels)
    if not wanted:
        raise ArgumentError(
            f"is needed: bundle {bundle.name} names no channel", argument="channels"
        )
    warnings: list[Finding] = []
    if not bundle.image:
        warnings.append(_empty_image_warning(bundle))
    for name in wanted:
        channel = _channel(config, name, bundle.package)
        channel.entries.append(
            dc.ChannelEntry(
                bundle.name, rendered.replaces, list(rendered.skips), rendered.skip_range
            )
        )
        _join_heads(config, channel, warnings)
    if not config.packages:
        config.packages.append(
            dc.Package(
                bundle.package,
                rendered.default_channel or wanted[0],
                rendered.icon,
                rendered.description,
            )
        )
    check_package(config, bundle.package, explain=[w for w in warnings if w.check == STRANDED])
    chosen = fmt or _existing_format(package_dir) or CatalogFormat.json
    difference = write_package(config, root, bundle.package, chosen)
    member_of = sorted(
        c.name for c in config.channels if any(e.name == bundle.name for e in c.entries)
    )
    return AddResult(config, bundle, member_of, difference, warnings)


def _empty_image_warning(bundle: dc.Bundle) -> Finding:
    """opm records a bundle directory with ``image: ''`` too; worth saying, not refusing."""
    note = (
        f"bundle {bundle.name} recorded with image '' (give --image REF): OLM v1 cannot "
        "install it and OLM v0 only from the objects embedded in the catalog"
    )
    return Finding("publish-empty-image", "warning", note, package=bundle.package)


def _join_heads(config: dc.DeclarativeConfig, channel: dc.Channel, warnings: list[Finding]) -> None:
    """As publishing does: a bundle without ``replaces`` does not leave a second head."""
    names = {b.name for b in config.bundles}
    versions: dict[str, tuple[semver.Version, str]] = {}
    for bundle in config.bundles:
        try:
            versions[bundle.name] = (semver.Version.parse(bundle.version), bundle.name)
        except ValueError:
            return  # validation reports it
    entries = channel.entries
    if any(e.name not in versions or (e.replaces and e.replaces not in names) for e in entries):
        return
    warnings += head_findings(channel, versions)


def _channel(config: dc.DeclarativeConfig, name: str, package: str) -> dc.Channel:
    """The channel ``name`` of ``config``, added when it is new."""
    channel = next((c for c in config.channels if c.name == name), None)
    if channel is None:
        channel = dc.Channel(name=name, package=package)
        config.channels.append(channel)
    return channel


def _existing_format(package_dir: Path) -> CatalogFormat | None:
    for candidate in CatalogFormat:
        if (package_dir / f"catalog.{candidate.value}").is_file():
            return candidate
    return None


def dockerfile(configs_dir: str, base_image: str) -> str:
    """``opm generate dockerfile``'s catalog.Dockerfile for the FBC root ``configs_dir``."""
    return f"""# The base image is expected to contain
# /bin/opm (with a serve subcommand) and /bin/grpc_health_probe
FROM {base_image} as builder

# Copy FBC root into image at /configs and pre-populate serve cache
ADD {configs_dir} {CONFIGS_DIR}
RUN ["/bin/opm", "serve", "{CONFIGS_DIR}", "--cache-dir=/tmp/cache", "--cache-only"]

FROM {base_image}
# The base image is expected to contain
# /bin/opm (with serve subcommand) and /bin/grpc_health_probe

# Configure the entrypoint and command
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "{CONFIGS_DIR}", "--cache-dir=/tmp/cache"]

COPY --from=builder {CONFIGS_DIR} {CONFIGS_DIR}
COPY --from=builder /tmp/cache /tmp/cache

# Set FBC-specific label for the location of the FBC root directory
# in the image
LABEL {CATALOG_LABEL}={CONFIGS_DIR}
"""


# What an opm-based catalog image runs (catalog.Dockerfile's ENTRYPOINT and CMD).
OPM_ENTRYPOINT = ("/bin/opm",)
OPM_CMD = ("serve", CONFIGS_DIR, "--cache-dir=/tmp/cache")
# What olmtool's catalog image runs: the same server, on every address, on opm's port; no
# cache directory (the index is built at start, in a few ms for most catalogs, into a
# temporary file: a read-only root with a writable /tmp is enough).
GRPC_PORT = 50051
SERVE_ENTRYPOINT = ("/usr/bin/python3", "-m", "olmtool")
SERVE_CMD = (
    "catalog",
    "serve",
    CONFIGS_DIR,
    "--host",
    "0.0.0.0",
    "--grpc-port",
    str(GRPC_PORT),
    "--http-port",
    "0",
    "--quiet",
)
SCRATCH = "scratch"  # no base, like a Dockerfile's FROM scratch
_DEBIAN_EXAMPLE = re.compile(r"\s*\(for example --base [^)]*\)")


def _configs(root: Path) -> dict[str, bytes]:
    """The catalog's files at ``configs/...`` (what opm and ``catalog.load`` read)."""
    from olmtool.catalog.load import catalog_files as files_of

    files = {
        f"{CONFIGS_DIR.strip('/')}/{path.relative_to(root).as_posix()}": path.read_bytes()
        for path in files_of(root)
    }
    if not files:
        raise InputError("the catalog holds no files", path=display_path(root))
    return files


def catalog_image(
    root: Path,
    base: str | None = SCRATCH,
    *,
    pins: Sequence[str] | None = None,
    wheels: WheelSource | None = None,
    progress: Callable[[str], None] | None = None,
) -> Image:
    """The catalog under /configs, labelled for OLM/catalogd
    (``operators.operatorframework.io.index.configs.v1=/configs``), on ``base``:

    * ``scratch`` (the default here): nothing else. OLM v1 (catalogd) unpacks it; OLM v0
      reaches it only through ``olmtool catalog serve`` (a CatalogSource with an address).
    * None: an image that serves like an opm-based one (what ``catalog publish --image``
      builds): olmtool's Python base, the distributions ``catalog serve`` imports
      (``pins``, default those this environment runs; pip finds them through
      ``wheels``), olmtool and ``/usr/bin/grpc_health_probe``; its entrypoint serves
      /configs on :50051 (:data:`SERVE_ENTRYPOINT`, :data:`SERVE_CMD`) as the base's
      user (65532). Raises ``DebianError`` (naming ``--base``) when the base cannot be
      built.
    * an image reference (an opm image): pulled, with /configs stacked on it and opm's
      ENTRYPOINT/CMD, as ``catalog.Dockerfile`` builds it (without its cache step: opm
      builds /tmp/cache when it starts).
    """
    files = _configs(root)
    labels = {CATALOG_LABEL: CONFIGS_DIR}
    if base == SCRATCH:
        return build_image(files, labels)
    if base is None:
        return _serving_image(files, labels, pins, wheels, progress)
    from olmtool.images import (  # the registry client: only for this
        configs_on_base,
        parse_reference,
        pull,
    )

    try:
        ref = parse_reference(base)
        if progress:
            progress(f"pulling base image {ref}")
        pulled = pull(ref)
    except OlmtoolError as exc:
        raise ArgumentError(exc.message, argument="base") from None
    stacked = configs_on_base(
        pulled,
        files,
        base_reference=str(ref),
        labels=labels,
        entrypoint=OPM_ENTRYPOINT,
        cmd=OPM_CMD,
    )
    return stacked.image


def _serving_image(
    files: dict[str, bytes],
    labels: dict[str, str],
    pins: Sequence[str] | None,
    wheels: WheelSource | None,
    progress: Callable[[str], None] | None,
) -> Image:
    from olmtool.images import WheelSource, serving_image
    from olmtool.images.debian import DebianError

    try:
        stacked = serving_image(
            files,
            labels=labels,
            entrypoint=SERVE_ENTRYPOINT,
            cmd=SERVE_CMD,
            ports=(f"{GRPC_PORT}/tcp",),
            pins=pins,
            wheels=wheels or WheelSource(),
            progress=progress,
        )
    except DebianError as exc:
        # its example base is a Python image: a catalog's --base is an opm image or scratch
        message = _DEBIAN_EXAMPLE.sub("", exc.message)
        raise DebianError(
            f"{message} (for a catalog image: --base quay.io/operator-framework/opm:latest, "
            "or --base scratch for the catalog alone)"
        ) from None
    return stacked.image
