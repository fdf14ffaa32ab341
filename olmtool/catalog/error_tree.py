"""opm's "invalid index" error tree: findings grouped by package, then channel or bundle.

``opm validate`` prints its errors this way, and ``-o json`` puts the same text under
``error.message``; olmtool adds each finding's check id and file:line to its leaf.
"""

from __future__ import annotations

from typing import Any

from olmtool.findings import Finding


def error_tree(findings: list[Finding]) -> dict[str, Any]:
    """{package: {scope: [finding]}} with "" for catalog-level and package-level entries."""
    tree: dict[str, dict[str, list[Finding]]] = {}
    for finding in findings:
        tree.setdefault(finding.package or "", {}).setdefault(finding.scope or "", []).append(
            finding
        )
    return tree


def _leaf(finding: Finding) -> str:
    where = f" ({finding.location})" if finding.location else ""
    marker = "" if finding.severity == "error" else "warning: "
    return f"{marker}{finding.message} [{finding.check}]{where}"


def _invalid(findings: list[Finding]) -> str:
    """'invalid ' for a branch holding an error; warnings alone do not invalidate it."""
    return "invalid " if any(f.severity == "error" for f in findings) else ""


def error_tree_lines(findings: list[Finding]) -> list[str]:
    """opm's "invalid index" tree: package, then channel/bundle, then the messages. Only
    errors make an index invalid: a tree of warnings alone is headed "warnings:"."""
    lines = ["invalid index:" if _invalid(findings) else "warnings:"]

    def branch(items: list[tuple[str, Any]], prefix: str) -> None:
        for index, (label, children) in enumerate(items):
            last = index == len(items) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{label}")
            if children:
                branch(children, prefix + ("    " if last else "│   "))

    top: list[tuple[str, Any]] = []
    for package, scopes in error_tree(findings).items():
        children: list[tuple[str, Any]] = []
        for scope, items in scopes.items():
            leaves = [(_leaf(f), None) for f in items]
            if scope:
                children.append((f"{_invalid(items)}{scope}:", leaves))
            else:
                children.extend(leaves)
        if package:
            items = [f for group in scopes.values() for f in group]
            top.append((f'{_invalid(items)}package "{package}":', children))
        else:
            top.extend(children)
    branch(top, "")
    return lines


def error_tree_text(findings: list[Finding]) -> str:
    return "\n".join(error_tree_lines(findings))


GROUP_ABOVE = 10  # a check with more findings than this is summarized in text output
EXAMPLES = 3


def summary_lines(findings: list[Finding], *, verbose: bool = False) -> list[str]:
    """The error tree for people: a check found more than :data:`GROUP_ABOVE` times is
    left out of the tree and summarized after it, with its count, how many packages it
    touches and :data:`EXAMPLES` examples (``verbose``: the whole tree, every finding)."""
    by_check: dict[str, list[Finding]] = {}
    for finding in findings:
        by_check.setdefault(finding.check, []).append(finding)
    repeated = {} if verbose else {c: f for c, f in by_check.items() if len(f) > GROUP_ABOVE}
    listed = [f for f in findings if f.check not in repeated]
    lines = error_tree_lines(listed) if listed else []
    if not repeated:
        return lines
    lines.append("repeated findings (--verbose or -o json lists every one):")
    for check, group in sorted(repeated.items(), key=lambda item: (-len(item[1]), item[0])):
        severity = "error" if any(f.severity == "error" for f in group) else "warning"
        packages = len({f.package for f in group if f.package})
        where = f" in {packages:,} package(s)" if packages else ""
        lines.append(f"  {severity} [{check}]: {len(group):,} findings{where}, e.g.")
        lines.extend(f"    {_example(f)}" for f in group[:EXAMPLES])
        lines.append(f"    ... and {len(group) - EXAMPLES:,} more")
    return lines


def _example(finding: Finding) -> str:
    owner = ", ".join(
        part
        for part in (f'package "{finding.package}"' if finding.package else "", finding.scope)
        if part
    )
    where = f" ({finding.location})" if finding.location else ""
    return f"{owner + ': ' if owner else ''}{finding.message}{where}"
