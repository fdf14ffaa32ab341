"""The CSV mistakes the apiserver or OLM refuse at install time, one bundle each.

The base is the etcd-operator 0.3.0 bundle whose CSV also declares a valid admission
webhook and API service (it validates without a finding). Each variant edits one field;
``bundle validate`` must fail (``--strict`` for warnings) with the expected check id, the
field path and the line of the offending field (for a missing field: of its parent).
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool import yamlread
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import Report, select_suites, validate_bundle
from olmtool.crd import validate_against
from tests.bundle.test_accepted import CASES as ACCEPTED
from tests.bundle.test_corpus import CSV, SERVICE, SOURCE

HOOK = "spec.webhookdefinitions[0]"
WEBHOOK = """\
  webhookdefinitions:
    - type: ValidatingAdmissionWebhook
      admissionReviewVersions:
        - v1
      containerPort: 443
      targetPort: 8080
      deploymentName: etcd-operator
      failurePolicy: Fail
      generateName: vetcdcluster.etcd.olmtool.dev
      rules:
        - apiGroups:
            - etcd.olmtool.dev
          apiVersions:
            - v1beta1
          operations:
            - CREATE
            - UPDATE
          resources:
            - etcdclusters
          scope: Namespaced
      sideEffects: None
      timeoutSeconds: 10
      webhookPath: /validate-etcd-olmtool-dev-v1beta1-etcdcluster
"""
API_SERVICES = """\
  apiservicedefinitions:
    owned:
      - name: etcdsnapshots
        group: snapshots.etcd.olmtool.dev
        version: v1
        kind: EtcdSnapshot
        deploymentName: etcd-operator
        displayName: etcd snapshots
"""
HOOK_START = "    - type: ValidatingAdmissionWebhook"


@dataclass(frozen=True)
class Variant:
    id: str
    old: str  # text of the base CSV (unique) ...
    new: str  # ... replaced by this
    check: str
    path: str
    line: str  # the exact text of the line the finding points at (unique after the edit)
    severity: str = "error"
    file: str = CSV


VARIANTS = [
    Variant(
        "webhook-without-side-effects",
        "      sideEffects: None\n",
        "",
        "csv/schema",
        f"{HOOK}.sideEffects",
        HOOK_START,
    ),
    Variant(
        "webhook-without-admission-review-versions",
        "      admissionReviewVersions:\n        - v1\n",
        "",
        "csv/schema",
        f"{HOOK}.admissionReviewVersions",
        HOOK_START,
    ),
    Variant(
        "failure-policy-sometimes",
        "      failurePolicy: Fail\n",
        "      failurePolicy: Sometimes\n",
        "csv/webhook",
        f"{HOOK}.failurePolicy",
        "      failurePolicy: Sometimes",
    ),
    Variant(
        "operation-frob",
        "            - CREATE\n            - UPDATE\n",
        "            - FROB\n",
        "csv/webhook",
        f"{HOOK}.rules[0].operations[0]",
        "            - FROB",
    ),
    Variant(
        "timeout-99",
        "      timeoutSeconds: 10\n",
        "      timeoutSeconds: 99\n",
        "csv/webhook",
        f"{HOOK}.timeoutSeconds",
        "      timeoutSeconds: 99",
    ),
    Variant(
        "generate-name-two-segments",
        "      generateName: vetcdcluster.etcd.olmtool.dev\n",
        "      generateName: vetcd.io\n",
        "csv/webhook",
        f"{HOOK}.generateName",
        "      generateName: vetcd.io",
    ),
    Variant(
        "native-api-without-version",
        "      kind: StatefulSet\n      version: v1\n",
        "      kind: StatefulSet\n",
        "csv/schema",
        "spec.nativeAPIs[0].version",
        "    - group: apps",
    ),
    Variant(
        "api-service-with-only-a-name",
        "        group: snapshots.etcd.olmtool.dev\n        version: v1\n        kind: EtcdSnapshot\n"
        "        deploymentName: etcd-operator\n        displayName: etcd snapshots\n",
        "",
        "csv/schema",
        "spec.apiservicedefinitions.owned[0].group",
        "      - name: etcdsnapshots",
    ),
    Variant(
        "target-port-not-exposed",
        "      targetPort: 8080\n",
        "      targetPort: 9443\n",
        "csv/webhook",
        f"{HOOK}.targetPort",
        "      targetPort: 9443",
        severity="warning",
    ),
    Variant(
        "container-port-not-exposed",
        "      containerPort: 443\n      targetPort: 8080\n",
        "      containerPort: 9443\n",
        "csv/webhook",
        f"{HOOK}.containerPort",
        "      containerPort: 9443",
        severity="warning",
    ),
    Variant(
        "named-target-port-not-declared",
        "      targetPort: 8080\n",
        "      targetPort: webhook\n",
        "csv/webhook",
        f"{HOOK}.targetPort",
        "      targetPort: webhook",
        severity="warning",
    ),
    Variant(
        "target-port-number-as-string",
        "      targetPort: 8080\n",
        "      targetPort: '8080'\n",
        "csv/webhook",
        f"{HOOK}.targetPort",
        "      targetPort: '8080'",
    ),
    Variant(
        "webhook-type-unknown",
        HOOK_START + "\n",
        "    - type: AuditWebhook\n",
        "csv/schema",
        f"{HOOK}.type",
        "    - type: AuditWebhook",
    ),
    Variant(
        "container-port-zero",
        "      containerPort: 443\n",
        "      containerPort: 0\n",
        "csv/schema",
        f"{HOOK}.containerPort",
        "      containerPort: 0",
    ),
    Variant(
        "side-effects-some",
        "      sideEffects: None\n",
        "      sideEffects: Some\n",
        "csv/webhook",
        f"{HOOK}.sideEffects",
        "      sideEffects: Some",
    ),
    Variant(
        "admission-review-version-unknown",
        "        - v1\n      containerPort",
        "        - v2\n      containerPort",
        "csv/webhook",
        f"{HOOK}.admissionReviewVersions",
        "      admissionReviewVersions:",
    ),
    Variant(
        "rule-scope-unknown",
        "          scope: Namespaced\n",
        "          scope: Cluster-wide\n",
        "csv/webhook",
        f"{HOOK}.rules[0].scope",
        "          scope: Cluster-wide",
    ),
    Variant(
        "rule-on-olm-group",
        "            - etcd.olmtool.dev\n          apiVersions",
        "            - operators.coreos.com\n          apiVersions",
        "csv/webhook",
        f"{HOOK}.rules[0].apiGroups",
        "        - apiGroups:",
    ),
    Variant(
        "webhook-path-segment",
        "      webhookPath: /validate-etcd-olmtool-dev-v1beta1-etcdcluster\n",
        "      webhookPath: /validate_etcd\n",
        "csv/webhook",
        f"{HOOK}.webhookPath",
        "      webhookPath: /validate_etcd",
    ),
    Variant(
        "install-mode-without-supported",
        "    - supported: true\n      type: OwnNamespace\n",
        "    - type: OwnNamespace\n",
        "csv/schema",
        "spec.installModes[0].supported",
        "    - type: OwnNamespace",
    ),
    Variant(
        "deployment-dns-policy-unknown",
        "                serviceAccountName: etcd-operator\n",
        "                serviceAccountName: etcd-operator\n                dnsPolicy: Cluster\n",
        "objects/schema",
        "spec.install.spec.deployments[0].spec.template.spec.dnsPolicy",
        "                dnsPolicy: Cluster",
    ),
    Variant(
        "deployment-security-context-type",
        "                      readOnlyRootFilesystem: true\n",
        "                      readOnlyRootFilesystem: true\n                      runAsUser: root\n",
        "objects/schema",
        "spec.install.spec.deployments[0].spec.template.spec.containers[0].securityContext.runAsUser",
        "                      runAsUser: root",
    ),
    Variant(
        "service-protocol-unknown",
        "      protocol: TCP\n",
        "      protocol: HTTP\n",
        "objects/schema",
        "spec.ports[0].protocol",
        "      protocol: HTTP",
        file=SERVICE,
    ),
    Variant(
        "service-port-without-port",
        "      port: 8080\n",
        "",
        "objects/schema",
        "spec.ports[0].port",
        "    - name: health",
        file=SERVICE,
    ),
]


def _base(root: Path, hooks: str = WEBHOOK) -> Path:
    shutil.copytree(SOURCE, root)
    csv = root / CSV
    text = csv.read_text(encoding="utf-8")
    assert text.endswith("\n  version: 0.3.0\n")
    csv.write_text(text + hooks + API_SERVICES, encoding="utf-8")
    return root


def _validate(root: Path) -> Report:
    return validate_bundle(load_bundle(root), suites=select_suites(["all"]))


def _line_of(root: Path, file: str, text: str) -> int:
    lines = (root / file).read_text(encoding="utf-8").split("\n")
    numbers = [n for n, line in enumerate(lines, start=1) if line == text]
    assert len(numbers) == 1, f"{text!r} is on lines {numbers}"
    return numbers[0]


def test_the_base_is_valid(tmp_path: Path) -> None:
    report = _validate(_base(tmp_path / "b"))
    assert report.findings == [] and report.passed(strict=True)


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
def test_variant(variant: Variant, tmp_path: Path) -> None:
    root = _base(tmp_path / "b")
    path = root / variant.file
    text = path.read_text(encoding="utf-8")
    assert text.count(variant.old) == 1, variant.old
    path.write_text(text.replace(variant.old, variant.new), encoding="utf-8")
    report = _validate(root)
    shown = "\n".join(f"{f.severity} [{f.check}] {f}" for f in report.findings)
    assert not report.passed(strict=True), shown
    if variant.severity == "error":
        assert not report.passed(), shown
    matching = [
        f
        for f in report.findings
        if (f.check, f.severity, f.path) == (variant.check, variant.severity, variant.path)
    ]
    assert matching, shown
    (finding,) = matching
    assert finding.file and Path(finding.file).name == Path(variant.file).name
    assert finding.line == _line_of(root, variant.file, variant.line), shown
    # one defect, one check: no other check reports an error
    assert {f.check for f in report.errors} <= {variant.check}, shown


def test_every_violation_is_reported(tmp_path: Path) -> None:
    """All of them, each at its own field, not just the first."""
    root = _base(tmp_path / "b", WEBHOOK + WEBHOOK.removeprefix("  webhookdefinitions:\n"))
    csv = root / CSV
    text = csv.read_text(encoding="utf-8")
    for old, new in (
        ("      sideEffects: None\n", ""),
        ("      failurePolicy: Fail\n", "      failurePolicy: Sometimes\n"),
        ("      timeoutSeconds: 10\n", "      timeoutSeconds: 0\n"),
        ("      kind: StatefulSet\n      version: v1\n", "      kind: StatefulSet\n"),
        ("        kind: EtcdSnapshot\n", ""),
    ):
        text = text.replace(old, new, 1)
    csv.write_text(text, encoding="utf-8")
    report = _validate(root)
    found = {(f.check, f.path) for f in report.errors}
    assert found == {
        ("csv/schema", f"{HOOK}.sideEffects"),
        ("csv/webhook", f"{HOOK}.failurePolicy"),
        ("csv/webhook", f"{HOOK}.timeoutSeconds"),
        ("csv/schema", "spec.nativeAPIs[0].version"),
        ("csv/schema", "spec.apiservicedefinitions.owned[0].kind"),
        ("csv/webhook", "spec.webhookdefinitions[1].generateName"),  # repeated
    }, found


def test_a_type_error_is_reported_once(tmp_path: Path) -> None:
    """Values Go cannot decode are csv/field-type's; the schema checks stay silent there."""
    root = _base(tmp_path / "b")
    csv = root / CSV
    text = csv.read_text(encoding="utf-8")
    text = text.replace("      timeoutSeconds: 10\n", "      timeoutSeconds: ten\n")
    text = text.replace("            replicas: 1\n", "            replicas: [1]\n")
    csv.write_text(text, encoding="utf-8")
    report = _validate(root)
    paths = sorted((f.check, f.path) for f in report.errors)
    assert paths == [
        ("csv/field-type", "spec.install.spec.deployments[0].spec.replicas"),
        ("csv/field-type", f"{HOOK}.timeoutSeconds"),
    ], paths


def test_the_csv_status_is_not_checked(tmp_path: Path) -> None:
    """The status subresource: the apiserver drops a created CSV's status."""
    root = _base(tmp_path / "b")
    csv = root / CSV
    csv.write_text(csv.read_text() + "status:\n  phase: [Succeeded]\n  whatever: 1\n")
    assert _validate(root).findings == []


# -- differential sanity: bundles upstream accepts stay accepted ---------------------------

NEW_CHECKS = {"csv/schema", "csv/webhook", "objects/schema"}
REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    "bundle",
    [
        *sorted((REPO / "bundle" / "etcd-operator").iterdir()),
        FIXTURES / "timestamps",
        FIXTURES / "duplicate-keys",
    ],
    ids=lambda path: f"{path.parent.name}/{path.name}",
)
def test_shipped_and_real_world_bundles_get_no_schema_error(bundle: Path) -> None:
    report = _validate(bundle)
    new = [f for f in report.findings if f.check in NEW_CHECKS]
    # the fixtures' base CSV keeps a hand-written spec.customField: dropped, a warning
    assert all(f.severity == "warning" and f.path == "spec.customField" for f in new), new


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_accepted_cases_get_no_schema_finding(case: Any, tmp_path: Path) -> None:
    root = tmp_path / "b"
    shutil.copytree(SOURCE, root)
    case.mutate(root)
    report = validate_bundle(load_bundle(root), suites=select_suites(["all"]))
    assert [f for f in report.findings if f.check in NEW_CHECKS] == []


# -- differential: real OLM v0.18.3's CRD agrees with csv/schema ---------------------------

PEERS = Path(os.environ.get("OLMTOOL_PEERS", REPO.parent / "shared" / "peers"))
REAL_CSV_CRD = PEERS / "olm-crds" / "0000_50_olm_00-clusterserviceversions.crd.yaml"
needs_peers = pytest.mark.skipif(
    not REAL_CSV_CRD.is_file(),
    reason=f"real OLM v0.18.3 CRDs not found in {REAL_CSV_CRD.parent} (set OLMTOOL_PEERS)",
)


@functools.cache
def _real_schema() -> dict:
    crd = yaml.load(REAL_CSV_CRD.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def _real_violations(root: Path) -> set[str]:
    csv = yamlread.load((root / CSV).read_text())
    csv.pop("status", None)
    return {v.path for v in validate_against(csv, _real_schema()).violations}


@needs_peers
def test_the_base_is_valid_for_real_olm(tmp_path: Path) -> None:
    assert _real_violations(_base(tmp_path / "b")) == set()


@needs_peers
@pytest.mark.parametrize(
    "variant", [v for v in VARIANTS if v.check == "csv/schema"], ids=lambda v: v.id
)
def test_real_olm_refuses_each_csv_schema_variant(variant: Variant, tmp_path: Path) -> None:
    root = _base(tmp_path / "b")
    path = root / variant.file
    path.write_text(path.read_text().replace(variant.old, variant.new))
    assert variant.path in _real_violations(root)
