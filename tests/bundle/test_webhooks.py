"""``csv/webhook`` beyond the one-field corpus: conversion webhooks, the Service OLM
creates, rules and selectors as Kubernetes 1.20 and OLM v0.18.3 validate them."""

from __future__ import annotations

from pathlib import Path

import pytest

from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import select_suites, validate_bundle
from tests.bundle.test_corpus import BACKUP_OWNED, CSV, INSTALL_MODES, V1BETA1_BACKUP_CRD
from tests.bundle.test_schema_corpus import HOOK, WEBHOOK, _base

CONVERSION = """\
  webhookdefinitions:
    - type: ConversionWebhook
      admissionReviewVersions: [v1]
      containerPort: 443
      targetPort: 8080
      conversionCRDs: [etcdclusters.etcd.olmtool.dev]
      deploymentName: etcd-operator
      generateName: cetcdclusters.etcd.olmtool.dev
      sideEffects: None
      webhookPath: /convert
"""
ALL_NAMESPACES_ONLY = INSTALL_MODES.replace("supported: true", "supported: false").replace(
    "    - supported: false\n      type: AllNamespaces\n",
    "    - supported: true\n      type: AllNamespaces\n",
)


def _findings(root: Path, *edits: tuple[str, str]) -> list[tuple[str, str, str | None]]:
    """Findings after the edits (each made in the webhook definitions when they hold it)."""
    csv = root / CSV
    text = csv.read_text(encoding="utf-8")
    for old, new in edits:
        start = text.find("\n  webhookdefinitions:\n")
        head, tail = (text[:start], text[start:]) if start >= 0 else (text, "")
        if tail.count(old) == 1:
            text = head + tail.replace(old, new)
        else:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
    csv.write_text(text, encoding="utf-8")
    report = validate_bundle(load_bundle(root), suites=select_suites(["all"]))
    return [(f.check, f.severity, f.path) for f in report.findings]


@pytest.mark.parametrize(
    ("old", "new", "severity", "path"),
    [
        # the Service <deploymentName>-service must be a DNS-1035 label
        (
            "\n      deploymentName: etcd-operator\n",
            "\n      deploymentName: 1etcd\n",
            "error",
            ".deploymentName",
        ),
        # a webhook path's segments are DNS subdomains; it starts with '/'
        ("webhookPath: /validate-etcd", "webhookPath: validate-etcd", "error", ".webhookPath"),
        ("webhookPath: /validate-etcd", "webhookPath: //validate-etcd", "error", ".webhookPath"),
        # '*' alone; resources required; OLM protects every group and the webhook configs
        ("            - UPDATE\n", "            - '*'\n", "error", ".rules[0].operations"),
        (
            "            - etcdclusters\n",
            "            - '*/*'\n            - pods\n",
            "error",
            ".rules[0].resources",
        ),
        ("            - etcd.olmtool.dev\n", "            - '*'\n", "error", ".rules[0].apiGroups"),
        (
            "            - etcd.olmtool.dev\n",
            "            - admissionregistration.k8s.io\n",
            "error",
            None,  # resources etcdclusters: allowed by OLM
        ),
        (
            "          apiVersions:\n            - v1beta1\n",
            "          apiVersions: []\n",
            "error",
            ".rules[0].apiVersions",
        ),
        # label value: at most 63 characters (OLM labels the configuration with it)
        (
            "generateName: vetcdcluster.etcd.olmtool.dev",
            "generateName: " + "v" * 50 + ".etcd.olmtool.dev",
            "error",
            ".generateName",
        ),
        (
            "      timeoutSeconds: 10\n",
            "      timeoutSeconds: 30\n      matchPolicy: Fuzzy\n",
            "error",
            ".matchPolicy",
        ),
        (
            "      timeoutSeconds: 10\n",
            "      objectSelector:\n        matchExpressions:\n          - {key: app, operator: In}\n",
            "error",
            ".objectSelector.matchExpressions[0].values",
        ),
        (
            "        - v1\n      containerPort",
            "        - v1\n        - v1\n      containerPort",
            "error",
            ".admissionReviewVersions[1]",
        ),
        ("      targetPort: 8080\n", "      targetPort: 70000\n", "error", ".targetPort"),
    ],
)
def test_admission_webhook_rules(
    old: str, new: str, severity: str, path: str | None, tmp_path: Path
) -> None:
    found = _findings(_base(tmp_path / "b"), (old, new))
    webhook = [f for f in found if f[0] == "csv/webhook"]
    if path is None:
        assert webhook == [], found
    else:
        assert webhook == [("csv/webhook", severity, f"{HOOK}{path}")], found


def test_mutating_webhook_reinvocation_policy(tmp_path: Path) -> None:
    root = _base(tmp_path / "b")
    found = _findings(
        root,
        ("    - type: ValidatingAdmissionWebhook", "    - type: MutatingAdmissionWebhook"),
        ("      timeoutSeconds: 10\n", "      reinvocationPolicy: Always\n"),
    )
    assert found == [("csv/webhook", "error", f"{HOOK}.reinvocationPolicy")]


def test_a_valid_conversion_webhook(tmp_path: Path) -> None:
    found = _findings(_base(tmp_path / "b", CONVERSION), (INSTALL_MODES, ALL_NAMESPACES_ONLY))
    assert found == []


def test_conversion_webhook_of_a_crd_the_csv_does_not_own(tmp_path: Path) -> None:
    hooks = CONVERSION.replace(
        "[etcdclusters.etcd.olmtool.dev]", "[etcdclusters.etcd.olmtool.dev, backups.example.com]"
    )
    found = _findings(_base(tmp_path / "b", hooks), (INSTALL_MODES, ALL_NAMESPACES_ONLY))
    assert found == [("csv/webhook", "error", f"{HOOK}.conversionCRDs[1]")]


def test_conversion_webhook_without_crds(tmp_path: Path) -> None:
    hooks = CONVERSION.replace("[etcdclusters.etcd.olmtool.dev]", "[]")
    found = _findings(_base(tmp_path / "b", hooks), (INSTALL_MODES, ALL_NAMESPACES_ONLY))
    assert found == [("csv/webhook", "error", f"{HOOK}.conversionCRDs")]


def test_conversion_webhook_of_a_v1beta1_crd_preserving_unknown_fields(tmp_path: Path) -> None:
    hooks = CONVERSION.replace("[etcdclusters.", "[etcdbackups.")
    root = _base(tmp_path / "b", hooks)
    crd = root / "manifests/etcd.olmtool.dev_etcdbackups.yaml"
    crd.write_text(V1BETA1_BACKUP_CRD)
    owned = (
        (INSTALL_MODES, ALL_NAMESPACES_ONLY),
        ("  description: |\n", BACKUP_OWNED + "  description: |\n"),
    )
    found = _findings(root, *owned)
    assert ("csv/webhook", "error", f"{HOOK}.conversionCRDs[0]") in found, found
    crd.write_text(V1BETA1_BACKUP_CRD + "  preserveUnknownFields: false\n")
    root2 = _base(tmp_path / "c", hooks)
    (root2 / crd.relative_to(root)).write_text(crd.read_text())
    found = _findings(root2, *owned)
    assert not [f for f in found if f[0] == "csv/webhook"], found


def test_one_crd_in_two_conversion_webhooks(tmp_path: Path) -> None:
    second = CONVERSION.removeprefix("  webhookdefinitions:\n").replace("cetcd", "c2etcd")
    root = _base(tmp_path / "b", CONVERSION + second)
    found = _findings(root, (INSTALL_MODES, ALL_NAMESPACES_ONLY))
    assert found == [("csv/webhook", "warning", "spec.webhookdefinitions[1].conversionCRDs")]


def test_fifty_valid_webhooks_give_no_finding(tmp_path: Path) -> None:
    items = "".join(
        WEBHOOK.removeprefix("  webhookdefinitions:\n").replace(
            "vetcdcluster.", f"v{index}.etcdcluster."
        )
        for index in range(50)
    )
    assert _findings(_base(tmp_path / "b", "  webhookdefinitions:\n" + items)) == []


def test_resources_follow_the_apiserver_to_the_letter() -> None:
    """validateResources: only the last plain resource decides whether '*' has company."""
    from olmtool.bundle.admission import resource_problems

    assert list(resource_problems(["pods", "*"])) == []
    assert list(resource_problems(["*", "pods"])) == [
        (("resources",), "if '*' is present, must not specify other resources without subresources")
    ]


def test_settings_and_check_share_one_message(tmp_path: Path) -> None:
    """bundle.webhooks (olmtool.yaml) and csv/webhook report a rule in the same words."""
    from tests.bundle.test_settings_metadata import _error, _hook

    rules = "rules: [{operations: [CREATE], apiGroups: [a.io], apiVersions: [v1], resources: ['*/*', pods]}]"
    settings = _error(tmp_path, _hook(rules=rules)).message
    root = _base(tmp_path / "b")
    csv = root / CSV
    head, hooks, tail = csv.read_text().partition("\n  webhookdefinitions:\n")
    edited = tail.replace(
        "            - etcdclusters\n", "            - '*/*'\n            - pods\n"
    )
    csv.write_text(head + hooks + edited)
    report = validate_bundle(load_bundle(root), suites=select_suites(["all"]))
    (finding,) = [f for f in report.findings if f.check == "csv/webhook"]
    assert finding.message in settings and finding.message.startswith("if '*/*' is present")
