"""Example custom resources (``alm-examples``) checked against the CRDs they target."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from olmtool.crd import validate_object


@dataclass(frozen=True)
class ExampleProblem:
    index: int
    message: str
    owned: bool  # False: no CRD in the bundle serves this example's kind


def example_problems(
    examples: Sequence[Any], crds: Sequence[dict[str, Any]]
) -> Iterator[ExampleProblem]:
    """What the apiserver would reject (or which kind nobody serves) for each example."""
    by_gvk = {}
    for crd in crds:
        spec = crd.get("spec") or {}
        for version in spec.get("versions") or []:
            gvk = (spec.get("group"), version.get("name"), (spec.get("names") or {}).get("kind"))
            by_gvk[gvk] = crd
    for index, example in enumerate(examples):
        if not isinstance(example, dict):
            yield ExampleProblem(index, "an example must be an object", owned=True)
            continue
        group, _, version = str(example.get("apiVersion", "")).rpartition("/")
        gvk = (group, version, example.get("kind"))
        crd = by_gvk.get(gvk)
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
    """(group, version, kind) of an example object."""
    if not isinstance(example, dict):
        return ("", "", "")
    group, _, version = str(example.get("apiVersion", "")).rpartition("/")
    return (group, version, str(example.get("kind", "")))
