"""The ``olm-v1`` target suite: what OLM v1 (operator-controller) refuses, one defect each on
a copy of the etcd operator's 0.3.0 bundle, which OLM v1 installs as it is.

The suite runs only when selected by name; the corpus (test_corpus.py) runs ``all``, so
its ids are proved here, each with its file and line."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from olmtool.actions import bundle_validate
from olmtool.bundle.checks.table import CHECKS
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import select_suites, validate_bundle
from tests.catalog.test_cli_validate import cli

SOURCE = Path(__file__).resolve().parents[2] / "bundle" / "etcd-operator" / "0.3.0"
CSV = "manifests/etcd-operator.clusterserviceversion.yaml"

WEBHOOKS = """\
  webhookdefinitions:
    - type: ValidatingAdmissionWebhook
      generateName: vetcdcluster.etcd.olmtool.dev
      deploymentName: etcd-operator
      containerPort: 443
      admissionReviewVersions: [v1]
      sideEffects: None
      rules:
        - apiGroups: [etcd.olmtool.dev]
          apiVersions: [v1beta1]
          operations: [CREATE]
          resources: [etcdclusters]
"""
API_SERVICES = """\
  apiservicedefinitions:
    owned:
      - group: metrics.etcd.olmtool.dev
        version: v1
        kind: EtcdMetrics
        name: etcdmetrics
        displayName: etcd metrics
        deploymentName: etcd-operator
"""
REQUIRED_CRD = """\
    required:
      - name: certificates.cert-manager.io
        version: v1
        kind: Certificate
        displayName: Certificate
        description: TLS for the members
"""
DEPENDENCIES = """\
dependencies:
  - type: olm.label
    value: {label: widgets}
  - type: olm.package
    value: {packageName: cert-manager, version: ">=1.12.0"}
  - type: olm.gvk
    value: {group: cert-manager.io, kind: Certificate, version: v1}
"""
PROPERTIES = """\
properties:
  - type: olm.maxOpenShiftVersion
    value: "4.16"
  - type: olm.constraint
    value:
      failureMessage: needs widgets
      cel: {rule: 'properties.exists(p, p.type == "widgets")'}
"""
OLM_PROPERTIES = (
    """    olm.properties: '[{"type":"olm.gvk.required","value":"""
    """{"group":"a.io","kind":"A","version":"v1"}}]'\n"""
)


def insert_before(file: str, marker: str, text: str) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        path = root / file
        content = path.read_text()
        assert content.count(marker) == 1, marker
        path.write_text(content.replace(marker, text + marker))

    return mutate


def write(file: str, text: str) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        (root / file).write_text(text)

    return mutate


def _no_all_namespaces(root: Path) -> None:
    path = root / CSV
    text = path.read_text()
    old = "    - supported: true\n      type: AllNamespaces\n"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "    - supported: false\n      type: AllNamespaces\n"))


# (case id, mutation, expected olm-v1 findings: (check, file, line, message fragment))
CASES = [
    (
        "install-modes-without-all-namespaces",
        _no_all_namespaces,
        [("olm-v1/install-modes", CSV, 331, "(supported: MultiNamespace, OwnNamespace, SingleNamespace)")],
    ),
    (
        "webhookdefinitions",
        insert_before(CSV, "  installModes:\n", WEBHOOKS),
        [("olm-v1/webhooks", CSV, 331, "1 webhookdefinitions: OLM v1 refuses them")],
    ),
    (
        "owned-api-service",
        insert_before(CSV, "  installModes:\n", API_SERVICES),
        [("olm-v1/api-services", CSV, 332, "1 owned apiservicedefinitions")],
    ),
    (
        "required-crd",
        insert_before(CSV, "  description: |\n", REQUIRED_CRD),
        [("olm-v1/dependencies", CSV, 173, "1 required CRD(s) become olm.gvk.required")],
    ),
    (
        "olm-properties-annotation",
        insert_before(CSV, "    operatorframework.io/suggested-namespace:", OLM_PROPERTIES),
        [("olm-v1/dependencies", CSV, None, "the olm.properties annotation declares olm.gvk.required")],
    ),
    (
        "dependencies-yaml",
        write("metadata/dependencies.yaml", DEPENDENCIES),
        [
            ("olm-v1/dependencies", "metadata/dependencies.yaml", 4, "olm.package cert-manager >=1.12.0 (an olm.package.required property)"),
            ("olm-v1/dependencies", "metadata/dependencies.yaml", 6, "olm.gvk cert-manager.io/v1/Certificate (an olm.gvk.required property)"),
        ],
    ),
    (
        "properties-yaml",
        write("metadata/properties.yaml", PROPERTIES),
        [("olm-v1/dependencies", "metadata/properties.yaml", 4, "olm.constraint 'needs widgets': OLM v1 installs no dependencies")],
    ),
]  # fmt: skip


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    root = tmp_path / "etcd-operator"
    shutil.copytree(SOURCE, root)
    return root


def test_the_etcd_bundles_install_with_olm_v1() -> None:
    for version in ("0.1.0", "0.2.0", "0.3.0", "0.4.0"):
        bundle = load_bundle(SOURCE.parent / version)
        report = validate_bundle(bundle, suites=select_suites(["all", "olm-v1"]))
        assert report.findings == [], version


def test_olm_v1_runs_only_when_selected_by_name() -> None:
    assert "olm-v1" not in select_suites(["all"])
    assert select_suites(["olm-v1"])[-1] == "olm-v1"
    assert select_suites(["all,olm-v1"])[-1] == "olm-v1"


@pytest.mark.parametrize(("case", "mutate", "expected"), CASES, ids=[c[0] for c in CASES])
def test_case(case: str, mutate: Callable[[Path], None], expected: list, bundle_dir: Path) -> None:
    mutate(bundle_dir)
    bundle = load_bundle(bundle_dir)
    assert not [f for f in validate_bundle(bundle).findings if f.check.startswith("olm-v1/")]
    report = validate_bundle(bundle, suites=select_suites(["olm-v1"]))
    found = [f for f in report.findings if f.check.startswith("olm-v1/")]
    shown = "\n".join(f"{f.check} {f}" for f in found)
    assert len(found) == len(expected), shown
    for finding, (check, file, line, fragment) in zip(found, expected, strict=True):
        assert finding.check == check and finding.severity == "error", shown
        assert Path(finding.file or "").resolve() == (bundle_dir / file).resolve(), shown
        if line is not None:
            assert finding.line == line, shown
        assert fragment in finding.message, shown


def test_every_olm_v1_check_is_proved_here() -> None:
    proved = {check for _, _, expected in CASES for check, *_ in expected}
    assert proved == {check for check in CHECKS if check.startswith("olm-v1/")}
    for check in proved:
        assert CHECKS[check].origin == "olmtool" and "refused" in CHECKS[check].summary


def test_the_command_fails_and_a_waiver_accepts_it(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(bundle_dir.parent)
    _no_all_namespaces(bundle_dir)
    refused = cli("bundle", "validate", "etcd-operator", "--select", "olm-v1")
    assert refused.returncode == 1, refused.stdout
    assert "error [olm-v1/install-modes]" in refused.stdout
    assert refused.stdout.rstrip().endswith("objects, olm-v1)")
    accepted = cli(
        "bundle", "validate", "etcd-operator", "--select", "olm-v1", "--strict",
        "--ignore", "olm-v1/install-modes=we target OLM v0",
    )  # fmt: skip
    assert accepted.returncode == 0, accepted.stdout
    assert "waived [olm-v1/install-modes]" in accepted.stdout
    assert "(we target OLM v0; --ignore)" in accepted.stdout
    assert bundle_validate(bundle_dir, select=["olm-v1"]).errors  # the action, no waiver


def test_a_bundle_built_with_dependencies_and_webhooks_is_refused() -> None:
    """The golden gadget-operator bundle: bundle.dependencies and bundle.webhooks, as
    ``bundle build`` writes them, are what OLM v1 refuses."""
    golden = Path(__file__).parent / "golden" / "gadget-operator" / "0.4.0"
    report = bundle_validate(golden, select=["olm-v1"])
    found = [(f.check, Path(f.file or "").name, f.line) for f in report.findings]
    assert found == [
        ("olm-v1/webhooks", "gadget-operator.clusterserviceversion.yaml", 113),
        ("olm-v1/dependencies", "dependencies.yaml", 3),
        ("olm-v1/dependencies", "dependencies.yaml", 7),
        ("olm-v1/dependencies", "dependencies.yaml", 12),
    ]
