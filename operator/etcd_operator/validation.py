"""Spec checks the operator makes itself (pure): the CRD of an older release on the
cluster may have let through what today's refuses (``storageSize: "0"``, ``"-1Gi"``), and
a spec the operator cannot act on is reported as ``InvalidSpec``, not retried.

Quantities are parsed as the apiserver parses them (``k8s.io/apimachinery``'s
``resource.ParseQuantity``): a signed decimal number and one suffix, binary (``Ki``..
``Ei``), decimal (``n``, ``u``, ``m``, ``k``, ``M``..``E``) or an integer exponent
(``e9``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

DEFAULT_SIZE = "1Gi"
# The sizes of the volumes the operator creates, by spec field.
SIZE_FIELDS = ("storageSize", "backupStorageSize")

_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([A-Za-z]*|[eE][+-]?[0-9]+)")
_NOT_A_QUANTITY = "not a quantity (such as 1Gi, 500Mi or 2G)"
_EXPONENT = re.compile(r"[eE][+-]?[0-9]+")
_SUFFIXES = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}


class QuantityRefused(ValueError):
    """A value that is not a Kubernetes quantity, or not one the field allows."""


def parse_quantity(value: Any) -> Decimal:
    """A quantity (``"1Gi"``, ``"1.5G"``, ``"1e9"``, ``1073741824``) as a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise QuantityRefused(_NOT_A_QUANTITY)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise QuantityRefused(_NOT_A_QUANTITY)
        return Decimal(str(value))
    found = _QUANTITY.fullmatch(value)
    if not found:
        raise QuantityRefused(_NOT_A_QUANTITY)
    number, suffix = found.groups()
    if _EXPONENT.fullmatch(suffix):
        factor = Decimal(f"1{suffix}")
    elif suffix in _SUFFIXES:
        factor = _SUFFIXES[suffix]
    else:
        raise QuantityRefused(f'unknown unit "{suffix}" (units: Ki, Mi, Gi, Ti, k, M, G, T...)')
    try:
        return Decimal(number) * factor
    except ArithmeticError as exc:  # decimal's Overflow: an exponent like e999999999
        raise QuantityRefused("out of range") from exc


def size_bytes(value: Any) -> int:
    """A positive size in whole bytes (a fraction of a byte rounds up, as the apiserver does)."""
    quantity = parse_quantity(value)
    if quantity <= 0:
        raise QuantityRefused("must be greater than zero")
    return math.ceil(quantity)


def size_problem(spec: Mapping[str, Any], field: str) -> str | None:
    """Why ``spec[field]`` (unset: 1Gi) is not a volume size, or None."""
    value = spec.get(field)
    if value is None:
        return None
    try:
        size_bytes(value)
    except QuantityRefused as exc:
        shown = f'"{value}"' if isinstance(value, str) else str(value)
        return f"spec.{field} {shown}: {exc}"
    return None


def size(spec: Mapping[str, Any], field: str) -> str:
    """``spec[field]`` as the volume size to request (check :func:`size_problem` first)."""
    value = spec.get(field)
    return DEFAULT_SIZE if value is None else str(value)


# etcd's own defaults for the raft timing (its --heartbeat-interval, --election-timeout)
DEFAULT_HEARTBEAT_MS, DEFAULT_ELECTION_MS = 100, 1000


def options_problem(spec: Mapping[str, Any]) -> str | None:
    """What etcd itself would refuse at start in ``spec.options`` that the CRD's bounds
    cannot say (Kubernetes 1.20 has no rules across fields), or None. A refused set of
    options is not rolled out: the members keep what they run."""
    options = spec.get("options") or {}
    if not isinstance(options, Mapping):
        return "spec.options: not an object"
    heartbeat = options.get("heartbeatIntervalMs") or DEFAULT_HEARTBEAT_MS
    election = options.get("electionTimeoutMs") or DEFAULT_ELECTION_MS
    if election < 5 * heartbeat:
        return (
            f"spec.options: electionTimeoutMs {election} must be at least 5 times "
            f"heartbeatIntervalMs {heartbeat} ({5 * heartbeat})"
        )
    retention = str(options.get("autoCompactionRetention") or "")
    if options.get("autoCompactionMode") == "revision" and retention and not retention.isdigit():
        return (
            f'spec.options: autoCompactionRetention "{retention}" must be a number of '
            "revisions in revision mode"
        )
    return None


def options(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``spec.options`` when the operator accepts them; else None: a member started
    meanwhile gets the defaults rather than settings etcd would refuse."""
    return None if options_problem(spec) else spec.get("options")


def spec_problems(spec: Mapping[str, Any]) -> list[str]:
    """What the operator refuses in ``spec`` (the version is checked on its own, against the
    version the members run: :func:`etcd_operator.versions.check_change`)."""
    problems = [p for field in SIZE_FIELDS if (p := size_problem(spec, field))]
    if options := options_problem(spec):
        problems.append(options)
    if refused := tls_problem(spec):
        problems.append(refused)
    return problems


def tls_problem(spec: Mapping[str, Any]) -> str | None:
    """What the operator refuses in spec.tls that the CRD lets through."""
    requested = spec.get("tls")
    if not isinstance(requested, Mapping):
        return None
    if requested.get("mode") == "secretRefs" and not requested.get("secretRefs"):
        return "spec.tls: mode secretRefs needs secretRefs (the server, peer and client Secrets)"
    return None
