"""``bundle.webhooks``: admission and conversion webhooks, as the CSV's
``spec.webhookdefinitions`` (OLM's ``WebhookDescription``).

OLM turns each description into a ValidatingWebhookConfiguration or
MutatingWebhookConfiguration (the webhook's ``name`` is ``generateName``, its
``namespaceSelector`` the OperatorGroup's), a Service ``<deploymentName>-service``
(port ``containerPort`` -> ``targetPort``) and a CA-signed certificate mounted into the
deployment. The settings are checked as the apiserver's admissionregistration/v1
validation checks those objects (enums, rules, selectors, ``timeoutSeconds`` 1..30,
``generateName`` a DNS name of three or more segments) plus OLM's own refusals (rules
over every group, OLM's group or webhook configurations; conversion webhooks only for
AllNamespaces-only CSVs and owned CRDs), so a mistake stops the build instead of
leaving a CSV that never succeeds.

Conversion webhooks: OLM rewrites each listed CRD's ``spec.conversion`` when the CSV
installs (strategy Webhook, the Service above, its CA bundle, ``conversionReviewVersions``
= ``admissionReviewVersions``; ``spec.preserveUnknownFields`` must be false). The build
writes the same block into the bundle's CRD (:func:`convert_crds`), with
``csv.suggestedNamespace`` (or ``replaced-by-olm``) as the Service's namespace and no CA
bundle: the InstallPlan replaces a live CRD with the bundle's on upgrade, and a CRD that
says ``None`` there would let the apiserver relabel stored objects without converting
them until the new CSV is installed; one that names a Webhook fails those requests
instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator, model_validator

from olmtool import yamlread
from olmtool.bundle import admission
from olmtool.bundle.admission import (
    FailurePolicy,
    MatchPolicy,
    Operation,
    ReinvocationPolicy,
    Scope,
    SelectorOperator,
    SideEffects,
    WebhookType,
)
from olmtool.bundle.sectionbase import Section, fail_at
from olmtool.errors import InputError
from olmtool.k8snames import dns_subdomain_problem

if TYPE_CHECKING:
    from olmtool.bundle.settings import BundleSettings, Csv, Deployment

CONVERSION = admission.CONVERSION
MUTATING = admission.MUTATING
PLACEHOLDER_NAMESPACE = "replaced-by-olm"
ADMISSION_ONLY = (
    "rules",
    "failurePolicy",
    "matchPolicy",
    "objectSelector",
    "reinvocationPolicy",
    "timeoutSeconds",
)

# -- parts: types only, the rules are bundle.admission's (checked on the whole webhook) ------


class SelectorRequirement(Section):
    key: str
    operator: SelectorOperator
    values: list[str] = []


class LabelSelector(Section):
    match_labels: dict[str, str] = {}
    match_expressions: list[SelectorRequirement] = []


class Rule(Section):
    """admissionregistration/v1 ``RuleWithOperations``."""

    operations: list[Operation] = []
    api_groups: list[str] = []
    api_versions: list[str] = []
    resources: list[str] = []
    scope: Scope | None = None

    @field_validator("operations", "api_groups", "api_versions", "resources")
    @classmethod
    def _once(cls, value: list[str]) -> list[str]:
        # olmtool's own tidiness for the CSV it writes (the apiserver allows repeats)
        for index, item in enumerate(value):
            if value.index(item) != index:
                fail_at((index,), f"{item!r} is listed twice", item)
        return value


# -- one webhook -----------------------------------------------------------------------


class Webhook(Section):
    """One ``spec.webhookdefinitions`` entry (OLM's ``WebhookDescription``)."""

    type: WebhookType
    generate_name: str
    deployment_name: str | None = None  # default: the operator's deployment
    container_port: int = Field(admission.DEFAULT_CONTAINER_PORT, ge=1, le=65535)
    target_port: int | str | None = None  # default: containerPort
    side_effects: SideEffects | None = None
    admission_review_versions: list[str] = ["v1"]
    failure_policy: FailurePolicy | None = None
    match_policy: MatchPolicy | None = None
    object_selector: LabelSelector | None = None
    reinvocation_policy: ReinvocationPolicy | None = None
    rules: list[Rule] = []
    timeout_seconds: int | None = Field(
        None, ge=admission.TIMEOUT_SECONDS[0], le=admission.TIMEOUT_SECONDS[1]
    )
    webhook_path: str | None = None
    conversion_crds: list[str] = Field([], alias="conversionCRDs")

    @field_validator("deployment_name")
    @classmethod
    def _deployment(cls, value: str | None) -> str | None:
        problem = dns_subdomain_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("conversion_crds")
    @classmethod
    def _crd_names(cls, value: list[str]) -> list[str]:
        for index, item in enumerate(value):
            problem = dns_subdomain_problem(item) or (
                None if item.count(".") >= 2 else "must be a CRD name: <plural>.<group>"
            )
            if problem:
                fail_at((index,), f"{item!r}: {problem}", item)
            if value.index(item) != index:
                fail_at((index,), f"{item!r} is listed twice", item)
        return value

    @model_validator(mode="after")
    def _valid(self) -> Webhook:
        if self.type == CONVERSION:
            self._check_conversion()
        else:
            self._check_admission()
        for path, message in admission.webhook_problems(self.plain()):
            fail_at(path, message)
        return self

    def _check_conversion(self) -> None:
        for key in ADMISSION_ONLY:
            if getattr(self, _snake(key)) not in (None, []):
                fail_at((key,), f"a ConversionWebhook has no {key} (OLM ignores it)")
        if self.side_effects not in (None, "None"):
            fail_at(("sideEffects",), "a ConversionWebhook has no side effects: None or unset")

    def _check_admission(self) -> None:
        if self.conversion_crds:
            fail_at(
                ("conversionCRDs",), f"only a ConversionWebhook converts CRDs, not a {self.type}"
            )
        if self.side_effects is None:
            fail_at(
                ("sideEffects",),
                "required for admission webhooks (admissionregistration/v1): None or NoneOnDryRun",
            )
        if not self.rules:
            fail_at(("rules",), "an admission webhook without rules is never called")
        if self.reinvocation_policy is not None and self.type != MUTATING:
            fail_at(("reinvocationPolicy",), "only a MutatingAdmissionWebhook is reinvoked")

    def plain(self) -> dict[str, Any]:
        """The webhook as plain data with the CSV's keys (unset fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True)

    def description(self, default_deployment: str) -> dict[str, Any]:
        """The ``WebhookDescription`` for the CSV (unset optional fields left out)."""
        values: dict[str, Any] = {
            "type": self.type,
            "generateName": self.generate_name,
            "deploymentName": self.deployment_name or default_deployment,
            "containerPort": self.container_port,
            "targetPort": self.target_port,
            "sideEffects": self.side_effects or "None",
            "admissionReviewVersions": self.admission_review_versions,
            "failurePolicy": self.failure_policy,
            "matchPolicy": self.match_policy,
            "objectSelector": self.object_selector.model_dump(by_alias=True, exclude_defaults=True)
            if self.object_selector
            else None,
            "reinvocationPolicy": self.reinvocation_policy,
            "rules": [r.model_dump(by_alias=True, exclude_none=True) for r in self.rules],
            "timeoutSeconds": self.timeout_seconds,
            "webhookPath": self.webhook_path,
            "conversionCRDs": self.conversion_crds,
        }
        return {key: value for key, value in values.items() if value not in (None, [])}


def _snake(key: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), key)


# -- across the bundle's settings ------------------------------------------------------------


def check_webhooks(webhooks: list[Webhook], deployment: Deployment | None, csv: Csv | None) -> None:
    """What one webhook cannot know alone: unique names, the deployment's ports, the CSV's
    install modes (errors placed on the webhook's key)."""
    names: dict[str, int] = {}
    for index, hook in enumerate(webhooks):
        if hook.generate_name in names:
            fail_at(
                (index, "generateName"),
                admission.repeated_name(hook.generate_name, names[hook.generate_name]),
            )
        names[hook.generate_name] = index
        if deployment is not None and hook.deployment_name in (None, deployment.name):
            _check_port(index, hook, deployment)
        if (
            hook.type == CONVERSION
            and csv is not None
            and list(csv.install_modes) != ["AllNamespaces"]
        ):
            fail_at(
                (index, "type"),
                "OLM installs conversion webhooks only for operators whose csv.installModes "
                "is [AllNamespaces] alone (a CRD is cluster-wide)",
            )


def _check_port(index: int, hook: Webhook, deployment: Deployment) -> None:
    key, port = admission.service_port(hook.plain())
    if not admission.declares_port(port, deployment.ports):
        field = "name" if isinstance(port, str) else "containerPort"
        declared = [p.get(field) for p in deployment.ports]
        listed = ", ".join(str(p) for p in declared if p is not None) or "none"
        fail_at(
            (index, key),
            f"the webhook's Service sends to port {port!r}, which deployment.ports does not "
            f"declare ({listed}): list the port the webhook server listens on there "
            "(or set targetPort)",
            port,
        )


def webhook_definitions(settings: BundleSettings) -> list[dict[str, Any]]:
    return [hook.description(settings.deployment.name) for hook in settings.webhooks]


def conversion_problems(
    settings: BundleSettings, crds: dict[str, dict[str, Any]], deployments: list[str]
) -> Iterator[tuple[str, str]]:
    """(olmtool.yaml path, message) for webhooks that name a deployment the CSV does not
    install or CRDs the bundle does not own (``crds``: name -> CRD document)."""
    for index, hook in enumerate(settings.webhooks):
        where = f"webhooks[{index}]"
        name = hook.deployment_name or settings.deployment.name
        if name not in deployments:
            yield (
                f"{where}.deploymentName",
                f"deployment {name!r} is not in the CSV ({', '.join(deployments)}): "
                "OLM mounts the webhook's certificate into it",
            )
        for position, crd_name in enumerate(hook.conversion_crds):
            crd = crds.get(crd_name)
            path = f"{where}.conversionCRDs[{position}]"
            if crd is None:
                owned = ", ".join(sorted(crds)) or "none"
                yield path, f"{crd_name!r} is not a CRD of this bundle (owned: {owned})"
            elif crd.get("apiVersion") != "apiextensions.k8s.io/v1":
                yield path, f"{crd_name!r}: conversion webhooks need an apiextensions.k8s.io/v1 CRD"
            elif admission.preserves_unknown_fields(crd["apiVersion"], crd.get("spec")):
                yield path, admission.preserving_crd(crd_name)


def convert_crds(settings: BundleSettings, crds: dict[str, dict[str, Any]]) -> None:
    """Set ``spec.conversion`` of every CRD a conversion webhook names, as OLM will."""
    namespace = settings.csv.suggested_namespace or PLACEHOLDER_NAMESPACE
    for hook in settings.webhooks:
        service = {
            "name": f"{hook.deployment_name or settings.deployment.name}-service",
            "namespace": namespace,
            "path": hook.webhook_path or "/",
            "port": hook.container_port,
        }
        for name in hook.conversion_crds:
            crds[name].setdefault("spec", {})["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"service": service},
                    "conversionReviewVersions": list(hook.admission_review_versions),
                },
            }


def apply_webhooks(
    settings: BundleSettings, crds: list[dict[str, Any]], csv: Any, config: Path
) -> None:
    """At build time, once the CRDs are read and the CSV merged: refuse webhooks naming
    a deployment the CSV lacks or CRDs the bundle does not own, then set the conversion
    CRDs' ``spec.conversion``. Errors name ``config`` and the line of the key."""
    if not settings.webhooks:
        return
    by_name = {str((crd.get("metadata") or {}).get("name")): crd for crd in crds}
    install = ((csv.get("spec") or {}).get("install") or {}).get("spec") or {}
    deployments = [
        str(d.get("name")) for d in install.get("deployments") or [] if isinstance(d, dict)
    ]
    for path, message in conversion_problems(settings, by_name, deployments):
        raise InputError(
            f"bundle.{path}: {message}", path=config, line=_line(config, f"bundle.{path}")
        )
    convert_crds(settings, by_name)


def _line(config: Path, path: str) -> int | None:
    try:
        return yamlread.read(config, single=True).line_at(0, path)
    except (InputError, OSError):
        return None
