"""Which tags of the operator image the project's bundles reference.

A bundle's CSV names the operator image in its Deployments (``spec.install.spec
.deployments[].spec.template.spec.containers[].image``); ``image build --bundle-tags``
builds once and tags the image for every such reference, so every bundle in the catalog
has its image.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from olmtool import yamlread
from olmtool.errors import OlmtoolError
from olmtool.images.reference import parse_reference

CSV_GLOB = "*/manifests/*.clusterserviceversion.yaml"


def bundle_tags(bundles: Path, name: str) -> list[str]:
    """Tags of ``name`` (a repository) that CSVs under ``bundles/<version>/`` reference,
    in version-directory order."""
    wanted = parse_reference(name).name
    tags: dict[str, None] = {}
    for csv in sorted(bundles.glob(CSV_GLOB)):
        documents = yamlread.read(csv, single=True).documents
        for image in _deployment_images(documents[0] if documents else None):
            try:
                ref = parse_reference(image)
            except OlmtoolError:
                continue  # bundle validate reports it; here it is simply not ours
            if ref.name == wanted and ref.tag:
                tags[ref.tag] = None
    return list(tags)


def _deployment_images(csv: Any) -> Iterator[str]:
    deployments = _get(csv, "spec", "install", "spec", "deployments") or []
    for deployment in deployments if isinstance(deployments, list) else []:
        pod = _get(deployment, "spec", "template", "spec") or {}
        for key in ("initContainers", "containers"):
            containers = _get(pod, key) or []
            for container in containers if isinstance(containers, list) else []:
                image = _get(container, "image")
                if isinstance(image, str):
                    yield image


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
