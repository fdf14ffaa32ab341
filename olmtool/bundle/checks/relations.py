"""Suites ``crd``, ``bundle`` and ``objects``: the CRDs, and how the manifests fit together."""

from __future__ import annotations

import base64
import gzip
import re
from collections.abc import Iterator

from olmtool.bundle import format as fmt
from olmtool.bundle.checks import Context, register, register_csv
from olmtool.bundle.checks.csv import (
    EXAMPLES_AT,
    deployments_of,
    example_line,
    examples_of,
    owned_entries,
    pod_spec_of,
    wrong_type,
)
from olmtool.bundle.examples import example_problems
from olmtool.bundle.model import Bundle, Object
from olmtool.bundle.monitoring import monitoring_problems
from olmtool.crd import check_crd, decode_crd
from olmtool.errors import InputError
from olmtool.findings import Finding, Severity
from olmtool.godecode import go_list, go_str
from olmtool.images import parse_reference

RELEASE = re.compile(r"^[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*$")


@register("crd")
def crd_schemas(bundle: Bundle, context: Context) -> Iterator[Finding]:
    """Everything the apiserver would reject, structural-schema errors included (upstream
    drops the errors found under openAPIV3Schema)."""
    for crd in bundle.crds:
        if crd.api_version != "apiextensions.k8s.io/v1":
            continue  # v1beta1 CRDs: the deprecated-apis suite reports them
        for violation in check_crd(crd.document):
            yield crd.finding("crd/schema", violation.severity, violation.message, violation.path)


@register("bundle")
def crd_ownership(bundle: Bundle, context: Context) -> Iterator[Finding]:
    csv = bundle.csv
    by_name: dict[str, Object] = {}
    gvks: dict[tuple[str, str, str], str] = {}
    for crd in bundle.crds:
        if crd.name in by_name:
            yield crd.finding(
                "bundle/duplicate-crd",
                "error",
                f"CRD {crd.name} is in the bundle twice",
                "metadata.name",
            )
        by_name[crd.name] = crd
        group, kind = crd.get("spec.group"), crd.get("spec.names.kind")
        for version in crd_versions(crd):
            gvk = (str(group), version, str(kind))
            if gvk in gvks and gvks[gvk] != crd.name:
                yield crd.finding(
                    "bundle/duplicate-crd",
                    "error",
                    f"{group}/{gvk[1]} {kind} is also defined by CRD {gvks[gvk]}",
                    "spec.names.kind",
                )
            gvks[gvk] = crd.name
    if csv is None:
        return
    owned_names = set()
    missing: set[str] = set()
    for index, entry in enumerate(owned_entries(csv)):
        if wrong_type(entry.get("name"), str):
            continue  # csv/field-type's
        name = go_str(entry.get("name"))
        owned_names.add(name)
        path = f"spec.customresourcedefinitions.owned[{index}]"
        crd = by_name.get(name)
        if crd is None:
            if name in missing:
                continue  # one finding per CRD, not per owned version entry
            missing.add(name)
            yield csv.finding(
                "bundle/owned-crd-missing",
                "error",
                f"owned CRD {name} is not in the bundle's manifests",
                path,
            )
            continue
        if crd.api_version == "apiextensions.k8s.io/v1" and decode_crd(crd.document)[1]:
            continue  # it does not decode: crd/schema says why, nothing can be compared
        versions = set(crd_versions(crd))
        # A missing version or kind is csv/required's finding.
        version = entry.get("version")
        if isinstance(version, str) and version and version not in versions:
            yield csv.finding(
                "bundle/owned-crd-version",
                "error",
                f"owned CRD {name} version {version!r} is not one of the CRD's versions ({', '.join(sorted(versions))})",
                f"{path}.version",
            )
        kind = entry.get("kind")
        if isinstance(kind, str) and kind and kind != crd.get("spec.names.kind"):
            yield csv.finding(
                "bundle/owned-crd-version",
                "error",
                f"owned CRD {name} kind {kind!r} is not the CRD's kind {crd.get('spec.names.kind')!r}",
                f"{path}.kind",
            )
    for crd in bundle.crds:
        if crd.name not in owned_names:
            yield crd.finding(
                "bundle/crd-not-owned",
                "error",
                f"CRD {crd.name} is in the bundle but the CSV does not list it under spec.customresourcedefinitions.owned",
                "metadata.name",
            )


def crd_versions(crd: Object) -> list[str]:
    """The version names a CRD defines: ``spec.versions``, or for apiextensions v1beta1
    without them the singular ``spec.version`` (as upstream's bundle validator reads it)."""
    names = [str(v.get("name")) for v in go_list(crd.get("spec.versions")) if isinstance(v, dict)]
    if not names and crd.api_version == "apiextensions.k8s.io/v1beta1":
        version = crd.get("spec.version")
        names = [str(version)] if version else []
    return names


@register_csv("bundle")
def examples_validate(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    """Each alm-example should be accepted by the CRD it targets. OLM never applies
    examples (consoles offer them to users), so a rejected one is a warning."""
    examples, _ = examples_of(csv)
    crds = [c.document for c in bundle.crds if c.api_version == "apiextensions.k8s.io/v1"]
    for problem in example_problems(examples or [], crds):
        example = examples[problem.index]
        if problem.owned and isinstance(example, dict):  # else csv/examples-json reports it
            name = (example.get("metadata") or {}).get("name")
            inside = f"[{problem.index}]" + (f".{problem.path}" if problem.path else "")
            yield csv.finding(
                "bundle/example-invalid",
                "warning",
                f"alm-examples[{problem.index}] ({example.get('kind')} {name}) would be rejected: {problem.message}",
                f"{EXAMPLES_AT}{inside}",
                line=example_line(csv, inside),
            )


@register_csv("bundle")
def service_accounts(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    accounts = {
        str(entry.get("serviceAccountName"))
        for key in ("permissions", "clusterPermissions")
        for entry in go_list(csv.get(f"spec.install.spec.{key}"))
        if isinstance(entry, dict)
    }
    for deployment in deployments_of(csv):
        accounts.add(str(pod_spec_of(deployment).get("serviceAccountName") or "default"))
    for obj in bundle.manifest_objects:
        if obj.kind == "ServiceAccount" and obj.name in accounts:
            yield obj.finding(
                "bundle/service-account",
                "error",
                f"ServiceAccount {obj.name} is the operator's own account, which OLM creates from the CSV; remove this manifest",
                "metadata.name",
            )


@register("bundle")
def file_sizes(bundle: Bundle, context: Context) -> Iterator[Finding]:
    """OLM unpacks a bundle into one ConfigMap (1 MiB), each manifest gzipped and
    base64-encoded: upstream sums those sizes over manifests/ and refuses more than
    1 MiB, warning above 85%."""
    sizes = {
        name: len(base64.b64encode(gzip.compress(data, mtime=0)))
        for name, data in bundle.files.items()
        if name.startswith(f"{fmt.MANIFESTS_DIR}/")
    }
    total = sum(sizes.values())
    if total <= fmt.MAX_BUNDLE_BYTES * fmt.WARN_BUNDLE_FRACTION:
        return
    largest = max(sizes, key=lambda name: (sizes[name], name))
    what = (
        f"the manifests take {total} bytes gzipped and base64-encoded (largest: "
        f"{largest.removeprefix(f'{fmt.MANIFESTS_DIR}/')}, {sizes[largest]})"
    )
    if total > fmt.MAX_BUNDLE_BYTES:
        severity: Severity = "error"
        message = f"{what}, over the 1 MiB ({fmt.MAX_BUNDLE_BYTES}) ConfigMap OLM unpacks it into"
    else:
        severity = "warning"
        message = f"{what}, {total * 100 // fmt.MAX_BUNDLE_BYTES}% of the 1 MiB limit"
    yield Finding("bundle/file-size", severity, message, bundle.display(fmt.MANIFESTS_DIR))


@register_csv("bundle")
def release_and_images(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    release = csv.get("spec.release")
    if release is not None:
        version = csv.get("spec.version")
        if not isinstance(release, str) or len(release) > 20 or not RELEASE.match(release):
            yield csv.finding(
                "bundle/release",
                "error",
                f"spec.release {release!r} must be dot-separated alphanumerics and '-', at most 20 characters",
                "spec.release",
            )
        elif not csv.name.endswith(f"v{version}-{release}"):
            yield csv.finding(
                "bundle/release",
                "error",
                f"with spec.release {release!r} the CSV must be named <package>.v{version}-{release}",
                "metadata.name",
            )
    images = csv.get("spec.relatedImages")
    for index, entry in enumerate(images if isinstance(images, list) else []):
        path = f"spec.relatedImages[{index}]"
        if entry is not None and not isinstance(entry, dict):
            continue  # csv/field-type's
        image = entry.get("image") if isinstance(entry, dict) else None
        if wrong_type(image, str):
            continue
        if not image:
            yield csv.finding(
                "bundle/related-images", "error", "a related image needs an image reference", path
            )
        else:
            try:
                parse_reference(str(image))
            except InputError as exc:
                yield csv.finding("bundle/related-images", "error", exc.message, f"{path}.image")


@register_csv("bundle")
def webhooks(csv: Object, bundle: Bundle, context: Context) -> Iterator[Finding]:
    deployments = {go_str(d.get("name")) for d in deployments_of(csv)}
    for index, hook in enumerate(go_list(csv.get("spec.webhookdefinitions"))):
        if isinstance(hook, dict) and hook.get("deploymentName") not in deployments:
            yield csv.finding(
                "bundle/webhook-deployment",
                "error",
                f"webhook {hook.get('generateName')!r} names deployment {hook.get('deploymentName')!r}, which the CSV does not install",
                f"spec.webhookdefinitions[{index}].deploymentName",
            )


@register("objects")
def monitoring_objects(bundle: Bundle, context: Context) -> Iterator[Finding]:
    """ServiceMonitors and PrometheusRules the apiserver (with the prometheus-operator CRDs),
    the prometheus-operator or Prometheus would refuse or silently change."""
    for obj in bundle.manifest_objects:
        for problem in monitoring_problems(obj.document):
            # Only what the apiserver refuses stops the install; what the
            # prometheus-operator or Prometheus refuse later is a warning here.
            severity = problem.severity if problem.apiserver else "warning"
            yield obj.finding("objects/monitoring", severity, problem.message, problem.path)


@register("objects")
def object_policies(bundle: Bundle, context: Context) -> Iterator[Finding]:
    """Objects that would block cluster operations (drains, scheduling) once installed."""
    for obj in bundle.manifest_objects:
        if obj.kind == "PodDisruptionBudget":
            max_unavailable = obj.get("spec.maxUnavailable")
            if max_unavailable in (0, "0", "0%"):
                yield obj.finding(
                    "objects/pdb",
                    "error",
                    "maxUnavailable 0 would block every node drain",
                    "spec.maxUnavailable",
                )
            if obj.get("spec.minAvailable") == "100%":
                yield obj.finding(
                    "objects/pdb",
                    "error",
                    "minAvailable 100% would block every node drain",
                    "spec.minAvailable",
                )
        elif obj.kind == "PriorityClass" and obj.get("globalDefault") is True:
            yield obj.finding(
                "objects/priority-class",
                "error",
                "a bundle must not install a globalDefault PriorityClass (it changes every pod in the cluster)",
                "globalDefault",
            )
