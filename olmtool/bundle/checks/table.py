"""Every bundle check id: where it comes from, how severe its findings are, what it catches.

``upstream`` checks give the verdict and severity of operator-framework/api's validators as
``operator-sdk bundle validate`` runs them, or of operator-registry (opm). ``olmtool``
checks go beyond upstream: they are errors only where OLM, opm or the apiserver would
certainly refuse the bundle (the summary says who), warnings otherwise (``--strict`` fails
on those too). Each check function yields findings under ids of this table; a test keeps
the table and the code in step.
"""

from __future__ import annotations

from dataclasses import dataclass

from olmtool.findings import Origin, Severity

E: tuple[Severity, ...] = ("error",)
W: tuple[Severity, ...] = ("warning",)
EW: tuple[Severity, ...] = ("error", "warning")


@dataclass(frozen=True)
class CheckInfo:
    """One check id: its origin, the severities its findings take, and what it catches."""

    origin: Origin
    severities: tuple[Severity, ...]
    summary: str

    @property
    def severity(self) -> str:
        return "/".join(self.severities)


def _u(severities: tuple[Severity, ...], summary: str) -> CheckInfo:
    return CheckInfo("upstream", severities, summary)


def _o(severities: tuple[Severity, ...], summary: str) -> CheckInfo:
    return CheckInfo("olmtool", severities, summary)


CHECKS: dict[str, CheckInfo] = {
    # -- loader (operator-framework/api's bundle loader)
    "loader/no-csv": _u(E, "manifests/ holds no ClusterServiceVersion"),
    "loader/csv-parse": _u(E, "the CSV file is not YAML/JSON"),
    "loader/manifest-parse": _u(E, "a manifest is not YAML/JSON"),
    "loader/duplicate-key": _o(
        W, "a mapping repeats a key with another value (Go's YAML reading keeps the last)"
    ),
    "loader/hidden-file": _u(E, "a hidden file in manifests/"),
    "loader/subdirectory": _u(E, "a subdirectory in manifests/"),
    "loader/multiple-csvs": _u(E, "more than one CSV"),
    "loader/crd-api-version": _u(E, "a CRD that is neither apiextensions v1 nor v1beta1"),
    "loader/unreadable-file": _o(
        E,
        "not a regular file inside the bundle: a dangling, looping or outward symlink, a "
        "FIFO, device or socket, a file over 64 MiB (refused: never read; upstream's loader "
        "fails on it, hangs or reads outside the bundle)",
    ),
    # -- format (operator-registry's bundle format validation)
    "format/manifests-missing": _u(E, "no manifests/ directory"),
    "format/metadata-missing": _u(E, "no metadata/ directory"),
    "format/annotations-missing": _u(E, "no metadata/annotations.yaml"),
    "format/annotations-parse": _u(E, "annotations.yaml is not an 'annotations:' mapping"),
    "format/annotation-missing": _u(E, "a required annotation is missing"),
    "format/mediatype": _u(E, "the mediatype does not match the content (registry+v1)"),
    "format/channels-empty": _u(E, "channels empty (or an empty item)"),
    "format/default-channel-empty": _u(E, "the default channel annotation is empty"),
    "format/dependencies": _u(E, "metadata/dependencies.yaml unreadable or malformed"),
    "format/directory-annotation": _o(
        W, "manifests/metadata annotations differ from the layout (opm and OLM ignore them)"
    ),
    "format/package-empty": _o(
        E, "the package name is empty (refused: opm cannot put it in any catalog)"
    ),
    "format/default-channel-unknown": _o(
        W, "the default channel is none of this bundle's channels (it is package-level)"
    ),
    "format/dockerfile-labels": _o(
        W, "bundle.Dockerfile LABELs differ from annotations.yaml (OLM and opm read the latter)"
    ),
    "format/image-labels": _o(
        EW,
        "image labels differ from annotations.yaml; error without the package label "
        "(refused: opm does not take the image for a bundle)",
    ),
    # -- content (operator-registry's bundle content validation)
    "content/kind-missing": _u(E, "an object without kind (upstream cannot decode it)"),
    "content/type-meta": _o(W, "an object (not the CSV) without apiVersion"),
    "content/unsupported-kind": _u(E, "a kind OLM does not install from bundles"),
    "content/metadata": _u(E, "invalid object metadata: name, label and annotation keys/values"),
    # -- csv (operator-framework/api's CSV validator)
    "csv/api-version-missing": _u(E, "the CSV has no apiVersion"),
    "csv/type-meta": _o(W, "the CSV's apiVersion is not operators.coreos.com/v1alpha1"),
    "csv/name": _u(E, "metadata.name is not a DNS-1123 subdomain"),
    "csv/replaces": _u(E, "spec.replaces is set but not a DNS-1123 subdomain"),
    "csv/no-examples": _u(W, "no alm-examples"),
    "csv/examples-both": _u(W, "both alm-examples and olm.examples"),
    "csv/examples-json": _u(E, "alm-examples is not a JSON array of objects"),
    "csv/example-not-owned": _u(E, "an example of an API the CSV does not own"),
    "csv/owned-without-example": _u(W, "an owned API without an example"),
    "csv/owned-crd-name": _u(E, "an owned CRD name that is not <plural>.<group>"),
    "csv/install-modes": _u(E, "install modes empty, unknown or none supported"),
    "csv/install-modes-duplicate": _o(
        W, "an install mode listed twice (upstream's check never fires; OLM keeps one)"
    ),
    "csv/conversion-webhook": _u(E, "conversion webhooks without AllNamespaces-only"),
    "csv/min-kube-version-empty": _u(W, "spec.minKubeVersion unset"),
    "csv/min-kube-version": _u(E, "spec.minKubeVersion is not a version"),
    "csv/annotation-case": _u(E, "an OLM annotation key in the wrong case"),
    "csv/olm-properties": _u(W, "the olm.properties annotation (discouraged)"),
    "csv/field-type": _u(E, "a CSV field of the wrong type (upstream cannot decode the CSV)"),
    "csv/required": _u(E, "a required CSV field is missing"),
    "csv/version": _u(E, "spec.version is not semver (upstream cannot decode the CSV)"),
    "csv/skip-range": _o(
        E, "olm.skipRange is not a semver range (refused: opm validate rejects the catalog)"
    ),
    "csv/schema": _o(
        EW,
        "a CSV value OLM v0.18.3's ClusterServiceVersion CRD rejects: missing required field, "
        "wrong type, out of range or enum (refused: the apiserver rejects the CSV and OLM's "
        "InstallPlan fails); warnings for fields the apiserver drops. Values Go cannot "
        "decode are csv/field-type's",
    ),
    "csv/webhook": _o(
        EW,
        "a webhook definition the apiserver or OLM refuses: generateName not a 3-part "
        "domain, sideEffects, admissionReviewVersions, failure/match policy, rules, "
        "timeoutSeconds, webhookPath, Service name, conversionCRDs not owned, repeated "
        "generateName (refused: the CSV fails); warnings for a targetPort the deployment "
        "does not declare",
    ),
    "csv/deployment": _o(
        E,
        "a deployment without a valid name, selector, containers or images, or with a "
        "restartPolicy other than Always "
        "(refused: the apiserver rejects the Deployment OLM creates)",
    ),
    # -- crd (apiextensions validation, as upstream's CRD validator runs it)
    "crd/schema": _u(
        EW,
        "what the apiserver rejects in a v1 CRD (errors; upstream drops those under "
        "openAPIV3Schema, the apiserver does not) or ignores (warnings)",
    ),
    # -- bundle (operator-framework/api's bundle validator)
    "bundle/duplicate-crd": _u(E, "a CRD or group/version/kind defined twice"),
    "bundle/owned-crd-missing": _u(E, "an owned CRD not in the bundle"),
    "bundle/owned-crd-version": _u(E, "an owned CRD's version or kind not in its CRD"),
    "bundle/crd-not-owned": _u(E, "a CRD in the bundle that the CSV does not own"),
    "bundle/service-account": _u(E, "a ServiceAccount manifest named like the operator's"),
    "bundle/file-size": _u(EW, "manifests over (or near) 1 MiB gzipped and base64-encoded"),
    "bundle/release": _u(E, "spec.release malformed or the CSV name not <pkg>.v<ver>-<rel>"),
    "bundle/related-images": _u(E, "a related image empty or not a valid reference"),
    "bundle/example-invalid": _o(
        W, "an alm-example its CRD would reject (OLM never applies examples)"
    ),
    "bundle/webhook-deployment": _o(
        E,
        "a webhook naming a deployment the CSV lacks "
        "(refused: OLM never installs the webhook and the CSV never succeeds)",
    ),
    # -- objects
    "objects/pdb": _u(E, "a PodDisruptionBudget blocking every drain"),
    "objects/priority-class": _u(E, "a globalDefault PriorityClass"),
    "objects/monitoring": _o(
        EW,
        "ServiceMonitor/PrometheusRule defects; warnings where the prometheus-operator or "
        "Prometheus reject or drop them later, errors where the prometheus-operator CRDs' "
        "schemas do (refused: the apiserver fails OLM's InstallPlan)",
    ),
    "objects/schema": _o(
        EW,
        "a built-in kind (Service, ConfigMap, Secret, RBAC, PDB, PriorityClass, "
        "NetworkPolicy, and the CSV's Deployment specs) Kubernetes 1.20's schema rejects: "
        "missing required field, wrong type, unsupported value (refused: the apiserver "
        "rejects the object); warnings for fields it drops",
    ),
    # -- operatorhub (optional)
    "operatorhub/provider": _u(E, "spec.provider.name empty"),
    "operatorhub/maintainers": _u(E, "a maintainer without name or a valid email"),
    "operatorhub/links": _u(E, "a link without name or an http(s) URL"),
    "operatorhub/version": _u(E, "spec.version unset"),
    "operatorhub/icon-missing": _u(W, "no spec.icon"),
    "operatorhub/icon": _u(E, "not exactly one icon, or one without data or a known mediatype"),
    "operatorhub/icon-data": _o(W, "the icon's base64data is not base64 (whitespace allowed)"),
    "operatorhub/capabilities": _u(E, "capabilities not a standard level"),
    "operatorhub/categories": _u(E, "a category that is not standard"),
    # -- good-practices (optional)
    "good-practices/no-deployments": _u(E, "the CSV installs no deployment"),
    "good-practices/resource-requests": _u(W, "a container without resources.requests"),
    "good-practices/crd-description": _u(W, "an owned/required CRD without description"),
    "good-practices/channel-name": _u(W, "a channel not named candidate/stable/fast*"),
    "good-practices/rbac-crd-write": _u(W, "RBAC that may write CRDs"),
    "good-practices/csv-name": _u(W, "the CSV not named <package>.v<version>"),
    # -- deprecated-apis (optional)
    "deprecated-apis/removed-api": _u(
        EW,
        "an API removed in Kubernetes: error at --k8s-version (else spec.minKubeVersion) "
        "or later, warning before",
    ),
    # -- olm-v1 (a target suite, selected by name: what operator-controller refuses)
    "olm-v1/install-modes": _o(
        E,
        "AllNamespaces not supported (refused: OLM v1 has no default target namespace, "
        "operator-controller render.defaultTargetNamespacesForBundle)",
    ),
    "olm-v1/dependencies": _o(
        E,
        "dependencies: dependencies.yaml, olm.package.required/olm.gvk.required/"
        "olm.constraint properties, required CRDs or API services (refused: "
        "operator-controller resolve.NoDependencyValidation)",
    ),
    "olm-v1/webhooks": _o(
        E,
        "webhookdefinitions (refused: operator-controller convert.Convert without a "
        "webhook provider feature gate; validators.CheckWebhookSupport)",
    ),
    "olm-v1/api-services": _o(
        E, "owned apiservicedefinitions (refused: operator-controller convert.Convert)"
    ),
    # -- crd-upgrade (bundle validate --previous: the CRDs against the release upgraded from)
    "crd-upgrade/stored-versions": _o(
        EW,
        "a CRD drops a version the previous release stores (error: refused by OLM v0 and v1, "
        "risk of data loss) or lists (warning: older releases may have stored it)",
    ),
    "crd-upgrade/scope": _o(EW, "a CRD's scope changed (refused by OLM v1: an error with olm-v1)"),
    "crd-upgrade/field-removed": _o(
        EW, "a CRD field removed (refused by OLM v1: an error with olm-v1)"
    ),
    "crd-upgrade/required": _o(EW, "new required fields (refused by OLM v1: an error with olm-v1)"),
    "crd-upgrade/enum": _o(
        EW, "an enum added or narrowed (refused by OLM v1: an error with olm-v1)"
    ),
    "crd-upgrade/bounds": _o(
        EW,
        "a maximum/minimum/length/items bound added or tightened (refused by OLM v1: an error with olm-v1)",
    ),
    "crd-upgrade/default": _o(
        EW, "a default added, removed or changed (refused by OLM v1: an error with olm-v1)"
    ),
    "crd-upgrade/type": _o(EW, "a field's type changed (refused by OLM v1: an error with olm-v1)"),
    "crd-upgrade/one-of": _o(EW, "a oneOf changed (refused by OLM v1: an error with olm-v1)"),
    "crd-upgrade/unhandled": _o(
        EW,
        "a change OLM v1 cannot judge: format, pattern, ... (refused by OLM v1: an error with olm-v1)",
    ),
    # -- internal (not a verdict on the bundle: olmtool's own failure)
    "internal/check-crashed": _o(
        E,
        "a check crashed: a bug in olmtool, to report at "
        "https://github.com/olmtool/olmtool/issues (an error: the bundle was not fully checked)",
    ),
}


def origin_of(check: str) -> Origin | None:
    info = CHECKS.get(check)
    return info.origin if info else None
