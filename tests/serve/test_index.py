"""The catalog index: what it keeps, what it refuses to load, and its cache directory."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from olmtool.catalog import validate_catalog
from olmtool.errors import InputError
from olmtool.serve import NotFoundError, build_index
from olmtool.serve.grpc_server import UnreadableBundleError, bundle_message
from olmtool.serve.index import DIGEST_FILE, INDEX_FILE, STORE_FILE

from .conftest import ETCD, write_catalog


def test_index_keeps_summaries_not_payloads(catalog: Path) -> None:
    index = build_index(catalog)
    try:
        catalog_bytes = sum(p.stat().st_size for p in catalog.rglob("*") if p.is_file())
        kept = len(pickle.dumps(index.data))
        assert kept < catalog_bytes / 3  # the base64 CSVs and CRDs stay in the blob store
        bundle = index.bundle("etcd", "etcdoperator.v0.9.4")
        assert bundle.version == "0.9.4"
        assert ("etcd.database.coreos.com", "v1beta2", "EtcdCluster") in bundle.provides
        assert index.channel("etcd", "stable").head == "etcdoperator.v0.9.4"
        assert index.bundle_count == 5 and not index.cached
        with pytest.raises(NotFoundError, match='package "etcd", channel "nope" not found'):
            index.channel("etcd", "nope")
    finally:
        index.close()


def test_one_file_catalog_and_object_refs(tmp_path: Path) -> None:
    """A catalog may be one JSON file; olm.bundle.object may name a file by ref."""
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "csv.yaml").write_text(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n"
        "metadata:\n  name: etcdoperator.v0.9.0\n"
    )
    bundle = dict(ETCD[3], properties=[*ETCD[3]["properties"][:2]])
    bundle["properties"].append({"type": "olm.bundle.object", "value": {"ref": "objects/csv.yaml"}})
    channel = {"schema": "olm.channel", "name": "stable", "package": "etcd"}
    channel["entries"] = [{"name": "etcdoperator.v0.9.0"}]
    blobs = [ETCD[0], channel, bundle]
    (tmp_path / "index.json").write_text("".join(json.dumps(b) for b in blobs))
    index = build_index(tmp_path / "index.json")
    try:
        summary = index.channel("etcd", "stable")
        message = bundle_message(index, summary, summary.entries["etcdoperator.v0.9.0"])
        assert json.loads(message.csvJson)["metadata"]["name"] == "etcdoperator.v0.9.0"
    finally:
        index.close()


def test_undecodable_objects_fail_the_request_not_the_start(tmp_path: Path) -> None:
    """Objects are decoded per request; a broken one names its bundle."""
    bundle = dict(ETCD[3], properties=[*ETCD[3]["properties"][:2]])
    bundle["properties"].append({"type": "olm.bundle.object", "value": {"data": "%%%"}})
    channel = dict(ETCD[1], entries=[{"name": "etcdoperator.v0.9.0"}])
    (tmp_path / "c.json").write_text("".join(json.dumps(b) for b in [ETCD[0], channel, bundle]))
    index = build_index(tmp_path)
    try:
        summary = index.channel("etcd", "stable")
        entry = summary.entries["etcdoperator.v0.9.0"]
        with pytest.raises(
            UnreadableBundleError, match=r'"etcdoperator.v0.9.0": olm.bundle.object\[0\]'
        ):
            bundle_message(index, summary, entry)
        assert bundle_message(index, summary, entry, listing=True).csvJson == ""
    finally:
        index.close()


def _bad_catalog(tmp_path: Path, blobs: list[dict], *, raw: str | None = None) -> Path:
    (tmp_path / "etcd").mkdir()
    text = raw if raw is not None else "".join(json.dumps(b, indent=2) + "\n" for b in blobs)
    (tmp_path / "etcd" / "catalog.json").write_text(text)
    return tmp_path


def _with(index: int, **changes: object) -> list[dict]:
    blobs = [dict(b) for b in ETCD[:6]]
    blobs[index].update(changes)
    return blobs


def _line_of(blobs: list[dict], number: int) -> int:
    """The line where blob ``number`` starts in the file _bad_catalog writes."""
    return 1 + sum(json.dumps(b, indent=2).count("\n") + 1 for b in blobs[:number])


# The first error `olmtool catalog validate` lists, with its check id: serve refuses a
# catalog with the same findings (InvalidCatalogError.report holds all of them).
@pytest.mark.parametrize(
    ("blobs", "blob", "message"),
    [
        (_with(1, name=3), 1, 'olm.channel "3": name: expected a string'),
        (
            _with(1, package="nope"),
            0,
            r'package "etcd": default channel "stable" not found in channels list '
            r"\[default-channel\] \(and 2 more errors\)",
        ),
        (_with(0, defaultChannel="beta"), 0, 'default channel "beta" not found'),
        (
            _with(2, entries=[{"name": "etcdoperator.v0.9.2"}, {"name": "etcdoperator.v0.9.4"}]),
            2,
            "multiple channel heads found in graph: etcdoperator.v0.9.2, etcdoperator.v0.9.4",
        ),
        (
            _with(5, properties=[{"type": "olm.gvk", "value": {"kind": "X", "version": "v1"}}]),
            5,
            "must be exactly one property of type 'olm.package', found 0",
        ),
        (_with(3, name="etcdoperator.v9"), 3, 'bundle "etcdoperator.v9": bundle is not in any'),
        ([*ETCD[:6], ETCD[4]], 6, r'bundle "etcdoperator.v0.9.2": duplicate bundle \(first at'),
    ],
)
def test_load_errors_name_file_and_line(
    tmp_path: Path, blobs: list[dict], blob: int, message: str
) -> None:
    with pytest.raises(InputError, match=message) as caught:
        build_index(_bad_catalog(tmp_path, blobs))
    assert caught.value.path is not None and caught.value.path.endswith("etcd/catalog.json")
    assert caught.value.line == _line_of(blobs, blob)


def test_parse_errors_name_the_line(tmp_path: Path) -> None:
    raw = '{"schema": "x.note"}\n\n{"schema": "olm.channel" "name": 1}\n'
    with pytest.raises(InputError, match="invalid JSON: Expecting ','") as caught:
        build_index(_bad_catalog(tmp_path, [], raw=raw))
    assert caught.value.line == 3


def test_cache_dir_is_reused_until_the_catalog_changes(tmp_path: Path) -> None:
    root = write_catalog(tmp_path / "catalog")
    cache = tmp_path / "cache"
    first = build_index(root, cache_dir=cache)
    first.close()
    assert {p.name for p in cache.iterdir()} == {DIGEST_FILE, INDEX_FILE, STORE_FILE}
    again = build_index(root, cache_dir=cache)
    try:
        assert again.cached and again.digest == first.digest
        assert again.channel("etcd", "stable").head == "etcdoperator.v0.9.4"
        line = again.store.read(again.data.blobs[0].offset, again.data.blobs[0].length)
        assert json.loads(line)["name"] == "etcd"
    finally:
        again.close()
    catalog_file = root / "etcd" / "catalog.json"
    catalog_file.write_text(catalog_file.read_text() + "\n")  # any byte changes the digest
    rebuilt = build_index(root, cache_dir=cache)
    try:
        assert not rebuilt.cached and rebuilt.digest != first.digest
    finally:
        rebuilt.close()


def test_what_only_olmtool_objects_to_is_served(tmp_path: Path) -> None:
    """An invalid olm.gvk is a warning of validate's "extra" checks (opm lets it through):
    `opm serve` serves such a catalog, so olmtool serves it too."""
    blobs = [dict(b) for b in ETCD[:6]]
    bad_gvk = {"type": "olm.gvk", "value": {"group": "Not_A_Group", "kind": "X", "version": "v1"}}
    blobs[5] = {**blobs[5], "properties": [*blobs[5]["properties"], bad_gvk]}
    root = _bad_catalog(tmp_path, blobs)
    report = validate_catalog(root)
    assert not report.errors and "gvk" in {f.check for f in report.warnings}
    index = build_index(root)
    try:
        assert index.bundle_count == 3
    finally:
        index.close()
