"""Synthetic bundle directories for the render differential test (written for olmtool,
not copied from any operator): each variant exercises one thing opm's render does to a
bundle that olmtool must do byte for byte.

``write_bundle(tmp_path, name)`` writes one variant and returns its directory.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

PACKAGE = "gadget-operator"
GROUP = "gadgets.example.dev"
OPERATOR_IMAGE = "quay.example.dev/gadgets/operator@sha256:" + "a1" * 32


def _crd_v1() -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "description": "Desired state; sizes are <quantity> & counts.",
                "properties": {
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 9},
                    "ratio": {"type": "number", "minimum": 0.5, "maximum": 1.0},
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": "Gadget",
                "listKind": "GadgetList",
                "plural": "gadgets",
                "singular": "gadget",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": False,
                    "schema": {"openAPIV3Schema": schema},
                },
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                },
            ],
        },
    }


def _deployment(name: str, image: str, **pod: Any) -> dict[str, Any]:
    return {
        "name": name,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "serviceAccountName": "gadget-operator",
                    "containers": [{"name": "manager", "image": image}],
                    **pod,
                },
            },
        },
    }


def _csv(version: str = "1.4.0") -> dict[str, Any]:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": f"{PACKAGE}.v{version}",
            "annotations": {
                "capabilities": "Basic Install",
                "alm-examples": json.dumps(
                    [
                        {
                            "apiVersion": f"{GROUP}/v1",
                            "kind": "Gadget",
                            "metadata": {"name": "g"},
                            "spec": {"replicas": 1},
                        }
                    ],
                    indent=2,
                ),
            },
        },
        "spec": {
            "displayName": "Gadget operator",
            "description": "Runs gadgets.",
            "version": version,
            "replaces": f"{PACKAGE}.v1.3.0",
            "minKubeVersion": "1.20.0",
            "maturity": "stable",
            "provider": {"name": "Example"},
            "installModes": [
                {"type": t, "supported": t != "MultiNamespace"}
                for t in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
            ],
            "customresourcedefinitions": {
                "owned": [
                    {
                        "name": f"gadgets.{GROUP}",
                        "version": "v1",
                        "kind": "Gadget",
                        "displayName": "Gadget",
                    },
                    {
                        "name": f"gadgets.{GROUP}",
                        "version": "v1alpha1",
                        "kind": "Gadget",
                        "displayName": "Gadget",
                    },
                ]
            },
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": [_deployment("gadget-operator", OPERATOR_IMAGE)],
                    "permissions": [
                        {
                            "serviceAccountName": "gadget-operator",
                            "rules": [
                                {"apiGroups": [GROUP], "resources": ["gadgets"], "verbs": ["*"]}
                            ],
                        }
                    ],
                },
            },
        },
    }


def _annotations() -> dict[str, Any]:
    prefix = "operators.operatorframework.io.bundle"
    return {
        "annotations": {
            f"{prefix}.mediatype.v1": "registry+v1",
            f"{prefix}.manifests.v1": "manifests/",
            f"{prefix}.metadata.v1": "metadata/",
            f"{prefix}.package.v1": PACKAGE,
            f"{prefix}.channels.v1": "stable,fast",
            f"{prefix}.channel.default.v1": "stable",
        }
    }


Files = dict[str, Any]  # relative path -> document (dict/list: YAML) or text (str)


def _base() -> Files:
    return {
        "manifests/gadget-operator.clusterserviceversion.yaml": _csv(),
        "manifests/gadgets.example.dev_gadgets.yaml": _crd_v1(),
        "metadata/annotations.yaml": _annotations(),
    }


def _csv_of(files: Files) -> dict[str, Any]:
    return files["manifests/gadget-operator.clusterserviceversion.yaml"]


def _plain(files: Files) -> None:
    pass


def _dependencies(files: Files) -> None:
    files["metadata/dependencies.yaml"] = {
        "dependencies": [
            {
                "type": "olm.package",
                "value": {"packageName": "cert-manager", "version": ">=1.10.0 <2.0.0"},
            },
            {
                "type": "olm.gvk",
                "value": {"group": "monitoring.coreos.com", "kind": "Prometheus", "version": "v1"},
            },
            {
                "type": "olm.constraint",
                "value": {
                    "failureMessage": "needs <any> of cert-manager & trust",
                    "cel": {"rule": 'properties.exists(p, p.type == "olm.package")'},
                },
            },
        ]
    }


def _properties_dependencies(files: Files) -> None:
    # dependencies declared in properties.yaml (not dependencies.yaml), next to properties
    files["metadata/properties.yaml"] = {
        "properties": [
            {"type": "olm.maxOpenShiftVersion", "value": "4.16"},
            {
                "type": "example.dev/tuning",
                "value": {
                    "weight": 1.0,
                    "share": 0.25,
                    "tiny": 1e-7,
                    "huge": 1e21,
                    "label": "<fast> & cheap",
                },
            },
        ],
        "dependencies": [
            {
                "type": "olm.package",
                "value": {"packageName": "grafana-operator", "version": "4.6.0"},
            },
        ],
    }


def _related_images(files: Files) -> None:
    csv = _csv_of(files)
    agent = "quay.example.dev/gadgets/agent:2.1"
    csv["spec"]["relatedImages"] = [
        {"name": "operator", "image": OPERATOR_IMAGE},
        {"name": "agent", "image": agent},
        {"name": "agent-legacy", "image": agent},  # the same image under a second name
        {"name": "traefik", "image": "quay.example.dev/eclipse/che--traefik@sha256:" + "b2" * 32},
    ]
    deployments = csv["spec"]["install"]["spec"]["deployments"]
    deployments[0]["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "migrate", "image": "quay.example.dev/gadgets/migrate:1.4.0"}
    ]
    deployments.append(
        _deployment(
            "gadget-webhook",
            "quay.example.dev/gadgets/webhook:1.4.0",
            initContainers=[{"name": "wait", "image": "registry.example.dev/busybox:1.36"}],
        )
    )
    deployments[1]["spec"]["template"]["spec"]["containers"].append(
        {"name": "proxy", "image": "registry.example.dev/kube-rbac-proxy:v0.14.1"}
    )


def _html(files: Files) -> None:
    csv = _csv_of(files)
    csv["metadata"]["annotations"]["olm.skipRange"] = ">=1.0.0 <1.4.0"
    csv["metadata"]["annotations"]["description"] = "Gadgets <b>fast</b> & cheap"
    csv["spec"]["description"] = (
        "# Gadget operator\n\nRuns `<gadget>` resources & keeps them <healthy>.\n"
        "Ünïcödé, emoji \U0001f680, tab\tand the line separator \u2028 too.\n"
    )
    csv["spec"]["keywords"] = ["a<b", "c>d", "e&f"]
    csv["spec"]["links"] = [{"name": "Docs", "url": "https://example.dev/docs?a=1&b=2"}]


def _crd_v1beta1(files: Files) -> None:
    del files["manifests/gadgets.example.dev_gadgets.yaml"]
    files["manifests/gadgets.example.dev_gadgets.yaml"] = {
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "version": "v1alpha1",  # the singular version of v1beta1 CRDs
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True},
                {"name": "v1alpha1", "served": True, "storage": False},
            ],
            "validation": {
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "x-kubernetes-int-or-string": True,
                            "minimum": 2.0,
                        }
                    },
                }
            },
        },
    }


def _webhooks(files: Files) -> None:
    csv = _csv_of(files)
    csv["spec"]["webhookdefinitions"] = [
        {
            "type": "ValidatingAdmissionWebhook",
            "generateName": "vgadget.example.dev",
            "deploymentName": "gadget-operator",
            "containerPort": 9443,
            "targetPort": 9443,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "webhookPath": "/validate-gadgets-example-dev-v1-gadget",
            "rules": [
                {
                    "apiGroups": [GROUP],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["gadgets"],
                }
            ],
        },
        {
            "type": "ConversionWebhook",
            "generateName": "cgadget.example.dev",
            "deploymentName": "gadget-operator",
            "containerPort": 9443,
            "admissionReviewVersions": ["v1", "v1beta1"],
            "sideEffects": "None",
            "conversionCRDs": [f"gadgets.{GROUP}"],
            "webhookPath": "/convert",
        },
    ]
    files["manifests/gadget-operator-webhook-service_v1_service.yaml"] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "gadget-operator-webhook-service"},
        "spec": {
            "ports": [{"port": 443, "targetPort": 9443, "protocol": "TCP"}],
            "selector": {"app": "gadget-operator"},
        },
    }


def _csv_properties(files: Files) -> None:
    # the olm.properties annotation: JSON text as written (spaces, key order, escapes)
    csv = _csv_of(files)
    csv["metadata"]["annotations"]["olm.properties"] = (
        '[{"type": "olm.maxOpenShiftVersion", "value": "4.15"},'
        ' {"type": "example.dev/flag", "value": {"z": 1, "a": "x<y"}}]'
    )


def _api_services(files: Files) -> None:
    csv = _csv_of(files)
    csv["spec"]["apiservicedefinitions"] = {
        "owned": [
            {
                "group": "metrics.gadgets.example.dev",
                "version": "v1beta1",
                "kind": "GadgetMetrics",
                "name": "gadgetmetrics",
                "displayName": "Metrics",
                "deploymentName": "gadget-operator",
            }
        ],
        "required": [
            {"group": "metrics.k8s.io", "version": "v1beta1", "kind": "PodMetrics", "name": "pods"}
        ],
    }
    csv["spec"]["customresourcedefinitions"]["required"] = [
        {
            "name": "certificates.cert-manager.io",
            "version": "v1",
            "kind": "Certificate",
            "displayName": "Certificate",
        }
    ]


def _extra_objects(files: Files) -> None:
    # more kinds, numbers Go writes its own way, a hidden file and a non-object file opm skips
    files["manifests/gadget-operator-config_v1_configmap.yaml"] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "gadget-operator-config",
            "labels": {"app.kubernetes.io/part-of": "gadgets"},
        },
        "data": {"config.yaml": "threshold: 0.75\nlimit: 10\n", "html": "<p>&nbsp;</p>"},
    }
    files["manifests/gadget-operator_monitoring.coreos.com_v1_prometheusrule.yaml"] = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "gadget-alerts"},
        "spec": {
            "groups": [
                {
                    "name": "gadgets",
                    "rules": [
                        {
                            "alert": "GadgetDown",
                            "expr": 'up{job="gadget"} < 1 and rate(x[5m]) > 0.5',
                            "for": "5m",
                        }
                    ],
                }
            ]
        },
    }
    files["manifests/gadget-operator-pdb.yaml"] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "gadget-operator"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "gadget-operator"}}},
    }


def _numbers(files: Files) -> None:
    # numbers as Go holds them: int64/uint64 limits, floats written in Go's own format
    numbers = [1.0, 0.5, 1e21, 1e20, 1e-6, 1e-7, 123456789.125, 3e16, 2**63, 2**64, -(2**63) - 1]
    files["manifests/gadget-operator-numbers_v1_configmap.yaml"] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gadget-numbers"},
        "numbers": {f"n{i:02d}": n for i, n in enumerate(numbers)},
    }
    files["metadata/properties.yaml"] = {
        "properties": [{"type": f"example.dev/n{i:02d}", "value": n} for i, n in enumerate(numbers)]
    }


def _metadata_files(files: Files) -> None:
    # opm reads every metadata file: the first with dependencies, the first with
    # properties (duplicates dropped, GVKs rebuilt, the annotations' package kept),
    # and skips what does not parse
    files["metadata/extra-properties.yaml"] = {
        "properties": [
            {"type": "example.dev/x", "value": 1},
            {"type": "example.dev/x", "value": 1},
            {
                "type": "olm.gvk",
                "value": {"group": "extra.dev", "kind": "Extra", "version": "v9", "z": 1},
            },
            {"type": "olm.package", "value": {"packageName": "other-name", "version": "9.9.9"}},
        ]
    }
    files["metadata/zz-requirements.yaml"] = {
        "dependencies": [
            {
                "type": "olm.package",
                "value": {"packageName": "a-dep", "version": "1.0.0", "extra": 1},
            },
            {"type": "olm.label", "value": {"label": "gpu"}},
        ]
    }
    files["metadata/README.md"] = "# notes\n\nsome text\n"
    files["metadata/broken.yaml"] = "a: [\n"


def _loose_files(files: Files) -> None:
    # what opm's parser passes over: a hidden file, a non-object file, a second CSV
    # (after the first by name), a second document in a file, a subdirectory
    files["manifests/.DS_Store"] = "junk: [\n"
    files["manifests/README.md"] = "# Gadget manifests\n\nGenerated.\n"
    second = _csv("9.9.9")
    second["metadata"]["name"] = "zz-another.v9.9.9"
    files["manifests/zz-another.clusterserviceversion.yaml"] = second
    files["manifests/gadget-operator-extra_v1_service.yaml"] = (
        "apiVersion: v1\nkind: Service\nmetadata: {name: first}\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: second}\n"
    )
    files["manifests/notes/extra.yaml"] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
    }


def _odd_csv(files: Files) -> None:
    # an olm.properties annotation that is not JSON (opm warns and ignores it), a
    # container without an image, an init container repeating the operator image, a
    # v1beta1 CRD with only the singular version, keys YAML reads as numbers or booleans
    csv = _csv_of(files)
    csv["metadata"]["annotations"]["olm.properties"] = "[{not json"
    pod = csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
    pod["containers"].append({"name": "sidecar"})
    pod["initContainers"] = [{"name": "init", "image": OPERATOR_IMAGE}]
    files["manifests/widgets.example.dev_widgets.yaml"] = {
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.dev"},
        "spec": {
            "group": "example.dev",
            "version": "v1beta2",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Cluster",
        },
    }
    files["manifests/gadget-operator-codes_v1_configmap.yaml"] = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: codes}\n"
        "data: {'200': ok, '404': missing}\nbinaryData: {}\n"
    )


def _json_metadata(files: Files) -> None:
    # metadata files in JSON: opm decodes them as JSON, so values keep their text
    # (key order, no HTML escaping, number format), compacted on output
    files["metadata/dependencies.json"] = (
        '{"Dependencies": [\n'
        '  {"type": "olm.constraint", "value": {"failureMessage": "needs a<b & c",\n'
        '   "cel": {"rule": "true"}, "weight": 1.50}},\n'
        '  {"type": "olm.package", "value": {"version": ">=1.0.0", "packageName": "x"}}\n'
        "]}\n"
    )
    files["metadata/properties.json"] = (
        '{"properties": [{"type": "example.dev/flag", "value": {"z": 1e3, "a": "\\u003c"}}]}'
    )


def _long_description(files: Files) -> None:
    # a long Markdown description as operators write it: a literal block scalar with long
    # lines, HTML and entities, a code fence, trailing spaces and non-ASCII (a U+2028 would
    # end the block: YAML reads it as a line break); long keywords and annotations beside it
    csv = _csv_of(files)
    paragraph = (
        "The <b>gadget</b> operator keeps every gadget & its replicas healthy; it "
        "reconciles <Gadget> resources, rolls upgrades & reports status. "
    )
    lines = ["# Gadget operator", "", *(paragraph * (n % 5 + 1) for n in range(60))]
    lines += [
        "",
        "```yaml",
        "spec:",
        "  replicas: 3   ",
        "```",
        "",
        "Ünïcödé, emoji \U0001f680 & done.",
    ]
    csv["metadata"]["annotations"]["description"] = paragraph * 40 + "\u2028 \u2029"
    csv["metadata"]["annotations"]["containerImage"] = OPERATOR_IMAGE
    csv["spec"]["keywords"] = [f"gadget-<{n}>&" for n in range(50)]
    csv["spec"]["description"] = "@@DESCRIPTION@@"
    text = _dump(csv)
    block = "description: |-\n" + "".join(f"    {line}\n" if line else "\n" for line in lines)
    marker = next(line for line in text.splitlines() if "@@DESCRIPTION@@" in line)
    indent = marker[: len(marker) - len(marker.lstrip())]
    block = "".join(indent + line if line.strip() else line for line in block.splitlines(True))
    files["manifests/gadget-operator.clusterserviceversion.yaml"] = text.replace(
        marker + "\n", block
    )


VARIANTS: dict[str, Callable[[Files], None]] = {
    "plain": _plain,
    "dependencies": _dependencies,
    "properties-dependencies": _properties_dependencies,
    "related-images": _related_images,
    "html": _html,
    "crd-v1beta1": _crd_v1beta1,
    "webhooks": _webhooks,
    "csv-properties": _csv_properties,
    "api-services": _api_services,
    "extra-objects": _extra_objects,
    "numbers": _numbers,
    "metadata-files": _metadata_files,
    "loose-files": _loose_files,
    "odd-csv": _odd_csv,
    "json-metadata": _json_metadata,
    "long-description": _long_description,
}


def _dump(document: Any) -> str:
    if isinstance(document, str):
        return document
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=1 << 20)


def write_bundle(root: Path, name: str) -> Path:
    """Write variant ``name`` under ``root / name``."""
    files = copy.deepcopy(_base())
    VARIANTS[name](files)
    target = root / name
    for relative, document in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_dump(document), encoding="utf-8")
    return target


def write_release(
    root: Path,
    version: str,
    *,
    replaces: str | None = None,
    channels: str = "stable",
    default: str | None = "stable",
) -> Path:
    """One release of the gadget operator under ``root / version``: a plain bundle whose
    CSV replaces ``replaces`` (nothing by default, as many real operators' CSVs) and
    whose annotations name ``channels`` and ``default`` (absent when None)."""
    files = copy.deepcopy(_base())
    csv = _csv(version)
    del csv["spec"]["replaces"]
    if replaces:
        csv["spec"]["replaces"] = replaces
    files["manifests/gadget-operator.clusterserviceversion.yaml"] = csv
    annotations = files["metadata/annotations.yaml"]["annotations"]
    annotations["operators.operatorframework.io.bundle.channels.v1"] = channels
    if default is None:
        del annotations["operators.operatorframework.io.bundle.channel.default.v1"]
    else:
        annotations["operators.operatorframework.io.bundle.channel.default.v1"] = default
    target = root / version
    for relative, document in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_dump(document), encoding="utf-8")
    return target
