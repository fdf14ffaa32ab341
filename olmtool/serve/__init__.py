"""Serve a file-based catalog: OLM's registry gRPC API and catalogd's HTTP API.

What ``opm serve`` does for OLM v0 CatalogSources (``api.Registry`` on port 50051, with
grpc health and reflection) plus catalogd's ``/catalogs/<name>/api/v1/{all,metas}`` for
OLM v1, from one memory-lean index (:mod:`olmtool.serve.index`). In-process use::

    import grpc
    from olmtool.serve import start_server
    from olmtool.proto import registry_pb2, registry_pb2_grpc

    with start_server("catalog/", grpc_port=0, http_port=0) as server:
        stub = registry_pb2_grpc.RegistryStub(grpc.insecure_channel(server.grpc_address))
        package = stub.GetPackage(registry_pb2.GetPackageRequest(name="etcd"))
        print(package.defaultChannelName, server.catalog_url + "/api/v1/all")

The wire contract is ``olmtool/proto/registry.proto``.
"""

from __future__ import annotations

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.serve.index": (
            "CatalogIndex",
            "InvalidCatalogError",
            "NotFoundError",
            "build_index",
        ),
        "olmtool.serve.limits": ("ServerLimits",),
        "olmtool.serve.server": (
            "RunningServer",
            "start_server",
        ),
    },
)
