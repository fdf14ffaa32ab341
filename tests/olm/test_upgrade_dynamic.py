"""``olmtool test upgrade --from/--all``: start versions, probes, the JUnit report and the
summary, on fake runs (no cluster; the real runs are in tests/e2e/test_upgrade_olm)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from olmtool.actions import upgrade_testing as action
from olmtool.actions.upgrade_testing import (
    catalog_kind,
    is_loopback_server,
    load_probe,
    start_versions,
    upgrade_test,
)
from olmtool.cli import app
from olmtool.cli.testing import print_report, summary_table
from olmtool.errors import ArgumentError
from olmtool.olm.upgrade_report import UpgradeReport, junit_xml, write_junit
from olmtool.olm.upgrade_run import Hop, UpgradeRun

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "catalog"
V1, V2, V3, V4, V5 = (f"etcd-operator.v0.{n}.0" for n in (1, 2, 3, 4, 5))
runner = CliRunner()
STATIC = ["test", "upgrade", "--catalog", str(CATALOG), "--package", "etcd-operator"]


def _report(*runs: UpgradeRun) -> UpgradeReport:
    return UpgradeReport(upgrade_test(CATALOG, "etcd-operator"), "127.0.0.1:50051", list(runs))


def _passed(start: str, *hops: tuple[str, float]) -> UpgradeRun:
    run = UpgradeRun("etcd-operator", start, hops[-1][0] if hops else start, 31.5)
    run.channel, run.namespace = "stable", f"ns-{start[-5:].replace('.', '')}"
    previous = start
    for target, seconds in hops:
        run.hops.append(Hop(previous, target, seconds, 2.0))
        previous = target
    return run


def _failed(start: str, failure: str) -> UpgradeRun:
    run = _passed(start)
    run.failure = failure
    return run


# -- start versions ----------------------------------------------------------------------


def test_all_starts_from_every_bundle_but_the_head_oldest_first() -> None:
    plan = upgrade_test(CATALOG, "etcd-operator")
    assert start_versions(plan, None, True) == [V1, V2, V3, V4]


@pytest.mark.parametrize("start", ["0.2.0", V2])
def test_from_takes_a_version_or_a_csv_name(start: str) -> None:
    assert start_versions(upgrade_test(CATALOG, "etcd-operator"), start, False) == [V2]


@pytest.mark.parametrize(
    ("start", "every", "words"),
    [
        ("0.5.0", False, "is the channel head"),
        ("9.9.9", False, "is not in channel stable of etcd-operator"),
        (None, False, "not both"),
        ("0.1.0", True, "not both"),
    ],
)
def test_bad_start_versions_name_the_flags(start: str | None, every: bool, words: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        start_versions(upgrade_test(CATALOG, "etcd-operator"), start, every)
    assert caught.value.argument == "start"
    assert words in str(caught.value)


def test_from_and_all_together_are_refused_by_the_cli() -> None:
    result = runner.invoke(
        app,
        [*STATIC, "--from", "0.1.0", "--all"],
    )
    assert result.exit_code == 1
    assert "--from/--all" in str(result.exception) or "not both" in str(result.exception)


def test_catalog_kinds() -> None:
    assert catalog_kind(str(CATALOG)) == "directory"
    assert catalog_kind("127.0.0.1:50051") == "address"
    assert catalog_kind("localhost:5000/olmtool/catalog:latest") == "image"
    assert catalog_kind("quay.io/org/catalog@sha256:" + "a" * 64) == "image"
    for text in ("catalogs", "no such dir/x", "org/catalog:1"):  # never pulled from a hub
        with pytest.raises(ArgumentError):
            catalog_kind(text)


@pytest.mark.parametrize(
    ("server", "local"),
    [
        ("https://127.0.0.1:6443", True),
        ("https://localhost:6443", True),
        ("https://[::1]:6443", True),
        ("https://10.0.0.1:6443", False),
        ("https://cluster.example.com", False),
    ],
)
def test_a_directory_is_served_only_to_a_loopback_cluster(server: str, local: bool) -> None:
    assert is_loopback_server(server) is local


def test_namespaces_are_dns_labels() -> None:
    name = action._namespace("a-very-long-operator-package-name-indeed", "x.v1.2.3-rc.1+build")
    assert len(name) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name


# -- probes ------------------------------------------------------------------------------


PROBE = """
class Probe:
    def write(self, kube, namespace, resources):
        pass

    def check(self, kube, namespace, resources):
        pass

NOT_A_PROBE = 3
"""


@pytest.mark.parametrize("form", ["path-option", "dir-prefix"])
def test_a_probe_is_loaded_from_a_directory(tmp_path: Path, form: str) -> None:
    module = f"probe_{form.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(PROBE)
    if form == "path-option":
        probe = load_probe(f"{module}:Probe", tmp_path)
    else:
        probe = load_probe(f"{tmp_path}:{module}:Probe")
    assert type(probe).__name__ == "Probe"


def test_the_etcd_operators_probe_loads() -> None:
    probe = load_probe("etcd_operator.probe:EtcdProbe", REPO / "operator")
    assert type(probe).__name__ == "EtcdProbe"


@pytest.mark.parametrize(
    "spec", ["no_colon", "no_such_module_xyz:Probe", "probe_bad:Missing", "probe_bad:NOT_A_PROBE"]
)
def test_bad_probes_name_the_flag(tmp_path: Path, spec: str) -> None:
    (tmp_path / "probe_bad.py").write_text(PROBE)
    with pytest.raises(ArgumentError) as caught:
        load_probe(spec, tmp_path)
    assert caught.value.argument == "probe"


# -- the report --------------------------------------------------------------------------


def test_junit_has_one_testcase_per_start_version_with_hop_timing(tmp_path: Path) -> None:
    report = _report(
        _passed(V1, (V5, 9.25)),
        _failed(V2, "timed out after 300s waiting for an upgrade InstallPlan <from> & co"),
    )
    report.seconds = 80.0
    path = write_junit(report, tmp_path / "out" / "upgrade.xml")
    root = ET.parse(path).getroot()
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "2", "1")
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "upgrade etcd-operator/stable"
    suite_properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert suite_properties["head"] == V5
    first, second = suite.findall("testcase")
    assert (first.get("name"), first.get("classname")) == (V1, "etcd-operator.stable")
    assert float(first.get("time") or 0) == pytest.approx(31.5 + 9.25)
    properties = {p.get("name"): p.get("value") for p in first.find("properties") or []}
    assert properties["install.seconds"] == "31.50"
    assert properties["hop.1"] == f"{V1} -> {V5}"
    assert properties["hop.1.seconds"] == "9.25"
    assert properties["expected.hops"] == V5
    assert first.find("failure") is None
    assert f"hop 1 {V1} -> {V5}: 9.2s" in (first.findtext("system-out") or "")
    failure = second.find("failure")
    assert failure is not None
    assert failure.get("message") == report.runs[1].failure  # escaped and read back whole
    assert failure.text == report.runs[1].failure


def test_junit_of_no_runs_is_still_valid() -> None:
    root = ET.fromstring(junit_xml(_report()))
    assert root.get("tests") == "0"


def test_the_report_compares_the_hops_with_the_static_plan() -> None:
    report = _report(_passed(V1, (V3, 5.0), (V5, 6.0)), _passed(V2, (V5, 4.0)))
    assert report.passed
    data = report.as_dict()
    first, second = data["runs"]  # type: ignore[misc]
    assert (first["expectedHops"], first["matchesPlan"]) == ([V5], False)
    assert (second["expectedHops"], second["matchesPlan"]) == ([V5], True)
    assert json.loads(json.dumps(data))["plan"]["head"] == V5


def _rendered(report: UpgradeReport, monkeypatch: pytest.MonkeyPatch) -> str:
    console = Console(record=True, width=200)
    monkeypatch.setattr("olmtool.cli.testing.stdout", console)
    print_report(report)
    return console.export_text()


def test_the_summary_shows_hops_seconds_and_results(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(_passed(V1, (V5, 9.25)), _failed(V2, "probe check failed: 3 keys missing"))
    report.seconds = 75.0
    text = _rendered(report, monkeypatch)
    assert summary_table(report).row_count == 2
    # the table shows versions; the title and the lines below it whole CSV names
    assert f"etcd-operator channel stable -> {V5}" in text
    v1_line = next(line for line in text.splitlines() if "0.1.0" in line and "passed" in line)
    assert "31.5" in v1_line and "-> 0.5.0 9.2" in v1_line and "40.8" in v1_line
    assert f"failed {V2}: probe check failed: 3 keys missing" in text
    assert "upgrades: failed (1/2 start versions reached etcd-operator.v0.5.0, 75.0 s)" in text


def test_a_hop_path_unlike_the_static_plan_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _rendered(_report(_passed(V1, (V3, 5.0), (V5, 6.0))), monkeypatch)
    assert "(static plan: 0.5.0)" in text


# -- the command -------------------------------------------------------------------------


def _fake_dynamic(report: UpgradeReport, seen: dict[str, Any]) -> Any:
    def fake(**arguments: Any) -> UpgradeReport:
        seen.update(arguments)
        arguments["progress"]("[1/1] installing")
        return report

    return fake


def test_the_command_passes_its_options_and_fails_on_a_failed_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}
    report = _report(_passed(V1, (V5, 9.0)), _failed(V2, "boom"))
    monkeypatch.setattr("olmtool.actions.upgrade_test_dynamic", _fake_dynamic(report, seen))
    args = ["test", "upgrade", "--catalog", "127.0.0.1:1", "--package", "etcd-operator", "--all"]
    args += ["--probe", "operator:etcd_operator.probe:EtcdProbe", "--junit", str(tmp_path / "j")]
    args += ["--timeout", "120", "--reset-crds", "-o", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert json.loads(result.output)["passed"] is False
    assert seen["every"] is True and seen["start"] is None and seen["reset_crds"] is True
    assert seen["probe"] == "operator:etcd_operator.probe:EtcdProbe"
    assert (seen["timeout"], seen["junit"]) == (120.0, tmp_path / "j")


def test_the_command_exits_0_when_every_run_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    report = _report(_passed(V2, (V5, 9.0)))
    monkeypatch.setattr("olmtool.actions.upgrade_test_dynamic", _fake_dynamic(report, seen))
    result = runner.invoke(
        app,
        [
            "test",
            "upgrade",
            "--catalog",
            "127.0.0.1:1",
            "--package",
            "etcd-operator",
            "--from",
            "0.2.0",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "upgrades: passed (1/1" in result.output
    assert seen["start"] == "0.2.0" and seen["every"] is False


def test_static_output_is_unchanged_without_from_or_all() -> None:
    result = runner.invoke(
        app, ["test", "upgrade", "--catalog", str(CATALOG), "--package", "etcd-operator"]
    )
    assert result.exit_code == 0, result.output
    assert "upgrade paths: passed" in result.output
    assert f"reaches-head  {V1}: {V5}" in result.output
    assert f"reaches-head  {V4}: {V5}" in result.output  # replaced by the head


# -- cleaning up -------------------------------------------------------------------------


class FakeKube:
    """Objects by path; deleting one with finalizers only marks it (as the apiserver)."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[tuple[str, str]] = []

    def get(self, path: str) -> dict[str, Any]:
        if path in self.objects:
            return self.objects[path]
        items = [o for p, o in self.objects.items() if _collection(p) == path]
        return {"items": items}

    def get_or_none(self, path: str) -> dict[str, Any] | None:
        return self.objects.get(path)

    def delete(self, path: str) -> None:
        self.calls.append(("delete", path))
        found = self.objects.get(path)
        if found is None:
            return
        if found["metadata"].get("finalizers"):
            found["metadata"]["deletionTimestamp"] = "now"
        else:
            del self.objects[path]

    def patch(self, path: str, body: dict[str, Any]) -> None:
        self.calls.append(("patch", path))
        if body["metadata"]["finalizers"] is None and path in self.objects:
            del self.objects[path]  # marked for deletion and released


CRD_PATH = f"{action.CRDS}/etcdclusters.etcd.olmtool.dev"


def _collection(path: str) -> str:
    """The cluster-wide list path an object's path belongs to."""
    return re.sub(r"/namespaces/[^/]+/", "/", path).rsplit("/", 1)[0]


def _crd() -> dict[str, Any]:
    return {
        "metadata": {"name": "etcdclusters.etcd.olmtool.dev", "finalizers": ["cleanup"]},
        "spec": {
            "group": "etcd.olmtool.dev",
            "names": {"kind": "EtcdCluster", "plural": "etcdclusters"},
            "versions": [
                {"name": "v1alpha1", "storage": False},
                {"name": "v1beta1", "storage": True},
            ],
        },
    }


def test_reset_crds_releases_objects_whose_operator_is_gone() -> None:
    cr = "/apis/etcd.olmtool.dev/v1beta1/namespaces/gone/etcdclusters/example"
    kube = FakeKube(
        {
            CRD_PATH: _crd(),
            cr: {"metadata": {"name": "example", "namespace": "gone", "finalizers": ["x"]}},
            f"{action.CRDS}/other.example.com": {
                "metadata": {"name": "other.example.com"},
                "spec": {"group": "example.com", "names": {"kind": "Other"}},
            },
        }
    )

    def crd_goes_with_its_objects(path: str, body: dict[str, Any]) -> None:
        FakeKube.patch(kube, path, body)
        kube.objects.pop(CRD_PATH, None)

    kube.patch = crd_goes_with_its_objects  # type: ignore[method-assign]
    names = action.delete_crds(kube, {("etcd.olmtool.dev", "EtcdCluster")}, timeout=1.0)
    assert names == ["etcdclusters.etcd.olmtool.dev"]
    assert ("patch", cr) in kube.calls
    assert f"{action.CRDS}/other.example.com" in kube.objects  # another package's CRD stays


def test_a_run_is_cleaned_up_examples_first() -> None:
    from olmtool.olm.upgrade_run import clean_up

    example = "/apis/etcd.olmtool.dev/v1alpha1/namespaces/ns1/etcdclusters/example"
    kube = FakeKube({example: {"metadata": {"name": "example"}}})
    run = _passed(V1)
    run.namespace, run.created = "ns1", [example]
    assert clean_up(kube, run, timeout=1.0)
    assert kube.calls == [("delete", example), ("delete", "/api/v1/namespaces/ns1")]
