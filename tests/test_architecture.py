"""The architecture is a contract (``[tool.importlinter]`` in pyproject.toml, run by
``make lint``): the layers, and "a package is used through its face". These tests run
import-linter on the package as it is (it keeps every contract) and on copies with one
import that breaks a contract (it fails, naming the contract and the import)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter on the ``olmtool`` package under ``root`` with its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package and its contract whose ``module`` (a path under olmtool/)
    also has ``line``."""
    shutil.copytree(
        REPO / "olmtool", tmp_path / "olmtool", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / "olmtool" / module).open("a") as file:
        file.write(f"\n{line}  # noqa\n")
    return tmp_path


def test_the_package_keeps_every_contract() -> None:
    run = lint_imports(REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract", "edge"),
    [
        # a lower layer importing a higher one: the Kubernetes client reaching the cluster
        ("kube/client.py", "from olmtool.cluster import lifecycle", "layers",
         "olmtool.kube.client -> olmtool.cluster.lifecycle"),
        # across packages past the face: the server into the catalog loader's insides
        ("serve/http.py", "from olmtool.catalog.load import load_catalog",
         "olmtool.catalog is used through its face",
         "olmtool.serve.http -> olmtool.catalog.load"),
    ],
)  # fmt: skip
def test_a_broken_contract_fails_lint(
    tmp_path: Path, module: str, line: str, contract: str, edge: str
) -> None:
    run = lint_imports(copy_with(tmp_path, module, line))
    assert run.returncode == 1, run.stdout + run.stderr
    broken = [row for row in run.stdout.splitlines() if " BROKEN" in row]
    assert len(broken) >= 1 and any(row.startswith(contract) for row in broken), broken
    assert edge in run.stdout


def test_the_architecture_page_is_one_page_naming_every_package() -> None:
    page = (REPO / "docs" / "architecture.md").read_text()
    assert len(page.splitlines()) <= 150
    package = REPO / "olmtool"
    packages = [p.parent for p in package.glob("*/__init__.py")]
    modules = [p for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")]
    named = [f"olmtool.{p.name}" for p in packages] + [p.stem for p in modules]
    assert [name for name in named if f"`{name}" not in page] == []
    # and the layers drawn are the contract's, top to bottom
    import tomllib

    contract = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in contract["contracts"] if c["type"] == "layers"]
    drawn = [line.split()[0] for line in page.split("```")[1].splitlines() if line.strip()]
    assert drawn[: len(layers) - 1] == [layer.split()[0] for layer in layers[:-1]]
