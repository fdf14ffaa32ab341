"""Hostile bundles (issue 15): every reproducer is a finding with file, line and path, never
a traceback or a hang.

Each case changes one value of bundle/etcd-operator/0.3.0 (the values the issue found
crashing ``bundle validate --select all``), or puts something that is not a regular file
into the bundle; the driver's last-resort guard (``internal/check-crashed``) must never be
what reports it.
"""

from __future__ import annotations

import copy
import datetime
import os
import re
import shutil
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool import yamlread
from olmtool.bundle.checks import SUITES, Context
from olmtool.bundle.model import Bundle, Finding, load_bundle
from olmtool.bundle.validate import CHECK_CRASHED, ISSUES_URL, Report, select_suites
from olmtool.bundle.validate import validate_bundle as _validate

SOURCE = Path(__file__).resolve().parents[2] / "bundle" / "etcd-operator" / "0.3.0"
CSV = "manifests/etcd-operator.clusterserviceversion.yaml"
CRD = "manifests/etcd.olmtool.dev_etcdclusters.yaml"
RULES = "manifests/etcd-alerts_monitoring.coreos.com_v1_prometheusrule.yaml"
ANNOTATIONS = "metadata/annotations.yaml"
DEPLOYMENT = ("spec", "install", "spec", "deployments", 0, "spec")
RULE = ("spec", "install", "spec", "permissions", 0, "rules")
SCHEMA = ("spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties")
SCHEMA_PATH = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties"


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    root = tmp_path / "etcd-operator"
    shutil.copytree(SOURCE, root)
    return root


def validate(root: Path) -> Report:
    """Every suite, as ``--select all``; no check may crash."""
    report = _validate(load_bundle(root), suites=select_suites(["all"]))
    crashed = [str(f) for f in report.findings if f.check == CHECK_CRASHED]
    assert not crashed, crashed
    return report


def set_value(root: Path, file: str, path: tuple[str | int, ...], value: Any) -> None:
    """Set one value of a YAML file (the file is rewritten without its comments)."""
    documents = yamlread.load_all((root / file).read_text(encoding="utf-8"))
    node = documents[0]
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = copy.deepcopy(value)
    (root / file).write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")


def the_finding(report: Report, check: str, path: str | None = None) -> Finding:
    matching = [f for f in report.findings if f.check == check and (path is None or f.path == path)]
    shown = "\n".join(str(f) for f in report.findings)
    assert matching, f"no {check} at {path}:\n{shown}"
    return matching[0]


def line_of(root: Path, file: str, line: int | None) -> str:
    assert line is not None
    return (root / file).read_text(encoding="utf-8").splitlines()[line - 1]


# -- one value of the wrong type: (file, path, value, check, finding path, message) --------

REPRODUCERS = [
    # csv.py:127, metadata.annotations: " "
    ("csv-annotations-blank", CSV, ("metadata", "annotations"), " ",
     "content/metadata", "metadata.annotations", "must be a mapping"),
    # csv.py:270, an installMode type that is a mapping
    ("install-mode-type-mapping", CSV, ("spec", "installModes", 0, "type"), {"a": "b"},
     "csv/field-type", "spec.installModes[0].type",
     "cannot unmarshal object into Go struct field InstallMode.spec.installModes.type of "
     "type string"),
    # relations.py:135, a deployment spec that is a string
    ("deployment-spec-string", CSV, DEPLOYMENT, " ",
     "csv/field-type", "spec.install.spec.deployments[0].spec",
     "cannot unmarshal string into Go struct field StrategyDeploymentSpec.spec.install.spec."
     "deployments.spec of type v1.DeploymentSpec"),
    # csv.py:353, the pod template's labels as a list
    ("pod-labels-list", CSV, (*DEPLOYMENT, "template", "metadata", "labels"), ["a"],
     "csv/field-type", "spec.install.spec.deployments[0].spec.template.metadata.labels",
     "of type map[string]string"),
    ("csv-labels-list", CSV, ("spec", "labels"), ["a"],
     "csv/field-type", "spec.labels", "cannot unmarshal array"),
    # csv.py:85, spec.version: 2001-01-01 (a YAML date: yamlread keeps the text)
    ("version-date", CSV, ("spec", "version"), datetime.date(2001, 1, 1),
     "csv/version", "spec.version", "2001-01-01"),
    # validation.py:133, a schema type: 5
    ("schema-type-number", CRD, (*SCHEMA, "replicas", "type"), 5,
     "crd/schema", f"{SCHEMA_PATH}[replicas].type",
     "cannot unmarshal number into Go struct field JSONSchemaProps.spec.versions.schema."
     "openAPIV3Schema.properties.properties.type of type string"),
    # validation.py:231, pattern: [a]
    ("schema-pattern-list", CRD, (*SCHEMA, "backupSchedule", "pattern"), ["a"],
     "crd/schema", f"{SCHEMA_PATH}[backupSchedule].pattern", "cannot unmarshal array"),
    ("schema-enum-number", CRD, (*SCHEMA, "replicas", "enum"), 5,
     "crd/schema", f"{SCHEMA_PATH}[replicas].enum", "of type []v1.JSON"),
    ("schema-minimum-string", CRD, (*SCHEMA, "replicas", "minimum"), " ",
     "crd/schema", f"{SCHEMA_PATH}[replicas].minimum", "of type float64"),
    ("schema-properties-string", CRD, (*SCHEMA[:-1], "properties"), "",
     "crd/schema", "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties",
     "of type map[string]v1.JSONSchemaProps"),
    # structural.py: printer columns and scale paths of the wrong type
    ("printer-column-string", CRD, ("spec", "versions", 0, "additionalPrinterColumns", 0), " ",
     "crd/schema", "spec.versions[0].additionalPrinterColumns[0]",
     "of type v1.CustomResourceColumnDefinition"),
    ("printer-column-json-path-mapping", CRD,
     ("spec", "versions", 0, "additionalPrinterColumns", 0, "jsonPath"), {"a": "b"},
     "crd/schema", "spec.versions[0].additionalPrinterColumns[0].jsonPath", "of type string"),
    ("scale-path-number", CRD,
     ("spec", "versions", 0, "subresources", "scale", "specReplicasPath"), 5,
     "crd/schema", "spec.versions[0].subresources.scale.specReplicasPath", "of type string"),
    # examples.py: the CRD's names as a string
    ("crd-names-string", CRD, ("spec", "names"), " ",
     "crd/schema", "spec.names", "of type v1.CustomResourceDefinitionNames"),
    # hub.py:205-269 (--select all): RBAC rules of the wrong type
    ("rbac-rules-string", CSV, RULE, " ",
     "csv/field-type", "spec.install.spec.permissions[0].rules", "of type []v1.PolicyRule"),
    ("rbac-rule-string", CSV, (*RULE, 0), " ",
     "csv/field-type", "spec.install.spec.permissions[0].rules[0]", "of type v1.PolicyRule"),
    ("rbac-verbs-mappings", CSV, (*RULE, 0, "verbs"), [{"a": "b"}],
     "csv/field-type", "spec.install.spec.permissions[0].rules[0].verbs[0]",
     "cannot unmarshal object into Go struct field PolicyRule.spec.install.spec.permissions."
     "rules.verbs of type string"),
    ("maintainers-number", CSV, ("spec", "maintainers"), 5,
     "csv/field-type", "spec.maintainers", "of type []v1alpha1.Maintainer"),
    ("owned-crd-kind-mapping", CSV, ("spec", "customresourcedefinitions", "owned", 0, "kind"),
     {"a": "b"}, "csv/field-type", "spec.customresourcedefinitions.owned[0].kind",
     "of type string"),
    # monitoring.py: a kind that is a mapping
    ("monitoring-kind-mapping", RULES, ("kind",), {"a": "b"},
     "content/unsupported-kind", "kind", "cannot be shipped in a bundle"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("file", "path", "value", "check", "where", "message"),
    [pytest.param(*case[1:], id=case[0]) for case in REPRODUCERS],
)
def test_a_value_of_the_wrong_type_is_a_finding(
    bundle_dir: Path, file: str, path: tuple, value: Any, check: str, where: str, message: str
):
    set_value(bundle_dir, file, path, value)
    report = validate(bundle_dir)
    finding = the_finding(report, check, where)
    assert finding.severity == "error"
    assert message in finding.message
    assert Path(finding.file or "").resolve() == (bundle_dir / file).resolve()
    # the line of the field's key, or of the list item
    name, index = re.findall(r"([^.\[\]]+)|\[([^\]]*)\]", finding.path or "")[-1]
    key = "- " if index.isdigit() else f"{name or index}:"
    assert key in line_of(bundle_dir, file, finding.line), finding


def test_a_crd_that_does_not_decode_reports_only_why(bundle_dir: Path):
    """As the apiserver: a CRD that does not decode is refused with Go's message alone."""
    set_value(bundle_dir, CRD, (*SCHEMA, "replicas", "type"), 5)
    report = validate(bundle_dir)
    assert [f.check for f in report.errors] == ["crd/schema"]


# -- what is not a regular file inside the bundle ------------------------------------------


def load_in_time(root: Path, seconds: float = 20) -> Bundle:
    """load_bundle, failing (instead of hanging the suite) if it blocks."""
    result: list[Bundle] = []
    thread = threading.Thread(target=lambda: result.append(load_bundle(root)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, "load_bundle blocked"
    return result[0]


def unreadable(bundle: Bundle, relative: str) -> Finding:
    report = _validate(bundle, suites=select_suites(["all"]))
    assert not [f for f in report.findings if f.check == CHECK_CRASHED]
    found = [f for f in report.findings if f.check == "loader/unreadable-file"]
    assert len(found) == 1, found
    assert found[0].severity == "error"
    assert found[0].file == bundle.display(relative)
    return found[0]


EXTRA = "manifests/etcd-operator-reader.yaml"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda p: p.symlink_to("missing.yaml"), "a dangling symlink", id="dangling"),
        pytest.param(lambda p: os.mkfifo(p), "a FIFO, not a regular file", id="fifo"),
        pytest.param(lambda p: p.symlink_to("/etc/hostname"), "outside", id="outside"),
        pytest.param(lambda p: p.symlink_to("/dev/zero"), "outside", id="dev-zero"),
        pytest.param(lambda p: p.symlink_to("../tests"), "a directory", id="directory-symlink"),
    ],
)
def test_what_is_not_a_regular_file_is_a_loader_finding(bundle_dir: Path, make, message: str):
    make(bundle_dir / EXTRA)
    bundle = load_in_time(bundle_dir)
    finding = unreadable(bundle, EXTRA)
    assert message in finding.message
    assert "only regular files inside the bundle are read" in finding.message
    assert EXTRA not in bundle.files


def test_symlink_loop_is_two_findings_not_an_error(bundle_dir: Path):
    (bundle_dir / "manifests" / "a.yaml").symlink_to("b.yaml")
    (bundle_dir / "manifests" / "b.yaml").symlink_to("a.yaml")
    report = _validate(load_in_time(bundle_dir), suites=select_suites(["all"]))
    found = [f for f in report.findings if f.check == "loader/unreadable-file"]
    assert sorted(Path(f.file or "").name for f in found) == ["a.yaml", "b.yaml"]
    assert all("a symlink loop" in f.message for f in found)


def test_device_is_a_loader_finding(bundle_dir: Path):
    try:
        os.mknod(bundle_dir / EXTRA, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device here: {exc}")
    finding = unreadable(load_in_time(bundle_dir), EXTRA)
    assert "a character device" in finding.message


def test_annotations_as_a_fifo_do_not_block(bundle_dir: Path):
    (bundle_dir / ANNOTATIONS).unlink()
    os.mkfifo(bundle_dir / ANNOTATIONS)
    bundle = load_in_time(bundle_dir)
    finding = unreadable(bundle, ANNOTATIONS)
    assert "FIFO" in finding.message
    report = _validate(bundle)
    assert "format/annotations-missing" not in {f.check for f in report.findings}


def test_symlinks_to_regular_files_inside_are_read(bundle_dir: Path):
    (bundle_dir / ANNOTATIONS).rename(bundle_dir / "annotations.real.yaml")
    (bundle_dir / ANNOTATIONS).symlink_to("../annotations.real.yaml")
    bundle = load_in_time(bundle_dir)
    assert bundle.annotations and not bundle.problems
    assert validate(bundle_dir).passed()


def test_manifests_as_a_symlink_is_one_finding(bundle_dir: Path):
    shutil.move(bundle_dir / "manifests", bundle_dir / "real-manifests")
    (bundle_dir / "manifests").symlink_to("real-manifests")
    report = _validate(load_in_time(bundle_dir), suites=select_suites(["all"]))
    checks = {f.check for f in report.errors}
    assert "loader/unreadable-file" in checks
    assert "format/manifests-missing" not in checks


def test_a_subdirectory_in_manifests_is_still_reported(bundle_dir: Path):
    (bundle_dir / "manifests" / "extra").mkdir()
    report = validate(bundle_dir)
    assert the_finding(report, "loader/subdirectory").file == load_bundle(bundle_dir).display(
        "manifests/extra"
    )


# -- the driver's last-resort guard ---------------------------------------------------------


def test_a_crashing_check_is_an_internal_error_finding(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    def broken_check(bundle: Bundle, context: Context):
        yield Finding("csv/name", "warning", "found before the crash", None)
        raise KeyError("boom")

    monkeypatch.setitem(SUITES, "csv", [*SUITES["csv"], broken_check])
    report = _validate(load_bundle(bundle_dir))
    crashed = [f for f in report.findings if f.check == CHECK_CRASHED]
    assert len(crashed) == 1
    (finding,) = crashed
    assert finding.severity == "error" and not report.passed()
    assert "broken_check" in finding.message and "KeyError" in finding.message
    assert "(test_hostile.py:" in finding.message  # where it crashed
    assert ISSUES_URL in finding.message and "bug in olmtool" in finding.message
    # the rest of the report is there: the findings before the crash and the other checks
    assert any(f.message == "found before the crash" for f in report.findings)
    assert report.as_dict()["findings"][0]["origin"] in ("olmtool", "upstream")


def test_a_crashing_check_exits_3_from_the_cli(bundle_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """CI tells a bug from a verdict: findings exit 1, a crashed check exits 3."""
    from tests.test_cli import cli

    def broken_check(bundle: Bundle, context: Context):
        raise KeyError("boom")
        yield  # a generator, like every check

    monkeypatch.setitem(SUITES, "csv", [*SUITES["csv"], broken_check])
    run = cli("bundle", "validate", str(bundle_dir))
    assert run.returncode == 3, run.stdout
    assert CHECK_CRASHED in run.stdout
