"""The README's runnable shell blocks: each ```sh fence right below a ``<!-- readme-test -->``
line. ``tests/test_readme.py`` checks their order without a cluster; ``tests/e2e/
test_readme.py`` runs them, in order, in one bash, in a scratch copy of the repository."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
MARK = "<!-- readme-test -->"
FENCE = "```"


def readme_blocks(text: str | None = None) -> list[str]:
    """The marked blocks' text, in README order. A mark must be followed by a ```sh fence
    (blank lines allowed) and the fence closed: anything else is an error, so a mark
    never silently runs nothing."""
    lines = (README.read_text() if text is None else text).splitlines()
    blocks: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != MARK:
            index += 1
            continue
        index += 1
        while index < len(lines) and not lines[index].strip():
            index += 1
        if index >= len(lines) or lines[index].strip() != f"{FENCE}sh":
            raise ValueError(
                f"README line {index + 1}: {MARK} must be followed by a {FENCE}sh block"
            )
        start = index + 1
        end = start
        while end < len(lines) and lines[end].strip() != FENCE:
            end += 1
        if end >= len(lines):
            raise ValueError(f"README line {index + 1}: the {FENCE}sh block is never closed")
        blocks.append("\n".join(lines[start:end]))
        index = end + 1
    return blocks


def readme_script(blocks: list[str]) -> str:
    """One bash script running ``blocks`` in order (so ``cd`` and variables carry over),
    stopping at the first failing command, each command traced with its start time."""
    header = [
        "set -euo pipefail",
        "PS4='+ ${EPOCHREALTIME} '",  # bash 5: the time each traced command starts
        "set -x",
    ]
    body = [f"# --- README block {n}\n{block}" for n, block in enumerate(blocks, 1)]
    return "\n".join([*header, *body, ""])
