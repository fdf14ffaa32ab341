"""The strings of served bundles are opm v1.26's bytes (``olmtool.serve.apitext``).

Unit tests pin the rules (objects as ``yaml.ToJSON`` leaves them, property values as opm
holds them after loading, dependencies as its property encoder writes them). The
differential test serves one catalog with the real ``opm serve`` v1.26 from
``../shared/peers`` (skipped without it) and with ``olmtool catalog serve``, calls every
RPC on both and compares the messages byte for byte: with ``--opm-compat 1.26`` they are
identical; by default they differ only where newer opm adds something (deprecations, a
CSV synthesized from olm.csv.metadata, which is then not listed as a property).

The catalog is written for these tests: JSON (indented, non-ASCII written raw, a literal
U+2028, numbers in several spellings, ``\\u003c`` escapes) and YAML packages; objects as
JSON with leading space, as YAML, as a list and by file reference; HTML characters,
U+2028/2029, emoji and a long description everywhere a string goes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from olmtool.catalog import OpmCompat
from olmtool.catalog import declcfg as dc
from olmtool.catalog.opmtext import raw_property_texts
from olmtool.ports import free_port
from olmtool.proto import registry_pb2 as pb
from olmtool.proto import registry_pb2_grpc as pb_grpc
from olmtool.serve import RunningServer, start_server
from olmtool.serve.apitext import is_csv, object_text, package_dependency, property_text

REPO = Path(__file__).resolve().parents[2]
OPM = Path(os.environ.get("OPM") or REPO.parent / "shared" / "peers" / "opm")
requires_opm = pytest.mark.skipif(
    not OPM.is_file(), reason=f"no opm at {OPM} (the reference binaries are not on this machine)"
)

TEXT = "Gizmos <b>fast</b> & cheap \u2028 sep \u2029 \u00dcn\u00efc\u00f6d\u00e9 \U0001f680 tab\t"
LONG = TEXT + "a long line " * 400


# --- the rules ----------------------------------------------------------------------------


def test_json_objects_are_served_as_written() -> None:
    data = '\n  {"kind": "ClusterServiceVersion", "b": "<&>\u2028", "a": 1.0}\n'
    assert object_text(data.encode()) == data
    assert is_csv(data)
    assert object_text("\u00a0{not json".encode()) == "\u00a0{not json"  # not even checked
    assert not is_csv("{not json ClusterServiceVersion")


def test_yaml_objects_are_json_marshal_of_the_yaml() -> None:
    data = b"kind: ClusterServiceVersion\nz: '<&>'\na: 1.0\nn: 1.5\nbig: 100000000000000000000000\n"
    expected = (
        '{"a":1,"big":1e+23,"false":1.5,"kind":"ClusterServiceVersion","z":"\\u003c\\u0026\\u003e"}'
    )
    assert object_text(data) == expected
    assert object_text(b"- a: 1\n- b: <x>\n") == '[{"a":1},{"b":"\\u003cx\\u003e"}]'


def test_property_values_as_opm_holds_them() -> None:
    value = {"z": "<&>\u2028", "a": [1.5, 12345678901234567890]}
    prop = dc.Property("example.dev/x", value)
    # from YAML: json.Marshal (sorted keys), HTML characters unescaped again by opm's loader
    assert property_text(prop, yaml_source=True) == (
        '{"a":[1.5,12345678901234567890],"z":"<&>\\u2028"}'
    )
    # from JSON: the text as written, compacted
    blob = (
        '{"schema": "olm.bundle", "Properties": [\n'
        '  {"type": "a", "value": {"x": 1.50, "y": "\\u003cb\\u003e \\u00fc \u2028 \\/"}},\n'
        '  {"type": "b", "value": "v", "VALUE": [1E5, -0.0]}],\n'
        ' "properties": [{"type": "c", "value": {"k" : "v"}}]}'
    )
    assert raw_property_texts(blob) == ['{"k":"v"}']  # the last "properties" wins, as in Go
    first = blob[: blob.index(',\n "properties"')] + "}"
    assert raw_property_texts(first) == [
        '{"x":1.50,"y":"<b> \\u00fc \u2028 \\/"}',
        "[1E5,-0.0]",
    ]


def test_package_dependency_is_not_html_escaped() -> None:
    value = {"PackageName": "etcd", "versionRange": ">=0.9.0 <1.0.0 && \u2028"}
    expected = '{"packageName":"etcd","version":">=0.9.0 <1.0.0 && \\u2028"}'
    assert package_dependency(value) == expected


# --- the catalog --------------------------------------------------------------------------


def _object(text: str) -> dict[str, Any]:
    return {
        "type": "olm.bundle.object",
        "value": {"data": base64.b64encode(text.encode()).decode()},
    }


def _csv(name: str, version: str) -> dict[str, Any]:
    return {
        "kind": "ClusterServiceVersion",
        "apiVersion": "operators.coreos.com/v1alpha1",
        "metadata": {"name": name, "annotations": {"alm-examples": '[{"a": 1}]', "x": "<&>"}},
        "spec": {"version": version, "description": LONG, "n": [1.0, 1e21, 2**63, 0.1, 1e-7]},
    }


CRD_YAML = (
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    "metadata:\n  name: gizmos.example.dev\n"
    "  annotations: {z: '<&>', a: \"\\u2028 \u00dc\", n: 1.0, big: 100000000000000000000000}\n"
    "spec: {group: example.dev, on: yes}\n"
)
CUSTOM = {
    "type": "example.dev/custom",
    "value": {"z": TEXT, "a": [1.0, 1e21, 2**63, 0.000001, -0.0], "m": {"y": 1, "b": None}},
}
CSV_METADATA = {
    "displayName": "Gizmo <1.1>",
    "description": LONG,
    "annotations": {"a": "<&>"},
    "keywords": ["a<b"],
    "provider": {"name": "Ex & co"},
    "installModes": [{"type": "AllNamespaces", "supported": True}],
    "links": [{"name": "d", "url": "https://x.dev/?a=1&b=2"}],
}


def _gizmo() -> list[dict[str, Any]]:
    package = {"packageName": "gizmo"}
    return [
        {
            "schema": "olm.package",
            "name": "gizmo",
            "defaultChannel": "stable",
            "description": "Gizmo <pkg> & co \u2028 \u00dc",
            "icon": {"base64data": base64.b64encode(b"<svg/>").decode(), "mediatype": "image/svg"},
        },
        {
            "schema": "olm.channel",
            "name": "stable",
            "package": "gizmo",
            "entries": [
                {"name": "gizmo.v1.0.0"},
                {"name": "gizmo.v1.1.0", "replaces": "gizmo.v1.0.0", "skipRange": "<1.1.0"},
                {"name": "gizmo.v1.2.0", "replaces": "gizmo.v1.1.0", "skips": ["gizmo.v0.9.0"]},
            ],
        },
        {
            "schema": "olm.bundle",
            "name": "gizmo.v1.0.0",
            "package": "gizmo",
            "image": "quay.example.dev/gizmo:1.0.0",
            "properties": [
                {"type": "olm.package", "value": {**package, "version": "1.0.0"}},
                {
                    "type": "olm.gvk",
                    "value": {"kind": "Gizmo", "group": "example.dev", "version": "v1"},
                },
                CUSTOM,
                _object(
                    "\n  "
                    + json.dumps(_csv("gizmo.v1.0.0", "1.0.0"), ensure_ascii=False, indent=1)
                    + "\n"
                ),
                _object(CRD_YAML),
                _object("- a: 1\n- b: <x>\n"),
            ],
        },
        {
            "schema": "olm.bundle",
            "name": "gizmo.v1.1.0",
            "package": "gizmo",
            "image": "quay.example.dev/gizmo:1.1.0",
            "properties": [
                {"type": "olm.package", "value": {**package, "version": "1.1.0"}},
                {
                    "type": "olm.gvk.required",
                    "value": {"version": "v1", "group": "example.dev", "kind": "Widget"},
                },
                {
                    "type": "olm.package.required",
                    "value": {"packageName": "widget", "versionRange": ">=1.0.0 <2.0.0"},
                },
                {"type": "olm.csv.metadata", "value": CSV_METADATA},
            ],
            "relatedImages": [{"name": "op", "image": "quay.example.dev/op:1.1"}],
        },
        {
            "schema": "olm.bundle",
            "name": "gizmo.v1.2.0",
            "package": "gizmo",
            "image": "quay.example.dev/gizmo:1.2.0",
            "properties": [
                {"type": "olm.package", "value": {**package, "version": "1.2.0"}},
                {"type": "olm.bundle.object", "value": {"ref": "objects/csv.yaml"}},
                {"type": "olm.bundle.object", "value": {"ref": "objects/crd.json"}},
            ],
        },
        {
            "schema": "olm.deprecations",
            "package": "gizmo",
            "entries": [
                {"reference": {"schema": "olm.bundle", "name": "gizmo.v1.0.0"}, "message": "old"}
            ],
        },
    ]


def _widget() -> list[dict[str, Any]]:
    return [
        {"schema": "olm.package", "name": "widget", "defaultChannel": "fast"},
        {
            "schema": "olm.channel",
            "name": "fast",
            "package": "widget",
            "entries": [{"name": "widget.v1.0.0"}],
        },
        {
            "schema": "olm.bundle",
            "name": "widget.v1.0.0",
            "package": "widget",
            "image": "quay.example.dev/widget:1.0.0",
            "properties": [
                {"type": "olm.package", "value": {"packageName": "widget", "version": "1.0.0"}},
                {
                    "type": "olm.gvk",
                    "value": {"group": "example.dev", "kind": "Widget", "version": "v1"},
                },
                {
                    "type": "example.dev/yaml",
                    "value": {"z": TEXT, "n": 1.5, "on": "yes", "a": [3, 2, 1]},
                },
                _object(
                    json.dumps(
                        {
                            "kind": "ClusterServiceVersion",
                            "metadata": {"name": "widget.v1.0.0"},
                            "spec": {"d": LONG},
                        }
                    )
                ),
            ],
        },
    ]


def _quirks() -> list[dict[str, Any]]:
    """CSVs that are JSON but that opm v1.26 reads as YAML to find them (or not)."""
    csv = _csv("quirk.v1.0.0", "1.0.0")
    texts = {
        "1.0.0": json.dumps(csv),  # emoji as a surrogate pair escape: YAML refuses it
        "1.0.1": json.dumps(csv, ensure_ascii=False, indent="\t"),  # tabs inside {}: fine
        "1.0.2": "\t" + json.dumps(csv, ensure_ascii=False),  # a tab before {: refused
        "1.0.3": json.dumps({**csv, "x": "a\ufeffb\x7fc"}, ensure_ascii=False),
        "1.0.4": json.dumps({**csv, "x": "line\u2028separator"}, ensure_ascii=False),
        "1.0.5": json.dumps({**csv, "s": "\\/ \\b"}, ensure_ascii=False),
    }
    blobs: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": "quirk", "defaultChannel": "a"},
        {
            "schema": "olm.channel",
            "name": "a",
            "package": "quirk",
            "entries": [
                {"name": f"quirk.v{v}", **({"replaces": f"quirk.v{p}"} if p else {})}
                for p, v in zip(["", *texts], texts, strict=False)
            ],
        },
    ]
    for version, text in texts.items():
        blobs.append(
            {
                "schema": "olm.bundle",
                "name": f"quirk.v{version}",
                "package": "quirk",
                "image": f"quay.example.dev/quirk:{version}",
                "properties": [
                    {"type": "olm.package", "value": {"packageName": "quirk", "version": version}},
                    _object(text),
                ],
            }
        )
    return blobs


def write_catalog(root: Path) -> Path:
    (root / "gizmo" / "objects").mkdir(parents=True)
    (root / "widget").mkdir()
    gizmo = "".join(json.dumps(b, indent=4, ensure_ascii=False) + "\n" for b in _gizmo())
    # the text \u003c where a value has "<": opm's loader turns it back into "<"
    gizmo = gizmo.replace('"Gizmos <b>', '"Gizmos \\u003cb>', 1)
    (root / "gizmo" / "catalog.json").write_text(gizmo)
    (root / "gizmo" / "objects" / "csv.yaml").write_text(
        "kind: ClusterServiceVersion\napiVersion: operators.coreos.com/v1alpha1\n"
        'metadata: {name: gizmo.v1.2.0}\nspec:\n  description: "<i>x</i> & \\u2028 \u00dc"\n'
        "  version: 1.2.0\n"
    )
    (root / "gizmo" / "objects" / "crd.json").write_text(
        '{"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",'
        ' "metadata": {"name": "g"}, "x": "<&>\u2028"}\n'
    )
    (root / ".indexignore").write_text("objects/\n")
    (root / "quirk").mkdir()
    (root / "quirk" / "catalog.json").write_text("".join(json.dumps(b) + "\n" for b in _quirks()))
    (root / "widget" / "catalog.yaml").write_text(
        yaml.safe_dump_all(_widget(), explicit_start=True, sort_keys=False, allow_unicode=True)
    )
    return root


# --- the differential test ----------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("bytes") / "catalog")


@pytest.fixture(scope="module")
def opm_stub(catalog: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not OPM.is_file():
        pytest.skip(f"no opm at {OPM} (the reference binaries are not on this machine)")
    work = tmp_path_factory.mktemp("opm")
    port = free_port()
    command = [str(OPM), "serve", str(catalog), "-p", str(port), "--cache-dir", str(work / "cache")]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(work), "TMPDIR": str(work)}
    log = (work / "opm.log").open("w")
    process = subprocess.Popen(
        [*command, "-t", str(work / "termination-log")],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=work,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            ready = grpc.channel_ready_future(channel)
            while not ready.done():
                assert process.poll() is None, (work / "opm.log").read_text()
                with contextlib.suppress(grpc.FutureTimeoutError):
                    ready.result(timeout=0.5)
            yield pb_grpc.RegistryStub(channel)
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module", params=[OpmCompat.v1_26, OpmCompat.latest])
def ours(catalog: Path, request: pytest.FixtureRequest) -> Iterator[tuple[OpmCompat, Any]]:
    server: RunningServer = start_server(
        catalog, grpc_port=0, http_port=None, opm_compat=request.param
    )
    with server, grpc.insecure_channel(server.grpc_address) as channel:
        yield request.param, pb_grpc.RegistryStub(channel)


def calls(stub: Any) -> list[tuple[str, Any, bool]]:
    """Every RPC with every request the catalog makes sense of (taken from opm's answers)."""
    found: list[tuple[str, Any, bool]] = [
        ("ListPackages", pb.ListPackageRequest(), True),
        ("ListBundles", pb.ListBundlesRequest(), True),
    ]
    for package in stub.ListPackages(pb.ListPackageRequest()):
        found.append(("GetPackage", pb.GetPackageRequest(name=package.name), False))
        for channel in stub.GetPackage(pb.GetPackageRequest(name=package.name)).channels:
            request = pb.GetBundleInChannelRequest(pkgName=package.name, channelName=channel.name)
            found.append(("GetBundleForChannel", request, False))
    for bundle in stub.ListBundles(pb.ListBundlesRequest()):
        names = {"pkgName": bundle.packageName, "channelName": bundle.channelName}
        found.append(("GetBundle", pb.GetBundleRequest(csvName=bundle.csvName, **names), False))
        found.append(
            (
                "GetBundleThatReplaces",
                pb.GetReplacementRequest(csvName=bundle.csvName, **names),
                False,
            )
        )
        found.append(
            (
                "GetChannelEntriesThatReplace",
                pb.GetAllReplacementsRequest(csvName=bundle.csvName),
                True,
            )
        )
        for api in bundle.providedApis:
            gvk = {"group": api.group, "version": api.version, "kind": api.kind}
            found.append(("GetChannelEntriesThatProvide", pb.GetAllProvidersRequest(**gvk), True))
            found.append(
                ("GetLatestChannelEntriesThatProvide", pb.GetLatestProvidersRequest(**gvk), True)
            )
            found.append(
                ("GetDefaultBundleThatProvides", pb.GetDefaultProviderRequest(**gvk), False)
            )
    return found


def answer(stub: Any, method: str, request: Any, stream: bool) -> dict[str, bytes] | str:
    """The messages as bytes by what they are about (a stream's order is a map's in opm),
    or the fact that the call failed."""
    try:
        result = getattr(stub, method)(request)
        messages = list(result) if stream else [result]
    except grpc.RpcError:
        return "failed"
    return {_key(m): m.SerializeToString(deterministic=True) for m in messages}


def _key(message: Any) -> str:
    if isinstance(message, pb.Bundle):
        return f"{message.packageName}/{message.channelName}/{message.csvName}"
    return message.SerializeToString(deterministic=True).hex()


# What newer opm adds (--opm-compat latest): deprecation messages, and for a bundle with
# olm.csv.metadata and no CSV object a synthesized CSV instead of the property.
NEWER_ONLY = {"deprecation", "csvJson", "object", "properties"}


@requires_opm
def test_served_bundles_are_opm_v1_26_bytes(opm_stub: Any, ours: tuple[OpmCompat, Any]) -> None:
    compat, stub = ours
    compared = differing_bundles = 0
    for method, request, stream in calls(opm_stub):
        theirs = answer(opm_stub, method, request, stream)
        mine = answer(stub, method, request, stream)
        where = (method, str(request))
        if isinstance(theirs, str) or isinstance(mine, str):
            assert theirs == mine, where
            continue
        compared += 1
        assert sorted(mine) == sorted(theirs), where
        if compat is OpmCompat.v1_26:
            assert mine == theirs, where
            continue
        for key, data in theirs.items():
            if mine[key] == data:
                continue
            a, b = pb.Bundle.FromString(data), pb.Bundle.FromString(mine[key])
            fields = {f.name for f in pb.Bundle.DESCRIPTOR.fields}
            assert {f for f in fields if getattr(a, f) != getattr(b, f)} <= NEWER_ONLY, where
            differing_bundles += 1
    assert compared >= 20
    assert (differing_bundles > 0) is (compat is OpmCompat.latest)
