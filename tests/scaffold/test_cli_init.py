"""``olmtool init`` as users run it: the whole start of a project through the real
command line (``python -m olmtool``, one subprocess per command), then the wiring in
process: no prompts in CI, prompts on a terminal, flags named in errors, machine output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import olmtool
from olmtool.cli import app
from olmtool.cli import project_init as init_cli
from olmtool.fsutil import read_tree
from tests.catalog.opm_peer import OPM, requires_opm
from tests.catalog.test_cli_validate import cli

WORKTREE = Path(olmtool.__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden" / "foo-operator"
FOO = ("--package", "foo-operator", "--group", "demo.example.com", "--kind", "Widget")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real entry point, importing olmtool from this checkout, as CI would run it."""
    env = {**os.environ, "PYTHONPATH": str(WORKTREE), "CI": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "olmtool", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"olmtool {' '.join(args)}: {done.stdout}{done.stderr}"
    return done


def test_init_then_every_step_to_a_published_catalog(tmp_path: Path) -> None:
    """The issue's definition of done: a new folder to a catalog, no flags beyond init's."""
    init = json.loads(run("init", *FOO, "-o", "json", cwd=tmp_path).stdout)
    assert init["nextSteps"] == [
        "olmtool crd generate",
        "olmtool bundle build",
        "olmtool bundle validate bundle/foo-operator/0.1.0 --strict --select all",
        "olmtool catalog publish",
    ]
    assert "config/crd/demo.example.com_widgets.yaml" in run("crd", "generate", cwd=tmp_path).stdout
    assert "up to date" in run("crd", "generate", "--check", cwd=tmp_path).stdout
    built = json.loads(run("bundle", "build", "-o", "json", cwd=tmp_path).stdout)
    assert built["bundle"] == init["bundle"] == "bundle/foo-operator/0.1.0"
    for select in ([], ["--select", "all"]):
        report = json.loads(
            run(
                "bundle",
                "validate",
                "--strict",
                *select,
                built["bundle"],
                "-o",
                "json",
                cwd=tmp_path,
            ).stdout
        )
        assert (report["errors"], report["warnings"]) == (0, 0)
    assert "package foo-operator: written" in run("catalog", "publish", cwd=tmp_path).stdout
    assert "up to date" in run("crd", "generate", "--check", cwd=tmp_path).stdout
    run("bundle", "build", "--check", cwd=tmp_path)
    run("catalog", "publish", "--check", cwd=tmp_path)
    catalog = (tmp_path / "catalog/foo-operator/catalog.yaml").read_text()
    assert "image: localhost:5000/foo-operator-bundle:0.1.0" in catalog
    assert (
        "alm-examples"
        in (
            tmp_path / built["bundle"] / "manifests/foo-operator.clusterserviceversion.yaml"
        ).read_text()
    )


@requires_opm
def test_real_opm_accepts_the_new_projects_catalog(tmp_path: Path) -> None:
    """Differential: the catalog a fresh project publishes is one opm v1.26 validates."""
    for step in (("init", *FOO), ("crd", "generate"), ("bundle", "build"), ("catalog", "publish")):
        run(*step, cwd=tmp_path)
    done = subprocess.run(
        [str(OPM), "validate", str(tmp_path / "catalog")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("ci", ["1", None])
def test_no_prompts_in_ci_or_without_a_terminal(
    here: Path, monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)  # CliRunner's stdin is not a terminal
    else:
        monkeypatch.setenv("CI", ci)
    result = cli("init", "--kind", "Widget")
    assert result.returncode == 2
    why = "CI is set" if ci else "stdin is not a terminal"
    assert f"missing --package, --group: required when {why}" in " ".join(result.stderr.split())
    assert list(here.iterdir()) == []


def test_prompts_on_a_terminal_for_what_is_missing(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(init_cli, "interactive", lambda: True)
    (here / "foo-operator").mkdir()
    # The folder's name is offered as the package; a bad group is asked again.
    answers = "\nDemo\ndemo.example.com\n"
    result = CliRunner().invoke(app, ["init", "foo-operator", "--kind", "Widget"], input=answers)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "[foo-operator]" in result.stdout
    assert "'Demo' is not a DNS-1123 subdomain" in result.stderr
    assert read_tree(here / "foo-operator") == read_tree(GOLDEN)


def test_a_bad_name_is_one_line_naming_its_flag(here: Path) -> None:
    result = cli("init", "--package", "Foo", "--group", "demo.example.com", "--kind", "Widget")
    assert result.returncode == 1
    assert result.error is not None and result.error.startswith(
        "--package 'Foo' is not a DNS-1123 label"
    )
    result = cli("init", *FOO, "--install-modes", "OwnNamespace,Everywhere")
    assert result.error is not None and result.error.startswith("--install-modes 'Everywhere'")


def test_refusal_names_the_file_and_force_overwrites(here: Path) -> None:
    assert cli("init", *FOO).returncode == 0
    again = cli("init", *FOO)
    assert again.returncode == 1
    assert again.error == "olmtool.yaml: already exists (and 6 more); pass --force to overwrite"
    forced = cli("init", *FOO, "--force", "-o", "json")
    assert forced.returncode == 0
    data = json.loads(forced.stdout)
    assert data["replaced"] == data["written"] and len(data["written"]) == 7


def test_install_modes_and_text_output(here: Path) -> None:
    result = cli(
        "init", "proj", *FOO, "--install-modes", "AllNamespaces", "--install-modes", "OwnNamespace"
    )
    assert result.returncode == 0
    assert "wrote proj/olmtool.yaml" in result.stdout
    assert "  cd proj\n  olmtool crd generate\n" in result.stdout
    text = (here / "proj/olmtool.yaml").read_text()
    assert "installModes: [OwnNamespace, AllNamespaces]" in text


def test_help_has_an_example() -> None:
    result = cli("init", "--help")
    assert result.returncode == 0
    assert "olmtool init foo --package foo-operator --group demo.example.com" in result.stdout
