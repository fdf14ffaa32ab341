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
from olmtool.crd.schema_rules import SchemaChecker
from olmtool.crd.violations import Severity, Violation, errors, report

__all__ = ["Severity", "Violation", "check_crd", "check_schema", "errors"]


def check_crd(crd: Any) -> list[Violation]:
    """Every reason the kube-apiserver would reject this CRD (plus silent-drop warnings)."""
    if not isinstance(crd, dict):
        return [Violation("<root>", "must be a mapping (a CustomResourceDefinition object)")]
    return report(crd_violations(crd))


def check_schema(schema: Any, path: str = "openAPIV3Schema") -> list[Violation]:
    """Structural-schema and apiextensions rules for one ``openAPIV3Schema``."""
    return report(SchemaChecker().check_root(schema, path))
