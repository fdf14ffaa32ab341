"""A CatalogSource's content, read over the registry gRPC API (``api.Registry``), as OLM's
catalog operator reads it: from ``olmtool catalog serve``, ``opm serve`` or any
registry server.

``ListBundles`` streams one ``Bundle`` per (bundle, channel) pair with that channel's
``replaces``/``skips``/``skipRange``; packages come from ``ListPackages`` +
``GetPackage`` (the default channel). The result is a plain
:class:`~olmtool.catalog.declcfg.DeclarativeConfig`, so the resolver works on the same
model whether a catalog is a directory or a server. ``ListBundles`` leaves the manifests
out (opm's servers do, to keep the stream small); :func:`fetch_manifests` gets one
bundle's CSV and other objects with ``GetBundle``, as OLM does when it plans an install.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass

import grpc

from olmtool.catalog import declcfg as dc
from olmtool.errors import OlmtoolError
from olmtool.proto import registry_pb2, registry_pb2_grpc

READY = "READY"
TRANSIENT_FAILURE = "TRANSIENT_FAILURE"


class CatalogSourceUnavailable(OlmtoolError):
    """The registry server did not answer."""


@dataclass(frozen=True)
class Connection:
    """What OLM records in ``status.connectionState``."""

    address: str
    last_observed_state: str


def probe(address: str, timeout: float = 5.0) -> Connection:
    """Whether a registry server accepts connections (gRPC's channel state names)."""
    with grpc.insecure_channel(address) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return Connection(address, TRANSIENT_FAILURE)
    return Connection(address, READY)


def fetch_config(address: str, timeout: float = 30.0) -> dc.DeclarativeConfig:
    """Every package, channel and bundle the server at ``address`` serves."""
    with grpc.insecure_channel(address) as channel:
        stub = registry_pb2_grpc.RegistryStub(channel)
        try:
            names = [
                p.name
                for p in stub.ListPackages(registry_pb2.ListPackageRequest(), timeout=timeout)
            ]
            packages = [
                stub.GetPackage(registry_pb2.GetPackageRequest(name=n), timeout=timeout)
                for n in sorted(names)
            ]
            bundles = list(stub.ListBundles(registry_pb2.ListBundlesRequest(), timeout=timeout))
        except grpc.RpcError as exc:
            raise CatalogSourceUnavailable(
                f"registry {address}: {exc.code().name}: {exc.details()}"
            ) from None
    return build_config(packages, bundles)


def default_channel(address: str, package: str, timeout: float = 30.0) -> str:
    """The default channel of ``package`` on the server at ``address`` (``GetPackage``),
    waiting up to ``timeout`` seconds for a server that is still starting."""
    request = registry_pb2.GetPackageRequest(name=package)
    with grpc.insecure_channel(address) as channel:
        stub = registry_pb2_grpc.RegistryStub(channel)
        try:
            found = stub.GetPackage(request, timeout=timeout, wait_for_ready=True)
        except grpc.RpcError as exc:
            raise CatalogSourceUnavailable(
                f"registry {address}: GetPackage {package}: {exc.code().name}: {exc.details()}"
            ) from None
    return str(found.defaultChannelName)


def fetch_manifests(
    address: str, package: str, channel: str, csv_name: str, timeout: float = 30.0
) -> list[dict[str, object]]:
    """The bundle's manifests (the CSV first, then the other objects), from ``GetBundle``."""
    request = registry_pb2.GetBundleRequest(pkgName=package, channelName=channel, csvName=csv_name)
    with grpc.insecure_channel(address) as channel_:
        try:
            bundle = registry_pb2_grpc.RegistryStub(channel_).GetBundle(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise CatalogSourceUnavailable(
                f"registry {address}: GetBundle {package}/{channel}/{csv_name}: "
                f"{exc.code().name}: {exc.details()}"
            ) from None
    manifests = [json.loads(text) for text in bundle.object if text]
    manifests.sort(key=lambda m: m.get("kind") != "ClusterServiceVersion")
    if not any(m.get("kind") == "ClusterServiceVersion" for m in manifests) and bundle.csvJson:
        manifests.insert(0, json.loads(bundle.csvJson))
    return manifests


def build_config(packages: Iterable[object], bundles: Iterable[object]) -> dc.DeclarativeConfig:
    """The declarative config of ``GetPackage`` and ``ListBundles`` answers (pure)."""
    config = dc.DeclarativeConfig()
    for package in packages:
        config.packages.append(
            dc.Package(name=package.name, default_channel=package.defaultChannelName)
        )  # type: ignore[attr-defined]
    channels: dict[tuple[str, str], dc.Channel] = {}
    seen: dict[tuple[str, str], dc.Bundle] = {}
    for bundle in bundles:
        key = (bundle.packageName, bundle.channelName)  # type: ignore[attr-defined]
        channel = channels.setdefault(key, dc.Channel(name=key[1], package=key[0]))
        channel.entries.append(
            dc.ChannelEntry(
                name=bundle.csvName,  # type: ignore[attr-defined]
                replaces=bundle.replaces,  # type: ignore[attr-defined]
                skips=sorted(bundle.skips),  # type: ignore[attr-defined]
                skip_range=bundle.skipRange,  # type: ignore[attr-defined]
            )
        )
        name = (bundle.packageName, bundle.csvName)  # type: ignore[attr-defined]
        if name not in seen:
            seen[name] = _bundle(bundle)
    for channel in sorted(channels.values(), key=lambda c: (c.package, c.name)):
        channel.entries.sort(key=lambda e: e.name)
        config.channels.append(channel)
    config.bundles.extend(sorted(seen.values(), key=lambda b: (b.package, b.name)))
    return config


def _bundle(message: object) -> dc.Bundle:
    properties = [dc.Property(p.type, _json(p.value)) for p in message.properties]  # type: ignore[attr-defined]
    has_objects = any(p.type == dc.PROP_BUNDLE_OBJECT for p in properties)
    if not has_objects:
        for manifest in message.object:  # type: ignore[attr-defined]
            data = base64.b64encode(manifest.encode()).decode()
            properties.append(dc.Property(dc.PROP_BUNDLE_OBJECT, {"data": data}))
    return dc.Bundle(
        name=message.csvName,  # type: ignore[attr-defined]
        package=message.packageName,  # type: ignore[attr-defined]
        image=message.bundlePath,  # type: ignore[attr-defined]
        properties=properties,
    )


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text
