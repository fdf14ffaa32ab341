"""Optional suites: ``operatorhub``, ``good-practices`` and ``deprecated-apis``."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import semver

from olmtool.bundle import format as fmt
from olmtool.bundle.checks import Context, register, register_csv
from olmtool.bundle.checks.csv import annotations_of, deployments_of, pod_spec_of, wrong_type
from olmtool.bundle.format import Capability
from olmtool.bundle.model import Bundle, Object
from olmtool.findings import Finding
from olmtool.godecode import go_list, go_map
from olmtool.versions import parse_version

CAPABILITIES = Capability.__args__  # type: ignore[attr-defined]
CATEGORIES = (
    "AI/Machine Learning", "Application Runtime", "Big Data", "Cloud Provider",
    "Developer Tools", "Database", "Integration & Delivery", "Logging & Tracing", "Monitoring",
    "Modernization & Migration", "Networking", "OpenShift Optional", "Security", "Storage",
    "Streaming & Messaging", "Observability",
)  # fmt: skip
ICON_MEDIATYPES = ("image/gif", "image/jpeg", "image/png", "image/svg+xml")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
CHANNEL_PREFIXES = ("candidate", "stable", "fast")
CRD_WRITE_VERBS = {"create", "patch", "update", "delete", "*"}

# (apiVersion, kind) -> Kubernetes minor version that no longer serves it.
REMOVED_APIS: dict[tuple[str, str], str] = {
    **{(v, k): "1.16" for v in ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2")
       for k in ("Deployment", "DaemonSet", "ReplicaSet", "StatefulSet")},
    ("extensions/v1beta1", "NetworkPolicy"): "1.16",
    ("extensions/v1beta1", "PodSecurityPolicy"): "1.16",
    ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"): "1.22",
    ("admissionregistration.k8s.io/v1beta1", "MutatingWebhookConfiguration"): "1.22",
    ("admissionregistration.k8s.io/v1beta1", "ValidatingWebhookConfiguration"): "1.22",
    ("apiregistration.k8s.io/v1beta1", "APIService"): "1.22",
    ("certificates.k8s.io/v1beta1", "CertificateSigningRequest"): "1.22",
    ("coordination.k8s.io/v1beta1", "Lease"): "1.22",
    ("extensions/v1beta1", "Ingress"): "1.22",
    ("networking.k8s.io/v1beta1", "Ingress"): "1.22",
    ("networking.k8s.io/v1beta1", "IngressClass"): "1.22",
    **{("rbac.authorization.k8s.io/v1beta1", k): "1.22"
       for k in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")},
    ("scheduling.k8s.io/v1beta1", "PriorityClass"): "1.22",
    **{("storage.k8s.io/v1beta1", k): "1.22"
       for k in ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment")},
    ("batch/v1beta1", "CronJob"): "1.25",
    ("discovery.k8s.io/v1beta1", "EndpointSlice"): "1.25",
    ("events.k8s.io/v1beta1", "Event"): "1.25",
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler"): "1.25",
    ("policy/v1beta1", "PodDisruptionBudget"): "1.25",
    ("policy/v1beta1", "PodSecurityPolicy"): "1.25",
    ("node.k8s.io/v1beta1", "RuntimeClass"): "1.25",
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): "1.26",
    **{("flowcontrol.apiserver.k8s.io/v1beta1", k): "1.26"
       for k in ("FlowSchema", "PriorityLevelConfiguration")},
    ("storage.k8s.io/v1beta1", "CSIStorageCapacity"): "1.27",
    **{("flowcontrol.apiserver.k8s.io/v1beta2", k): "1.29"
       for k in ("FlowSchema", "PriorityLevelConfiguration")},
    **{("flowcontrol.apiserver.k8s.io/v1beta3", k): "1.32"
       for k in ("FlowSchema", "PriorityLevelConfiguration")},
}  # fmt: skip

# The newest Kubernetes release whose API removals REMOVED_APIS lists: the target when no
# --k8s-version is given, since a published bundle meets today's clusters.
NEWEST_KUBERNETES = semver.Version(1, 32, 0)


# -- operatorhub -------------------------------------------------------------------------


@register_csv("operatorhub")
def operatorhub(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    for check in (_provider, _contacts, _icon, _classification):
        yield from check(csv)
    if not csv.get("spec.version"):
        yield csv.finding("operatorhub/version", "error", "spec.version is not set", "spec")


def _provider(csv: Object) -> Iterator[Finding]:
    provider = csv.get("spec.provider")
    if not isinstance(provider, dict) or not str(provider.get("name") or "").strip():
        yield csv.finding(
            "operatorhub/provider",
            "error",
            "spec.provider.name is empty",
            "spec.provider" if provider else "spec",
        )


def _is_email(text: str) -> bool:
    return bool(EMAIL.match(text))


def _is_http_url(text: str) -> bool:
    url = urlparse(text)
    return url.scheme in ("http", "https") and bool(url.netloc)


@dataclass(frozen=True)
class _ContactList:
    """A list of contacts in the CSV: each entry a mapping with a name and an address
    (under ``key``) that ``valid`` accepts."""

    field: str
    check: str
    incomplete: str  # the message for an entry without a name or an address
    key: str
    valid: Callable[[str], bool]
    invalid: str  # the message for a bad address, formatted with it


CONTACT_LISTS = (
    _ContactList(
        "spec.maintainers",
        "operatorhub/maintainers",
        "a maintainer needs a name and an email",
        "email",
        _is_email,
        "maintainer email {!r} is not an email address",
    ),
    _ContactList(
        "spec.links",
        "operatorhub/links",
        "a link needs a name and a url",
        "url",
        _is_http_url,
        "link url {!r} is not an http(s) URL",
    ),
)


def _contacts(csv: Object) -> Iterator[Finding]:
    """Maintainers, then links."""
    for contacts in CONTACT_LISTS:
        key = contacts.key
        for index, entry in enumerate(go_list(csv.get(contacts.field))):
            path = f"{contacts.field}[{index}]"
            if isinstance(entry, dict) and any(
                wrong_type(entry.get(k), str) for k in ("name", key)
            ):
                continue  # csv/field-type's
            if entry is not None and not isinstance(entry, dict):
                continue
            if not isinstance(entry, dict) or not entry.get("name") or not entry.get(key):
                yield csv.finding(contacts.check, "error", contacts.incomplete, path)
            elif not contacts.valid(str(entry[key])):
                message = contacts.invalid.format(entry[key])
                yield csv.finding(contacts.check, "error", message, f"{path}.{key}")


def _icon(csv: Object) -> Iterator[Finding]:
    icons = csv.get("spec.icon")
    if not icons:
        yield csv.finding(
            "operatorhub/icon-missing",
            "warning",
            "spec.icon is not set: consoles show a placeholder",
            "spec",
        )
        return
    if not isinstance(icons, list):
        return
    if len(icons) != 1:
        yield csv.finding(
            "operatorhub/icon",
            "error",
            f"spec.icon must hold exactly one icon, not {len(icons)}",
            "spec.icon",
        )
    for index, icon in enumerate(icons):
        path = f"spec.icon[{index}]"
        if icon is not None and not isinstance(icon, dict):
            continue  # csv/field-type's
        data = icon.get("base64data") if isinstance(icon, dict) else None
        mediatype = icon.get("mediatype") if isinstance(icon, dict) else None
        if not data:
            yield csv.finding("operatorhub/icon", "error", "the icon has no base64data", path)
        elif not _is_base64(str(data)):
            yield csv.finding(
                "operatorhub/icon-data",
                "warning",
                "the icon's base64data is not valid base64: consoles show a broken image",
                f"{path}.base64data",
            )
        if mediatype not in ICON_MEDIATYPES:
            yield csv.finding(
                "operatorhub/icon",
                "error",
                f"icon mediatype {mediatype!r} is not one of {', '.join(ICON_MEDIATYPES)}",
                f"{path}.mediatype" if mediatype else path,
            )


def _is_base64(data: str) -> bool:
    """Whether ``data`` is base64, ignoring whitespace: the data is wrapped over lines
    often, and consoles put it in a ``data:`` URL, which skips ASCII whitespace."""
    try:
        base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _classification(csv: Object) -> Iterator[Finding]:
    annotations = annotations_of(csv)
    capability = annotations.get("capabilities")
    if capability is not None and capability not in CAPABILITIES:
        yield csv.finding(
            "operatorhub/capabilities",
            "error",
            f"capabilities {capability!r} is not one of: {', '.join(CAPABILITIES)}",
            "metadata.annotations[capabilities]",
        )
    for category in str(annotations.get("categories") or "").split(","):
        if category.strip() and category.strip() not in CATEGORIES:
            yield csv.finding(
                "operatorhub/categories",
                "error",
                f"category {category.strip()!r} is not a standard OperatorHub category",
                "metadata.annotations[categories]",
            )


# -- good practices ----------------------------------------------------------------------


@register_csv("good-practices")
def good_practices(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    yield from _deployments(csv)
    yield from _crd_descriptions(csv)
    yield from _channel_names(bundle)
    yield from _crd_write_rules(csv)
    yield from _csv_name(csv, bundle)


def _deployments(csv: Object) -> Iterator[Finding]:
    """The CSV installs a deployment, and every container says what it requests."""
    deployments = deployments_of(csv)
    if not deployments:
        yield csv.finding(
            "good-practices/no-deployments",
            "error",
            "the CSV installs no deployment: nothing would run the operator",
            "spec.install",
        )
    for index, deployment in enumerate(deployments):
        for c_index, container in enumerate(go_list(pod_spec_of(deployment).get("containers"))):
            if not isinstance(container, dict) or _requests(container):
                continue
            path = (
                f"spec.install.spec.deployments[{index}].spec.template.spec.containers[{c_index}]"
            )
            message = (
                f"container {container.get('name')} of deployment {deployment.get('name')} "
                "sets no resources.requests"
            )
            yield csv.finding("good-practices/resource-requests", "warning", message, path)


def _requests(container: dict[str, Any]) -> Any:
    return go_map(container.get("resources")).get("requests")


def _crd_descriptions(csv: Object) -> Iterator[Finding]:
    for key in ("owned", "required"):
        for index, entry in enumerate(go_list(csv.get(f"spec.customresourcedefinitions.{key}"))):
            if isinstance(entry, dict) and not entry.get("description"):
                message = f"{key} CRD {entry.get('name')} has no description"
                path = f"spec.customresourcedefinitions.{key}[{index}]"
                yield csv.finding("good-practices/crd-description", "warning", message, path)


def _csv_name(csv: Object, bundle: Bundle) -> Iterator[Finding]:
    version = csv.get("spec.version")
    package = (bundle.annotations or {}).get(fmt.PACKAGE)
    # No expectation without a package or a valid version (other checks report those).
    expected = f"{package}.v{version}" if package and _is_version(version) else None
    if expected and csv.name != expected and not csv.get("spec.release"):
        yield csv.finding(
            "good-practices/csv-name",
            "warning",
            f"CSV name {csv.name!r} should be {expected!r} (<package>.v<version>)",
            "metadata.name",
        )


def _is_version(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parse_version(value)
    except ValueError:
        return False
    return True


def _channel_names(bundle: Bundle) -> Iterator[Finding]:
    channels = (bundle.annotations or {}).get(fmt.CHANNELS, "")
    path = f"annotations[{fmt.CHANNELS}]"
    for channel in (c.strip() for c in channels.split(",")):
        if channel and not channel.startswith(CHANNEL_PREFIXES):
            yield Finding(
                "good-practices/channel-name",
                "warning",
                f"channel {channel!r} does not follow the candidate/stable/fast naming convention",
                bundle.display(fmt.ANNOTATIONS_FILE),
                bundle.annotation_line(path),
                path,
            )


def _crd_write_rules(csv: Object) -> Iterator[Finding]:
    for key in ("permissions", "clusterPermissions"):
        for index, entry in enumerate(go_list(csv.get(f"spec.install.spec.{key}"))):
            for r_index, rule in enumerate(go_list(go_map(entry).get("rules"))):
                groups = _strings(go_map(rule).get("apiGroups"))
                resources = _strings(go_map(rule).get("resources"))
                verbs = _strings(go_map(rule).get("verbs"))
                if (
                    groups & {"apiextensions.k8s.io", "*"}
                    and resources & {"customresourcedefinitions", "*"}
                    and verbs & CRD_WRITE_VERBS
                ):
                    yield csv.finding(
                        "good-practices/rbac-crd-write",
                        "warning",
                        f"the operator may {', '.join(sorted(verbs & CRD_WRITE_VERBS))} CustomResourceDefinitions; OLM manages CRDs",
                        f"spec.install.spec.{key}[{index}].rules[{r_index}]",
                    )


def _strings(value: Any) -> set[str]:
    """The strings of a list of strings (Go keeps nothing of another type)."""
    return {item for item in go_list(value) if isinstance(item, str)}


# -- deprecated APIs ---------------------------------------------------------------------


@register("deprecated-apis")
def removed_apis(bundle: Bundle, context: Context) -> Iterator[Finding]:
    """As upstream at the target Kubernetes version: an error when --k8s-version (default
    :data:`NEWEST_KUBERNETES`) or spec.minKubeVersion is at or past the removal, a warning
    otherwise."""
    min_kube = _min_kube_version(bundle.csv)
    targets = [v for v in (context.k8s_version or NEWEST_KUBERNETES, min_kube) if v is not None]
    target = max(targets)
    for obj in bundle.manifest_objects:
        removed = REMOVED_APIS.get((obj.api_version, obj.kind))
        if removed is None:
            continue
        removal = semver.Version.parse(f"{removed}.0")
        fatal = target is not None and target >= removal
        what = f"{obj.kind} {obj.name} uses {obj.api_version}, which Kubernetes {removed}"
        if fatal:
            message = (
                f"{what} no longer serves (target: Kubernetes {target}); use a served API version"
            )
        else:
            message = f"{what} removes; it installs on the target Kubernetes {target} but not on {removed} or later"
        yield obj.finding(
            "deprecated-apis/removed-api", "error" if fatal else "warning", message, "apiVersion"
        )


def _min_kube_version(csv: Object | None) -> semver.Version | None:
    """spec.minKubeVersion read tolerantly (``v1.22``, ``1.22``), as upstream reads it here."""
    value = csv.get("spec.minKubeVersion") if csv else None
    if not value:
        return None
    parts = str(value).strip().removeprefix("v").split(".")
    try:
        return parse_version(
            ".".join([*parts, "0", "0"][:3]) if len(parts) < 3 else ".".join(parts)
        )
    except ValueError:
        return None
