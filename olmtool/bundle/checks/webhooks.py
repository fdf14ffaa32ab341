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

from collections.abc import Iterator
from typing import Any

from olmtool.bundle import admission
from olmtool.bundle.admission import CONVERSION, dotted, strings
from olmtool.bundle.checks import Context, register_csv
from olmtool.bundle.checks.csv import deployments_of, owned_entries, pod_spec_of
from olmtool.bundle.model import Bundle, Object
from olmtool.findings import Finding
from olmtool.godecode import go_list, go_str
from olmtool.k8snames import port_name_problem

CHECK = "csv/webhook"


@register_csv("csv")
def webhook_definitions(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    hooks = [
        (index, hook)
        for index, hook in enumerate(go_list(csv.get("spec.webhookdefinitions")))
        if isinstance(hook, dict)  # others are csv/field-type's
    ]
    for index, hook in hooks:
        for path, message in admission.webhook_problems(hook):
            yield csv.finding(CHECK, "error", message, f"{_at(index)}{dotted(path)}")
        if hook.get("type") == CONVERSION:
            for where, message in _conversion(hook, csv, bundle):
                yield csv.finding(CHECK, "error", message, f"{_at(index)}{where}")
        warning = _undeclared_port(hook, csv)
        if warning:
            yield csv.finding(CHECK, "warning", warning[1], f"{_at(index)}.{warning[0]}")
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
            message = admission.repeated_name(name, named[name])
            yield csv.finding(CHECK, "error", message, f"{_at(index)}.generateName")
        elif isinstance(name, str) and name:
            named[name] = index
        if hook.get("type") != CONVERSION:
            continue
        for crd in strings(hook.get("conversionCRDs")):
            if crd in converted:
                yield csv.finding(
                    CHECK,
                    "warning",
                    f"CRD {crd} is also converted by webhookdefinitions[{converted[crd]}]: "
                    "OLM keeps only one conversion webhook per CRD",
                    f"{_at(index)}.conversionCRDs",
                )
            converted.setdefault(crd, index)


def _undeclared_port(hook: dict[str, Any], csv: Object) -> tuple[str, str] | None:
    """A port OLM's Service sends to that the deployment's containers do not declare:
    installed, but unreachable (named) or likely so (numeric)."""
    name = hook.get("deploymentName")
    deployment = next((d for d in deployments_of(csv) if d.get("name") == name), None)
    if hook.get("type") not in (*admission.ADMISSION, CONVERSION) or deployment is None:
        return None  # no deployment: bundle/webhook-deployment's
    key, target = admission.service_port(hook)
    if isinstance(target, str) and port_name_problem(target):
        return None  # an error already
    if isinstance(target, int) and not 1 <= target <= 65535:
        return None
    declared = [
        port
        for container in go_list(pod_spec_of(deployment).get("containers"))
        if isinstance(container, dict)
        for port in go_list(container.get("ports"))
    ]
    if admission.declares_port(target, declared):
        return None
    _, container_port = admission.service_port({**hook, "targetPort": None})
    via = (
        f"OLM's Service {admission.service_name(str(name))} sends the webhook's calls "
        f"(port {container_port})"
    )
    if isinstance(target, str):
        return key, (
            f"{via} to the port named {target!r}, which no container of deployment "
            f"{name} declares: the Service has no endpoint and every call fails"
        )
    return key, (
        f"{via} to port {target}, which no container of deployment {name} declares "
        "(set targetPort to the port the webhook server listens on, and declare it)"
    )


def _conversion(hook: dict[str, Any], csv: Object, bundle: Bundle) -> Iterator[tuple[str, str]]:
    """OLM's refusals of a conversion webhook's CRDs: not owned, or preserving unknown
    fields."""
    owned = {go_str(e.get("name")) for e in owned_entries(csv)}
    in_bundle = {crd.name: crd for crd in bundle.crds}
    for index, name in enumerate(strings(hook.get("conversionCRDs"))):
        where = f".conversionCRDs[{index}]"
        if name not in owned:
            yield where, f"CRD {name} is not owned by the CSV: OLM refuses to convert it"
        crd = in_bundle.get(name)
        if crd is not None and admission.preserves_unknown_fields(crd.api_version, crd.get("spec")):
            yield where, admission.preserving_crd(name)
