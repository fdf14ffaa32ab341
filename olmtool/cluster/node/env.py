"""Container environments as kubelet builds them: Service variables, ``envFrom``, ``env``
with ``valueFrom``, and ``$(VAR)`` expansion in values, commands and arguments.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlparse

from olmtool.errors import InternalError

JSON = dict[str, Any]
Lookup = Callable[[str, str], "JSON | None"]
"""``(namespace, name)`` -> a ConfigMap or Secret document, or None when it does not exist."""

_FIELD_MAP = re.compile(r"^metadata\.(labels|annotations)\[['\"](.+)['\"]\]$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class ConfigError(InternalError):
    """A container's configuration cannot be built (kubelet: CreateContainerConfigError)."""


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """Kubernetes ``$(VAR)`` expansion: defined names are replaced, undefined ones stay as
    written, ``$$`` is a literal ``$`` (so ``$$(VAR)`` gives ``$(VAR)``)."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    n = len(text)
    while cursor < n:
        if text[cursor] == "$" and cursor + 1 < n:
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1 :]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close == -1:
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    value = lookup(name)
                    out.append(value if value is not None else f"$({name})")
                    advance = close + 1
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def expand_all(values: Sequence[str], env: Mapping[str, str]) -> list[str]:
    return [expand(value, env.get) for value in values]


@dataclass
class PodFacts:
    """What ``fieldRef`` and ``resourceFieldRef`` can read."""

    pod: JSON
    pod_ip: str = ""
    host_ip: str = "127.0.0.1"
    node_allocatable: Mapping[str, str] = field(default_factory=dict)

    @property
    def meta(self) -> JSON:
        return self.pod.get("metadata") or {}

    @property
    def spec(self) -> JSON:
        return self.pod.get("spec") or {}

    @property
    def namespace(self) -> str:
        return str(self.meta.get("namespace") or "default")


def field_value(facts: PodFacts, path: str) -> str:
    """The value of a downward-API ``fieldRef.fieldPath``."""
    meta, spec = facts.meta, facts.spec
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": facts.namespace,
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.hostIP": facts.host_ip,
        "status.hostIPs": facts.host_ip,
        "status.podIP": facts.pod_ip,
        "status.podIPs": facts.pod_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    if path in ("metadata.labels", "metadata.annotations"):
        return format_map(meta.get(path.partition(".")[2]) or {})
    match = _FIELD_MAP.match(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    raise ConfigError(f"unsupported fieldRef fieldPath {path!r}")


def format_map(values: Mapping[str, Any]) -> str:
    """Labels or annotations as a downward-API file writes them: ``key="value"`` lines."""
    lines = []
    for key in sorted(values):
        escaped = str(values[key]).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines.append(f'{key}="{escaped}"')
    return "\n".join(lines)


def parse_quantity(text: str | int | float) -> Decimal:
    """A Kubernetes quantity (``500m``, ``1Gi``, ``2e3``) as a number."""
    from kubernetes.utils.quantity import parse_quantity as parse

    return Decimal(parse(text))


def resource_value(facts: PodFacts, container: JSON, ref: JSON) -> str:
    """A ``resourceFieldRef``: the container's limit (or request), else node allocatable,
    divided by ``divisor`` and rounded up, as kubelet does."""
    resource = str(ref.get("resource") or "")
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in ("cpu", "memory", "ephemeral-storage"):
        raise ConfigError(f"unsupported resourceFieldRef resource {resource!r}")
    resources = container.get("resources") or {}
    value = (resources.get(kind) or {}).get(name)
    if value is None and kind == "requests":
        value = (resources.get("limits") or {}).get(name)
    if value is None:
        value = facts.node_allocatable.get(name, "0") if kind == "limits" else "0"
    divisor = parse_quantity(ref.get("divisor") or "1")
    if divisor == 0:
        divisor = Decimal(1)
    return str(math.ceil(parse_quantity(value) / divisor))


def build_env(
    container: JSON,
    facts: PodFacts,
    *,
    configmap: Lookup,
    secret: Lookup,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment kubelet gives ``container``: ``base`` (image and service variables),
    then ``envFrom`` in order, then ``env`` in order, each value ``$(VAR)``-expanded
    against what came before. Raises :class:`ConfigError` for a missing, non-optional
    ConfigMap, Secret or key."""
    env: dict[str, str] = dict(base or {})
    namespace = facts.namespace
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        if "configMapRef" in source:
            ref, kind, lookup = source["configMapRef"], "ConfigMap", configmap
        elif "secretRef" in source:
            ref, kind, lookup = source["secretRef"], "Secret", secret
        else:
            continue
        obj = lookup(namespace, str(ref.get("name")))
        if obj is None:
            if ref.get("optional"):
                continue
            raise ConfigError(f'{kind.lower()} "{ref.get("name")}" not found')
        for key, value in _data(obj, kind).items():
            name = prefix + key
            if _ENV_NAME.match(name):  # kubelet skips invalid names (and emits an event)
                env[name] = value
    for var in container.get("env") or []:
        name = str(var.get("name"))
        if "valueFrom" in var:
            value = _value_from(var["valueFrom"], container, facts, configmap, secret)
            if value is None:
                continue  # an optional reference that is missing
            env[name] = value
        else:
            env[name] = expand(str(var.get("value") or ""), env.get)
    return env


def _value_from(
    source: JSON, container: JSON, facts: PodFacts, configmap: Lookup, secret: Lookup
) -> str | None:
    if "fieldRef" in source:
        return field_value(facts, str(source["fieldRef"].get("fieldPath")))
    if "resourceFieldRef" in source:
        return resource_value(facts, container, source["resourceFieldRef"])
    for key_ref, kind, lookup in (
        ("configMapKeyRef", "ConfigMap", configmap),
        ("secretKeyRef", "Secret", secret),
    ):
        if key_ref in source:
            ref = source[key_ref]
            obj = lookup(facts.namespace, str(ref.get("name")))
            if obj is None:
                if ref.get("optional"):
                    return None
                raise ConfigError(f'{kind.lower()} "{ref.get("name")}" not found')
            data = _data(obj, kind)
            if ref.get("key") not in data:
                if ref.get("optional"):
                    return None
                raise ConfigError(
                    f"couldn't find key {ref.get('key')} in {kind} "
                    f"{facts.namespace}/{ref.get('name')}"
                )
            return data[str(ref["key"])]
    raise ConfigError(f"unsupported valueFrom {sorted(source)}")


def _data(obj: JSON, kind: str) -> dict[str, str]:
    """A ConfigMap's or Secret's string values (Secret data is base64, binaryData too)."""
    out: dict[str, str] = {}
    if kind == "Secret":
        for key, value in (obj.get("stringData") or {}).items():
            out[key] = str(value)
        for key, value in (obj.get("data") or {}).items():
            out[key] = base64.b64decode(value).decode(errors="replace")
        return out
    for key, value in (obj.get("binaryData") or {}).items():
        out[key] = base64.b64decode(value).decode(errors="replace")
    for key, value in (obj.get("data") or {}).items():
        out[key] = str(value)
    return out


def data_bytes(obj: JSON, kind: str) -> dict[str, bytes]:
    """A ConfigMap's or Secret's values as bytes, for volume files."""
    out: dict[str, bytes] = {}
    if kind == "Secret":
        for key, value in (obj.get("data") or {}).items():
            out[key] = base64.b64decode(value)
        return out
    for key, value in (obj.get("binaryData") or {}).items():
        out[key] = base64.b64decode(value)
    for key, value in (obj.get("data") or {}).items():
        out[key] = str(value).encode()
    return out


MASTER_NAMESPACE = "default"
MASTER_SERVICES = ("kubernetes",)


def apiserver_env(server: str) -> dict[str, str]:
    """``KUBERNETES_SERVICE_HOST``/``PORT`` and the rest of the ``kubernetes`` Service's
    variables, pointing at ``server``: the ``kubernetes`` Service's ClusterIP where the
    node proxies it, else the apiserver itself (its certificate covers both), so
    in-cluster clients work."""
    url = urlparse(server)
    host = url.hostname or "127.0.0.1"
    port = str(url.port or 443)
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": f"tcp://{host}:{port}",
        f"KUBERNETES_PORT_{port}_TCP": f"tcp://{host}:{port}",
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": port,
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }


def service_links(
    services: Iterable[JSON], namespace: str, enable_links: bool = True
) -> dict[str, str]:
    """The Service variables of a container in ``namespace``, as kubelet picks them: the
    master ``default/kubernetes`` always, the namespace's Services (which win over a
    master Service of the same name) unless ``enableServiceLinks`` is false; Services
    without a ClusterIP never."""
    chosen: dict[str, JSON] = {}
    for service in services:
        meta = service.get("metadata") or {}
        name, where = str(meta.get("name")), meta.get("namespace")
        if where == MASTER_NAMESPACE and name in MASTER_SERVICES:
            chosen.setdefault(name, service)
        elif where == namespace and enable_links:
            chosen[name] = service
    return service_env(chosen[name] for name in sorted(chosen))


def service_env(services: Iterable[JSON]) -> dict[str, str]:
    """kubelet's variables for ``services`` (``envvars.FromServices``): ``{NAME}_SERVICE_
    HOST``, ``_SERVICE_PORT`` (the first port), ``_SERVICE_PORT_{PORTNAME}`` and the
    Docker link variables ``{NAME}_PORT``, ``{NAME}_PORT_{port}_{PROTO}[_PROTO|_PORT|
    _ADDR]``; names upper-cased with ``-`` as ``_``."""
    env: dict[str, str] = {}
    for service in services:
        spec = service.get("spec") or {}
        ip, ports = spec.get("clusterIP"), spec.get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        prefix = env_name(str((service.get("metadata") or {}).get("name")))
        env[f"{prefix}_SERVICE_HOST"] = ip
        env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
        for port in ports:
            if port.get("name"):
                env[f"{prefix}_SERVICE_PORT_{env_name(port['name'])}"] = str(port["port"])
        env.update(_link_env(prefix, ip, ports))
    return env


def _link_env(prefix: str, ip: str, ports: Sequence[JSON]) -> dict[str, str]:
    env: dict[str, str] = {}
    for index, port in enumerate(ports):
        protocol = str(port.get("protocol") or "TCP")
        number = str(port["port"])
        url = f"{protocol.lower()}://{ip}:{number}"
        if index == 0:
            env[f"{prefix}_PORT"] = url  # Docker special-cases the first port
        key = f"{prefix}_PORT_{number}_{protocol.upper()}"
        env.update(
            {key: url, f"{key}_PROTO": protocol.lower(), f"{key}_PORT": number, f"{key}_ADDR": ip}
        )
    return env


def env_name(name: str) -> str:
    """kubelet's ``makeEnvVariableName``: upper case, ``-`` as ``_``."""
    return name.replace("-", "_").upper()
