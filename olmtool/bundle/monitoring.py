"""ServiceMonitor and PrometheusRule objects (monitoring.coreos.com/v1) checked as they will be
installed: against the prometheus-operator CRDs' schemas, then against the rules that the
prometheus-operator and Prometheus apply when they load them.

The schemas below are the part of the upstream CRDs that bundles use, copied from
prometheus-operator v0.84.1 ``example/prometheus-operator-crd/monitoring.coreos.com_
servicemonitors.yaml`` and v0.82.2 ``..._prometheusrules.yaml``
(https://github.com/prometheus-operator/prometheus-operator): required fields, types,
enums and the duration pattern. Every other field of the levels we model is listed by
name only (any value), so a misspelt field is found: the apiserver would silently drop it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from olmtool.crd import validate_object

GROUP = "monitoring.coreos.com"
KINDS = ("ServiceMonitor", "PrometheusRule")
PRESERVE = "x-kubernetes-preserve-unknown-fields"
# Prometheus durations, as the CRDs' `pattern` (model.Duration without fractions).
DURATION = (
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)
_UNITS_MS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000,
             "m": 60_000, "s": 1000, "ms": 1}  # fmt: skip
_DURATION_PART = re.compile(r"([0-9]+)(ms|y|w|d|h|m|s)")


def _any(names: str) -> dict[str, Any]:
    """Fields we do not model (space-separated): in the CRD, any value accepted here."""
    return {name: {PRESERVE: True} for name in names.split()}


_STRING = {"type": "string"}
_DURATION = {"type": "string", "pattern": DURATION}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_STRINGS = {"type": "array", "items": _STRING}
_LABEL_SELECTOR = {
    "type": "object",
    "properties": {
        "matchLabels": _STRING_MAP,
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {"key": _STRING, "operator": _STRING, "values": _STRINGS},
            },
        },
    },
}

ENDPOINT = {
    "type": "object",
    "properties": {
        "port": _STRING,
        "targetPort": {"x-kubernetes-int-or-string": True},
        "path": _STRING,
        "scheme": {"type": "string", "enum": ["http", "https"]},
        "interval": _DURATION,
        "scrapeTimeout": _DURATION,
        "honorLabels": {"type": "boolean"},
        **_any(
            "authorization basicAuth bearerTokenFile bearerTokenSecret enableHttp2 "
            "filterRunning followRedirects honorTimestamps metricRelabelings noProxy oauth2 "
            "params proxyConnectHeader proxyFromEnvironment proxyUrl relabelings tlsConfig "
            "trackTimestampsStaleness"
        ),
    },
}

SERVICE_MONITOR_SPEC = {
    "type": "object",
    "required": ["endpoints", "selector"],
    "properties": {
        "selector": _LABEL_SELECTOR,
        "endpoints": {"type": "array", "items": ENDPOINT},
        "namespaceSelector": {
            "type": "object",
            "properties": {"any": {"type": "boolean"}, "matchNames": _STRINGS},
        },
        "jobLabel": _STRING,
        "targetLabels": _STRINGS,
        "podTargetLabels": _STRINGS,
        **_any(
            "attachMetadata bodySizeLimit convertClassicHistogramsToNHCB "
            "fallbackScrapeProtocol keepDroppedTargets labelLimit labelNameLengthLimit "
            "labelValueLengthLimit nativeHistogramBucketLimit "
            "nativeHistogramMinBucketFactor sampleLimit scrapeClass scrapeClassicHistograms "
            "scrapeProtocols selectorMechanism targetLimit"
        ),
    },
}

RULE = {
    "type": "object",
    "required": ["expr"],
    "properties": {
        "alert": _STRING,
        "record": _STRING,
        "expr": {"x-kubernetes-int-or-string": True},
        "for": _DURATION,
        "keep_firing_for": {"type": "string", "minLength": 1, "pattern": DURATION},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
    },
}

PROMETHEUS_RULE_SPEC = {
    "type": "object",
    "properties": {
        "groups": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "interval": _DURATION,
                    "query_offset": _DURATION,
                    "labels": _STRING_MAP,
                    "limit": {"type": "integer"},
                    "partial_response_strategy": {"type": "string"},
                    "rules": {"type": "array", "items": RULE},
                },
            },
        }
    },
}


def _crd(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    plural = f"{kind.lower()}s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {"spec": spec},
                        }
                    },
                }
            ],
        },
    }


CRDS = {
    "ServiceMonitor": _crd("ServiceMonitor", SERVICE_MONITOR_SPEC),
    "PrometheusRule": _crd("PrometheusRule", PROMETHEUS_RULE_SPEC),
}


def monitoring_crds() -> list[dict[str, Any]]:
    """The prometheus-operator's ServiceMonitor and PrometheusRule CRDs, as far as bundles
    use them: what a local cluster serves so bundles shipping them install, as on
    OpenShift (which runs the prometheus-operator)."""
    return [CRDS[kind] for kind in KINDS]


@dataclass(frozen=True)
class MonitoringProblem:
    """One problem of a monitoring object; ``path`` is the field (``spec.groups[0].name``)."""

    path: str | None
    message: str
    severity: Literal["error", "warning"] = "error"
    # Refused by the apiserver (the CRDs' schemas), not later by the prometheus-operator
    # or Prometheus: only these stop an install.
    apiserver: bool = False


def monitoring_problems(document: Any) -> Iterator[MonitoringProblem]:
    """What the apiserver, the prometheus-operator or Prometheus would refuse (errors), or
    silently drop or over-select (warnings), in a ServiceMonitor or PrometheusRule."""
    kind = document.get("kind") if isinstance(document, dict) else None
    if not isinstance(kind, str) or kind not in CRDS:
        return
    report = validate_object(CRDS[kind], document)
    for error in report.errors:
        yield _located(error)
    for path in report.pruned:
        yield MonitoringProblem(
            path,
            f"unknown field {path.rsplit('.', 1)[-1]!r}: the apiserver drops it "
            "(not in the prometheus-operator CRD)",
            "warning",
        )
    if report.errors:
        return  # the semantic rules below assume the types are right
    spec = document.get("spec") or {}
    if kind == "ServiceMonitor":
        yield from _service_monitor(spec)
    else:
        yield from _prometheus_rule(spec)


def _service_monitor(spec: dict[str, Any]) -> Iterator[MonitoringProblem]:
    selector = spec.get("selector") or {}
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        any_namespace = (spec.get("namespaceSelector") or {}).get("any")
        where = "every namespace" if any_namespace else "its namespace"
        yield MonitoringProblem(
            "spec.selector",
            f"an empty selector selects every Service in {where}",
            "warning",
        )
    for index, endpoint in enumerate(spec.get("endpoints") or []):
        interval, timeout = endpoint.get("interval"), endpoint.get("scrapeTimeout")
        if interval and timeout and duration_ms(timeout) > duration_ms(interval):
            yield MonitoringProblem(
                f"spec.endpoints[{index}].scrapeTimeout",
                f"scrapeTimeout {timeout} is longer than interval {interval}; the "
                "prometheus-operator rejects the ServiceMonitor",
            )


def _prometheus_rule(spec: dict[str, Any]) -> Iterator[MonitoringProblem]:
    for g, group in enumerate(spec.get("groups") or []):
        for r, rule in enumerate(group.get("rules") or []):
            yield from _rule(rule, f"spec.groups[{g}].rules[{r}]")


def _rule(rule: dict[str, Any], path: str) -> Iterator[MonitoringProblem]:
    alert, record = rule.get("alert"), rule.get("record")
    if bool(alert) == bool(record):
        which = "both alert and record" if alert else "neither alert nor record"
        yield MonitoringProblem(
            path, f"a rule needs exactly one of alert or record; this one has {which}"
        )
    if not str(rule.get("expr", "")).strip():
        name = alert or record or "the rule"
        yield MonitoringProblem(f"{path}.expr", f"{name}: expr is empty")
    if record and not alert:
        for field in ("for", "keep_firing_for", "annotations"):
            if field in rule:
                yield MonitoringProblem(
                    f"{path}.{field}",
                    f"recording rule {record}: Prometheus refuses {field!r} in a recording rule",
                )


def duration_ms(text: str) -> int:
    """Milliseconds of a Prometheus duration that matches :data:`DURATION`."""
    return sum(int(n) * _UNITS_MS[unit] for n, unit in _DURATION_PART.findall(text))


_LOCATED = re.compile(r"^([A-Za-z0-9_.\[\]/-]+): (.*)$", re.S)


def _located(error: str) -> MonitoringProblem:
    match = _LOCATED.match(error)
    path, message = (match[1], match[2]) if match else (None, error)
    message = message.replace(_NOT_DURATION, _DURATION_HINT)
    if path and path.endswith(".port") and "is not of type 'string'" in message:
        message += " (port is the Service port's name; a number goes in targetPort)"
    if path and path.startswith("spec.groups[") and message.startswith("Duplicate value"):
        message += " (rule group names must be unique)"
    return MonitoringProblem(path, message, apiserver=True)


_NOT_DURATION = f"does not match {DURATION!r}"
_DURATION_HINT = "is not a Prometheus duration (like 30s, 5m or 1h30m)"
