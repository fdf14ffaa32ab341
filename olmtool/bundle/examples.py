"""Example custom resources (``alm-examples``) checked against the CRDs they target."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from olmtool.crd import decode_crd, validate_object
from olmtool.godecode import go_str


@dataclass(frozen=True)
class ExampleProblem:
    index: int
    message: str
    owned: bool  # False: no CRD in the bundle serves this example's kind


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
        for error in validate_object(crd, example).errors:
            yield ExampleProblem(index, error, owned=True)


def example_gvk(example: Any) -> tuple[str, str, str]:
    """(group, version, kind) of an example object, as Go's TypeMeta holds them (a value
    that is not a string is "")."""
    if not isinstance(example, dict):
        return ("", "", "")
    group, _, version = go_str(example.get("apiVersion")).rpartition("/")
    return (group, version, go_str(example.get("kind")))
