"""``csv/schema`` and ``objects/schema``: the manifests against the schemas the apiserver
checks them with (:mod:`olmtool.bundle.objectschemas` says which and how)."""

from __future__ import annotations

from collections.abc import Iterator

from olmtool.bundle import format as fmt
from olmtool.bundle.checks import Context, register, register_csv
from olmtool.bundle.model import Bundle, Object
from olmtool.bundle.objectschemas import csv_problems, deployment_problems, object_problems
from olmtool.findings import Finding


@register_csv("csv")
def csv_schema(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    """Every value OLM's ClusterServiceVersion CRD rejects, and the fields it drops."""
    for problem in csv_problems(csv.document):
        yield csv.finding("csv/schema", problem.severity, problem.message, problem.path)


@register("objects")
def object_schemas(bundle: Bundle, context: Context) -> Iterator[Finding]:
    """Built-in kinds, and the Deployments OLM creates from the CSV, against Kubernetes
    1.20's schemas."""
    for obj in bundle.manifest_objects:
        if obj.kind == fmt.CSV_KIND:
            problems = deployment_problems(obj.document) if obj is bundle.csv else []
        else:
            problems = object_problems(obj.document)
        for problem in problems:
            yield obj.finding("objects/schema", problem.severity, problem.message, problem.path)
