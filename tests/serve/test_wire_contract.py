"""registry.proto is the wire contract: a client generated from it alone, at test time,
in a process that never imports olmtool, drives all ten RPCs of the real server."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from grpc_tools import protoc

import olmtool.proto
from olmtool.serve import RunningServer

from .conftest import ETCD_CLUSTER, SERVICE_MONITOR

PROTO = Path(olmtool.proto.__file__).parent / "registry.proto"

CLIENT = textwrap.dedent(
    """
    import json, sys
    import grpc
    from google.protobuf.json_format import MessageToDict
    import registry_pb2 as pb, registry_pb2_grpc as pb_grpc

    etcd_cluster, service_monitor = json.loads(sys.argv[2]), json.loads(sys.argv[3])
    stub = pb_grpc.RegistryStub(grpc.insecure_channel(sys.argv[1]))
    out = {"module": pb.__file__}

    def many(stream):
        return [MessageToDict(m) for m in stream]

    out["ListPackages"] = many(stub.ListPackages(pb.ListPackageRequest()))
    out["GetPackage"] = MessageToDict(stub.GetPackage(pb.GetPackageRequest(name="etcd")))
    out["GetBundle"] = MessageToDict(stub.GetBundle(pb.GetBundleRequest(
        pkgName="prometheus", channelName="beta", csvName="prometheusoperator.0.27.0")))
    out["GetBundleForChannel"] = MessageToDict(stub.GetBundleForChannel(
        pb.GetBundleInChannelRequest(pkgName="etcd", channelName="stable")))
    out["GetChannelEntriesThatReplace"] = many(stub.GetChannelEntriesThatReplace(
        pb.GetAllReplacementsRequest(csvName="etcdoperator.v0.9.2")))
    out["GetBundleThatReplaces"] = MessageToDict(stub.GetBundleThatReplaces(
        pb.GetReplacementRequest(csvName="etcdoperator.v0.9.2", pkgName="etcd",
                                 channelName="stable")))
    out["GetChannelEntriesThatProvide"] = many(stub.GetChannelEntriesThatProvide(
        pb.GetAllProvidersRequest(**service_monitor)))
    out["GetLatestChannelEntriesThatProvide"] = many(stub.GetLatestChannelEntriesThatProvide(
        pb.GetLatestProvidersRequest(**etcd_cluster)))
    out["GetDefaultBundleThatProvides"] = MessageToDict(stub.GetDefaultBundleThatProvides(
        pb.GetDefaultProviderRequest(**etcd_cluster)))
    out["ListBundles"] = many(stub.ListBundles(pb.ListBundlesRequest()))
    try:
        stub.GetPackage(pb.GetPackageRequest(name="missing"))
    except grpc.RpcError as exc:
        out["missing"] = [exc.code().name, exc.details()]
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def answers(server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    client = tmp_path_factory.mktemp("client")
    include = Path(protoc.__file__).parent / "_proto"
    status = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO.parent}",
            f"-I{include}",
            f"--python_out={client}",
            f"--grpc_python_out={client}",
            str(PROTO),
        ]
    )
    assert status == 0
    (client / "client.py").write_text(CLIENT)
    done = subprocess.run(
        [
            sys.executable,
            "client.py",
            server.grpc_address,
            json.dumps(ETCD_CLUSTER),
            json.dumps(SERVICE_MONITOR),
        ],
        cwd=client,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert Path(out["module"]).parent == client  # not olmtool's committed stubs
    return out


def test_package_rpcs(answers: dict[str, Any]) -> None:
    assert answers["ListPackages"] == [{"name": "etcd"}, {"name": "prometheus"}]
    assert answers["GetPackage"]["defaultChannelName"] == "stable"
    assert [c["csvName"] for c in answers["GetPackage"]["channels"]] == [
        "etcdoperator.v0.9.4",
        "etcdoperator.v0.9.4",
    ]
    assert answers["missing"] == ["NOT_FOUND", 'package "missing" not found']


def test_bundle_rpcs(answers: dict[str, Any]) -> None:
    bundle = answers["GetBundle"]
    assert bundle["version"] == "0.27.0"
    assert bundle["dependencies"][1] == {
        "type": "olm.package",
        # opm v1.26's property encoder does not escape HTML characters
        "value": '{"packageName":"etcd","version":">=0.9.0 <1.0.0"}',
    }
    assert json.loads(bundle["csvJson"])["metadata"]["name"] == "prometheusoperator.0.27.0"
    head = answers["GetBundleForChannel"]
    assert head["csvName"] == "etcdoperator.v0.9.4"
    assert head["skipRange"] == ">=0.9.0 <0.9.4"
    assert "replaces" not in head and "skips" not in head
    assert len(head["object"]) == 2
    assert answers["GetBundleThatReplaces"]["csvName"] == "etcdoperator.v0.9.4"
    default = answers["GetDefaultBundleThatProvides"]
    assert (default["packageName"], default["channelName"]) == ("etcd", "stable")


def test_entry_rpcs(answers: dict[str, Any]) -> None:
    assert answers["GetChannelEntriesThatReplace"] == [
        {
            "packageName": "etcd",
            "channelName": "alpha",
            "bundleName": "etcdoperator.v0.9.4",
            "replaces": "etcdoperator.v0.9.2",
        },
        {
            "packageName": "etcd",
            "channelName": "stable",
            "bundleName": "etcdoperator.v0.9.4",
            "replaces": "etcdoperator.v0.9.2",
        },
    ]
    providers = {
        (e["packageName"], e["bundleName"]) for e in answers["GetChannelEntriesThatProvide"]
    }
    assert providers == {
        ("etcd", "etcdoperator.v0.9.4"),
        ("prometheus", "prometheusoperator.0.27.0"),
    }
    assert len(answers["GetLatestChannelEntriesThatProvide"]) == 3


def test_list_bundles(answers: dict[str, Any]) -> None:
    listed = answers["ListBundles"]
    assert len(listed) == 7
    assert all("csvJson" not in b for b in listed if b.get("bundlePath"))
    assert {b["channelName"] for b in listed} == {"alpha", "stable", "beta"}


def test_committed_stubs_match_the_proto() -> None:
    """`python -m olmtool.proto.generate --check`: nobody edited one without the other."""
    from olmtool.proto import generate

    assert generate.main(["--check"]) == 0
