"""Example custom resources (``alm-examples``) checked against the CRDs they target."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from json.decoder import scanstring
from typing import Any

from olmtool.crd import decode_crd, validate_object
from olmtool.godecode import go_str


@dataclass(frozen=True)
class ExampleProblem:
    index: int
    message: str  # with the path inside the example, as the apiserver prints it
    owned: bool  # False: no CRD in the bundle serves this example's kind
    path: str = ""  # the offending field inside the example ("": the example itself)


def example_problems(
    examples: Sequence[Any], crds: Sequence[dict[str, Any]]
) -> Iterator[ExampleProblem]:
    """What the apiserver would reject (or which kind nobody serves) for each example.

    A CRD that does not decode (a value of the wrong type) is refused itself (``crd/schema``
    says why) and serves nothing here."""
    by_gvk = {}
    for document in crds:
        crd, problems = decode_crd(document)
        if problems:
            continue
        spec = crd.get("spec") or {}
        for version in spec.get("versions") or []:
            gvk = (spec.get("group"), version.get("name"), (spec.get("names") or {}).get("kind"))
            by_gvk[gvk] = crd
    for index, example in enumerate(examples):
        if not isinstance(example, dict):
            yield ExampleProblem(index, "an example must be an object", owned=True)
            continue
        crd = by_gvk.get(example_gvk(example))
        if crd is None:
            yield ExampleProblem(
                index,
                f"{example.get('apiVersion')} {example.get('kind')} is not served by any CRD "
                "in the bundle",
                owned=False,
            )
            continue
        for violation in validate_object(crd, example).violations:
            yield ExampleProblem(index, violation.text, owned=True, path=violation.path)


def example_gvk(example: Any) -> tuple[str, str, str]:
    """(group, version, kind) of an example object, as Go's TypeMeta holds them (a value
    that is not a string is "")."""
    if not isinstance(example, dict):
        return ("", "", "")
    group, _, version = go_str(example.get("apiVersion")).rpartition("/")
    return (group, version, go_str(example.get("kind")))


def json_offsets(text: str) -> dict[str, int]:
    """Where each value of a JSON text starts (an object member: its key), by path in
    apiserver notation (``[0].spec.replicas``), so that a finding inside alm-examples can
    name its line. Repeated keys: the last, as ``json.loads`` keeps. Empty when the text is
    not JSON."""
    offsets: dict[str, int] = {}
    try:
        end = _value(text, _skip(text, 0), "", offsets)
    except (ValueError, IndexError):
        return {}
    return offsets if _skip(text, end) == len(text) else {}


_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _value(text: str, at: int, path: str, offsets: dict[str, int], *, record: bool = True) -> int:
    """Index the value starting at ``at`` (``record``: at its own offset; a member's value
    is at its key's); returns where it ends."""
    if record:
        offsets[path] = at
    char = text[at]
    if char in "{[":
        return _container(text, at, path, offsets)
    if char == '"':
        return scanstring(text, at + 1)[1]
    match = _SCALAR.match(text, at)
    if not match:
        raise ValueError("not JSON")
    return match.end()


def _container(text: str, at: int, path: str, offsets: dict[str, int]) -> int:
    closing = "}" if text[at] == "{" else "]"
    at = _skip(text, at + 1)
    index = 0
    while text[at] != closing:
        if closing == "]":
            at = _skip(text, _value(text, at, f"{path}[{index}]", offsets))
        else:
            key, after = scanstring(text, at + 1)  # IndexError/ValueError: not JSON
            child = f"{path}.{key}" if _PLAIN.match(key) else f"{path}[{key}]"
            child = child.removeprefix(".")
            offsets[child] = at
            after = _skip(text, after)
            if text[after] != ":":
                raise ValueError("expected ':'")
            at = _skip(text, _value(text, _skip(text, after + 1), child, offsets, record=False))
        index += 1
        if text[at] == ",":
            at = _skip(text, at + 1)
        elif text[at] != closing:
            raise ValueError(f"expected ',' or {closing!r}")
    return at + 1


_PLAIN = re.compile(r"^[^.\[\]]+$")
