"""``olmtool.yaml``'s errors: every problem at once, each at its line, a typo named with the
key it was probably meant to be, and the exit code of a usage error for a missing file."""

from __future__ import annotations

from pathlib import Path

import pytest

from olmtool.actions import project_init
from olmtool.config import MAX_PROBLEMS, load_project
from olmtool.errors import InputError, InputErrors
from tests.test_cli import olmtool


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project as `olmtool init` writes it."""
    project_init(tmp_path / "foo", package="foo-operator", group="demo.example.com", kind="Widget")
    return tmp_path / "foo"


def _misspell(config: Path, *edits: tuple[str, str]) -> None:
    text = config.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    config.write_text(text)


def _line(config: Path, start: str) -> int:
    return next(
        number
        for number, line in enumerate(config.read_text().splitlines(), 1)
        if line.startswith(start)
    )


def test_a_misspelled_key_is_named_with_the_key_it_left_missing(project: Path) -> None:
    config = project / "olmtool.yaml"
    _misspell(config, ("  channels:", "  chanels:"), ("  package: foo", "  pakage: foo"))
    with pytest.raises(InputErrors) as exc:
        load_project(config)
    bundle = _line(config, "bundle:")
    assert [(p.line, p.message) for p in exc.value.problems] == [
        (bundle, "bundle.package: required key is missing"),  # at its section's line
        (_line(config, "  pakage:"), "bundle.pakage: unknown key (did you mean package?)"),
        (_line(config, "  chanels:"), "bundle.chanels: unknown key (did you mean channels?)"),
    ]


def test_hints_come_from_the_section_the_key_is_in(project: Path) -> None:
    config = project / "olmtool.yaml"
    _misspell(
        config,
        ("    displayName:", "    displayNme:"),  # bundle.csv
        ("      - name: Foo Operator maintainers", "      - nme: Foo Operator maintainers"),
        ("    - name: foo-operator\n", "    - nam: foo-operator\n"),  # catalog.packages[0]
        ("  modules:", "  modles:"),  # crd
        ("  output: bundle", "  colour: blue"),  # nothing close: no hint
    )
    with pytest.raises(InputErrors) as exc:
        load_project(config)
    messages = [p.message for p in exc.value.problems]
    assert "crd.modles: unknown key (did you mean modules?)" in messages
    assert "bundle.csv.displayNme: unknown key (did you mean displayName?)" in messages
    assert "bundle.csv.maintainers[0].nme: unknown key (did you mean name?)" in messages
    assert "catalog.packages[0].nam: unknown key (did you mean name?)" in messages
    assert "bundle.colour: unknown key" in messages
    assert [p.line for p in exc.value.problems] == sorted(p.line or 0 for p in exc.value.problems)


def test_one_problem_stays_a_plain_error(project: Path) -> None:
    config = project / "olmtool.yaml"
    _misspell(config, ("  channels:", "  chanels:"))
    with pytest.raises(InputError) as exc:
        load_project(config)
    assert not isinstance(exc.value, InputErrors)
    assert str(exc.value).endswith(": bundle.chanels: unknown key (did you mean channels?)")


def test_many_problems_are_cut_after_the_first_ones(tmp_path: Path) -> None:
    config = tmp_path / "olmtool.yaml"
    config.write_text("crd:\n  modules: [x]\n" + "".join(f"  k{i}: 1\n" for i in range(30)))
    with pytest.raises(InputErrors) as exc:
        load_project(config)
    assert len(exc.value.problems) == MAX_PROBLEMS + 1
    assert exc.value.problems[-1].message == f"... and {30 - MAX_PROBLEMS} more problem(s)"


def test_the_cli_prints_each_problem_on_its_own_error_line(project: Path) -> None:
    config = project / "olmtool.yaml"
    _misspell(config, ("  channels:", "  chanels:"), ("  package: foo", "  pakage: foo"))
    run = olmtool("bundle", "build", cwd=project)
    assert run.returncode == 1
    lines = run.stderr.splitlines()
    assert len(lines) == 3 and all(line.startswith("error: olmtool.yaml:") for line in lines)
    assert lines[2].endswith("bundle.chanels: unknown key (did you mean channels?)")


def test_no_project_file_is_a_usage_error(tmp_path: Path) -> None:
    """README: exit 2 for a usage error; no olmtool.yaml where a command needs one is one."""
    for command in (["bundle", "build"], ["catalog", "publish"], ["crd", "generate"]):
        run = olmtool(*command, cwd=tmp_path)
        assert run.returncode == 2, command
        assert run.stderr.startswith(
            "error: no olmtool.yaml in this directory or its parents (olmtool init writes one); "
            "pass --config FILE"
        )
