"""Differential: ``olmtool catalog serve`` refuses a catalog exactly when ``opm serve`` does.

Serving builds its index from the catalog model and refuses only what opm refuses
(olmtool's extra checks never block it). Real opm v1.26 from ``../shared/peers`` (or
``$OPM``) builds its serve cache from the same catalogs; without it these tests skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from olmtool.errors import InputError
from olmtool.serve import build_index

from .conftest import ETCD, write_catalog

REPO = Path(__file__).resolve().parents[2]
OPM = Path(os.environ.get("OPM") or REPO.parent / "shared" / "peers" / "opm")

pytestmark = pytest.mark.skipif(
    not OPM.is_file(), reason=f"no opm at {OPM} (the reference binaries are not on this machine)"
)


def _variant(index: int, **changes: object) -> list[dict]:
    blobs = [dict(b) for b in ETCD[:6]]  # package, channels stable/alpha, three bundles
    blobs[index] = {**blobs[index], **changes}
    return blobs


BAD_GVK = {"type": "olm.gvk", "value": {"group": "Not_A_Group", "kind": "X", "version": "v1"}}

CASES = {
    "valid": _variant(0),
    # olmtool validate's extra "gvk" warning: opm serves it, so olmtool does too
    "invalid-gvk": _variant(5, properties=[*ETCD[5]["properties"], BAD_GVK]),
    "default-channel-missing": _variant(0, defaultChannel="beta"),
    "two-heads": _variant(
        1, entries=[{"name": "etcdoperator.v0.9.2"}, {"name": "etcdoperator.v0.9.4"}]
    ),
    "unknown-package": _variant(2, package="nope"),
    "bundle-in-no-channel": _variant(3, name="etcdoperator.v9"),
}


def _write(root: Path, blobs: list[dict]) -> Path:
    (root / "etcd").mkdir(parents=True)
    text = "".join(json.dumps(blob, indent=2) + "\n" for blob in blobs)
    (root / "etcd" / "catalog.json").write_text(text)
    return root


def _opm_serves(root: Path, cache: Path) -> bool:
    done = subprocess.run(
        [str(OPM), "serve", str(root), "--cache-dir", str(cache), "--cache-only"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode == 0


def _olmtool_serves(root: Path) -> bool:
    try:
        build_index(root).close()
    except InputError:
        return False
    return True


@pytest.mark.parametrize("case", sorted(CASES))
def test_serve_refuses_exactly_what_opm_serve_refuses(case: str, tmp_path: Path) -> None:
    root = _write(tmp_path / "catalog", CASES[case])
    opm = _opm_serves(root, tmp_path / "opm-cache")
    assert _olmtool_serves(root) is opm, f"opm serve {'accepts' if opm else 'refuses'} {case}"


def test_the_one_documented_difference_a_bundle_without_image_or_objects(
    tmp_path: Path,
) -> None:
    """opm refuses a bundle with neither an image nor olm.bundle.object properties;
    olmtool serves it (its CSV is synthesized from olm.csv.metadata), as it always has.
    More lenient, never stricter: this pins that it stays the only difference here."""
    root = write_catalog(tmp_path / "catalog")  # prometheusoperator.0.27.0 has no image
    assert not _opm_serves(root, tmp_path / "opm-cache")
    assert _olmtool_serves(root)
