"""Differential: our ``operators.coreos.com`` CRDs against real OLM v0.18.3's.

Real OLM writes and reads these objects; the apiserver prunes every field our schema
lacks (outside a preserve-unknown-fields object) and rejects what our schema forbids. So
for each CRD: the names, scope, versions, subresources and printer columns are equal;
every property path of real OLM's schema exists in ours, or lies under one of our
preserve-unknown-fields objects; and where both schemas type a node, they constrain it
alike (type, required, enum, default, nullable, bounds, formats, list types).

Justified differences (the ``ALLOWED`` tables below):

- our root schemas do not list ``metadata`` as required: the apiserver always sets it;
- a ``spec`` with no required field has ``default: {}`` in ours (olmtool's generator): OLM's
  Go types always serialize ``spec`` (a struct, never omitted), so nothing changes;
- ``int32``/``int64`` formats are informational for the apiserver and omitted in ours;
- the CSV's ``install.spec.deployments[].spec`` is kept whole (a Deployment spec: OLM
  creates Deployments from it, whose API validates and defaults it, e.g. ports' protocol);
  Subscription ``config`` env/envFrom/volumes/volumeMounts/tolerations/resources and the
  webhooks' ``rules`` likewise (core types OLM copies verbatim);
- ours adds fields newer OLMs read (Subscription ``config.affinity``/``annotations``,
  OperatorGroup ``upgradeStrategy``): extra optional fields reject nothing.

Skipped (with the reason) where the peers are absent; ``OLMTOOL_PEERS`` names them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmtool.olm.crdfiles import olm_crds

REPO = Path(__file__).resolve().parents[2]
PEERS = Path(os.environ.get("OLMTOOL_PEERS", REPO.parent / "shared" / "peers"))
REAL = PEERS / "olm-crds"

pytestmark = pytest.mark.skipif(
    not REAL.is_dir(), reason=f"real OLM v0.18.3 CRDs not found in {REAL} (set OLMTOOL_PEERS)"
)

JSON = dict[str, Any]
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
PRESERVE = "x-kubernetes-preserve-unknown-fields"
# Keywords that change what the apiserver accepts, prunes or stores.
CONSTRAINTS = (
    "type", "required", "enum", "default", "nullable", "pattern", "maxLength", "minLength",
    "maximum", "minimum", "maxItems", "minItems", "format", "x-kubernetes-int-or-string",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-embedded-resource", PRESERVE,
)  # fmt: skip
INFORMATIONAL_FORMATS = {"int32", "int64"}

# Where ours keeps a core Kubernetes type whole (preserve-unknown-fields) that real OLM's
# CRD spells out: the apiserver checks those values where OLM copies them to.
CUTS = {
    "clusterserviceversions.operators.coreos.com": {
        ".spec.install.spec.deployments[].spec",  # apps/v1 DeploymentSpec
        ".spec.webhookdefinitions[].rules[]",  # admissionregistration/v1 RuleWithOperations
    },
    "subscriptions.operators.coreos.com": {
        f".spec.config.{field}"
        for field in (
            "env[]",
            "envFrom[]",
            "resources",
            "tolerations[]",
            "volumeMounts[]",
            "volumes[]",
        )
    },
}
ROOT_DIFFERENCES = {
    ("", "required"): "metadata is always set by the apiserver",
    (".spec", "default"): "OLM's Go clients always serialize spec",
}
# Paths only ours has: fields newer OLMs read.
EXTRA_PATHS = {
    "subscriptions.operators.coreos.com": {
        ".spec.config.affinity",
        ".spec.config.annotations",
        ".spec.config.annotations{*}",
    },
    "operatorgroups.operators.coreos.com": {
        ".spec.upgradeStrategy",
        ".spec.upgradeStrategy.name",
    },
}


@cache
def _real() -> dict[str, JSON]:
    # PyYAML's C loader: ruamel takes seconds over the CSV CRD's 460 kB.
    crds = (yaml.load(path.read_text(), Loader=_LOADER) for path in sorted(REAL.glob("*.yaml")))
    return {crd["metadata"]["name"]: crd for crd in crds}


@cache
def _ours() -> dict[str, JSON]:
    return {crd["metadata"]["name"]: crd for crd in olm_crds()}


def _nodes(schema: JSON, path: str = "") -> Iterator[tuple[str, JSON]]:
    """Every schema node with its path: ``.a.b``, ``[]`` for items, ``{*}`` for map values."""
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from _nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{*}}")


def _versions(crd: JSON) -> dict[str, JSON]:
    return {v["name"]: v for v in crd["spec"]["versions"]}


def _schema(version: JSON) -> JSON:
    return version["schema"]["openAPIV3Schema"]


def _preserved_prefixes(schema: JSON) -> list[str]:
    return [path for path, node in _nodes(schema) if node.get(PRESERVE)]


def _covered(path: str, ours: dict[str, JSON], preserved: list[str]) -> bool:
    if path in ours:
        return True
    return any(path.startswith(prefix) and path[len(prefix)] in ".[{" for prefix in preserved)


def _constraints(node: JSON) -> JSON:
    picked = {key: node[key] for key in CONSTRAINTS if key in node}
    if picked.get("format") in INFORMATIONAL_FORMATS:
        del picked["format"]
    if "required" in picked:
        picked["required"] = sorted(picked["required"])
    return picked


def test_the_same_crds() -> None:
    assert sorted(_ours()) == sorted(_real())


@pytest.mark.parametrize("name", sorted(_real()) if REAL.is_dir() else [])
def test_names_scope_versions_subresources_and_columns(name: str) -> None:
    ours, real = _ours()[name], _real()[name]
    assert ours["spec"]["group"] == real["spec"]["group"] == "operators.coreos.com"
    assert ours["spec"]["names"] == real["spec"]["names"]
    assert ours["spec"]["scope"] == real["spec"]["scope"]
    assert ours["spec"].get("conversion", {"strategy": "None"}) == real["spec"].get(
        "conversion", {"strategy": "None"}
    )
    mine, theirs = _versions(ours), _versions(real)
    assert sorted(mine) == sorted(theirs)
    for version, real_version in theirs.items():
        our_version = mine[version]
        for key in ("served", "storage", "deprecated", "deprecationWarning", "subresources"):
            assert our_version.get(key) == real_version.get(key), (version, key)
        assert our_version.get("additionalPrinterColumns") == real_version.get(
            "additionalPrinterColumns"
        ), version


@pytest.mark.parametrize("name", sorted(_real()) if REAL.is_dir() else [])
def test_every_field_real_olm_knows_is_kept(name: str) -> None:
    """Nothing real OLM writes or reads is pruned by our schema."""
    ours, real = _ours()[name], _real()[name]
    missing = []
    for version, real_version in _versions(real).items():
        our_schema = _schema(_versions(ours)[version])
        our_nodes = dict(_nodes(our_schema))
        preserved = _preserved_prefixes(our_schema)
        missing += [
            f"{version}{path}"
            for path, _ in _nodes(_schema(real_version))
            if not _covered(path, our_nodes, preserved)
        ]
    assert missing == []


@pytest.mark.parametrize("name", sorted(_real()) if REAL.is_dir() else [])
def test_typed_fields_are_constrained_alike(name: str) -> None:
    """Where both schemas type a node, ours accepts and stores exactly what theirs does."""
    ours, real = _ours()[name], _real()[name]
    differences = []
    for version, real_version in _versions(real).items():
        our_nodes = dict(_nodes(_schema(_versions(ours)[version])))
        for path, real_node in _nodes(_schema(real_version)):
            our_node = our_nodes.get(path)
            if our_node is None:
                continue  # under one of our preserve-unknown-fields objects (checked above)
            mine, theirs = _constraints(our_node), _constraints(real_node)
            for key in sorted(set(mine) | set(theirs)):
                if mine.get(key) == theirs.get(key):
                    continue
                if (path, key) in ROOT_DIFFERENCES or path in CUTS.get(name, ()):
                    continue
                differences.append(f"{version}{path}: {key} ours={mine.get(key)!r} "
                                   f"real={theirs.get(key)!r}")  # fmt: skip
    assert differences == []


@pytest.mark.parametrize("name", sorted(_real()) if REAL.is_dir() else [])
def test_kept_whole_only_where_documented(name: str) -> None:
    """Our preserve-unknown-fields objects that real OLM's CRD types are the CUTS."""
    ours, real = _ours()[name], _real()[name]
    cuts: set[str] = set()
    for version, our_version in _versions(ours).items():
        real_nodes = dict(_nodes(_schema(_versions(real)[version])))
        for path in _preserved_prefixes(_schema(our_version)):
            real_node = real_nodes.get(path)
            if real_node is not None and not real_node.get(PRESERVE):
                assert real_node.get("type") == "object", path  # still an object
                cuts.add(path)
    assert cuts == CUTS.get(name, set())


@pytest.mark.parametrize("name", sorted(_real()) if REAL.is_dir() else [])
def test_fields_only_ours_has_are_the_documented_ones(name: str) -> None:
    ours, real = _ours()[name], _real()[name]
    extra: set[str] = set()
    for version, our_version in _versions(ours).items():
        real_paths = dict(_nodes(_schema(_versions(real)[version])))
        extra |= {path for path, _ in _nodes(_schema(our_version)) if path not in real_paths}
    assert extra == EXTRA_PATHS.get(name, set())
