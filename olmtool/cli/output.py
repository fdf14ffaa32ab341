"""Rendering command results as text (rich), JSON or YAML, and reporting errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from olmtool import yamlio
from olmtool.errors import display_path
from olmtool.images import Image, parse_reference, push, write_oci_layout

# soft_wrap: one finding stays on one line however narrow the terminal (or CI log) is.
stdout = Console(soft_wrap=True, highlight=False)
stderr = Console(stderr=True, soft_wrap=True, highlight=False)


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    yaml = "yaml"


ConfigOption = typer.Option(
    None, "--config", "-c", help="Project file (default: olmtool.yaml found upward)."
)

OutputOption = typer.Option(
    OutputFormat.text, "--output", "-o", help="Output format: text for people, json/yaml for CI."
)


def emit(data: Any, fmt: OutputFormat, text: Callable[[], None]) -> None:
    """Print ``data`` as JSON/YAML, or call ``text`` to print it for people."""
    if fmt is OutputFormat.json:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    elif fmt is OutputFormat.yaml:
        sys.stdout.write(yamlio.dump(data))
    else:
        text()


def error(message: str) -> None:
    stderr.print(f"[bold red]error:[/] {escape(message)}")


def escape(text: str) -> str:
    """Keep user text (which may contain [brackets]) out of rich's markup parser."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def save_image(
    image: Image, reference: str, layout: Path, *, push_image: bool, tag: str
) -> dict[str, object]:
    """Write ``image`` as an OCI layout (tagged like ``reference``, else ``tag``) and push
    it if asked; returns what the command reports about it."""
    ref = parse_reference(reference)
    write_oci_layout(image, layout, ref.tag or tag)
    if push_image:
        with stderr.status(f"pushing {reference}"):
            push(image, ref)
    return {
        "image": reference,
        "digest": image.digest,
        "layout": display_path(layout),
        "pushed": push_image,
    }
