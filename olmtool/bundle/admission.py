"""Kubernetes' admissionregistration/v1 parts of a webhook, validated as the apiserver
validates them (apimachinery's name rules, label selectors, ``RuleWithOperations`` and
its resource wildcards), plus OLM's refusals of rules over its own and all groups."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from olmtool.bundle.sectionbase import Section, fail_at

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


# -- Kubernetes' name rules (apimachinery validation) ---------------------------------------


def dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS_SUBDOMAIN.match(value):
        return (
            "must be a lowercase DNS name: alphanumerics, '-' and '.', "
            "starting and ending with an alphanumeric"
        )
    return None


def qualified_name_problem(value: str) -> str | None:
    """A label key: ``[prefix/]name`` (prefix a DNS subdomain, name at most 63)."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or dns_subdomain_problem(prefix)):
        return f"{value!r}: the prefix must be a DNS subdomain"
    if len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return (
            f"{value!r}: a name of at most 63 alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if value and (len(value) > 63 or not _QUALIFIED_NAME.match(value)):
        return (
            f"label value {value!r} must be at most 63 alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric"
        )
    return None


def port_name_problem(value: str) -> str | None:
    """IANA service names, as a named port (``IsValidPortName``)."""
    if len(value) > 15 or not _PORT_NAME.match(value) or "--" in value:
        return f"port name {value!r} must be at most 15 lowercase alphanumerics or '-'"
    if not re.search("[a-z]", value):
        return f"port name {value!r} must contain a letter"
    return None


# -- parts ---------------------------------------------------------------------------------


class SelectorRequirement(Section):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = []

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        return raise_if(qualified_name_problem(value), value)

    @model_validator(mode="after")
    def _values(self) -> SelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            fail_at(("values",), f"must be non-empty when operator is {self.operator}")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            fail_at(("values",), f"must be empty when operator is {self.operator}")
        for index, item in enumerate(self.values):
            problem = label_value_problem(item)
            if problem:
                fail_at(("values", index), problem, item)
        return self


class LabelSelector(Section):
    match_labels: dict[str, str] = {}
    match_expressions: list[SelectorRequirement] = []

    @field_validator("match_labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            problem = qualified_name_problem(key) or label_value_problem(item)
            if problem:
                fail_at((key,), problem, item)
        return value


Operation = Literal["*", "CREATE", "UPDATE", "DELETE", "CONNECT"]


class Rule(Section):
    """admissionregistration/v1 ``RuleWithOperations``."""

    operations: list[Operation] = Field(min_length=1)
    api_groups: list[str] = Field(min_length=1)
    api_versions: list[str] = Field(min_length=1)
    resources: list[str] = Field(min_length=1)
    scope: Literal["Cluster", "Namespaced", "*"] | None = None

    @field_validator("operations", "api_groups", "api_versions")
    @classmethod
    def _wildcard_alone(cls, value: list[str]) -> list[str]:
        if "*" in value and len(value) > 1:
            raise ValueError("if '*' is present, it must be the only entry")
        for index, item in enumerate(value):
            if value.index(item) != index:
                fail_at((index,), f"{item!r} is listed twice", item)
        return value

    @field_validator("api_versions")
    @classmethod
    def _versions(cls, value: list[str]) -> list[str]:
        for index, item in enumerate(value):
            if not item:
                fail_at((index,), "must not be empty", item)
        return value

    @field_validator("resources")
    @classmethod
    def _resources(cls, value: list[str]) -> list[str]:
        for index, problem in resource_problems(value):
            fail_at((index,), problem, value[index])
        return value

    @field_validator("api_groups")
    @classmethod
    def _olm_groups(cls, value: list[str]) -> list[str]:
        # OLM's install.ValidWebhookRules: a CSV with such a rule fails to install
        if "*" in value:
            raise ValueError("OLM refuses webhook rules over all API groups ('*')")
        if "operators.coreos.com" in value:
            raise ValueError("OLM refuses webhook rules over its own group operators.coreos.com")
        return value

    @model_validator(mode="after")
    def _webhook_configurations(self) -> Rule:
        protected = {"*", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
        if "admissionregistration.k8s.io" in self.api_groups and protected & set(self.resources):
            fail_at(
                ("resources",),
                "OLM refuses webhook rules over MutatingWebhookConfiguration or "
                "ValidatingWebhookConfiguration resources",
            )
        return self


def resource_problems(resources: Sequence[str]) -> Iterator[tuple[int, str]]:
    """The apiserver's ``validateResources``: wildcards and ``resource/subresource``."""
    double = single = plain = False
    wildcard_sub: set[str] = set()
    wildcard_res: set[str] = set()
    for index, entry in enumerate(resources):
        if not entry:
            yield index, "must not be empty"
            continue
        if double:
            yield index, "if '*/*' is present, no other resource may be listed"
        if single and "/" not in entry:
            yield index, "if '*' is present, no other resource without subresource may be listed"
        if entry == "*/*":
            double = True
        if entry == "*":
            if plain:
                yield (
                    index,
                    "if '*' is present, no other resource without subresource may be listed",
                )
            single = True
        resource, slash, sub = entry.partition("/")
        if not slash:
            plain = plain or entry != "*"
            continue
        if resource in wildcard_sub:
            yield index, f"if '{resource}/*' is present, {entry!r} must not be listed"
        if sub in wildcard_res:
            yield index, f"if '*/{sub}' is present, {entry!r} must not be listed"
        if sub == "*":
            wildcard_sub.add(resource)
        if resource == "*":
            wildcard_res.add(sub)


def raise_if(problem: str | None, value: Any) -> Any:
    """``value``, or a ValueError with ``problem`` (for field validators)."""
    if problem:
        raise ValueError(problem)
    return value
