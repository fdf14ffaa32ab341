"""``catalog add``: one bundle into its package's channels in an existing catalog.

>>> result = catalog_add("bundle/etcd-operator/0.4.0", catalog=Path("catalog"))
>>> result.channels
['alpha']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from olmtool.catalog import AddResult, BundlePayload, CatalogFormat, add_bundle


def catalog_add(
    bundle: str | Path,
    *,
    catalog: Path = Path("catalog"),
    channels: Sequence[str] = (),
    image: str | None = None,
    fmt: CatalogFormat | None = None,
    payload: BundlePayload = BundlePayload.objects,
) -> AddResult:
    """Add ``bundle`` (a directory, OCI layout or image) to ``catalog``, using its CSV's
    replaces/skips/skipRange; the package is validated before anything is written."""
    return add_bundle(
        catalog, str(bundle), image=image, channels=list(channels) or None, fmt=fmt, payload=payload
    )
