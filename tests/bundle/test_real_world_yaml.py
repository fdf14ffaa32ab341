"""Bundles whose YAML real operators ship: unquoted timestamps and dates, repeated keys.

Go reads both (sigs.k8s.io/yaml: a timestamp is the text written, the last of repeated
keys wins), so olmtool must neither crash nor refuse. Fixtures under fixtures/ are the
widget-operator golden bundle with those features added.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from olmtool.actions import bundle_validate, catalog_render
from olmtool.catalog import BundlePayload, CatalogFormat, render_config
from olmtool.images import LocalRegistry, build_image, push
from tests.test_cli import cli

FIXTURES = Path(__file__).parent / "fixtures"
TIMESTAMPS = FIXTURES / "timestamps"
DUPLICATES = FIXTURES / "duplicate-keys"
CSV = "manifests/widget-operator.clusterserviceversion.yaml"
OPM = Path(__file__).resolve().parents[3] / "shared" / "peers" / "opm"


def _objects(rendered: dict[str, Any]) -> list[dict[str, Any]]:
    """The manifests of a rendered bundle blob's olm.bundle.object properties."""
    return [
        json.loads(base64.b64decode(p["value"]["data"]))
        for p in rendered["properties"]
        if p["type"] == "olm.bundle.object"
    ]


def _csv(rendered: dict[str, Any]) -> dict[str, Any]:
    (csv,) = [o for o in _objects(rendered) if o["kind"] == "ClusterServiceVersion"]
    return csv


def test_validate_reads_unquoted_timestamps_and_dates() -> None:
    report = bundle_validate(TIMESTAMPS, select=["all"])
    assert report.errors == []
    json.dumps(report.as_dict())  # -o json never meets a datetime


def test_render_keeps_timestamps_and_dates_as_written() -> None:
    (rendered,) = _blobs(render_config(catalog_render([str(TIMESTAMPS)]), CatalogFormat.json))
    annotations = _csv(rendered)["metadata"]["annotations"]
    assert annotations["createdAt"] == "2023-05-02T10:00:00Z"
    assert annotations["certified-on"] == "2024-01-31"
    assert _csv(rendered)["spec"]["description"] == "Makes widgets. Released 2024-01-31"
    metadata = catalog_render([str(TIMESTAMPS)], payload=BundlePayload.csv_metadata)
    (bundle,) = metadata.bundles
    (csv_metadata,) = [p.value for p in bundle.properties if p.type == "olm.csv.metadata"]
    assert csv_metadata["annotations"]["createdAt"] == "2023-05-02T10:00:00Z"


def test_cli_render_and_validate_exit_cleanly() -> None:
    rendered = cli("catalog", "render", str(TIMESTAMPS), "-o", "yaml", "--csv-metadata")
    assert rendered.returncode == 0, rendered.stderr
    assert "createdAt: '2023-05-02T10:00:00Z'" in rendered.stdout
    validated = cli("bundle", "validate", str(TIMESTAMPS), "-o", "json")
    assert validated.returncode == 0, validated.stderr
    assert json.loads(validated.stdout)["passed"]


def test_duplicate_keys_are_read_last_wins_and_differing_ones_warned() -> None:
    report = bundle_validate(DUPLICATES)
    assert report.errors == []
    (warning,) = [f for f in report.warnings if f.check == "loader/duplicate-key"]
    assert warning.file.endswith("manifests/widget-operator-metrics_v1_service.yaml")
    assert warning.line == 9 and "'port'" in warning.message
    # the CSV repeats `capabilities: Basic Install` with the same value: nothing to say
    assert not any(f.file.endswith(CSV) for f in report.findings if f.check.startswith("loader"))
    (rendered,) = _blobs(render_config(catalog_render([str(DUPLICATES)]), CatalogFormat.json))
    service = next(o for o in _objects(rendered) if o["kind"] == "Service")
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 9443}]


@pytest.mark.skipif(not OPM.exists(), reason="opm is not in ../shared/peers/opm")
@pytest.mark.parametrize("fixture", [TIMESTAMPS, DUPLICATES], ids=lambda p: p.name)
def test_render_matches_opm(fixture: Path, registry: LocalRegistry) -> None:
    """opm v1.26 renders bundle images only: push the fixture, render it with both."""
    files = {
        path.relative_to(fixture).as_posix(): path.read_bytes()
        for path in sorted(fixture.rglob("*"))
        if path.is_file() and path.relative_to(fixture).parts[0] in ("manifests", "metadata")
    }
    annotations = _annotations(fixture)
    ref = f"{registry.address}/real-world/{fixture.name}:1.2.0"
    push(build_image(files, annotations), ref)
    opm = subprocess.run(
        [str(OPM), "render", "--use-http", ref], capture_output=True, text=True, check=True
    )
    ours = render_config(catalog_render([ref]), CatalogFormat.json)
    assert [_objects(b) for b in _blobs(ours)] == [_objects(b) for b in _blobs(opm.stdout)]


def _annotations(fixture: Path) -> dict[str, str]:
    from olmtool import yamlread

    document = yamlread.load((fixture / "metadata" / "annotations.yaml").read_text())
    return {k: str(v) for k, v in document["annotations"].items()}


def _blobs(text: str) -> list[dict[str, Any]]:
    decoder, position, found = json.JSONDecoder(), 0, []
    while position < len(text.rstrip()):
        blob, end = decoder.raw_decode(text, position)
        found.append(blob)
        position = end
        while position < len(text) and text[position].isspace():
            position += 1
    return found
