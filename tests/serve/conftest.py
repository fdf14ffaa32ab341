"""A small but complete file-based catalog, written as FBC files, and a server over it.

Two packages. etcd (JSON, 4-space indented like opm writes it): channels stable and alpha
with replaces, skips and a skipRange; bundles carrying their CSV and CRD as
olm.bundle.object; a deprecated channel and bundle; one opaque blob. prometheus (YAML):
a bundle with only olm.csv.metadata, olm.gvk.required and olm.package.required, and a
deprecated package. Both provide ServiceMonitor, to exercise the default-provider choice.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool.serve import RunningServer, start_server

ETCD_CLUSTER = {"group": "etcd.database.coreos.com", "kind": "EtcdCluster", "version": "v1beta2"}
SERVICE_MONITOR = {"group": "monitoring.coreos.com", "kind": "ServiceMonitor", "version": "v1"}
PROMETHEUS = {"group": "monitoring.coreos.com", "kind": "Prometheus", "version": "v1"}
ICON = {"base64data": base64.b64encode(b"<svg/>").decode(), "mediatype": "image/svg+xml"}


def _object(manifest: dict[str, Any]) -> dict[str, Any]:
    data = base64.b64encode(json.dumps(manifest).encode()).decode()
    return {"type": "olm.bundle.object", "value": {"data": data}}


def csv_manifest(name: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "annotations": {"alm-examples": "[]"}},
        "spec": {"version": version, "displayName": "etcd", "description": "a <b>db</b> & more"},
    }


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "etcdclusters.etcd.database.coreos.com"},
}


def etcd_bundle(version: str, *, monitor: bool = False) -> dict[str, Any]:
    name = f"etcdoperator.v{version}"
    properties = [
        {"type": "olm.gvk", "value": ETCD_CLUSTER},
        {"type": "olm.package", "value": {"packageName": "etcd", "version": version}},
    ]
    if monitor:
        properties.insert(1, {"type": "olm.gvk", "value": SERVICE_MONITOR})
    properties += [_object(csv_manifest(name, version)), _object(CRD)]
    return {
        "schema": "olm.bundle",
        "name": name,
        "package": "etcd",
        "image": f"quay.io/example/etcd-bundle:v{version}",
        "properties": properties,
        "relatedImages": [{"name": "", "image": f"quay.io/example/etcd-bundle:v{version}"}],
    }


ETCD = [
    {
        "schema": "olm.package",
        "name": "etcd",
        "defaultChannel": "stable",
        "icon": ICON,
        "description": "A message about etcd",
    },
    {
        "schema": "olm.channel",
        "name": "stable",
        "package": "etcd",
        "entries": [
            {"name": "etcdoperator.v0.9.0"},
            {"name": "etcdoperator.v0.9.2", "replaces": "etcdoperator.v0.9.0"},
            {
                "name": "etcdoperator.v0.9.4",
                "replaces": "etcdoperator.v0.9.2",
                "skips": ["etcdoperator.v0.9.0"],
                "skipRange": ">=0.9.0 <0.9.4",
            },
        ],
    },
    {
        "schema": "olm.channel",
        "name": "alpha",
        "package": "etcd",
        "entries": [
            {"name": "etcdoperator.v0.9.2"},
            {
                "name": "etcdoperator.v0.9.4",
                "replaces": "etcdoperator.v0.9.2",
                "skips": ["etcdoperator.v0.9.0"],
            },
        ],
    },
    etcd_bundle("0.9.0"),
    etcd_bundle("0.9.2"),
    etcd_bundle("0.9.4", monitor=True),
    {"schema": "example.com.note", "package": "etcd", "name": "readme", "text": "hello"},
    {
        "schema": "olm.deprecations",
        "package": "etcd",
        "entries": [
            {"reference": {"schema": "olm.channel", "name": "alpha"}, "message": "alpha is over"},
            {
                "reference": {"schema": "olm.bundle", "name": "etcdoperator.v0.9.0"},
                "message": "0.9.0 has a CVE",
            },
        ],
    },
]

CSV_METADATA = {
    "annotations": {"capabilities": "Basic Install"},
    "displayName": "Prometheus Operator",
    "description": "Manages Prometheus",
    "installModes": [{"type": "AllNamespaces", "supported": True}],
    "keywords": ["monitoring"],
    "provider": {"name": "Example"},
}

PROMETHEUS_BLOBS = [
    {"schema": "olm.package", "name": "prometheus", "defaultChannel": "beta"},
    {
        "schema": "olm.channel",
        "name": "beta",
        "package": "prometheus",
        "entries": [
            {"name": "prometheusoperator.0.22.2"},
            {"name": "prometheusoperator.0.27.0", "replaces": "prometheusoperator.0.22.2"},
        ],
    },
    {
        "schema": "olm.bundle",
        "name": "prometheusoperator.0.22.2",
        "package": "prometheus",
        "image": "quay.io/example/prometheus-bundle:0.22.2",
        "properties": [
            {"type": "olm.gvk", "value": PROMETHEUS},
            {"type": "olm.package", "value": {"packageName": "prometheus", "version": "0.22.2"}},
            _object(csv_manifest("prometheusoperator.0.22.2", "0.22.2")),
        ],
    },
    {
        "schema": "olm.bundle",
        "name": "prometheusoperator.0.27.0",
        "package": "prometheus",
        "image": "",
        "properties": [
            {"type": "olm.gvk", "value": PROMETHEUS},
            {"type": "olm.gvk", "value": SERVICE_MONITOR},
            {"type": "olm.gvk.required", "value": ETCD_CLUSTER},
            {"type": "olm.package", "value": {"packageName": "prometheus", "version": "0.27.0"}},
            {
                "type": "olm.package.required",
                "value": {"packageName": "etcd", "versionRange": ">=0.9.0 <1.0.0"},
            },
            {"type": "olm.maxOpenShiftVersion", "value": "4.8"},
            {"type": "olm.csv.metadata", "value": CSV_METADATA},
        ],
        "relatedImages": [{"name": "operator", "image": "quay.io/example/prometheus:0.27.0"}],
    },
    {
        "schema": "olm.deprecations",
        "package": "prometheus",
        "entries": [{"reference": {"schema": "olm.package"}, "message": "use kube-prometheus"}],
    },
]


def write_catalog(root: Path) -> Path:
    """The fixture catalog as opm lays it out: one directory per package."""
    (root / "etcd").mkdir(parents=True)
    (root / "prometheus").mkdir()
    (root / "etcd" / "catalog.json").write_text(
        "".join(json.dumps(blob, indent=4) + "\n" for blob in ETCD)
    )
    (root / "prometheus" / "catalog.yaml").write_text(
        yaml.safe_dump_all(PROMETHEUS_BLOBS, explicit_start=True, sort_keys=False)
    )
    (root / "README.md").write_text("not a catalog file\n")
    (root / ".indexignore").write_text("README.md\n")
    return root


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("catalogs") / "operatorhub")


@pytest.fixture(scope="module")
def server(catalog: Path) -> Iterator[RunningServer]:
    lines: list[str] = []
    with start_server(catalog, grpc_port=0, http_port=0, log=lines.append) as running:
        running.log_lines = lines  # type: ignore[attr-defined]
        yield running


def write_big_catalog(root: Path, bundles: int = 60, object_size: int = 32 * 1024) -> Path:
    """One package of ``bundles`` bundles, each carrying an object of ``object_size``
    bytes: a body (or a ListBundles stream) too big to fit in socket buffers at once."""
    name = "big"
    blobs: list[dict[str, Any]] = [{"schema": "olm.package", "name": name, "defaultChannel": "a"}]
    entries: list[dict[str, str]] = []
    for number in range(bundles):
        bundle = f"big.v0.0.{number}"
        entries.append({"name": bundle, **({"replaces": entries[-1]["name"]} if entries else {})})
        manifest = {"kind": "ConfigMap", "data": {"filler": "x" * object_size}}
        blobs.append(
            {
                "schema": "olm.bundle",
                "name": bundle,
                "package": name,
                "image": "",
                "properties": [
                    {
                        "type": "olm.package",
                        "value": {"packageName": name, "version": f"0.0.{number}"},
                    },
                    _object(manifest),
                ],
            }
        )
    blobs.insert(1, {"schema": "olm.channel", "name": "a", "package": name, "entries": entries})
    (root / name).mkdir(parents=True)
    (root / name / "catalog.json").write_text("".join(json.dumps(blob) + "\n" for blob in blobs))
    return root
