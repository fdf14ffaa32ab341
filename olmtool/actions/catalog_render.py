"""``catalog render``: bundles and catalogs (directories, layouts, images) as FBC blobs.

>>> config = catalog_render(["bundle/etcd-operator/0.3.0"])
>>> [b.name for b in config.bundles]
['etcd-operator.v0.3.0']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from olmtool.catalog import BundlePayload, render, render_bundle_dir
from olmtool.catalog import declcfg as dc
from olmtool.errors import ArgumentError


def catalog_render(
    sources: Sequence[str | Path],
    *,
    payload: BundlePayload = BundlePayload.objects,
    image: str | None = None,
) -> dc.DeclarativeConfig:
    """What ``opm render`` prints for ``sources``; ``image`` is the pull spec to record
    for a single bundle directory."""
    if image is None:
        return render(sources, payload=payload)
    if len(sources) != 1:
        raise ArgumentError("needs exactly one bundle directory", argument="image")
    rendered = render_bundle_dir(Path(sources[0]), image=image, payload=payload)
    return dc.DeclarativeConfig(bundles=[rendered.bundle])
