"""A checker for CustomResourceDefinitions: apiextensions validation and structural rules.

It reports what the kube-apiserver would reject (every violation, each with its JSON
path in the apiserver's notation), plus what it would silently ignore, such as
misspelled keywords. The upstream bundle validator drops errors found under
``openAPIV3Schema``; this checker does not.

>>> [str(v) for v in check_crd({"apiVersion": "apiextensions.k8s.io/v1", "kind": "Foo"})]
['kind: Unsupported value: "Foo": supported values: "CustomResourceDefinition"', ...]
"""

from __future__ import annotations

from typing import Any

from olmtool.crd.apiextensions import crd_violations
from olmtool.crd.apitypes import decode_crd, decode_schema
from olmtool.crd.schema_rules import SchemaChecker
from olmtool.crd.violations import Problem, Severity, errors, report

__all__ = ["Problem", "Severity", "check_crd", "check_schema", "errors"]


def check_crd(crd: Any) -> list[Problem]:
    """Every reason the kube-apiserver would reject this CRD (plus silent-drop warnings).

    Like the apiserver, it first decodes the CRD into the apiextensions/v1 types: values
    of the wrong JSON type are refused there ("cannot unmarshal ..."), before any rule.
    """
    if not isinstance(crd, dict):
        return [Problem("<root>", "must be a mapping (a CustomResourceDefinition object)")]
    if crd.get("apiVersion") != "apiextensions.k8s.io/v1beta1":  # refused as removed
        crd, problems = decode_crd(crd)
        if problems:
            return report(Problem(p.path, _hinted(p.path, p.message)) for p in problems)
    return report(crd_violations(crd))


def check_schema(schema: Any, path: str = "openAPIV3Schema") -> list[Problem]:
    """Structural-schema and apiextensions rules for one ``openAPIV3Schema``."""
    if isinstance(schema, dict):
        schema, problems = decode_schema(schema)
        if problems:
            return report(
                Problem(f"{path}.{p.path}".rstrip("."), _hinted(p.path, p.message))
                for p in problems
            )
    return report(SchemaChecker().check_root(schema, path))


def _hinted(path: str, message: str) -> str:
    """Go's message, with what the author most likely meant where that is known."""
    bound = path.rpartition(".")[2]
    if bound in ("exclusiveMinimum", "exclusiveMaximum") and "of type bool" in message:
        limit = bound.replace("exclusiveM", "m")
        return f"{message}: must be a boolean (OpenAPI v3.0), with the bound in {limit}"
    return message
