"""A bundle's objects against the schemas the apiserver checks them with.

- The ClusterServiceVersion against the ``openAPIV3Schema`` of the ClusterServiceVersion
  CRD OLM v0.18.3 installs (``deploy/chart/crds/0000_50_olm_00-clusterserviceversions.crd
  .yaml`` of operator-framework/operator-lifecycle-manager v0.18.3), as olmtool ships it
  (``olmtool/olm/crds/``; ``tests/olm/test_crds_vs_real_olm.py`` proves it equal to
  upstream's but for two core types kept whole: the install strategy's Deployment specs,
  checked here against Kubernetes' DeploymentSpec, and webhook rules, ``csv/webhook``'s).
- Kubernetes built-in kinds (and those Deployment specs) against Kubernetes 1.20's
  OpenAPI schemas (:mod:`.kubeschemas`); kinds without one are not checked.

What the schema rejects is an error (the apiserver refuses the object, so OLM's InstallPlan
or the CSV fails); unknown fields are warnings (the apiserver drops them). Values Go cannot
decode into the CSV's types are ``csv/field-type``'s (upstream's loader refuses the CSV
before any apiserver sees it): no problem is reported here at or under their paths, nor
where another check already reports the same missing field (``_OWNED_ELSEWHERE``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import Any

from olmtool import yamlread
from olmtool.bundle import kubeschemas
from olmtool.bundle.csvtypes import decode_csv
from olmtool.crd import SchemaViolation, validate_against
from olmtool.findings import Problem
from olmtool.godecode import go_list

DEPLOYMENTS = "spec.install.spec.deployments"
# olmtool's rendering of OLM's CRD, packaged with olmtool.olm (only this file is read).
CSV_CRD_FILE = "operators.coreos.com_clusterserviceversions.yaml"
# Missing fields other checks report (a CSV without them is refused either way).
_OWNED_ELSEWHERE = re.compile(
    r"^(metadata|spec|spec\.displayName|spec\.install|spec\.install\.strategy"  # csv/name, csv/required
    r"|spec\.customresourcedefinitions\.owned\[\d+\]\.(name|version|kind)"  # csv/required, csv/owned-crd-name
    r"|spec\.installModes\[\d+\]\.type"  # csv/install-modes
    r"|spec\.install\.spec\.deployments\[\d+\]\.(name|spec)"  # csv/deployment
    r"|spec\.install\.spec\.deployments\[\d+\]\.spec\.(selector|template"  # csv/deployment
    r"|template\.spec\.containers|template\.spec\.containers\[\d+\]\.name))$"
)


@functools.cache
def csv_schema() -> dict[str, Any]:
    """The v1alpha1 schema of OLM's ClusterServiceVersion CRD (one object per process, so
    its compiled validator is cached)."""
    crd = yamlread.load((resources.files("olmtool.olm") / "crds" / CSV_CRD_FILE).read_text("utf-8"))
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def csv_problems(csv: dict[str, Any]) -> list[Problem]:
    """What the apiserver says about the CSV with OLM's CRD. Its status is not checked:
    with the status subresource, the apiserver drops it on create."""
    report = validate_against({k: v for k, v in csv.items() if k != "status"}, csv_schema())
    typed = decoded_elsewhere(csv)
    problems = [
        Problem(v.path, describe(v))
        for v in report.violations
        if not _covered(v.path, typed)
        and not (v.keyword == "required" and _OWNED_ELSEWHERE.match(v.path))
    ]
    problems += [
        Problem(
            path,
            "unknown field: OLM v0.18.3's ClusterServiceVersion has no such field, the "
            "apiserver drops it",
            "warning",
        )
        for path in report.pruned
        if not _covered(path, typed)
    ]
    return problems


def deployment_problems(csv: dict[str, Any]) -> list[Problem]:
    """The install strategy's Deployment specs against Kubernetes' DeploymentSpec."""
    typed = decoded_elsewhere(csv)
    schema = kubeschemas.deployment_spec_schema()
    problems: list[Problem] = []
    deployments = go_list(go_map_at(csv, "spec", "install", "spec").get("deployments"))
    for index, deployment in enumerate(deployments):
        spec = deployment.get("spec") if isinstance(deployment, dict) else None
        if not isinstance(spec, dict):
            continue  # csv/deployment or csv/field-type say what it is
        base = f"{DEPLOYMENTS}[{index}].spec"
        what = f"Kubernetes {kubeschemas.KUBERNETES_MINOR}'s DeploymentSpec"
        problems += [
            p
            for p in _problems(validate_against(spec, schema, base), what)
            if not _covered(p.path, typed)
            and not (p.message == REQUIRED and _OWNED_ELSEWHERE.match(p.path))
        ]
    return problems


def object_problems(document: dict[str, Any]) -> list[Problem]:
    """A built-in kind against its Kubernetes 1.20 schema (none for other kinds)."""
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return []
    schema = kubeschemas.schema_for(api_version, kind)
    if schema is None:
        return []
    what = f"Kubernetes {kubeschemas.KUBERNETES_MINOR}'s {api_version} {kind}"
    return list(_problems(validate_against(document, schema), what))


REQUIRED = "Required value"


def _problems(report: Any, what: str) -> Iterator[Problem]:
    for violation in report.violations:
        yield Problem(violation.path, describe(violation))
    for path in report.pruned:
        yield Problem(
            path, f"unknown field: {what} has no such field, the apiserver drops it", "warning"
        )


def describe(violation: SchemaViolation) -> str:
    """The apiserver's kind of wording (``Required value``, ``Unsupported value``)."""
    keyword, value, expected = violation.keyword, violation.value, violation.expected
    if keyword == "required":
        return REQUIRED
    if keyword == "enum":
        allowed = ", ".join(repr(v) for v in expected if v != "")
        return f"Unsupported value: {value!r}: supported values: {allowed}"
    if keyword == "anyOf" and isinstance(expected, list):
        types = [branch.get("type") for branch in expected if isinstance(branch, dict)]
        if "number" in types:
            return f"{value!r} is not a quantity (a number, or a string like 500m or 1Gi)"
        if "integer" in types and "string" in types:
            return f"{value!r} must be an integer or a string"
    if keyword == "pattern" and expected == kubeschemas.QUANTITY_PATTERN:
        return f"{value!r} is not a quantity (a string like 500m or 1Gi, or an integer)"
    if keyword == "format" and expected == "byte":
        return "not base64 (Go decodes the value into bytes)"
    return violation.message


def decoded_elsewhere(csv: dict[str, Any]) -> frozenset[str]:
    """Paths where the CSV does not decode into its Go types (``csv/field-type``'s)."""
    return frozenset(problem.path for problem in decode_csv(csv))


def _covered(path: str, owners: Iterable[str]) -> bool:
    """``path`` is one of ``owners`` or lies under one."""
    return any(path == o or path.startswith((f"{o}.", f"{o}[")) for o in owners)


def go_map_at(document: Any, *keys: str) -> dict[str, Any]:
    """The mapping at ``keys`` (empty where a level is missing or not a mapping)."""
    node = document
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}
