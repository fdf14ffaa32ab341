"""The Go types operator-framework/api decodes a ClusterServiceVersion into (``v1alpha1``,
with the Kubernetes core types its install strategy embeds).

Upstream's loader refuses a CSV that does not decode (``cannot unmarshal string into Go
struct field ClusterServiceVersionSpec.spec.keywords of type []string``); ``csv/field-type``
reports each such value. The types list the fields checks read and their neighbours; a
field not listed is not checked here. Object metadata is ``content/metadata``'s.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from olmtool.findings import Problem
from olmtool.godecode import (
    ANY,
    BOOL,
    INT32,
    INT64,
    INT_OR_STRING,
    QUANTITY,
    STRING,
    GoType,
    decode,
    map_of,
    slice_of,
    struct,
)

__all__ = ["CLUSTER_SERVICE_VERSION", "decode_csv"]

STRINGS = slice_of(STRING)
STRING_MAP = map_of(STRING)
# OperatorVersion parses a string (semver) in its UnmarshalJSON.
SEMVER = GoType("string", "string", custom=True)

LABEL_SELECTOR = struct(
    "v1.LabelSelector",
    {
        "matchLabels": STRING_MAP,
        "matchExpressions": slice_of(
            struct(
                "v1.LabelSelectorRequirement",
                {"key": STRING, "operator": STRING, "values": STRINGS},
            )
        ),
    },
)
OBJECT_META = struct(
    "v1.ObjectMeta",
    {
        "name": STRING,
        "generateName": STRING,
        "namespace": STRING,
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
        "finalizers": STRINGS,
    },
)
PROBE = struct(
    "v1.Probe",
    {
        "exec": struct("v1.ExecAction", {"command": STRINGS}),
        "httpGet": struct(
            "v1.HTTPGetAction",
            {"path": STRING, "port": INT_OR_STRING, "host": STRING, "scheme": STRING},
        ),
        "tcpSocket": struct("v1.TCPSocketAction", {"port": INT_OR_STRING, "host": STRING}),
        "initialDelaySeconds": INT32,
        "timeoutSeconds": INT32,
        "periodSeconds": INT32,
        "successThreshold": INT32,
        "failureThreshold": INT32,
        "terminationGracePeriodSeconds": INT64,
    },
)
CONTAINER = struct(
    "v1.Container",
    {
        "name": STRING,
        "image": STRING,
        "command": STRINGS,
        "args": STRINGS,
        "workingDir": STRING,
        "ports": slice_of(
            struct(
                "v1.ContainerPort",
                {
                    "name": STRING,
                    "hostPort": INT32,
                    "containerPort": INT32,
                    "protocol": STRING,
                    "hostIP": STRING,
                },
            )
        ),
        "env": slice_of(struct("v1.EnvVar", {"name": STRING, "value": STRING})),
        "resources": struct(
            "v1.ResourceRequirements",
            {"limits": map_of(QUANTITY), "requests": map_of(QUANTITY)},
        ),
        "volumeMounts": slice_of(
            struct(
                "v1.VolumeMount",
                {"name": STRING, "mountPath": STRING, "readOnly": BOOL, "subPath": STRING},
            )
        ),
        "livenessProbe": PROBE,
        "readinessProbe": PROBE,
        "startupProbe": PROBE,
        "imagePullPolicy": STRING,
        "securityContext": ANY,
    },
)
POD_SPEC = struct(
    "v1.PodSpec",
    {
        "containers": slice_of(CONTAINER),
        "initContainers": slice_of(CONTAINER),
        "serviceAccountName": STRING,
        "serviceAccount": STRING,
        "volumes": slice_of(struct("v1.Volume", {"name": STRING})),
        "nodeSelector": STRING_MAP,
        "restartPolicy": STRING,
        "terminationGracePeriodSeconds": INT64,
        "priorityClassName": STRING,
        "hostNetwork": BOOL,
        "imagePullSecrets": slice_of(struct("v1.LocalObjectReference", {"name": STRING})),
        "tolerations": slice_of(
            struct(
                "v1.Toleration",
                {
                    "key": STRING,
                    "operator": STRING,
                    "value": STRING,
                    "effect": STRING,
                    "tolerationSeconds": INT64,
                },
            )
        ),
    },
)
DEPLOYMENT_SPEC = struct(
    "v1.DeploymentSpec",
    {
        "replicas": INT32,
        "selector": LABEL_SELECTOR,
        "template": struct("v1.PodTemplateSpec", {"metadata": OBJECT_META, "spec": POD_SPEC}),
        "strategy": struct(
            "v1.DeploymentStrategy",
            {
                "type": STRING,
                "rollingUpdate": struct(
                    "v1.RollingUpdateDeployment",
                    {"maxUnavailable": INT_OR_STRING, "maxSurge": INT_OR_STRING},
                ),
            },
        ),
        "minReadySeconds": INT32,
        "revisionHistoryLimit": INT32,
        "paused": BOOL,
        "progressDeadlineSeconds": INT32,
    },
)
POLICY_RULE = struct(
    "v1.PolicyRule",
    {
        "verbs": STRINGS,
        "apiGroups": STRINGS,
        "resources": STRINGS,
        "resourceNames": STRINGS,
        "nonResourceURLs": STRINGS,
    },
)
PERMISSIONS = slice_of(
    struct(
        "v1alpha1.StrategyDeploymentPermissions",
        {"serviceAccountName": STRING, "rules": slice_of(POLICY_RULE)},
    )
)
INSTALL = struct(
    "v1alpha1.NamedInstallStrategy",
    {
        "strategy": STRING,
        "spec": struct(
            "v1alpha1.StrategyDetailsDeployment",
            {
                "deployments": slice_of(
                    struct(
                        "v1alpha1.StrategyDeploymentSpec",
                        {"name": STRING, "spec": DEPLOYMENT_SPEC, "label": STRING_MAP},
                    )
                ),
                "permissions": PERMISSIONS,
                "clusterPermissions": PERMISSIONS,
            },
        ),
    },
)
DESCRIPTOR = struct(
    "v1alpha1.Descriptor",
    {
        "path": STRING,
        "displayName": STRING,
        "description": STRING,
        "x-descriptors": STRINGS,
        "value": ANY,
    },
)
CRD_DESCRIPTION = struct(
    "v1alpha1.CRDDescription",
    {
        "name": STRING,
        "version": STRING,
        "kind": STRING,
        "displayName": STRING,
        "description": STRING,
        "resources": slice_of(
            struct(
                "v1alpha1.APIResourceReference",
                {"name": STRING, "kind": STRING, "version": STRING},
            )
        ),
        "statusDescriptors": slice_of(DESCRIPTOR),
        "specDescriptors": slice_of(DESCRIPTOR),
        "actionDescriptors": slice_of(DESCRIPTOR),
    },
)
API_SERVICE_DESCRIPTION = struct(
    "v1alpha1.APIServiceDescription",
    {
        "name": STRING,
        "group": STRING,
        "version": STRING,
        "kind": STRING,
        "deploymentName": STRING,
        "containerPort": INT32,
        "displayName": STRING,
        "description": STRING,
    },
)
WEBHOOK = struct(
    "v1alpha1.WebhookDescription",
    {
        "generateName": STRING,
        "type": STRING,
        "deploymentName": STRING,
        "containerPort": INT32,
        "targetPort": INT_OR_STRING,
        "sideEffects": STRING,
        "failurePolicy": STRING,
        "admissionReviewVersions": STRINGS,
        "rules": slice_of(
            struct(
                "v1.RuleWithOperations",
                {
                    "operations": STRINGS,
                    "apiGroups": STRINGS,
                    "apiVersions": STRINGS,
                    "resources": STRINGS,
                    "scope": STRING,
                },
            )
        ),
        "webhookPath": STRING,
        "conversionCRDs": STRINGS,
        "objectSelector": LABEL_SELECTOR,
        "matchPolicy": STRING,
        "reinvocationPolicy": STRING,
        "timeoutSeconds": INT32,
    },
)
APP_LINK = struct("v1alpha1.AppLink", {"name": STRING, "url": STRING})
SPEC = struct(
    "v1alpha1.ClusterServiceVersionSpec",
    {
        "install": INSTALL,
        "version": SEMVER,  # spec.release: bundle/release's
        "maturity": STRING,
        "customresourcedefinitions": struct(
            "v1alpha1.CustomResourceDefinitions",
            {"owned": slice_of(CRD_DESCRIPTION), "required": slice_of(CRD_DESCRIPTION)},
        ),
        "apiservicedefinitions": struct(
            "v1alpha1.APIServiceDefinitions",
            {
                "owned": slice_of(API_SERVICE_DESCRIPTION),
                "required": slice_of(API_SERVICE_DESCRIPTION),
            },
        ),
        "webhookdefinitions": slice_of(WEBHOOK),
        "nativeAPIs": slice_of(
            struct("v1.GroupVersionKind", {"group": STRING, "version": STRING, "kind": STRING})
        ),
        "minKubeVersion": STRING,
        "displayName": STRING,
        "description": STRING,
        "keywords": STRINGS,
        "maintainers": slice_of(struct("v1alpha1.Maintainer", {"name": STRING, "email": STRING})),
        "provider": APP_LINK,
        "links": slice_of(APP_LINK),
        "icon": slice_of(struct("v1alpha1.Icon", {"base64data": STRING, "mediatype": STRING})),
        "installModes": slice_of(
            struct("v1alpha1.InstallMode", {"type": STRING, "supported": BOOL})
        ),
        "replaces": STRING,
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
        "selector": LABEL_SELECTOR,
        "cleanup": struct("v1alpha1.CleanupSpec", {"enabled": BOOL}),
        "skips": STRINGS,
        "relatedImages": slice_of(
            struct("v1alpha1.RelatedImage", {"name": STRING, "image": STRING})
        ),
    },
)
CLUSTER_SERVICE_VERSION = struct(
    "v1alpha1.ClusterServiceVersion",
    {"apiVersion": STRING, "kind": STRING, "metadata": ANY, "spec": SPEC, "status": ANY},
)


def decode_csv(csv: dict) -> list[Problem]:
    """What upstream's loader could not decode in this CSV (decoded once per document
    for every check that asks; the list is shared: do not change it)."""
    return _decoded(_Identity(csv))


@dataclass(frozen=True, eq=False)
class _Identity:
    """A document compared by identity (plain data is not hashable)."""

    document: Any

    def __hash__(self) -> int:
        return id(self.document)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.document is self.document


@functools.lru_cache(maxsize=4)  # holds the documents, so their ids are not reused
def _decoded(key: _Identity) -> list[Problem]:
    return decode(key.document, CLUSTER_SERVICE_VERSION).problems
