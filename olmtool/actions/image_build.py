"""``image build``: the operator image from olmtool.yaml's ``image:`` section, no Docker.

>>> result = image_build(tags=["dev"], push=True, registry="127.0.0.1:5000")
>>> [tagged.reference for tagged in result.tags]
['127.0.0.1:5000/olmtool/etcd-operator:dev']
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from olmtool import yamlread
from olmtool.actions._project import project_section
from olmtool.config import Project
from olmtool.errors import ArgumentError, InputError, OlmtoolError, display_path
from olmtool.images import (
    Image,
    ImageSettings,
    ImageTarget,
    LayerInfo,
    Reference,
    SavedImage,
    WheelSource,
    build_operator_image,
    bundle_tags,
    parse_reference,
    provenance,
    pull,
    save_image,
)
from olmtool.images.debian import python_base

SCRATCH = "scratch"  # no base, like a Dockerfile's FROM scratch
DEBIAN_PYTHON = "3.11"
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_LABEL = "org.opencontainers.image"


@dataclass
class ImageBuildResult:
    name: str
    digest: str
    tags: list[SavedImage]
    layers: tuple[LayerInfo, ...]
    base: str | None
    base_layers: int
    created: str
    created_from: str
    seconds: float

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "digest": self.digest,
            "tags": [saved.as_dict() for saved in self.tags],
            "layers": [layer.as_dict() for layer in self.layers],
            "base": self.base,
            "baseLayers": self.base_layers,
            "created": self.created,
            "createdFrom": self.created_from,
            "seconds": round(self.seconds, 2),
        }


def image_build(
    *,
    config: Path | None = None,
    tags: Sequence[str] = (),
    bundle_tags: bool = False,
    base: str | None = None,
    push: bool = False,
    registry: str | None = None,
    find_links: Sequence[Path] = (),
    no_index: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ImageBuildResult:
    """Build the image once, write an OCI layout per tag (``<output>/<name>-<tag>``) and,
    with ``push``, push every tag (to ``registry`` instead of the name's, when given).

    ``tags`` replace ``image.tag``; ``bundle_tags`` adds every tag the project's bundle
    CSVs reference for ``image.name``. ``find_links``/``no_index`` are pip's wheel sources.
    """
    started = time.monotonic()
    project, settings = project_section(config, "image")
    chosen = _tags(project, settings, tags, bundle_tags)
    target_registry = _registry(registry, push)
    base_ref, base_image = _base(project, settings, base, progress)
    origin = provenance(project.root)
    built = build_operator_image(
        settings,
        project.root,
        labels=_labels(project, settings, origin.revision, origin.created),
        created=origin.created,
        base=base_image,
        wheels=WheelSource(tuple(find_links), index=not no_index),
        progress=progress,
    )
    saved = [
        _save(built.image, project, settings, tag, push, target_registry, progress)
        for tag in chosen
    ]
    return ImageBuildResult(
        name=settings.name,
        digest=built.image.digest,
        tags=saved,
        layers=built.layers,
        base=str(base_ref) if base_ref else None,
        base_layers=built.base_layers,
        created=origin.created,
        created_from=origin.created_from,
        seconds=time.monotonic() - started,
    )


def _tags(
    project: Project, settings: ImageSettings, tags: Sequence[str], from_bundles: bool
) -> list[str]:
    chosen = list(tags)
    if from_bundles:
        bundle = project.settings.bundle
        if bundle is None:
            raise InputError("has no bundle section to take tags from", path=project.file)
        directory = project.path(bundle.output) / bundle.package
        found = bundle_tags(directory, settings.name)
        if not found:
            raise ArgumentError(
                f"found no CSV under {display_path(directory)} naming {settings.name}",
                argument="bundle_tags",
            )
        chosen += found
    if not chosen:
        chosen = [_default_tag(project, settings)]
    for tag in chosen:
        if not _TAG.fullmatch(tag):
            raise ArgumentError(f"{tag!r} is not an image tag", argument="tags")
    return list(dict.fromkeys(chosen))


def _default_tag(project: Project, settings: ImageSettings) -> str:
    bundle = project.settings.bundle
    version = bundle.resolved_releases()[-1].version if bundle else None  # the newest
    if "{version}" in settings.tag and version is None:
        raise InputError(
            "image.tag uses {version}, which needs a bundle section (or pass --tag)",
            path=project.file,
            line=_line(project, "image.tag"),
        )
    tag = settings.tag.replace("{version}", version or "")
    if not _TAG.fullmatch(tag):
        raise InputError(
            f"image.tag {tag!r} is not an image tag",
            path=project.file,
            line=_line(project, "image.tag"),
        )
    return tag


def _registry(registry: str | None, push: bool) -> str | None:
    if registry is None:
        return None
    if not push:
        raise ArgumentError("needs --push", argument="registry")
    try:
        ref = parse_reference(f"{registry}/olmtool")
    except OlmtoolError:
        ref = None
    if ref is None or ref.registry != registry:
        raise ArgumentError(f"{registry!r} is not a registry host[:port]", argument="registry")
    return registry


def _base(
    project: Project,
    settings: ImageSettings,
    flag: str | None,
    progress: Callable[[str], None] | None,
) -> tuple[Reference | None, Image | None]:
    """The base image: ``--base`` or ``image.base`` pulled (errors name which), none for
    ``scratch``, else olmtool's Python base built from Debian packages."""
    text = flag or settings.base
    if text == SCRATCH:
        return None, None
    if not text:
        return _debian_base(project, settings, progress)

    def problem(message: str) -> InputError:
        if flag:
            return ArgumentError(message, argument="base")
        line = _line(project, "image.base")
        return InputError(f"image.base: {message}", path=project.file, line=line)

    try:
        ref = parse_reference(text)
    except OlmtoolError as exc:
        raise problem(exc.message) from None
    if progress:
        progress(f"pulling base image {ref}")
    try:
        return ref, pull(ref)
    except OlmtoolError as exc:
        raise problem(exc.message) from None


def _debian_base(
    project: Project, settings: ImageSettings, progress: Callable[[str], None] | None
) -> tuple[Reference, Image]:
    if settings.python != DEBIAN_PYTHON:
        raise InputError(
            f"image.python is {settings.python}, olmtool's Debian base has Python "
            f"{DEBIAN_PYTHON}: set image.base (or pass --base) to a Python {settings.python} image",
            path=project.file,
            line=_line(project, "image.python"),
        )
    if progress:
        progress("olmtool's Python base from Debian packages")
    built = python_base(progress=progress)
    return parse_reference(built.reference), built.image


def _labels(
    project: Project, settings: ImageSettings, revision: str | None, created: str
) -> dict[str, str]:
    """The OCI annotation labels (title, version, source, revision, created), then the
    project's own ``image.labels``, which win."""
    bundle = project.settings.bundle
    labels = {
        f"{_LABEL}.title": settings.name.rpartition("/")[2],
        f"{_LABEL}.created": created,
    }
    if bundle is not None:
        labels[f"{_LABEL}.version"] = bundle.resolved_releases()[-1].version
        if bundle.csv.repository:
            labels[f"{_LABEL}.source"] = bundle.csv.repository
    if revision:
        labels[f"{_LABEL}.revision"] = revision
    return {**labels, **settings.labels}


def _save(
    image: Image,
    project: Project,
    settings: ImageSettings,
    tag: str,
    push: bool,
    registry: str | None,
    progress: Callable[[str], None] | None,
) -> SavedImage:
    ref = parse_reference(f"{settings.name}:{tag}")
    if registry:
        ref = dataclasses.replace(ref, registry=registry)
    layout = project.path(settings.output) / f"{settings.name.rpartition('/')[2]}-{tag}"
    target = ImageTarget(str(ref), layout, push)
    return save_image(image, target, default_layout=layout, default_tag=tag, progress=progress)


def _line(project: Project, field: str) -> int | None:
    try:
        return yamlread.read(project.file).line_at(0, field)
    except OlmtoolError:
        return None
