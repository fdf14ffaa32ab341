"""The registry+v1 bundle format: directory names, annotation keys, allowed kinds."""

from __future__ import annotations

from typing import Literal

# The install modes a CSV can declare (operator-framework/api's InstallModeType); here
# rather than in settings so that the checks need not import pydantic.
InstallModeType = Literal["OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"]
INSTALL_MODE_TYPES: tuple[InstallModeType, ...] = (
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
)
Capability = Literal[
    "Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"
]

MANIFESTS_DIR = "manifests"
METADATA_DIR = "metadata"
ANNOTATIONS_FILE = "metadata/annotations.yaml"
DOCKERFILE = "bundle.Dockerfile"
SCORECARD_CONFIG = "tests/scorecard/config.yaml"

MEDIATYPE = "operators.operatorframework.io.bundle.mediatype.v1"
MANIFESTS = "operators.operatorframework.io.bundle.manifests.v1"
METADATA = "operators.operatorframework.io.bundle.metadata.v1"
PACKAGE = "operators.operatorframework.io.bundle.package.v1"
CHANNELS = "operators.operatorframework.io.bundle.channels.v1"
DEFAULT_CHANNEL = "operators.operatorframework.io.bundle.channel.default.v1"
TEST_MEDIATYPE = "operators.operatorframework.io.test.mediatype.v1"
TEST_CONFIG = "operators.operatorframework.io.test.config.v1"

REGISTRY_V1 = "registry+v1"
SCORECARD_V1 = "scorecard+v1"
REQUIRED_ANNOTATIONS = (MEDIATYPE, MANIFESTS, METADATA, PACKAGE, CHANNELS)
# The values the bundle layout implies; upstream never compares them.
FIXED_VALUES = {MANIFESTS: f"{MANIFESTS_DIR}/", METADATA: f"{METADATA_DIR}/"}

CSV_KIND = "ClusterServiceVersion"
CSV_API_VERSION = "operators.coreos.com/v1alpha1"
CRD_KIND = "CustomResourceDefinition"
CRD_API_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")

# Kinds OLM's InstallPlan will apply from a bundle (operator-registry's supported kinds).
SUPPORTED_KINDS = frozenset(
    {
        "ClusterServiceVersion", "CustomResourceDefinition", "Secret", "ConfigMap",
        "ServiceAccount", "Service", "Role", "RoleBinding", "ClusterRole",
        "ClusterRoleBinding", "PrometheusRule", "ServiceMonitor", "PodMonitor",
        "PodDisruptionBudget", "PriorityClass", "VerticalPodAutoscaler", "ConsoleYAMLSample",
        "ConsoleQuickStart", "ConsoleCLIDownload", "ConsoleLink", "ConsolePlugin",
        "NetworkPolicy",
    }
)  # fmt: skip
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# All manifests together, each gzipped and base64-encoded: OLM unpacks a bundle into one
# ConfigMap, and upstream's validator refuses more than this (warns above the fraction).
MAX_BUNDLE_BYTES = 1 << 20
WARN_BUNDLE_FRACTION = 0.85


def annotation_values(
    package: str, channels: list[str], default_channel: str | None, scorecard: bool
) -> dict[str, str]:
    """annotations.yaml content (and the image labels) for a bundle."""
    values = {
        MEDIATYPE: REGISTRY_V1,
        MANIFESTS: f"{MANIFESTS_DIR}/",
        METADATA: f"{METADATA_DIR}/",
        PACKAGE: package,
        CHANNELS: ",".join(channels),
    }
    if default_channel:
        values[DEFAULT_CHANNEL] = default_channel
    if scorecard:
        values[TEST_MEDIATYPE] = SCORECARD_V1
        values[TEST_CONFIG] = "tests/scorecard/"
    return dict(sorted(values.items()))


def dockerfile(labels: dict[str, str], scorecard: bool) -> str:
    """bundle.Dockerfile: FROM scratch, one LABEL per annotation, the bundle's directories."""
    lines = ["FROM scratch", ""]
    lines += [f"LABEL {key}={value}" for key, value in sorted(labels.items())]
    lines += [
        "",
        f"COPY {MANIFESTS_DIR} /{MANIFESTS_DIR}/",
        f"COPY {METADATA_DIR} /{METADATA_DIR}/",
    ]
    if scorecard:
        lines.append("COPY tests/scorecard /tests/scorecard/")
    return "\n".join(lines) + "\n"


def parse_dockerfile_labels(text: str) -> dict[str, tuple[str, int]]:
    """``LABEL key=value`` lines of a bundle.Dockerfile: key -> (value, line number)."""
    labels: dict[str, tuple[str, int]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line.upper().startswith("LABEL "):
            continue
        for pair in line[6:].split():
            key, _, value = pair.partition("=")
            labels[key] = (value.strip('"'), number)
    return labels
