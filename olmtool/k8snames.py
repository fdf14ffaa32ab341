"""apimachinery's name rules (``k8s.io/apimachinery/pkg/util/validation``), in its
wording: DNS-1123 subdomains, DNS-1035 labels, qualified names (label keys), label
values, port names. Used by the bundle checks, ``bundle.admission`` and the catalog's
package and GVK checks."""

from __future__ import annotations

import re
from typing import Any

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
PORT_NAME = re.compile(r"^[-a-z0-9]+$")


def _bounded_match(value: str, limit: int, pattern: re.Pattern[str], message: str) -> str | None:
    """apimachinery's two steps: the length first, then the grammar (``message``)."""
    if len(value) > limit:
        return f"must be no more than {limit} characters"
    return None if pattern.match(value) else message


def dns_subdomain_problem(value: Any) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain (Kubernetes object names), or None."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    return _bounded_match(
        value,
        253,
        DNS_SUBDOMAIN,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character",
    )


def dns1035_label_problem(value: str) -> str | None:
    return _bounded_match(
        value,
        63,
        DNS1035_LABEL,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
        "start with an alphabetic character, and end with an alphanumeric character",
    )


def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label/annotation key (``prefix/name``), or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and dns_subdomain_problem(prefix):
        return f"prefix {prefix!r} must be a DNS subdomain"
    if not name or len(name) > 63 or not LABEL_NAME.match(name):
        return "name part must be 63 characters or less, alphanumeric, '-', '_' or '.'"
    return None


def label_value_problem(value: str) -> str | None:
    return _bounded_match(
        value,
        63,
        LABEL_VALUE,
        "a valid label must be an empty string or consist of alphanumeric characters, "
        "'-', '_' or '.', and must start and end with an alphanumeric character",
    )


def port_name_problem(name: str) -> str | None:
    """apimachinery's ``IsValidPortName`` (IANA_SVC_NAME), as a string targetPort must be."""
    if len(name) > 15:
        return "must be no more than 15 characters"
    if not PORT_NAME.match(name):
        return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
    if "--" in name:
        return "must not contain consecutive hyphens"
    if not re.search("[a-z]", name):
        return "must contain at least one letter (a-z)"
    if name.startswith("-") or name.endswith("-"):
        return "must not begin or end with a hyphen"
    return None
