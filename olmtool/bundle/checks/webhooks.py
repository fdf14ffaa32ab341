"""``csv/webhook``: webhook definitions as OLM v0.18.3 installs them and the 1.20 apiserver
validates what it creates.

For admission webhooks OLM creates an ``admissionregistration.k8s.io/v1``
Validating/MutatingWebhookConfiguration named ``<generateName>-...``, labelled with the
generateName, whose one webhook is named generateName and calls the Service
``<deploymentName>-service`` (dots turned to dashes) at ``containerPort`` and
``webhookPath``; the Service sends port ``containerPort`` (default 443) to ``targetPort``
(default containerPort) of the deployment's pods. For conversion webhooks OLM points each
``conversionCRDs`` CRD at that Service. The apiserver's rules are those of Kubernetes
1.20's pkg/apis/admissionregistration/validation and apiserver/pkg/util/webhook; OLM's own
are ``ValidWebhookRules`` (no webhook on every group, OLM's group or the webhook
configurations), unique generateNames, conversionCRDs the CSV owns and CRDs that do not
preserve unknown fields.

Errors where the apiserver or OLM refuses (the CSV fails); warnings where the webhook is
installed but cannot be reached: a port the deployment's containers do not declare
(declared ports are informational, so a numeric port may still work; a named one has no
endpoint). A missing required field or a ``type`` out of its enum is ``csv/schema``'s; a
deployment the CSV lacks ``bundle/webhook-deployment``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from olmtool.bundle.checks import Context, register_csv
from olmtool.bundle.checks.csv import deployments_of, owned_entries, pod_spec_of
from olmtool.bundle.checks.layout import LABEL_VALUE, dns_subdomain_problem, qualified_name_problem
from olmtool.bundle.model import Bundle, Finding, Object
from olmtool.godecode import go_list, go_map, go_str

CHECK = "csv/webhook"
ADMISSION = ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")
CONVERSION = "ConversionWebhook"
REVIEW_VERSIONS = ("v1", "v1beta1")
SIDE_EFFECTS = ("None", "NoneOnDryRun")  # admissionregistration.k8s.io/v1
FAILURE_POLICIES = ("Ignore", "Fail")
MATCH_POLICIES = ("Exact", "Equivalent")
REINVOCATION_POLICIES = ("Never", "IfNeeded")
OPERATIONS = ("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
SCOPES = ("*", "Cluster", "Namespaced")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DEFAULT_CONTAINER_PORT = 443


@register_csv("csv")
def webhook_definitions(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    hooks = [
        (index, hook)
        for index, hook in enumerate(go_list(csv.get("spec.webhookdefinitions")))
        if isinstance(hook, dict)  # others are csv/field-type's
    ]
    for index, hook in hooks:
        for where, severity, message in _problems(hook, csv, bundle):
            yield csv.finding(CHECK, severity, message, f"{_at(index)}{where}")
    yield from _repeated(csv, hooks)


def _at(index: int) -> str:
    return f"spec.webhookdefinitions[{index}]"


def _repeated(csv: Object, hooks: list[tuple[int, dict[str, Any]]]) -> Iterator[Finding]:
    """generateNames OLM finds twice (it fails the CSV), CRDs two conversion webhooks
    convert (OLM keeps one)."""
    named: dict[str, int] = {}
    converted: dict[str, int] = {}
    for index, hook in hooks:
        name = hook.get("generateName")
        if isinstance(name, str) and name in named:
            yield csv.finding(
                CHECK,
                "error",
                f"generateName {name!r} is repeated (first at webhookdefinitions"
                f"[{named[name]}]): OLM fails the CSV (InvalidWebhookDescription)",
                f"{_at(index)}.generateName",
            )
        elif isinstance(name, str) and name:
            named[name] = index
        if hook.get("type") != CONVERSION:
            continue
        for crd in _strings(hook.get("conversionCRDs")):
            if crd in converted:
                yield csv.finding(
                    CHECK,
                    "warning",
                    f"CRD {crd} is also converted by webhookdefinitions[{converted[crd]}]: "
                    "OLM keeps only one conversion webhook per CRD",
                    f"{_at(index)}.conversionCRDs",
                )
            converted.setdefault(crd, index)


Problem = tuple[str, str, str]  # (path under the webhook, severity, message)


def _problems(hook: dict[str, Any], csv: Object, bundle: Bundle) -> Iterator[Problem]:
    kind = hook.get("type")
    if kind in ADMISSION:
        yield from _admission(hook, kind)
    elif kind == CONVERSION:
        yield from _conversion(hook, csv, bundle)
    else:
        return  # csv/schema reports the type
    yield from _review_versions(hook.get("admissionReviewVersions"))
    yield from _path(hook.get("webhookPath"))
    yield from _service(hook, csv)


def _admission(hook: dict[str, Any], kind: str) -> Iterator[Problem]:
    name = hook.get("generateName")
    if isinstance(name, str) and name:
        problem = _fully_qualified_name_problem(name)
        if problem:
            yield ".generateName", "error", f"{name!r} (the webhook's name) {problem}"
        elif len(name) > 63 or not LABEL_VALUE.match(name):
            yield (
                ".generateName",
                "error",
                f"{name!r} must be a valid label value (at most 63 characters): OLM labels "
                "the webhook configuration with it",
            )
    yield from _one_of(
        hook,
        "sideEffects",
        SIDE_EFFECTS,
        " (OLM v0.18.3 creates admissionregistration.k8s.io/v1 webhook configurations)",
    )
    yield from _one_of(hook, "failurePolicy", FAILURE_POLICIES)
    yield from _one_of(hook, "matchPolicy", MATCH_POLICIES)
    if kind == "MutatingAdmissionWebhook":
        yield from _one_of(hook, "reinvocationPolicy", REINVOCATION_POLICIES)
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not isinstance(timeout, bool) and not 1 <= timeout <= 30:
        yield ".timeoutSeconds", "error", f"{timeout} must be between 1 and 30 seconds"
    for index, rule in enumerate(go_list(hook.get("rules"))):
        if isinstance(rule, dict):
            for where, message in _rule(rule):
                yield f".rules[{index}]{where}", "error", message
    yield from _selector(hook.get("objectSelector"))


def _fully_qualified_name_problem(name: str) -> str | None:
    problem = dns_subdomain_problem(name)
    if problem:
        return problem
    if len(name.split(".")) < 3:
        return "should be a domain with at least three segments separated by dots"
    return None


def _one_of(
    hook: dict[str, Any], key: str, allowed: tuple[str, ...], why: str = ""
) -> Iterator[Problem]:
    value = hook.get(key)
    if isinstance(value, str) and value not in allowed:
        yield f".{key}", "error", f"{unsupported(value, allowed)}{why}"


def unsupported(value: str, allowed: tuple[str, ...]) -> str:
    """The apiserver's NotSupported wording."""
    return f"Unsupported value: {value!r}: supported values: {', '.join(map(repr, allowed))}"


def _rule(rule: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Kubernetes' validateRuleWithOperations, then OLM's ValidWebhookRules."""
    operations = _strings(rule.get("operations"))
    if not operations:
        yield ".operations", "Required value: at least one operation"
    elif len(operations) > 1 and "*" in operations:
        yield ".operations", "if '*' is present, must not specify other operations"
    for index, operation in enumerate(operations):
        if operation not in OPERATIONS:
            yield f".operations[{index}]", unsupported(operation, OPERATIONS)
    for key, what in (("apiGroups", "API groups"), ("apiVersions", "API versions")):
        values = _strings(rule.get(key))
        if not values:
            yield f".{key}", "Required value"
        elif len(values) > 1 and "*" in values:
            yield f".{key}", f"if '*' is present, must not specify other {what}"
    for index, version in enumerate(_strings(rule.get("apiVersions"))):
        if not version:
            yield f".apiVersions[{index}]", "Required value: an empty API version"
    yield from _resources(_strings(rule.get("resources")))
    scope = rule.get("scope")
    if isinstance(scope, str) and scope not in SCOPES:
        yield ".scope", unsupported(scope, SCOPES)
    groups = set(_strings(rule.get("apiGroups")))
    resources = set(_strings(rule.get("resources")))
    if "*" in groups:
        yield ".apiGroups", "OLM refuses webhook rules on all groups ('*'): the CSV fails"
    if "operators.coreos.com" in groups:
        yield ".apiGroups", "OLM refuses webhook rules on its own group (operators.coreos.com)"
    configurations = {"*", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    if "admissionregistration.k8s.io" in groups and resources & configurations:
        yield ".resources", "OLM refuses webhook rules on the webhook configurations"


def _resources(resources: list[str]) -> Iterator[tuple[str, str]]:
    """Kubernetes' validateResources (subresources allowed)."""
    if not resources:
        yield ".resources", "Required value"
    with_wildcard_sub: set[str] = set()
    sub_with_wildcard: set[str] = set()
    plain = False
    for index, entry in enumerate(resources):
        if not entry:
            yield f".resources[{index}]", "Required value: an empty resource"
            continue
        resource, slash, sub = entry.partition("/")
        if not slash:
            plain = plain or entry != "*"
            continue
        if resource in with_wildcard_sub:
            yield f".resources[{index}]", f"if '{resource}/*' is present, must not specify {entry}"
        if sub in sub_with_wildcard:
            yield f".resources[{index}]", f"if '*/{sub}' is present, must not specify {entry}"
        if sub == "*":
            with_wildcard_sub.add(resource)
        if resource == "*":
            sub_with_wildcard.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        yield ".resources", "if '*/*' is present, must not specify other resources"
    if "*" in resources and plain:
        yield (
            ".resources",
            "if '*' is present, must not specify other resources without subresources",
        )


def _selector(selector: Any) -> Iterator[Problem]:
    """metav1 ValidateLabelSelector over the objectSelector."""
    if not isinstance(selector, dict):
        return
    for key, value in go_map(selector.get("matchLabels")).items():
        where = f".objectSelector.matchLabels[{key}]"
        problem = qualified_name_problem(str(key))
        if problem:
            yield where, "error", f"label key {key!r}: {problem}"
        if isinstance(value, str) and (len(value) > 63 or not LABEL_VALUE.match(value)):
            yield where, "error", f"{value!r} is not a valid label value"
    for index, requirement in enumerate(go_list(selector.get("matchExpressions"))):
        if not isinstance(requirement, dict):
            continue
        where = f".objectSelector.matchExpressions[{index}]"
        operator, values = requirement.get("operator"), _strings(requirement.get("values"))
        if operator in ("In", "NotIn") and not values:
            yield f"{where}.values", "error", f"must be specified when `operator` is {operator}"
        elif operator in ("Exists", "DoesNotExist") and values:
            yield f"{where}.values", "error", f"may not be specified when `operator` is {operator}"
        elif isinstance(operator, str) and operator not in SELECTOR_OPERATORS:
            yield f"{where}.operator", "error", f"{operator!r} is not a valid selector operator"


def _review_versions(versions: Any) -> Iterator[Problem]:
    if not isinstance(versions, list):
        return  # missing: csv/schema's; not a list: csv/field-type's
    if not versions:
        yield (
            ".admissionReviewVersions",
            "error",
            f"Required value: must specify one of {', '.join(REVIEW_VERSIONS)}",
        )
        return
    seen: set[str] = set()
    for index, version in enumerate(_strings(versions)):
        if version in seen:
            yield f".admissionReviewVersions[{index}]", "error", f"duplicate version {version!r}"
        elif len(version) > 63 or not DNS1035_LABEL.match(version):
            yield (
                f".admissionReviewVersions[{index}]",
                "error",
                f"{version!r} is not a DNS-1035 label",
            )
        seen.add(version)
    if not seen & set(REVIEW_VERSIONS):
        yield (
            ".admissionReviewVersions",
            "error",
            f"must include at least one of {', '.join(REVIEW_VERSIONS)}, the versions the "
            "apiserver sends",
        )


def _path(path: Any) -> Iterator[Problem]:
    """apiserver's ValidateWebhookService path rules."""
    if not isinstance(path, str) or path in ("", "/"):
        return
    if path == "//":
        yield ".webhookPath", "error", "segment[0] may not be empty"
        return
    if not path.startswith("/"):
        yield ".webhookPath", "error", f"{path!r} must start with a '/'"
    steps = path[1:].removesuffix("/").split("/")
    for index, step in enumerate(steps):
        problem = "may not be empty" if not step else dns_subdomain_problem(step)
        if problem:
            yield ".webhookPath", "error", f"{path!r}: segment[{index}] {problem}"


def _service(hook: dict[str, Any], csv: Object) -> Iterator[Problem]:
    """The Service OLM creates for the webhook, and the port it sends the calls to."""
    name = hook.get("deploymentName")
    if not isinstance(name, str) or not name:
        return
    service = name.replace(".", "-") + "-service"
    if len(service) > 63 or not DNS1035_LABEL.match(service):
        yield (
            ".deploymentName",
            "error",
            f"OLM names the webhook's Service {service!r}, which is not a DNS-1035 label "
            "(a lowercase letter first, at most 63 characters): the apiserver refuses it",
        )
    deployment = next((d for d in deployments_of(csv) if d.get("name") == name), None)
    if deployment is None:
        return  # bundle/webhook-deployment's
    port = hook.get("containerPort")
    container_port = port if isinstance(port, int) and port > 0 else DEFAULT_CONTAINER_PORT
    target = hook.get("targetPort", container_port)
    declared = [
        p
        for container in go_list(pod_spec_of(deployment).get("containers"))
        if isinstance(container, dict)
        for p in go_list(container.get("ports"))
        if isinstance(p, dict)
    ]
    where = ".targetPort" if "targetPort" in hook else ".containerPort"
    via = f"OLM's Service {service} sends the webhook's calls (port {container_port})"
    if isinstance(target, str):
        problem = _port_name_problem(target)
        if problem:
            yield (
                where,
                "error",
                f"{via} to port {target!r}, which {problem}: the apiserver refuses the Service",
            )
        elif not any(p.get("name") == target for p in declared):
            yield (
                where,
                "warning",
                f"{via} to the port named {target!r}, which no container of deployment "
                f"{name} declares: the Service has no endpoint and every call fails",
            )
    elif isinstance(target, int) and not isinstance(target, bool):
        if not 1 <= target <= 65535:
            yield where, "error", f"{via} to port {target}: must be between 1 and 65535"
        elif not any(p.get("containerPort") == target for p in declared):
            yield (
                where,
                "warning",
                f"{via} to port {target}, which no container of deployment {name} declares "
                "(set targetPort to the port the webhook server listens on, and declare it)",
            )


def _port_name_problem(name: str) -> str | None:
    """Why ``name`` is not a port name (IANA_SVC_NAME), as a string targetPort must be."""
    if len(name) > 15:
        return "is longer than 15 characters"
    if not PORT_NAME.match(name) or "--" in name:
        return "is not a port name (lowercase letters, digits and single '-', not at either end)"
    if not any(char.isalpha() for char in name):
        return "is not a port name (it must contain a letter; write a number without quotes)"
    return None


def _conversion(hook: dict[str, Any], csv: Object, bundle: Bundle) -> Iterator[Problem]:
    crds = _strings(hook.get("conversionCRDs"))
    if not crds:
        yield (
            ".conversionCRDs",
            "error",
            "a conversion webhook must name at least one CRD: OLM fails the CSV otherwise",
        )
    owned = {go_str(e.get("name")) for e in owned_entries(csv)}
    in_bundle = {crd.name: crd for crd in bundle.crds}
    for index, name in enumerate(crds):
        where = f".conversionCRDs[{index}]"
        if name not in owned:
            yield where, "error", f"CRD {name} is not owned by the CSV: OLM refuses to convert it"
        crd = in_bundle.get(name)
        if (
            crd is not None
            and crd.api_version == "apiextensions.k8s.io/v1beta1"
            and crd.get("spec.preserveUnknownFields") is not False
        ):
            yield (
                where,
                "error",
                f"CRD {name} (apiextensions v1beta1) preserves unknown fields unless "
                "spec.preserveUnknownFields is false: OLM refuses the conversion webhook",
            )


def _strings(value: Any) -> list[str]:
    """The strings of a list (other items are csv/field-type's)."""
    return [item for item in go_list(value) if isinstance(item, str)]
