"""api.Registry semantics against the in-process server, through olmtool's own stubs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from olmtool.proto import registry_pb2 as pb
from olmtool.proto import registry_pb2_grpc as pb_grpc
from olmtool.serve import RunningServer

from .conftest import CSV_METADATA, ETCD_CLUSTER, SERVICE_MONITOR


@pytest.fixture(scope="module")
def channel(server: RunningServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.grpc_address) as opened:
        yield opened


@pytest.fixture(scope="module")
def stub(channel: grpc.Channel) -> pb_grpc.RegistryStub:
    return pb_grpc.RegistryStub(channel)


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message)


def entries(stream: Any) -> list[tuple[str, str, str, str]]:
    return [(e.packageName, e.channelName, e.bundleName, e.replaces) for e in stream]


def test_list_packages_streams_names_sorted(stub: pb_grpc.RegistryStub) -> None:
    names = [p.name for p in stub.ListPackages(pb.ListPackageRequest())]
    assert names == ["etcd", "prometheus"]


def test_get_package_sorts_channels_names_heads_and_deprecations(
    stub: pb_grpc.RegistryStub,
) -> None:
    etcd = as_dict(stub.GetPackage(pb.GetPackageRequest(name="etcd")))
    assert etcd == {
        "name": "etcd",
        "defaultChannelName": "stable",
        "channels": [
            {
                "name": "alpha",
                "csvName": "etcdoperator.v0.9.4",
                "deprecation": {"message": "alpha is over"},
            },
            {"name": "stable", "csvName": "etcdoperator.v0.9.4"},
        ],
    }
    prometheus = stub.GetPackage(pb.GetPackageRequest(name="prometheus"))
    assert prometheus.deprecation.message == "use kube-prometheus"


def test_get_bundle_is_trimmed_and_carries_csv_objects_and_api_fields(
    stub: pb_grpc.RegistryStub,
) -> None:
    request = pb.GetBundleRequest(
        pkgName="etcd", channelName="stable", csvName="etcdoperator.v0.9.4"
    )
    bundle = stub.GetBundle(request)
    assert (bundle.csvName, bundle.packageName, bundle.channelName) == (
        "etcdoperator.v0.9.4",
        "etcd",
        "stable",
    )
    assert bundle.bundlePath == "quay.io/example/etcd-bundle:v0.9.4"
    assert bundle.version == "0.9.4"
    assert bundle.skipRange == ">=0.9.0 <0.9.4"
    assert bundle.replaces == "" and list(bundle.skips) == []
    csv = json.loads(bundle.csvJson)
    assert csv["kind"] == "ClusterServiceVersion" and csv["metadata"]["name"] == bundle.csvName
    # JSON object data is served as it is (opm v1.26's yaml.ToJSON): no re-encoding
    assert '"description": "a <b>db</b> & more"' in bundle.csvJson
    assert [json.loads(o)["kind"] for o in bundle.object] == [
        "ClusterServiceVersion",
        "CustomResourceDefinition",
    ]
    assert bundle.object[0] == bundle.csvJson
    assert [(g.group, g.version, g.kind, g.plural) for g in bundle.providedApis] == [
        ("etcd.database.coreos.com", "v1beta2", "EtcdCluster", ""),
        ("monitoring.coreos.com", "v1", "ServiceMonitor", ""),
    ]
    assert [p.type for p in bundle.properties] == ["olm.gvk", "olm.gvk", "olm.package"]
    assert json.loads(bundle.properties[2].value) == {"packageName": "etcd", "version": "0.9.4"}
    assert not bundle.HasField("deprecation")


def test_bundle_deprecation(stub: pb_grpc.RegistryStub) -> None:
    request = pb.GetBundleRequest(
        pkgName="etcd", channelName="stable", csvName="etcdoperator.v0.9.0"
    )
    assert stub.GetBundle(request).deprecation.message == "0.9.0 has a CVE"


def test_csv_metadata_bundle_gets_a_synthesized_csv_and_dependencies(
    stub: pb_grpc.RegistryStub,
) -> None:
    bundle = stub.GetBundle(
        pb.GetBundleRequest(
            pkgName="prometheus", channelName="beta", csvName="prometheusoperator.0.27.0"
        )
    )
    csv = json.loads(bundle.csvJson)
    assert csv["apiVersion"] == "operators.coreos.com/v1alpha1"
    assert csv["kind"] == "ClusterServiceVersion"
    assert csv["metadata"]["name"] == "prometheusoperator.0.27.0"
    assert csv["metadata"]["annotations"] == CSV_METADATA["annotations"]
    assert csv["spec"]["version"] == "0.27.0"
    assert csv["spec"]["displayName"] == "Prometheus Operator"
    assert csv["spec"]["installModes"] == CSV_METADATA["installModes"]
    assert csv["spec"]["relatedImages"] == [
        {"name": "operator", "image": "quay.io/example/prometheus:0.27.0"}
    ]
    assert list(bundle.object) == [bundle.csvJson]
    assert [(d.type, json.loads(d.value)) for d in bundle.dependencies] == [
        ("olm.gvk", ETCD_CLUSTER),
        ("olm.package", {"packageName": "etcd", "version": ">=0.9.0 <1.0.0"}),
    ]
    assert [(g.group, g.version, g.kind) for g in bundle.requiredApis] == [
        ("etcd.database.coreos.com", "v1beta2", "EtcdCluster")
    ]
    types = [p.type for p in bundle.properties]
    assert "olm.csv.metadata" not in types and "olm.bundle.object" not in types
    assert "olm.maxOpenShiftVersion" in types


def test_get_bundle_for_channel_returns_the_head(stub: pb_grpc.RegistryStub) -> None:
    bundle = stub.GetBundleForChannel(
        pb.GetBundleInChannelRequest(pkgName="etcd", channelName="alpha")
    )
    assert (bundle.csvName, bundle.channelName, bundle.replaces) == (
        "etcdoperator.v0.9.4",
        "alpha",
        "",
    )


def test_get_bundle_that_replaces_follows_replaces_and_skips(stub: pb_grpc.RegistryStub) -> None:
    def replacing(csv: str, channel: str) -> str:
        request = pb.GetReplacementRequest(csvName=csv, pkgName="etcd", channelName=channel)
        bundle = stub.GetBundleThatReplaces(request)
        assert bundle.replaces == "" and not bundle.skips
        return bundle.csvName

    assert replacing("etcdoperator.v0.9.0", "stable") == "etcdoperator.v0.9.2"
    assert replacing("etcdoperator.v0.9.0", "alpha") == "etcdoperator.v0.9.4"  # by its skips


def test_channel_entries_that_replace(stub: pb_grpc.RegistryStub) -> None:
    found = entries(
        stub.GetChannelEntriesThatReplace(
            pb.GetAllReplacementsRequest(csvName="etcdoperator.v0.9.0")
        )
    )
    assert found == [
        ("etcd", "alpha", "etcdoperator.v0.9.4", "etcdoperator.v0.9.2"),
        ("etcd", "stable", "etcdoperator.v0.9.2", "etcdoperator.v0.9.0"),
        ("etcd", "stable", "etcdoperator.v0.9.4", "etcdoperator.v0.9.2"),
    ]


def test_channel_entries_that_provide_include_skip_edges(stub: pb_grpc.RegistryStub) -> None:
    found = entries(stub.GetChannelEntriesThatProvide(pb.GetAllProvidersRequest(**ETCD_CLUSTER)))
    assert found == [
        ("etcd", "alpha", "etcdoperator.v0.9.2", ""),
        ("etcd", "alpha", "etcdoperator.v0.9.4", "etcdoperator.v0.9.2"),
        ("etcd", "alpha", "etcdoperator.v0.9.4", "etcdoperator.v0.9.0"),
        ("etcd", "stable", "etcdoperator.v0.9.0", ""),
        ("etcd", "stable", "etcdoperator.v0.9.2", "etcdoperator.v0.9.0"),
        ("etcd", "stable", "etcdoperator.v0.9.4", "etcdoperator.v0.9.2"),
        ("etcd", "stable", "etcdoperator.v0.9.4", "etcdoperator.v0.9.0"),
    ]


def test_latest_entries_are_heads_with_in_channel_skips(stub: pb_grpc.RegistryStub) -> None:
    request = pb.GetLatestProvidersRequest(**ETCD_CLUSTER)
    assert entries(stub.GetLatestChannelEntriesThatProvide(request)) == [
        ("etcd", "alpha", "etcdoperator.v0.9.4", "etcdoperator.v0.9.2"),
        ("etcd", "stable", "etcdoperator.v0.9.4", "etcdoperator.v0.9.2"),
        ("etcd", "stable", "etcdoperator.v0.9.4", "etcdoperator.v0.9.0"),
    ]


def test_default_bundle_that_provides_prefers_first_package_default_channel(
    stub: pb_grpc.RegistryStub,
) -> None:
    bundle = stub.GetDefaultBundleThatProvides(pb.GetDefaultProviderRequest(**SERVICE_MONITOR))
    assert (bundle.packageName, bundle.channelName, bundle.csvName) == (
        "etcd",
        "stable",
        "etcdoperator.v0.9.4",
    )


def test_list_bundles_once_per_channel_without_payload_when_image_set(
    stub: pb_grpc.RegistryStub,
) -> None:
    bundles = list(stub.ListBundles(pb.ListBundlesRequest()))
    assert [(b.packageName, b.channelName, b.csvName) for b in bundles] == [
        ("etcd", "alpha", "etcdoperator.v0.9.2"),
        ("etcd", "alpha", "etcdoperator.v0.9.4"),
        ("etcd", "stable", "etcdoperator.v0.9.0"),
        ("etcd", "stable", "etcdoperator.v0.9.2"),
        ("etcd", "stable", "etcdoperator.v0.9.4"),
        ("prometheus", "beta", "prometheusoperator.0.22.2"),
        ("prometheus", "beta", "prometheusoperator.0.27.0"),
    ]
    by_key = {(b.channelName, b.csvName): b for b in bundles}
    head = by_key[("stable", "etcdoperator.v0.9.4")]
    assert head.replaces == "etcdoperator.v0.9.2"
    assert list(head.skips) == ["etcdoperator.v0.9.0"]
    assert head.skipRange == ">=0.9.0 <0.9.4"
    assert head.csvJson == "" and list(head.object) == []  # it has a bundlePath
    imageless = by_key[("beta", "prometheusoperator.0.27.0")]
    assert imageless.bundlePath == "" and json.loads(imageless.csvJson)["kind"]


@pytest.mark.parametrize(
    ("call", "request_", "message"),
    [
        ("GetPackage", pb.GetPackageRequest(name="nope"), 'package "nope" not found'),
        (
            "GetBundle",
            pb.GetBundleRequest(pkgName="etcd", channelName="beta", csvName="x"),
            'package "etcd", channel "beta" not found',
        ),
        (
            "GetBundle",
            pb.GetBundleRequest(pkgName="etcd", channelName="stable", csvName="x"),
            'package "etcd", channel "stable", bundle "x" not found',
        ),
        (
            "GetBundleForChannel",
            pb.GetBundleInChannelRequest(pkgName="nope", channelName="stable"),
            'package "nope" not found',
        ),
        (
            "GetBundleThatReplaces",
            pb.GetReplacementRequest(csvName="x", pkgName="etcd", channelName="stable"),
            '"x"',
        ),
        (
            "GetDefaultBundleThatProvides",
            pb.GetDefaultProviderRequest(group="g", version="v1", kind="Nothing"),
            'kind "Nothing"',
        ),
    ],
)
def test_misses_are_not_found(
    stub: pb_grpc.RegistryStub, call: str, request_: Any, message: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub, call)(request_)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert message in caught.value.details()


def test_streaming_misses_are_not_found(stub: pb_grpc.RegistryStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        list(stub.GetChannelEntriesThatReplace(pb.GetAllReplacementsRequest(csvName="nothing")))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert '"nothing"' in caught.value.details()
    with pytest.raises(grpc.RpcError) as caught:
        request = pb.GetAllProvidersRequest(group="x", version="v1", kind="Nothing")
        list(stub.GetChannelEntriesThatProvide(request))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


def test_missing_fields_are_invalid_arguments(stub: pb_grpc.RegistryStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        list(stub.GetChannelEntriesThatReplace(pb.GetAllReplacementsRequest()))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "csvName" in caught.value.details()
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetBundle(pb.GetBundleRequest(pkgName="etcd"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_health_serves(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "api.Registry"):
        answer = health.Check(health_pb2.HealthCheckRequest(service=service))
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_and_describes_the_registry(channel: grpc.Channel) -> None:
    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="api.Registry"),
    ]
    listed, described = list(reflection.ServerReflectionInfo(iter(requests)))
    names = {s.name for s in listed.list_services_response.service}
    assert {"api.Registry", "grpc.health.v1.Health"} <= names
    from google.protobuf import descriptor_pb2

    files = described.file_descriptor_response.file_descriptor_proto
    proto = descriptor_pb2.FileDescriptorProto.FromString(files[0])
    assert proto.package == "api" and [s.name for s in proto.service] == ["Registry"]
    assert len(proto.service[0].method) == 10


def test_requests_are_logged_with_status_and_time(
    server: RunningServer, stub: pb_grpc.RegistryStub
) -> None:
    with pytest.raises(grpc.RpcError):
        stub.GetPackage(pb.GetPackageRequest(name="logged-miss"))
    list(stub.ListPackages(pb.ListPackageRequest()))
    lines: list[str] = server.log_lines  # type: ignore[attr-defined]
    assert any(
        line.startswith("rpc api.Registry/GetPackage NOT_FOUND ") and line.endswith("ms")
        for line in lines
    )
    assert any(line.startswith("rpc api.Registry/ListPackages OK (2 sent) ") for line in lines)
