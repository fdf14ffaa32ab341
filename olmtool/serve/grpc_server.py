"""The OLM registry gRPC service (``api.Registry``) over a :class:`CatalogIndex`.

Semantics follow opm's file-based server (operator-registry ``pkg/cache`` and
``pkg/api/model_to_api.go``): bundles come back per channel with the entry's replaces,
skips and skipRange; the single-bundle RPCs clear replaces and skips; ListBundles leaves out
the CSV and objects of bundles that have an image. The strings (csvJson, objects, property
and dependency values) are opm v1.26's bytes (:mod:`olmtool.serve.apitext`); newer opm's
deprecations and CSVs synthesized from olm.csv.metadata are added unless ``opm_compat``
is 1.26. Unlike opm, which answers every miss
with status UNKNOWN, a miss here is NOT_FOUND and a missing required field INVALID_ARGUMENT
(OLM only checks that a call failed). The process also serves grpc.health.v1 (SERVING)
and server reflection, as ``opm serve`` does.
"""

from __future__ import annotations

import base64
import binascii
import functools
import inspect
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from olmtool.catalog import OpmCompat
from olmtool.catalog import declcfg as dc
from olmtool.errors import InputError, ServiceError
from olmtool.proto import registry_pb2 as pb
from olmtool.proto import registry_pb2_grpc as pb_grpc
from olmtool.serve import apitext
from olmtool.serve.index import (
    GVK,
    BundleSummary,
    CatalogIndex,
    ChannelSummary,
    Entry,
    EntryRef,
    NotFoundError,
)
from olmtool.serve.limits import (
    GRPC_REFUSAL_BACKLOG,
    GRPC_STREAM_WINDOW,
    ServerLimits,
    bounded,
    busy_message,
)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Registry"].full_name  # "api.Registry"
# Not part of the API: olm.bundle.object would double a CSV projected into annotations.
# opm v1.26 still served olm.csv.metadata; newer opm hides it (its CSV is synthesized).
HIDDEN_PROPERTIES_V1_26 = frozenset({dc.PROP_BUNDLE_OBJECT})
HIDDEN_PROPERTIES = frozenset({dc.PROP_BUNDLE_OBJECT, dc.PROP_CSV_METADATA})

RequestLog = Callable[[str], None]
T = TypeVar("T")
logger = logging.getLogger(__name__)


class BadRequest(ServiceError, ValueError):
    """A request lacks a field the RPC cannot do without."""


class UnreadableBundleError(ServiceError):
    """A bundle's objects cannot be decoded: the catalog is broken, not the request.

    Objects are decoded per request (decoding all of them at start-up would double it),
    so a bad base64 or manifest surfaces here, as INTERNAL naming the bundle.
    """


_STATUS = {
    NotFoundError: grpc.StatusCode.NOT_FOUND,
    BadRequest: grpc.StatusCode.INVALID_ARGUMENT,
    UnreadableBundleError: grpc.StatusCode.INTERNAL,
}
_MAPPED = tuple(_STATUS)


def _rpc(method: Callable[..., Any]) -> Callable[..., Any]:
    """Turn index misses, bad requests and broken bundles into gRPC statuses.

    Works for plain and streaming (generator) methods alike; anything else stays UNKNOWN.
    """

    def abort(context: grpc.ServicerContext, exc: Exception) -> None:
        code = next(c for k, c in _STATUS.items() if isinstance(exc, k))
        context.abort(code, bounded(str(exc)))  # the status travels as a size-limited trailer

    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def stream(self: Any, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            try:
                yield from method(self, request, context)
            except _MAPPED as exc:
                abort(context, exc)

        return stream

    @functools.wraps(method)
    def unary(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except _MAPPED as exc:
            abort(context, exc)

    return unary


def _require(**fields: str) -> None:
    missing = [name for name, value in fields.items() if not value]
    if missing:
        raise BadRequest(f"{', '.join(missing)} must be set")


def _gvk(request: Any) -> GVK:
    """(group, version, kind) of a provider request; plural is ignored, as opm does."""
    _require(version=request.version, kind=request.kind)
    return (request.group, request.version, request.kind)


class RegistryServicer(pb_grpc.RegistryServicer):
    """``api.Registry`` answered from the index; bundles are materialised per request."""

    def __init__(self, index: CatalogIndex, opm_compat: OpmCompat = OpmCompat.latest) -> None:
        self.index = index
        self.opm_compat = OpmCompat(opm_compat)  # 1.26: no deprecations, no synthesized CSVs

    def _bundle(self, channel: ChannelSummary, entry: Entry) -> pb.Bundle:
        """A single-bundle RPC's answer: replaces and skips left out."""
        return bundle_message(self.index, channel, entry, trimmed=True, opm_compat=self.opm_compat)

    @_rpc
    def ListPackages(self, request: pb.ListPackageRequest, context: Any) -> Iterator[Any]:
        for name in self.index.packages:
            yield pb.PackageName(name=name)

    @_rpc
    def GetPackage(self, request: pb.GetPackageRequest, context: Any) -> pb.Package:
        _require(name=request.name)
        package = self.index.package(request.name)
        message = pb.Package(name=package.name, defaultChannelName=package.default_channel)
        newer = self.opm_compat is OpmCompat.latest
        for channel in package.channels.values():
            item = message.channels.add(name=channel.name, csvName=channel.head)
            if channel.deprecation and newer:
                item.deprecation.message = channel.deprecation
        if package.deprecation and newer:
            message.deprecation.message = package.deprecation
        return message

    @_rpc
    def GetBundle(self, request: pb.GetBundleRequest, context: Any) -> pb.Bundle:
        _require(pkgName=request.pkgName, channelName=request.channelName, csvName=request.csvName)
        channel, entry = self.index.entry(request.pkgName, request.channelName, request.csvName)
        return self._bundle(channel, entry)

    @_rpc
    def GetBundleForChannel(self, request: pb.GetBundleInChannelRequest, context: Any) -> Any:
        _require(pkgName=request.pkgName, channelName=request.channelName)
        channel = self.index.channel(request.pkgName, request.channelName)
        return self._bundle(channel, channel.entries[channel.head])

    @_rpc
    def GetChannelEntriesThatReplace(
        self, request: pb.GetAllReplacementsRequest, context: Any
    ) -> Iterator[pb.ChannelEntry]:
        _require(csvName=request.csvName)
        yield from _entries(self.index.entries_that_replace(request.csvName))

    @_rpc
    def GetBundleThatReplaces(self, request: pb.GetReplacementRequest, context: Any) -> Any:
        _require(csvName=request.csvName, pkgName=request.pkgName, channelName=request.channelName)
        channel, entry = self.index.bundle_that_replaces(
            request.csvName, request.pkgName, request.channelName
        )
        return self._bundle(channel, entry)

    @_rpc
    def GetChannelEntriesThatProvide(
        self, request: pb.GetAllProvidersRequest, context: Any
    ) -> Iterator[pb.ChannelEntry]:
        yield from _entries(self.index.entries_that_provide(_gvk(request)))

    @_rpc
    def GetLatestChannelEntriesThatProvide(
        self, request: pb.GetLatestProvidersRequest, context: Any
    ) -> Iterator[pb.ChannelEntry]:
        yield from _entries(self.index.latest_entries_that_provide(_gvk(request)))

    @_rpc
    def GetDefaultBundleThatProvides(
        self, request: pb.GetDefaultProviderRequest, context: Any
    ) -> Any:
        channel, entry = self.index.default_bundle_that_provides(_gvk(request))
        return self._bundle(channel, entry)

    @_rpc
    def ListBundles(self, request: pb.ListBundlesRequest, context: Any) -> Iterator[pb.Bundle]:
        for channel, entry in self.index.channel_entries():
            if not context.is_active():
                return
            yield bundle_message(
                self.index, channel, entry, listing=True, opm_compat=self.opm_compat
            )


def _entries(refs: list[EntryRef]) -> Iterator[pb.ChannelEntry]:
    for ref in refs:
        yield pb.ChannelEntry(
            packageName=ref.package,
            channelName=ref.channel,
            bundleName=ref.bundle,
            replaces=ref.replaces,
        )


# --- bundles as the API returns them ------------------------------------------------------


def bundle_message(
    index: CatalogIndex,
    channel: ChannelSummary,
    entry: Entry,
    *,
    trimmed: bool = False,
    listing: bool = False,
    opm_compat: OpmCompat = OpmCompat.latest,
) -> pb.Bundle:
    """The Bundle message for one channel entry (model_to_api.go), its strings as opm
    v1.26 writes them (:mod:`olmtool.serve.apitext`).

    ``trimmed``: the single-bundle RPCs leave out replaces and skips. ``listing``:
    ListBundles leaves out csvJson and objects when the bundle has an image, so they are
    not even decoded then. ``opm_compat`` latest adds newer opm's deprecation and a CSV
    synthesized from olm.csv.metadata (then hidden from the properties).
    """
    summary = index.bundle(channel.package, entry.name)
    bundle = index.load_bundle(summary)
    newer = opm_compat == OpmCompat.latest
    hidden = HIDDEN_PROPERTIES if newer else HIDDEN_PROPERTIES_V1_26
    shown = [(n, p) for n, p in enumerate(bundle.properties) if p.type not in hidden]
    message = pb.Bundle(
        csvName=bundle.name,
        packageName=bundle.package,
        channelName=channel.name,
        bundlePath=bundle.image,
        version=summary.version,
        skipRange=entry.skip_range,
        providedApis=[_gvk_message(gvk) for gvk in summary.provides],
        requiredApis=[_gvk_message(gvk) for gvk in summary.requires],
        dependencies=_dependencies(summary, bundle),
        properties=[pb.Property(type=p.type, value=_value_text(summary, n, p)) for n, p in shown],
    )
    if not trimmed:
        message.replaces = entry.replaces
        message.skips.extend(entry.skips)
    if summary.deprecation and newer:
        message.deprecation.message = summary.deprecation
    if not (listing and bundle.image):
        objects = bundle_objects(index, summary, bundle)
        csv = next((text for text in objects if apitext.is_csv(text)), "")
        if newer and not csv and len(bundle.properties_of(dc.PROP_CSV_METADATA)) == 1:
            package = index.load_package(index.package(summary.package))
            csv = apitext.synthesized_csv(bundle, summary.version, package)
            objects = objects or [csv]
        message.csvJson = csv
        message.object.extend(objects)
    return message


def _value_text(summary: BundleSummary, number: int, prop: dc.Property) -> str:
    """Property ``number``'s value as opm v1.26 serves it."""
    raw = summary.raw_values.get(number) if summary.raw_values else None
    return apitext.property_text(prop, yaml_source=summary.yaml_source, raw=raw)


def _gvk_message(gvk: GVK) -> pb.GroupVersionKind:
    group, version, kind = gvk
    return pb.GroupVersionKind(group=group, version=version, kind=kind)


def _dependencies(summary: BundleSummary, bundle: dc.Bundle) -> list[pb.Dependency]:
    """olm.gvk.required (its value's text) and olm.package.required (rebuilt) as the
    legacy dependency types, as opm v1.26 turns them."""
    found = []
    for number, prop in enumerate(bundle.properties):
        if prop.type == dc.PROP_GVK_REQUIRED:
            text = _value_text(summary, number, prop)
            found.append(pb.Dependency(type=dc.PROP_GVK, value=text))
        elif prop.type == dc.PROP_PACKAGE_REQUIRED:
            value = apitext.package_dependency(prop.value)
            found.append(pb.Dependency(type=dc.PROP_PACKAGE, value=value))
    return found


def bundle_objects(index: CatalogIndex, summary: BundleSummary, bundle: dc.Bundle) -> list[str]:
    """Every olm.bundle.object's text as opm v1.26 serves it, in property order."""
    found = []
    for number, prop in enumerate(bundle.properties_of(dc.PROP_BUNDLE_OBJECT)):
        value = prop.value if isinstance(prop.value, dict) else {}
        try:
            if value.get("ref"):
                raw = index.read_source(summary.source, str(value["ref"]))
            else:
                raw = base64.b64decode(str(value.get("data") or ""), validate=True)
            found.append(apitext.object_text(raw))
        except (OSError, ValueError, binascii.Error, InputError) as exc:
            raise UnreadableBundleError(
                f'bundle "{bundle.name}": olm.bundle.object[{number}] is unreadable: {exc}'
            ) from None
    return found


# --- the server -----------------------------------------------------------------------------


class RequestLogInterceptor(grpc.ServerInterceptor):
    """One log line per call: method, status, milliseconds (and messages streamed).

    A call the client cancels (or whose deadline passes) is logged as CANCELLED (or
    DEADLINE_EXCEEDED) as soon as gRPC sees it end, even while its handler still runs.
    """

    def __init__(self, log: RequestLog) -> None:
        self.log = log

    def intercept_service(self, continuation: Callable[..., Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method.lstrip("/")
        for kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
            behavior = getattr(handler, kind)
            if behavior is not None:
                wrapped = self._wrap(method, behavior, streaming=kind.endswith("_stream"))
                return handler._replace(**{kind: wrapped})
        return handler

    def _wrap(self, method: str, behavior: Callable[..., Any], *, streaming: bool) -> Any:
        @contextmanager
        def logged(call: _LoggedCall) -> Iterator[None]:
            """Log the call when its handler ends; an exception nobody mapped is UNKNOWN."""
            try:
                yield
            except Exception:
                if call.context.code() is None:
                    call.context.set_code(grpc.StatusCode.UNKNOWN)
                raise
            finally:
                call.finish(call.context.code() or _ended_code(call.context))

        if streaming:

            @functools.wraps(behavior)  # keeps experimental_thread_pool (refusals)
            def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                call = _LoggedCall(self.log, method, context, streaming=True)
                with logged(call):
                    for message in behavior(request, context):
                        call.sent += 1
                        yield message

            return stream

        @functools.wraps(behavior)
        def unary(request: Any, context: grpc.ServicerContext) -> Any:
            call = _LoggedCall(self.log, method, context, streaming=False)
            with logged(call):
                return behavior(request, context)

        return unary


class _LoggedCall:
    """A call's log line, written once: by its handler, or by gRPC when the call ends first
    (the client cancelled, or the deadline passed, while the handler ran)."""

    def __init__(
        self, log: RequestLog, method: str, context: grpc.ServicerContext, *, streaming: bool
    ) -> None:
        self.log = log
        self.method = method
        self.context = context
        self.streaming = streaming
        self.sent = 0
        self.started = time.perf_counter()
        self._lock = threading.Lock()
        self._logged = False
        context.add_callback(self._ended)

    def _ended(self) -> None:
        """gRPC's callback when the call is over; a no-op once the handler has logged."""
        self.finish(_cancel_code(self.context))

    def finish(self, code: grpc.StatusCode) -> None:
        with self._lock:
            if self._logged:
                return
            self._logged = True
        count = f" ({self.sent} sent)" if self.streaming else ""
        elapsed = (time.perf_counter() - self.started) * 1000
        self.log(f"rpc {self.method} {code.name}{count} {elapsed:.1f}ms")


def _ended_code(context: grpc.ServicerContext) -> grpc.StatusCode:
    """OK for a handler that returned normally, unless the call is already over: the
    handler only noticed (``is_active()``) or was closed because the client went away."""
    return grpc.StatusCode.OK if context.is_active() else _cancel_code(context)


def _cancel_code(context: grpc.ServicerContext) -> grpc.StatusCode:
    # The client cancels at its deadline too, and may be heard a moment before the server's.
    if context.time_remaining() <= 0.05:
        return grpc.StatusCode.DEADLINE_EXCEEDED
    return grpc.StatusCode.CANCELLED


# --- admission: calls queue up to grpc_max_rpcs, the ones beyond are refused ---------------


class CallPool(futures.ThreadPoolExecutor):
    """The threads that run calls, counting the calls handed to them and not finished
    yet (running, or queued for a thread): what admission compares with the limit.

    gRPC hands every admitted call over exactly once, even one cancelled while it waits
    (its handler then returns at once), so the count cannot leak.
    """

    def __init__(self, workers: int) -> None:
        super().__init__(max_workers=workers, thread_name_prefix="registry-grpc")
        self._count_lock = threading.Lock()
        self._outstanding = 0

    @property
    def outstanding(self) -> int:
        return self._outstanding

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> futures.Future[T]:
        with self._count_lock:
            self._outstanding += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._finished()
            raise
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _future: object = None) -> None:
        with self._count_lock:
            self._outstanding -= 1


class AdmissionInterceptor(grpc.ServerInterceptor):
    """Admit a call while fewer than ``limit`` are in progress or queued in ``pool``;
    refuse it otherwise with RESOURCE_EXHAUSTED and :func:`busy_message`.

    gRPC runs interceptors on its one polling thread, the only one that adds calls to
    the pool, so no more than ``limit`` are ever admitted. A refusal reads no request
    and runs on a thread of its own: it is answered at once, not after the queue it was
    refused from. Refusals are logged as a warning at most every 10 seconds.
    """

    def __init__(self, pool: CallPool, limit: int) -> None:
        self.pool = pool
        self.limit = limit
        self.refused = 0  # since the last warning
        self._warned = -math.inf
        refusals = futures.ThreadPoolExecutor(1, thread_name_prefix="registry-grpc-refuse")
        refuse = _refusal(busy_message(limit), refusals)
        # the answer's arity (unary or stream) as the method's, for the request log
        self._refusals = {
            False: grpc.stream_unary_rpc_method_handler(refuse),
            True: grpc.stream_stream_rpc_method_handler(refuse),
        }

    def intercept_service(self, continuation: Callable[..., Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or self.pool.outstanding < self.limit:
            return handler
        self._count_refusal()
        return self._refusals[bool(handler.response_streaming)]

    def _count_refusal(self) -> None:
        self.refused += 1
        now = time.monotonic()
        if now - self._warned >= 10:
            logger.warning(
                "gRPC: %d call(s) refused (RESOURCE_EXHAUSTED): %d in progress or queued",
                self.refused,
                self.limit,
            )
            self._warned, self.refused = now, 0


def _refusal(message: str, pool: futures.ThreadPoolExecutor) -> Callable[..., NoReturn]:
    """A handler that answers RESOURCE_EXHAUSTED without reading the request (it takes
    the request stream, never iterated), run by ``pool``."""

    def refuse(requests: Iterator[Any], context: grpc.ServicerContext) -> NoReturn:
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
        raise AssertionError("abort returns only by raising")  # pragma: no cover

    refuse.experimental_thread_pool = pool  # type: ignore[attr-defined]  # gRPC's own hook
    return refuse


def create_grpc_server(
    index: CatalogIndex,
    *,
    log: RequestLog | None = None,
    limits: ServerLimits | None = None,
    opm_compat: OpmCompat = OpmCompat.latest,
) -> tuple[grpc.Server, health.HealthServicer]:
    """A not yet started server with api.Registry (answering as the opm ``opm_compat``
    names), health (SERVING) and reflection."""
    limits = limits or ServerLimits()
    pool = CallPool(limits.grpc_workers)
    # the request log first: it sees (and logs) the refusals too
    interceptors: list[grpc.ServerInterceptor] = [] if log is None else [RequestLogInterceptor(log)]
    interceptors.append(AdmissionInterceptor(pool, limits.grpc_max_rpcs))
    keepalive_ms = int(limits.grpc_keepalive * 1000)
    server = grpc.server(
        pool,
        interceptors=interceptors,
        options=[
            ("grpc.so_reuseport", 0),  # a second server on the port must fail, not share
            ("grpc.max_receive_message_length", limits.grpc_max_receive_bytes),
            ("grpc.max_concurrent_streams", limits.grpc_max_streams),
            # a queued call's request is buffered up to GRPC_STREAM_WINDOW until a worker
            # reads it (BDP probing would grow the window to megabytes a call)
            ("grpc.http2.bdp_probe", 0),
            ("grpc.http2.lookahead_bytes", GRPC_STREAM_WINDOW),
            ("grpc.keepalive_time_ms", keepalive_ms),
            ("grpc.keepalive_timeout_ms", min(keepalive_ms, 20_000)),
        ],
        # gRPC's own cap, behind admission: it counts the refusals still being answered
        maximum_concurrent_rpcs=limits.grpc_max_rpcs + GRPC_REFUSAL_BACKLOG,
    )
    pb_grpc.add_RegistryServicer_to_server(RegistryServicer(index, opm_compat), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for service in ("", SERVICE_NAME):
        health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    health_name = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_name, reflection.SERVICE_NAME), server
    )
    return server, health_servicer
