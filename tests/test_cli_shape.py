"""The CLI is a thin layer over :mod:`olmtool.actions`: every function in ``olmtool/cli``
stays at most 30 lines of body (docstring aside); longer logic belongs in the library."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[1] / "olmtool" / "cli"
MAX_BODY = 30


def body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0  # type: ignore[operator]


def test_every_cli_function_is_at_most_30_lines() -> None:
    long = []
    for path in sorted(CLI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and body_lines(node) > MAX_BODY
            ):
                long.append(
                    f"{path.relative_to(CLI.parent)}:{node.lineno} {node.name}: {body_lines(node)}"
                )
    assert long == []
