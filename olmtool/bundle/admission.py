"""The one home of the webhook rules: Kubernetes 1.20's admissionregistration/v1
validation (``pkg/apis/admissionregistration/validation``, apiserver's
``ValidateWebhookService`` path rules, apimachinery's name and label-selector rules) and
OLM v0.18.3's own refusals (``ValidWebhookRules``, the Service it names after the
deployment, conversion CRDs that preserve unknown fields).

Pure functions over plain data (camelCase keys, as in a CSV's ``webhookdefinitions``),
each problem a ``(path, message)``: ``path`` the keys and indexes under the webhook,
messages in the apiserver's wording. Two callers: ``bundle.webhooks`` (olmtool.yaml's
``bundle.webhooks``, which raises the first problem on its key) and the ``csv/webhook``
check (every problem a finding). Data of the wrong type is skipped: that is
``csv/field-type``'s (or pydantic's) to report.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal, get_args

from olmtool.godecode import go_list, go_map
from olmtool.k8snames import (
    dns1035_label_problem,
    dns_subdomain_problem,
    label_value_problem,
    port_name_problem,
    qualified_name_problem,
)


class MapKey(str):
    """A map key in a problem's path (``matchLabels[key]`` in the apiserver's notation)."""


Path = tuple[str | int, ...]
Problem = tuple[Path, str]

# -- enums (the Literal types are pydantic's; the tuples the checks') ---------------------

WebhookType = Literal["ValidatingAdmissionWebhook", "MutatingAdmissionWebhook", "ConversionWebhook"]
SideEffects = Literal["None", "NoneOnDryRun"]  # admissionregistration/v1
FailurePolicy = Literal["Ignore", "Fail"]
MatchPolicy = Literal["Exact", "Equivalent"]
ReinvocationPolicy = Literal["Never", "IfNeeded"]
Operation = Literal["*", "CREATE", "UPDATE", "DELETE", "CONNECT"]
Scope = Literal["Cluster", "Namespaced", "*"]
SelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]

ADMISSION = ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")
MUTATING = "MutatingAdmissionWebhook"
CONVERSION = "ConversionWebhook"
SIDE_EFFECTS: tuple[str, ...] = get_args(SideEffects)
FAILURE_POLICIES: tuple[str, ...] = get_args(FailurePolicy)
MATCH_POLICIES: tuple[str, ...] = get_args(MatchPolicy)
REINVOCATION_POLICIES: tuple[str, ...] = get_args(ReinvocationPolicy)
OPERATIONS: tuple[str, ...] = get_args(Operation)
SCOPES: tuple[str, ...] = get_args(Scope)
SELECTOR_OPERATORS: tuple[str, ...] = get_args(SelectorOperator)
REVIEW_VERSIONS = ("v1", "v1beta1")  # the AdmissionReview versions the apiserver sends
TIMEOUT_SECONDS = (1, 30)
DEFAULT_CONTAINER_PORT = 443
OLM_GROUP = "operators.coreos.com"
WEBHOOK_CONFIGURATIONS = frozenset(
    {"*", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
)


def unsupported(value: str, allowed: Sequence[str]) -> str:
    """The apiserver's NotSupported wording (its sets list the values sorted)."""
    return (
        f"Unsupported value: {value!r}: supported values: {', '.join(map(repr, sorted(allowed)))}"
    )


# -- one webhook -------------------------------------------------------------------------


def webhook_problems(hook: dict[str, Any]) -> Iterator[Problem]:
    """Everything one webhook definition can be refused for on its own."""
    kind = hook.get("type")
    if kind in ADMISSION:
        yield from _admission(hook, kind)
    elif kind == CONVERSION:
        if not strings(hook.get("conversionCRDs")):
            yield (
                ("conversionCRDs",),
                "a conversion webhook must name at least one CRD: OLM fails the CSV otherwise",
            )
    else:
        return  # the type itself is the schema's to report
    yield from review_version_problems(hook.get("admissionReviewVersions"))
    yield from path_problems(hook.get("webhookPath"))
    yield from _service_problems(hook)


def _admission(hook: dict[str, Any], kind: str) -> Iterator[Problem]:
    name = hook.get("generateName")
    if isinstance(name, str) and name:
        problem = webhook_name_problem(name)
        if problem:
            yield ("generateName",), problem
    yield from _one_of(
        hook,
        "sideEffects",
        SIDE_EFFECTS,
        " (OLM v0.18.3 creates admissionregistration.k8s.io/v1 webhook configurations)",
    )
    yield from _one_of(hook, "failurePolicy", FAILURE_POLICIES)
    yield from _one_of(hook, "matchPolicy", MATCH_POLICIES)
    if kind == MUTATING:
        yield from _one_of(hook, "reinvocationPolicy", REINVOCATION_POLICIES)
    timeout = hook.get("timeoutSeconds")
    low, high = TIMEOUT_SECONDS
    if isinstance(timeout, int) and not isinstance(timeout, bool) and not low <= timeout <= high:
        yield ("timeoutSeconds",), f"{timeout} must be between {low} and {high} seconds"
    for index, rule in enumerate(go_list(hook.get("rules"))):
        if isinstance(rule, dict):
            for path, message in rule_problems(rule):
                yield ("rules", index, *path), message
    for path, message in selector_problems(hook.get("objectSelector")):
        yield ("objectSelector", *path), message


def webhook_name_problem(name: str) -> str | None:
    """apimachinery's ``IsFullyQualifiedName`` (the webhook's name), then OLM's label."""
    fqdn = name.removesuffix(".")
    problem = dns_subdomain_problem(fqdn)
    if problem:
        return f"{name!r} (the webhook's name): {problem}"
    if len(fqdn.split(".")) < 3:
        return f"{name!r}: should be a domain with at least three segments separated by dots"
    if label_value_problem(name):
        return (
            f"{name!r} must be a valid label value (at most 63 characters): OLM labels "
            "the webhook configuration with it"
        )
    return None


def _one_of(
    hook: dict[str, Any], key: str, allowed: tuple[str, ...], why: str = ""
) -> Iterator[Problem]:
    value = hook.get(key)
    if isinstance(value, str) and value not in allowed:
        yield (key,), f"{unsupported(value, allowed)}{why}"


def review_version_problems(versions: Any) -> Iterator[Problem]:
    """validateAdmissionReviewVersions (a version the apiserver sends required)."""
    if not isinstance(versions, list):
        return  # missing: the schema's; not a list: the field type's
    where = ("admissionReviewVersions",)
    if not versions:
        yield where, f"Required value: must specify one of {', '.join(REVIEW_VERSIONS)}"
        return
    seen: set[str] = set()
    for index, version in enumerate(strings(versions)):
        if version in seen:
            yield (*where, index), f"duplicate version {version!r}"
            continue
        seen.add(version)
        problem = dns1035_label_problem(version)
        if problem:
            yield (*where, index), f"{version!r}: {problem}"
    if not seen & set(REVIEW_VERSIONS):
        yield where, f"must include at least one of {', '.join(REVIEW_VERSIONS)}"


def path_problems(path: Any) -> Iterator[Problem]:
    """apiserver's ``ValidateWebhookService`` path rules (segments are DNS subdomains)."""
    if not isinstance(path, str) or path in ("", "/"):
        return
    where = ("webhookPath",)
    if path == "//":
        yield where, "segment[0] may not be empty"
        return
    if not path.startswith("/"):
        yield where, "must start with a '/'"
    for index, step in enumerate(path[1:].removesuffix("/").split("/")):
        problem = "may not be empty" if not step else dns_subdomain_problem(step)
        if problem:
            yield where, f"{path!r}: segment[{index}] {problem}"


def service_name(deployment: str) -> str:
    """The Service OLM creates for a webhook of ``deployment``."""
    return deployment.replace(".", "-") + "-service"


def _service_problems(hook: dict[str, Any]) -> Iterator[Problem]:
    name = hook.get("deploymentName")
    if isinstance(name, str) and name and dns1035_label_problem(service_name(name)):
        yield (
            ("deploymentName",),
            f"OLM names the webhook's Service {service_name(name)!r}, which is not a DNS-1035 "
            "label (a lowercase letter first, at most 63 characters): the apiserver refuses it",
        )
    target = hook.get("targetPort")
    if isinstance(target, str):
        problem = port_name_problem(target)
        if problem:
            yield (
                ("targetPort",),
                f"port name {target!r} {problem}: the apiserver refuses the Service",
            )
    elif isinstance(target, int) and not isinstance(target, bool) and not 1 <= target <= 65535:
        yield ("targetPort",), f"port {target} must be between 1 and 65535"


def service_port(hook: dict[str, Any]) -> tuple[str, int | str]:
    """The key and value of the port OLM's Service sends the calls to (targetPort,
    default containerPort, default 443)."""
    port = hook.get("containerPort")
    container_port = port if isinstance(port, int) and port > 0 else DEFAULT_CONTAINER_PORT
    target = hook.get("targetPort")
    if isinstance(target, (int, str)) and not isinstance(target, bool):
        return "targetPort", target
    return "containerPort", container_port


def declares_port(port: int | str, declared: Sequence[Any]) -> bool:
    """Whether a container port list (``{name, containerPort}`` items) has ``port``."""
    key = "name" if isinstance(port, str) else "containerPort"
    return any(isinstance(p, dict) and p.get(key) == port for p in declared)


# -- rules and selectors -------------------------------------------------------------------


def rule_problems(rule: dict[str, Any]) -> Iterator[Problem]:
    """Kubernetes' validateRuleWithOperations, then OLM's ValidWebhookRules."""
    operations = strings(rule.get("operations"))
    if not operations:
        yield ("operations",), "Required value: at least one operation"
    elif len(operations) > 1 and "*" in operations:
        yield ("operations",), "if '*' is present, must not specify other operations"
    for index, operation in enumerate(operations):
        if operation not in OPERATIONS:
            yield ("operations", index), unsupported(operation, OPERATIONS)
    for key, what in (("apiGroups", "API groups"), ("apiVersions", "API versions")):
        values = strings(rule.get(key))
        if not values:
            yield (key,), "Required value"
        elif len(values) > 1 and "*" in values:
            yield (key,), f"if '*' is present, must not specify other {what}"
    for index, version in enumerate(strings(rule.get("apiVersions"))):
        if not version:
            yield ("apiVersions", index), "Required value: an empty API version"
    yield from resource_problems(strings(rule.get("resources")))
    scope = rule.get("scope")
    if isinstance(scope, str) and scope not in SCOPES:
        yield ("scope",), unsupported(scope, SCOPES)
    yield from olm_rule_problems(rule)


def olm_rule_problems(rule: dict[str, Any]) -> Iterator[Problem]:
    """OLM's ValidWebhookRules: a CSV with such a rule fails to install."""
    groups = set(strings(rule.get("apiGroups")))
    if "*" in groups:
        yield ("apiGroups",), "OLM refuses webhook rules over all API groups ('*')"
    if OLM_GROUP in groups:
        yield ("apiGroups",), f"OLM refuses webhook rules over its own group {OLM_GROUP}"
    resources = set(strings(rule.get("resources")))
    if "admissionregistration.k8s.io" in groups and resources & WEBHOOK_CONFIGURATIONS:
        yield (
            ("resources",),
            "OLM refuses webhook rules over MutatingWebhookConfiguration or "
            "ValidatingWebhookConfiguration resources",
        )


def resource_problems(resources: list[str]) -> Iterator[Problem]:
    """Kubernetes' validateResources, to the letter: whether a plain resource sits next to
    '*' is decided by the last plain entry (``hasResourceWithoutSubresource = ...``)."""
    if not resources:
        yield ("resources",), "Required value"
    with_wildcard_sub: set[str] = set()
    sub_with_wildcard: set[str] = set()
    plain = False
    for index, entry in enumerate(resources):
        if not entry:
            yield ("resources", index), "Required value: an empty resource"
            continue
        resource, slash, sub = entry.partition("/")
        if not slash:
            plain = entry != "*"
            continue
        if resource in with_wildcard_sub:
            yield ("resources", index), f"if '{resource}/*' is present, must not specify {entry}"
        if sub in sub_with_wildcard:
            yield ("resources", index), f"if '*/{sub}' is present, must not specify {entry}"
        if sub == "*":
            with_wildcard_sub.add(resource)
        if resource == "*":
            sub_with_wildcard.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        yield ("resources",), "if '*/*' is present, must not specify other resources"
    if "*" in resources and plain:
        yield (
            ("resources",),
            "if '*' is present, must not specify other resources without subresources",
        )


def selector_problems(selector: Any) -> Iterator[Problem]:
    """metav1's ValidateLabelSelector; expression values as labels.NewRequirement checks
    them when the apiserver applies the selector."""
    if not isinstance(selector, dict):
        return
    for key, value in go_map(selector.get("matchLabels")).items():
        where = ("matchLabels", MapKey(key))
        problem = qualified_name_problem(str(key))
        if problem:
            yield where, f"label key {key!r}: {problem}"
        problem = label_value_problem(value) if isinstance(value, str) else None
        if problem:
            yield where, f"label value {value!r}: {problem}"
    for index, requirement in enumerate(go_list(selector.get("matchExpressions"))):
        if isinstance(requirement, dict):
            for path, message in _requirement_problems(requirement):
                yield ("matchExpressions", index, *path), message


def _requirement_problems(requirement: dict[str, Any]) -> Iterator[Problem]:
    operator, values = requirement.get("operator"), strings(requirement.get("values"))
    if operator in ("In", "NotIn") and not values:
        yield ("values",), "must be specified when `operator` is 'In' or 'NotIn'"
    elif operator in ("Exists", "DoesNotExist") and values:
        yield ("values",), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
    elif isinstance(operator, str) and operator not in SELECTOR_OPERATORS:
        yield ("operator",), f"{operator!r}: not a valid selector operator"
    key = requirement.get("key")
    problem = qualified_name_problem(key) if isinstance(key, str) else None
    if problem:
        yield ("key",), f"{key!r}: {problem}"
    for index, value in enumerate(values):
        problem = label_value_problem(value)
        if problem:
            yield ("values", index), f"{value!r}: {problem}"


# -- across webhooks and CRDs ---------------------------------------------------------------


def repeated_name(name: str, first: int) -> str:
    """OLM finds each webhook's configuration by its generateName."""
    return (
        f"{name!r} is also webhook {first}'s name: OLM finds each webhook's configuration "
        "by it and fails the CSV (InvalidWebhookDescription)"
    )


def preserves_unknown_fields(api_version: str, spec: Any) -> bool:
    """Whether a CRD keeps unknown fields (v1beta1's default: true), which OLM refuses
    to give a conversion webhook."""
    preserve = spec.get("preserveUnknownFields") if isinstance(spec, dict) else None
    if api_version == "apiextensions.k8s.io/v1beta1":
        return preserve is not False
    return preserve is True


def preserving_crd(name: str) -> str:
    return (
        f"CRD {name} preserves unknown fields: OLM refuses to convert it "
        "(spec.preserveUnknownFields must be false)"
    )


def dotted(path: Path) -> str:
    """A problem's path in the apiserver's notation, after the webhook's."""
    return "".join(f"[{part}]" if isinstance(part, (int, MapKey)) else f".{part}" for part in path)


def strings(value: Any) -> list[str]:
    """The strings of a list (other items are the field type's)."""
    return [item for item in go_list(value) if isinstance(item, str)]
