"""Schemas of the Kubernetes built-in kinds a bundle carries, as the 1.20 apiserver checks
them: packaged in ``schemas/kubernetes-1.20.json``, generated from Kubernetes' OpenAPI
document (``api/openapi-spec/swagger.json``) of the source OLM's local cluster builds
(Debian bookworm's ``kubernetes`` source package 1.20.5+really1.20.2-1.1+deb12u1, the
1.20.2 tree; ``apt-get source --download-only kubernetes=<that version>`` fetches it).

Only the definitions the kinds need are kept, with types, required fields and maps; what
the apiserver reads differently from the document is written in:

- ``IntOrString`` is an int or a string, ``Quantity`` a number or a quantity string;
- object metadata is ``content/metadata``'s and status is ignored on create: both are
  kept whole at a kind's root (nested ObjectMeta, as in a pod template, is typed);
- required fields the apiserver does not enforce are marked (``UNENFORCED``): they count
  only for a CSV's Deployment specs, which OLM's CRD checks first (it requires them, and
  takes a Quantity as an int or a string, not a float);
- 1.20's document has no enums: the values its validation accepts for the fields below
  (``ENUMS``, from pkg/apis/*/validation) are added, each with ``""`` (unset: defaulted).

Regenerate (``--check`` only compares, exit code 1 when stale)::

    python -m olmtool.bundle.kubeschemas [--check] [--source swagger.json|tree|orig.tar.gz]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import sys
import tarfile
from importlib import resources
from pathlib import Path
from typing import Any

from olmtool.kube import JSON

KUBERNETES = "1.20.2"
KUBERNETES_MINOR = "1.20"
DEBIAN_SOURCE = "kubernetes 1.20.5+really1.20.2-1.1+deb12u1 (Debian bookworm source package)"
SWAGGER = "api/openapi-spec/swagger.json"
SCHEMA_FILE = "kubernetes-1.20.json"
PACKAGED = Path(__file__).resolve().parent / "schemas" / SCHEMA_FILE

# The kinds OLM applies from a bundle that Kubernetes itself serves (1.20's versions), and
# the Deployment spec of a CSV's install strategy.
ROOTS = (
    "io.k8s.api.core.v1.ConfigMap",
    "io.k8s.api.core.v1.Secret",
    "io.k8s.api.core.v1.Service",
    "io.k8s.api.core.v1.ServiceAccount",
    "io.k8s.api.rbac.v1.Role",
    "io.k8s.api.rbac.v1.RoleBinding",
    "io.k8s.api.rbac.v1.ClusterRole",
    "io.k8s.api.rbac.v1.ClusterRoleBinding",
    "io.k8s.api.rbac.v1beta1.Role",
    "io.k8s.api.rbac.v1beta1.RoleBinding",
    "io.k8s.api.rbac.v1beta1.ClusterRole",
    "io.k8s.api.rbac.v1beta1.ClusterRoleBinding",
    "io.k8s.api.policy.v1beta1.PodDisruptionBudget",
    "io.k8s.api.scheduling.v1.PriorityClass",
    "io.k8s.api.scheduling.v1beta1.PriorityClass",
    "io.k8s.api.networking.v1.NetworkPolicy",
)
DEPLOYMENT_SPEC = "io.k8s.api.apps.v1.DeploymentSpec"

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_WHOLE = {"type": "object", _PRESERVE: True}
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# Marks only olmtool reads (the loader removes them): the CSV's Deployment specs go
# through OLM's CRD first, which types them from the same Go types by controller-gen:
# every required field, and a Quantity is an int or a quantity string (no float).
IN_CRD = "x-olmtool-in-crd"  # this node as OLM's CRD has it
UNENFORCED_MARK = "x-olmtool-unenforced"  # required fields only OLM's CRD enforces
# Definitions the apiserver reads differently from their OpenAPI text.
SPECIAL: dict[str, JSON] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"x-kubernetes-int-or-string": True},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "anyOf": [{"type": "number"}, {"type": "string", "pattern": QUANTITY_PATTERN}],
        IN_CRD: {"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN},
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": {"type": "string"},
}
# Required in the document, not enforced by 1.20's validation (a zero value passes).
UNENFORCED: dict[str, frozenset[str]] = {
    "io.k8s.api.core.v1.HTTPHeader": frozenset({"value"}),
    "io.k8s.api.core.v1.Sysctl": frozenset({"value"}),
    "io.k8s.api.core.v1.ISCSIVolumeSource": frozenset({"lun"}),
    "io.k8s.api.core.v1.PreferredSchedulingTerm": frozenset({"preference"}),
    "io.k8s.api.networking.v1.NetworkPolicySpec": frozenset({"podSelector"}),
    "io.k8s.api.scheduling.v1.PriorityClass": frozenset({"value"}),
    "io.k8s.api.scheduling.v1beta1.PriorityClass": frozenset({"value"}),
}
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_RBAC = ("io.k8s.api.rbac.v1", "io.k8s.api.rbac.v1beta1")
# (definition, property) -> the values 1.20's validation accepts (pkg/apis/core, apps,
# rbac, networking, scheduling validation; apimachinery's LabelSelector validation).
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("io.k8s.api.core.v1.Container", "imagePullPolicy"): ("Always", "IfNotPresent", "Never"),
    ("io.k8s.api.core.v1.Container", "terminationMessagePolicy"): (
        "File",
        "FallbackToLogsOnError",
    ),
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): _PROTOCOLS,
    ("io.k8s.api.core.v1.ServicePort", "protocol"): _PROTOCOLS,
    ("io.k8s.api.networking.v1.NetworkPolicyPort", "protocol"): _PROTOCOLS,
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "policyTypes"): ("Ingress", "Egress"),
    ("io.k8s.api.core.v1.ServiceSpec", "type"): (
        "ClusterIP",
        "NodePort",
        "LoadBalancer",
        "ExternalName",
    ),
    ("io.k8s.api.core.v1.ServiceSpec", "sessionAffinity"): ("None", "ClientIP"),
    ("io.k8s.api.core.v1.ServiceSpec", "externalTrafficPolicy"): ("Local", "Cluster"),
    ("io.k8s.api.core.v1.ServiceSpec", "ipFamilies"): ("IPv4", "IPv6"),
    ("io.k8s.api.core.v1.ServiceSpec", "ipFamilyPolicy"): (
        "SingleStack",
        "PreferDualStack",
        "RequireDualStack",
    ),
    ("io.k8s.api.core.v1.PodSpec", "restartPolicy"): ("Always", "OnFailure", "Never"),
    ("io.k8s.api.core.v1.PodSpec", "dnsPolicy"): (
        "ClusterFirstWithHostNet",
        "ClusterFirst",
        "Default",
        "None",
    ),
    ("io.k8s.api.core.v1.PodSpec", "preemptionPolicy"): ("PreemptLowerPriority", "Never"),
    ("io.k8s.api.core.v1.PodSecurityContext", "fsGroupChangePolicy"): ("OnRootMismatch", "Always"),
    ("io.k8s.api.core.v1.SecurityContext", "procMount"): ("Default", "Unmasked"),
    ("io.k8s.api.core.v1.SeccompProfile", "type"): ("Localhost", "RuntimeDefault", "Unconfined"),
    ("io.k8s.api.core.v1.Toleration", "operator"): ("Equal", "Exists"),
    ("io.k8s.api.core.v1.Toleration", "effect"): ("NoSchedule", "PreferNoSchedule", "NoExecute"),
    ("io.k8s.api.core.v1.HTTPGetAction", "scheme"): ("HTTP", "HTTPS"),
    ("io.k8s.api.core.v1.VolumeMount", "mountPropagation"): (
        "None",
        "HostToContainer",
        "Bidirectional",
    ),
    ("io.k8s.api.core.v1.HostPathVolumeSource", "type"): (
        "DirectoryOrCreate",
        "Directory",
        "FileOrCreate",
        "File",
        "Socket",
        "CharDevice",
        "BlockDevice",
    ),
    ("io.k8s.api.core.v1.NodeSelectorRequirement", "operator"): (
        "In",
        "NotIn",
        "Exists",
        "DoesNotExist",
        "Gt",
        "Lt",
    ),
    ("io.k8s.api.core.v1.TopologySpreadConstraint", "whenUnsatisfiable"): (
        "DoNotSchedule",
        "ScheduleAnyway",
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", "operator"): (
        "In",
        "NotIn",
        "Exists",
        "DoesNotExist",
    ),
    ("io.k8s.api.apps.v1.DeploymentStrategy", "type"): ("Recreate", "RollingUpdate"),
    **{(f"{rbac}.Subject", "kind"): ("ServiceAccount", "User", "Group") for rbac in _RBAC},
    **{(f"{rbac}.RoleRef", "kind"): ("Role", "ClusterRole") for rbac in _RBAC},
    **{(f"{rbac}.RoleRef", "apiGroup"): ("rbac.authorization.k8s.io",) for rbac in _RBAC},
}


# -- the packaged schemas ----------------------------------------------------------------


@functools.cache
def _packaged() -> JSON:
    text = (resources.files("olmtool.bundle") / "schemas" / SCHEMA_FILE).read_text("utf-8")
    return json.loads(text)


@functools.cache
def kinds() -> dict[tuple[str, str], str]:
    """(apiVersion, kind) -> definition name, for every kind with a schema."""
    return {(k["apiVersion"], k["kind"]): name for name, k in _packaged()["kinds"].items()}


def schema_for(api_version: str, kind: str) -> JSON | None:
    """The schema of a built-in kind (None: Kubernetes 1.20 does not serve it)."""
    name = kinds().get((api_version, kind))
    return resolved(name) if name else None


def deployment_spec_schema() -> JSON:
    """A CSV's Deployment spec, as OLM's CRD checks it before the Deployment API does."""
    return resolved(DEPLOYMENT_SPEC, in_crd=True)


@functools.cache
def resolved(name: str, *, in_crd: bool = False) -> JSON:
    """Definition ``name`` with every ``$ref`` replaced by the (shared) definition it names;
    one object per definition and process, so validators compiled for it are cached."""
    return _resolve(_packaged()["definitions"][name], in_crd)


def _resolve(node: Any, in_crd: bool) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return resolved(node["$ref"], in_crd=in_crd)
        if in_crd and IN_CRD in node:
            return _resolve(node[IN_CRD], in_crd)
        out = {
            key: _resolve(value, in_crd)
            for key, value in node.items()
            if key not in (IN_CRD, UNENFORCED_MARK)
        }
        if not in_crd and UNENFORCED_MARK in node:
            out["required"] = [r for r in out["required"] if r not in node[UNENFORCED_MARK]]
            if not out["required"]:
                del out["required"]
        return out
    if isinstance(node, list):
        return [_resolve(item, in_crd) for item in node]
    return node


# -- generation from swagger.json --------------------------------------------------------


def generate(swagger: JSON, digest: str) -> JSON:
    """The packaged document: the roots' definitions and everything they reference."""
    definitions = swagger["definitions"]
    names = _closure(definitions, (*ROOTS, DEPLOYMENT_SPEC))
    out: dict[str, Any] = {
        "kubernetes": KUBERNETES,
        "source": {"package": DEBIAN_SOURCE, "file": SWAGGER, "sha256": digest},
        "kinds": {},
        "definitions": {},
    }
    for name in ROOTS:
        (gvk,) = definitions[name]["x-kubernetes-group-version-kind"]
        group = f"{gvk['group']}/" if gvk["group"] else ""
        out["kinds"][name] = {"apiVersion": f"{group}{gvk['version']}", "kind": gvk["kind"]}
    for name in sorted(names):
        node = SPECIAL.get(name) or _definition(name, definitions[name])
        out["definitions"][name] = node
    return out


def _closure(definitions: JSON, roots: tuple[str, ...]) -> set[str]:
    """Every definition the roots reach; refused if one reaches itself (the loader inlines
    references)."""
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in trail:
            raise ValueError(f"recursive definition: {' -> '.join((*trail, name))}")
        if name in done:
            return
        if name not in SPECIAL:
            for ref in sorted(set(_refs(definitions[name]))):
                visit(ref, (*trail, name))
        done.add(name)

    for root in roots:
        visit(root, ())
    return done


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        if "$ref" in node:
            return [node["$ref"].rsplit("/", 1)[1]]
        return [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def _definition(name: str, node: JSON) -> JSON:
    out = _node(node)
    properties = out.get("properties")
    if properties is None:
        return out if "type" not in out or out["type"] != "object" else dict(_WHOLE)
    if name in ROOTS:
        properties["metadata"] = dict(_WHOLE)  # content/metadata's
        if "status" in properties:
            properties["status"] = dict(_WHOLE)  # ignored on create
    required = sorted(set(node.get("required") or ()))
    if required:
        out["required"] = required
    unenforced = sorted(UNENFORCED.get(name, frozenset()) & set(required))
    if unenforced:
        out[UNENFORCED_MARK] = unenforced
    for (owner, field), values in ENUMS.items():
        if owner == name:
            target = properties[field]
            target = target["items"] if target.get("type") == "array" else target
            target["enum"] = ["", *values]
    return out


def _node(node: JSON) -> JSON:
    if "$ref" in node:
        return {"$ref": node["$ref"].rsplit("/", 1)[1]}
    out: JSON = {}
    if "type" in node:
        out["type"] = node["type"]
    if node.get("format") == "byte":  # base64: Go refuses anything else for []byte
        out["format"] = "byte"
    if isinstance(node.get("items"), dict):
        out["items"] = _node(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _node(node["additionalProperties"])
    if "properties" in node:
        out["properties"] = {key: _node(value) for key, value in sorted(node["properties"].items())}
    return out


def render(document: JSON) -> str:
    """Deterministic text: one definition per line, so regenerations diff by definition."""
    head = {key: value for key, value in document.items() if key != "definitions"}
    lines = [json.dumps(head, sort_keys=True)[:-1] + ', "definitions": {']
    items = sorted(document["definitions"].items())
    for index, (name, node) in enumerate(items):
        comma = "," if index < len(items) - 1 else ""
        lines.append(f"{json.dumps(name)}: {json.dumps(node, sort_keys=True)}{comma}")
    lines.append("}}")
    return "\n".join(lines) + "\n"


def read_swagger(source: Path) -> tuple[JSON, str]:
    """swagger.json (and its sha256) from the file itself, a Kubernetes source tree or the
    source package's ``.orig.tar.gz``."""
    if source.is_dir():
        source = source / SWAGGER
    if source.name.endswith((".tar.gz", ".tgz", ".tar.xz", ".tar")):
        with tarfile.open(source) as archive:
            member = next(m for m in archive.getmembers() if m.name.endswith(f"/{SWAGGER}"))
            extracted = archive.extractfile(member)
            assert extracted is not None
            data = extracted.read()
    else:
        data = source.read_bytes()
    return json.loads(data), hashlib.sha256(data).hexdigest()


def default_source() -> Path | None:
    """``$OLMTOOL_KUBE_SOURCE``, else the source package where ``apt-get source`` leaves it
    in the current directory."""
    named = os.environ.get("OLMTOOL_KUBE_SOURCE")
    if named:
        return Path(named)
    found = sorted(Path.cwd().glob("kubernetes_*really1.20.2.orig.tar.gz"))
    return found[0] if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m olmtool.bundle.kubeschemas",
        description="Generate (or --check) the packaged Kubernetes 1.20 schemas.",
    )
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when stale")
    parser.add_argument("--source", type=Path, default=None, help="swagger.json, tree or tarball")
    parser.add_argument("--output", type=Path, default=PACKAGED)
    args = parser.parse_args(argv)
    source = args.source or default_source()
    if source is None or not source.exists():
        print(
            "no Kubernetes 1.20.2 source: pass --source or set OLMTOOL_KUBE_SOURCE (fetch it "
            "with: apt-get source --download-only kubernetes=1.20.5+really1.20.2-1.1+deb12u1)",
            file=sys.stderr,
        )
        return 2
    swagger, digest = read_swagger(source)
    text = render(generate(swagger, digest))
    current = args.output.read_text("utf-8") if args.output.exists() else None
    if args.check:
        print(f"{'up to date' if current == text else 'stale'}: {args.output}")
        return 0 if current == text else 1
    if current != text:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    print(f"wrote: {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
