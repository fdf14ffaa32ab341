"""Generate a synthetic file-based catalog (FBC) at real-world scale, deterministically.

Real catalogs average about 22 KB per bundle on disk (the community catalog is ~29 MB for
1,302 bundles; see shared/reference/catalog-fbc.md section 9). Benchmarks of loading,
validating, rendering and serving only mean something on data that looks like that, so
every package here gets what real ones carry: an icon and markdown description, 1-4
channels (stable, fast, candidate, v<X>.<Y>) whose upgrade graphs mix replaces chains,
skips of bad releases and skipRanges, bundles with image digests, relatedImages, olm.gvk
and dependency properties, and either olm.bundle.object payloads (a base64 CSV of 12-20 KB
plus a CRD) or an olm.csv.metadata property. A few packages carry olm.deprecations.

The output is valid by construction (``validate_catalog`` reports no errors and no
warnings): every channel is a contiguous window of one global upgrade order, so an entry's
``replaces``/``skips`` are the same in every channel and agree with its CSV.

    python benchmarks/catalog_gen.py OUT_DIR --packages 10 --bundles-per-package 20

One seed always gives byte-identical output; each package draws from its own random
stream, so package ``i`` does not change when ``--packages`` grows.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Bumped whenever the output changes, so cached catalogs of an older generator are not reused.
GENERATOR_VERSION = 2
FORMATS = ("json", "yaml")

_VOCABULARY = (
    "operator cluster manages lifecycle deploys configures upgrades backup restore scaling "
    "highly available replicated storage database cache queue stream metrics monitoring "
    "alerting tracing logging secure encrypted certificates rotation automated seamless "
    "production workloads tenants namespaces resources custom controller reconcile status "
    "conditions events observability dashboards failover snapshot recovery point in time "
    "rolling update zero downtime horizontal vertical autoscaling topology aware placement "
    "affinity tolerations network policies ingress routes service mesh sidecar injection "
    "configuration drift detection declarative gitops policy compliance audit rbac identity "
    "federation multi region disaster tiered persistence volumes claims provisioner driver "
    "the a an of to and for with on in by from across every each your its their this that"
)
_WORDS = tuple(_VOCABULARY.split())
_ORGS = (
    "acme", "initech", "globex", "umbrella", "hooli", "stark", "wayne", "tyrell", "soylent",
    "cyberdyne", "aperture", "vandelay", "wonka", "oscorp", "gringotts", "monarch", "dunder",
    "pied", "massive", "nakatomi",
)  # fmt: skip
_NOUNS = (
    "kafka", "redis", "postgres", "mongo", "etcd", "minio", "vault", "keycloak", "grafana",
    "loki", "tempo", "jaeger", "istio", "argo", "tekton", "spark", "flink", "nifi", "cassandra",
    "scylla", "couch", "rabbit", "nats", "pulsar", "elastic", "solr", "memcached", "mariadb",
    "mysql", "cockroach", "yugabyte", "clickhouse", "druid", "pinot", "presto", "trino",
    "airflow", "kubeflow", "ray", "dask", "jupyter", "gitea", "harbor", "quay", "nexus",
    "sonar", "jenkins", "vector", "fluentd", "falco", "kyverno", "opa", "cert", "dns", "ingress",
    "backup", "velero", "rook", "ceph", "longhorn",
)  # fmt: skip
_KINDS = (
    "Cluster", "Instance", "Backup", "Restore", "Topic", "User", "Database", "Schedule",
    "Gateway", "Route", "Policy", "Pipeline", "Connector", "Mirror", "Replica", "Snapshot",
    "Tenant", "Dashboard", "Alert", "Bucket", "Index", "Job", "Pool", "Realm", "Client",
)  # fmt: skip
_CATEGORIES = (
    "Database", "Storage", "Monitoring", "Logging & Tracing", "Security", "Networking",
    "Streaming & Messaging", "Developer Tools", "Integration & Delivery", "AI/Machine Learning",
)  # fmt: skip
_X_DESCRIPTORS = (
    "urn:alm:descriptor:com.tectonic.ui:podCount",
    "urn:alm:descriptor:com.tectonic.ui:resourceRequirements",
    "urn:alm:descriptor:com.tectonic.ui:text",
    "urn:alm:descriptor:com.tectonic.ui:number",
    "urn:alm:descriptor:com.tectonic.ui:booleanSwitch",
    "urn:alm:descriptor:io.kubernetes:Secret",
    "urn:alm:descriptor:com.tectonic.ui:advanced",
    "urn:alm:descriptor:io.kubernetes.conditions",
)
_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
_CORE_RESOURCES = (
    "pods", "services", "endpoints", "persistentvolumeclaims", "events", "configmaps",
    "secrets", "serviceaccounts",
)  # fmt: skip
_ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><circle cx="32" cy="32" '
    'r="30" fill="#{color}"/><text x="32" y="40" font-size="22" text-anchor="middle" '
    'fill="#fff">{letters}</text></svg>'
)
# Share of bundles carrying olm.bundle.object (CSV + CRD); the rest carry olm.csv.metadata.
BUNDLE_OBJECT_SHARE = 0.6


# --- the plan: names, versions, the upgrade graph, channels -----------------------------


@dataclass(frozen=True)
class Release:
    """One bundle's place in its package's global upgrade order."""

    name: str
    version: tuple[int, int, int]
    replaces: str = ""
    skips: tuple[str, ...] = ()
    skip_range: str = ""

    @property
    def semver(self) -> str:
        return dotted(self.version)


@dataclass(frozen=True)
class PackageSpec:
    """What stays fixed across a package's bundles: naming, APIs, sizes of its texts."""

    index: int
    name: str
    org: str
    noun: str
    group: str
    kinds: tuple[str, ...]
    color: str
    category: str


@dataclass
class Plan:
    """A package's releases, channels and cross-package dependencies."""

    spec: PackageSpec
    releases: list[Release]
    channels: dict[str, list[Release]]
    default_channel: str
    requires_gvk: tuple[str, str, str] | None = None
    requires_package: str | None = None
    deprecated: list[dict[str, Any]] = field(default_factory=list)


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def package_rng(seed: int, index: int, purpose: str) -> random.Random:
    """A random stream per (seed, package, purpose): adding packages never reshuffles others."""
    return random.Random(f"{seed}/{index}/{purpose}")


def package_spec(index: int, seed: int) -> PackageSpec:
    """The fixed traits of package ``index`` (cheap, so dependencies can name other packages)."""
    rng = package_rng(seed, index, "spec")
    org, noun = rng.choice(_ORGS), rng.choice(_NOUNS)
    name = f"{noun}-operator-{index:04d}"
    kinds = tuple(rng.sample(_KINDS, rng.randint(1, 5)))
    return PackageSpec(
        index=index,
        name=name,
        org=org,
        noun=noun,
        group=f"{noun}{index}.{org}.io",
        kinds=kinds,
        color=f"{rng.getrandbits(24):06x}",
        category=rng.choice(_CATEGORIES),
    )


def plan_versions(rng: random.Random, count: int) -> list[tuple[int, int, int]]:
    """Ascending versions: mostly patch bumps, some minor, rarely major (as in real repos)."""
    major, minor, patch = rng.choice((0, 1)), rng.randint(0, 5), 0
    versions = [(major, minor, patch)]
    while len(versions) < count:
        roll = rng.random()
        if roll < 0.65:
            patch += 1
        elif roll < 0.95:
            minor, patch = minor + 1, 0
        else:
            major, minor, patch = major + 1, 0, 0
        versions.append((major, minor, patch))
    return versions


def plan_releases(spec: PackageSpec, rng: random.Random, count: int) -> list[Release]:
    """A replaces chain with some bad releases skipped (left off the chain), extra skips of
    older patches, and skipRanges over the previous minor stream."""
    versions = plan_versions(rng, count)
    releases: list[Release] = []
    off_chain: set[int] = set()
    for i, version in enumerate(versions):
        name = f"{spec.name}.v{dotted(version)}"
        replaces, skips, skip_range = "", (), ""
        if i:
            replaces = releases[i - 1].name
            previous = releases[i - 1]
            if i >= 2 and previous.replaces and (i - 1) not in off_chain and rng.random() < 0.1:
                # A bad release: the next one replaces its predecessor and skips it.
                replaces, skips = previous.replaces, (previous.name,)
                off_chain.add(i - 1)
            elif i >= 3 and rng.random() < 0.08:
                skips = (releases[i - 3].name,)
            if rng.random() < 0.25:
                base = next(v for v in versions if v[:2] >= (previous.version[0], 0))
                skip_range = f">={dotted(base)} <{dotted(version)}"
        releases.append(Release(name, version, replaces, skips, skip_range))
    return releases


def plan_channels(releases: list[Release], rng: random.Random) -> dict[str, list[Release]]:
    """stable holds everything; fast/candidate are recent windows; v<X>.<Y> one minor stream.

    Every channel is a contiguous run of the global order, which keeps exactly one head and
    the same edges per bundle in every channel.
    """
    count = len(releases)
    latest = releases[-1].version[:2]
    minors = sorted({r.version[:2] for r in releases})
    extras: dict[str, list[Release]] = {
        "fast": releases[count // 3 :],
        "candidate": releases[max(0, count - max(1, count // 4)) :],
        f"v{dotted(latest)}": [r for r in releases if r.version[:2] == latest],
    }
    if len(minors) > 1:
        older = minors[-2]
        extras[f"v{dotted(older)}"] = [r for r in releases if r.version[:2] == older]
    chosen = rng.sample(sorted(extras), min(len(extras), rng.randint(0, 3)))
    channels = {"stable": releases}
    channels.update({name: extras[name] for name in chosen})
    return dict(sorted(channels.items()))


def plan_deprecations(index: int, channels: dict[str, list[Release]]) -> list[dict[str, Any]]:
    """A couple of packages deprecate an old bundle and an old channel; one in 100 is
    deprecated as a whole."""
    if index % 25:
        return []
    stable = channels["stable"]
    entries: list[dict[str, Any]] = [
        {
            "reference": {"schema": "olm.bundle", "name": stable[0].name},
            "message": f"{stable[0].name} has a data-loss bug; upgrade to {stable[-1].name}.",
        }
    ]
    old_channels = [c for c in channels if c.startswith("v") and channels[c][-1] != stable[-1]]
    if old_channels:
        entries.append(
            {
                "reference": {"schema": "olm.channel", "name": old_channels[0]},
                "message": f"channel {old_channels[0]} is no longer maintained; use stable.",
            }
        )
    if index % 100 == 50:
        entries.append(
            {"reference": {"schema": "olm.package"}, "message": "this operator is unsupported."}
        )
    return entries


def plan_package(index: int, packages: int, bundles: int, seed: int) -> Plan:
    """Everything about one package but its payload texts."""
    spec = package_spec(index, seed)
    rng = package_rng(seed, index, "graph")
    releases = plan_releases(spec, rng, bundles)
    channels = plan_channels(releases, rng)
    plan = Plan(spec, releases, channels, "stable", deprecated=plan_deprecations(index, channels))
    if packages > 1:
        others = [i for i in range(packages) if i != index]
        if rng.random() < 0.2:
            other = package_spec(rng.choice(others), seed)
            plan.requires_gvk = (other.group, "v1", other.kinds[0])
        if rng.random() < 0.15:
            plan.requires_package = package_spec(rng.choice(others), seed).name
    return plan


# --- payload texts -----------------------------------------------------------------------


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choices(_WORDS, k=count))


def sentence(rng: random.Random, count: int) -> str:
    text = words(rng, count)
    return text[0].upper() + text[1:] + "."


def digest(rng: random.Random) -> str:
    return f"sha256:{rng.getrandbits(256):064x}"


def markdown(spec: PackageSpec, rng: random.Random, size: int) -> str:
    """A README-like description: overview, features, a config table, install snippet."""
    title = f"{spec.noun.title()} Operator"
    parts = [
        f"## {title}\n\n{sentence(rng, 40)} {sentence(rng, 30)}\n",
        "### Features\n\n"
        + "".join(f"* **{words(rng, 2)}**: {sentence(rng, 14)}\n" for _ in range(6)),
        "### Configuration\n\n| Field | Default | Description |\n|---|---|---|\n"
        + "".join(
            f"| `spec.{rng.choice(_WORDS)}{i}` | `{rng.randint(0, 99)}` | {sentence(rng, 9)} |\n"
            for i in range(8)
        ),
        "### Installation\n\n```yaml\napiVersion: operators.coreos.com/v1alpha1\nkind: "
        f"Subscription\nmetadata:\n  name: {spec.name}\nspec:\n  channel: stable\n  name: "
        f"{spec.name}\n  source: community-operators\n```\n",
    ]
    while sum(len(p) for p in parts) < size:
        parts.append(f"### {words(rng, 3).title()}\n\n{sentence(rng, 60)} {sentence(rng, 45)}\n")
    return "\n".join(parts)


def release_notes(release: Release, rng: random.Random) -> str:
    bullets = "".join(f"* {sentence(rng, rng.randint(6, 16))}\n" for _ in range(rng.randint(2, 7)))
    return f"\n### Release notes for {release.semver}\n\n{bullets}"


_KEPT_SCHEMA = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def api_versions(release: Release) -> list[str]:
    """The API versions a release's CRD serves: its own and every older one."""
    order = ["v1alpha1", "v1beta1", "v1"]
    return order[: order.index(api_version(release)) + 1]


def api_version(release: Release) -> str:
    if release.version[0] >= 1:
        return "v1"
    return "v1beta1" if release.version[1] >= 3 else "v1alpha1"


def example_spec(rng: random.Random) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": rng.randint(1, 5), "version": f"{rng.randint(1, 9)}.0"}
    for i in range(rng.randint(3, 7)):
        key = f"{rng.choice(_WORDS)}{i}"
        spec[key] = rng.choice(
            [
                rng.randint(0, 1000),
                words(rng, 2),
                {"enabled": rng.random() < 0.5, "size": f"{rng.randint(1, 500)}Gi"},
            ]
        )
    return spec


def alm_examples(spec: PackageSpec, release: Release, rng: random.Random) -> str:
    examples = [
        {
            "apiVersion": f"{spec.group}/{api_version(release)}",
            "kind": kind,
            "metadata": {"name": f"example-{kind.lower()}"},
            "spec": example_spec(rng),
        }
        for kind in spec.kinds
    ]
    return json.dumps(examples, indent=2)


def descriptors(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [
        {
            "path": f"{rng.choice(_WORDS)}.{rng.choice(_WORDS)}{i}",
            "displayName": words(rng, 2).title(),
            "description": sentence(rng, rng.randint(4, 10)),
            "x-descriptors": rng.sample(_X_DESCRIPTORS, rng.randint(1, 2)),
        }
        for i in range(count)
    ]


def owned_crds(spec: PackageSpec, release: Release, rng: random.Random) -> list[dict[str, Any]]:
    return [
        {
            "name": f"{kind.lower()}s.{spec.group}",
            "version": api_version(release),
            "kind": kind,
            "displayName": f"{spec.noun.title()} {kind}",
            "description": sentence(rng, 12),
            "resources": [
                {"kind": k, "name": "", "version": "v1"} for k in ("StatefulSet", "Service")
            ],
            "specDescriptors": descriptors(rng, rng.randint(1, 3)),
            "statusDescriptors": descriptors(rng, 1),
        }
        for kind in spec.kinds
    ]


def rules(rng: random.Random, spec: PackageSpec, count: int) -> list[dict[str, Any]]:
    out = [
        {"apiGroups": [""], "resources": list(_CORE_RESOURCES), "verbs": list(_VERBS)},
        {
            "apiGroups": [spec.group],
            "resources": [f"{k.lower()}s" for k in spec.kinds],
            "verbs": ["*"],
        },
    ]
    for _ in range(count):
        out.append(
            {
                "apiGroups": [rng.choice(("apps", "batch", "policy", "networking.k8s.io"))],
                "resources": rng.sample(
                    (
                        "deployments",
                        "statefulsets",
                        "jobs",
                        "cronjobs",
                        "ingresses",
                        "poddisruptionbudgets",
                        "networkpolicies",
                    ),
                    2,
                ),
                "verbs": rng.sample(_VERBS, rng.randint(2, 7)),
            }
        )
    return out


def container(name: str, image: str, rng: random.Random, env: int) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "args": ["--leader-elect", "--metrics-bind-address=127.0.0.1:8080", "--zap-log-level=info"],
        "command": ["/manager"],
        "env": [
            {"name": f"RELATED_IMAGE_{rng.choice(_WORDS).upper()}_{i}", "value": words(rng, 1)}
            for i in range(env)
        ],
        "ports": [{"containerPort": 8443, "name": "https", "protocol": "TCP"}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8081}, "initialDelaySeconds": 15},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}, "periodSeconds": 10},
        "resources": {
            "limits": {"cpu": "500m", "memory": f"{rng.choice((128, 256, 512))}Mi"},
            "requests": {"cpu": "10m", "memory": "64Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "volumeMounts": [{"mountPath": "/tmp/k8s-webhook-server/serving-certs", "name": "cert"}],
    }


def deployments(spec: PackageSpec, images: dict[str, str], rng: random.Random) -> list[Any]:
    labels = {"control-plane": "controller-manager", "app.kubernetes.io/name": spec.name}
    return [
        {
            "name": f"{spec.noun}-controller-manager",
            "label": labels,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "strategy": {},
                "template": {
                    "metadata": {
                        "annotations": {"kubectl.kubernetes.io/default-container": "manager"},
                        "labels": labels,
                    },
                    "spec": {
                        "containers": [
                            container("manager", images["manager"], rng, rng.randint(4, 14)),
                            container("kube-rbac-proxy", images["kube-rbac-proxy"], rng, 0),
                        ],
                        "securityContext": {"runAsNonRoot": True},
                        "serviceAccountName": f"{spec.noun}-controller-manager",
                        "terminationGracePeriodSeconds": 10,
                        "volumes": [
                            {
                                "name": "cert",
                                "secret": {"defaultMode": 420, "secretName": "webhook-server-cert"},
                            }
                        ],
                    },
                },
            },
        }
    ]


@dataclass
class BundleTexts:
    """Per-package texts reused (with per-release changes) by every bundle of the package."""

    description: str
    icon: dict[str, str]
    keywords: list[str]
    maintainers: list[dict[str, str]]
    links: list[dict[str, str]]


def package_texts(spec: PackageSpec, rng: random.Random) -> BundleTexts:
    letters = spec.noun[:2].upper()
    svg = _ICON_SVG.format(color=spec.color, letters=letters)
    return BundleTexts(
        description=markdown(spec, rng, rng.randint(1800, 3800)),
        icon={"base64data": base64.b64encode(svg.encode()).decode(), "mediatype": "image/svg+xml"},
        keywords=sorted({spec.noun, *rng.sample(_WORDS[:60], 4)}),
        maintainers=[
            {
                "name": f"{spec.org.title()} {spec.noun.title()} Team",
                "email": f"{spec.noun}@{spec.org}.io",
            }
        ],
        links=[
            {"name": "Documentation", "url": f"https://docs.{spec.org}.io/{spec.noun}"},
            {"name": "Source", "url": f"https://github.com/{spec.org}/{spec.noun}-operator"},
        ],
    )


def images(spec: PackageSpec, rng: random.Random) -> dict[str, str]:
    """name -> pull spec by digest for the bundle, the operator and its operands."""
    out = {
        "bundle": f"quay.io/{spec.org}/{spec.name}-bundle@{digest(rng)}",
        "manager": f"quay.io/{spec.org}/{spec.name}@{digest(rng)}",
        "kube-rbac-proxy": f"gcr.io/kubebuilder/kube-rbac-proxy@{digest(rng)}",
    }
    for operand in range(rng.randint(0, 3)):
        out[f"{spec.noun}-{operand}"] = (
            f"quay.io/{spec.org}/{spec.noun}-operand-{operand}@{digest(rng)}"
        )
    return out


def csv_annotations(
    spec: PackageSpec, release: Release, images_: dict[str, str], rng: random.Random
) -> dict[str, str]:
    annotations = {
        "alm-examples": alm_examples(spec, release, rng),
        "capabilities": rng.choice(
            ("Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights")
        ),
        "categories": spec.category,
        "containerImage": images_["manager"],
        "createdAt": f"202{release.version[0] % 5}-0{1 + release.version[1] % 9}-1{release.version[2] % 10}T12:00:00Z",
        "description": sentence(rng, 12),
        "operators.operatorframework.io/builder": "operator-sdk-v1.31.0",
        "operators.operatorframework.io/project_layout": "go.kubebuilder.io/v3",
        "repository": f"https://github.com/{spec.org}/{spec.noun}-operator",
        "support": spec.org.title(),
    }
    if release.skip_range:
        annotations["olm.skipRange"] = release.skip_range
    return annotations


def csv_manifest(
    spec: PackageSpec,
    release: Release,
    texts: BundleTexts,
    images_: dict[str, str],
    rng: random.Random,
) -> dict[str, Any]:
    """A ClusterServiceVersion as operator-sdk writes it (12-20 KB of compact JSON)."""
    csv_spec: dict[str, Any] = {
        "apiservicedefinitions": {},
        "customresourcedefinitions": {"owned": owned_crds(spec, release, rng)},
        "description": texts.description + release_notes(release, rng),
        "displayName": f"{spec.noun.title()} Operator",
        "icon": [texts.icon],
        "install": {
            "strategy": "deployment",
            "spec": {
                "clusterPermissions": [
                    {
                        "rules": rules(rng, spec, rng.randint(3, 8)),
                        "serviceAccountName": f"{spec.noun}-controller-manager",
                    }
                ],
                "permissions": [
                    {
                        "rules": rules(rng, spec, rng.randint(1, 3)),
                        "serviceAccountName": f"{spec.noun}-controller-manager",
                    }
                ],
                "deployments": deployments(spec, images_, rng),
            },
        },
        "installModes": [
            {"supported": mode != "MultiNamespace", "type": mode}
            for mode in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
        ],
        "keywords": texts.keywords,
        "links": texts.links,
        "maintainers": texts.maintainers,
        "maturity": "stable" if release.version[0] else "alpha",
        "minKubeVersion": "1.21.0",
        "provider": {"name": spec.org.title()},
        "relatedImages": [{"name": n, "image": i} for n, i in images_.items() if n != "bundle"],
        "version": release.semver,
    }
    if release.replaces:
        csv_spec["replaces"] = release.replaces
    if release.skips:
        csv_spec["skips"] = list(release.skips)
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "annotations": csv_annotations(spec, release, images_, rng),
            "labels": {
                "operatorframework.io/arch.amd64": "supported",
                "operatorframework.io/os.linux": "supported",
            },
            "name": release.name,
            "namespace": "placeholder",
        },
        "spec": csv_spec,
    }


def schema_properties(rng: random.Random, depth: int) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for i in range(rng.randint(3, 6)):
        key = f"{rng.choice(_WORDS)}{i}"
        if depth and rng.random() < 0.25:
            props[key] = {
                "type": "object",
                "description": sentence(rng, 6),
                "properties": schema_properties(rng, depth - 1),
            }
        else:
            props[key] = {
                "type": rng.choice(("string", "integer", "boolean")),
                "description": sentence(rng, rng.randint(4, 10)),
            }
    return props


def crd_manifest(spec: PackageSpec, release: Release, rng: random.Random) -> dict[str, Any]:
    """The CRD of the package's first kind, with an OpenAPI schema of a few KB; older API
    versions stay listed, no longer served (clusters store them: dropping them would
    break upgrades, as ``crd-upgrade/stored-versions`` says)."""
    kind = spec.kinds[0]
    # one schema per API version, as real operators change a CRD's schema rarely
    same = random.Random(f"{spec.name}/{api_version(release)}")
    schema = {
        "description": sentence(same, 10),
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": schema_properties(same, 2)},
            "status": {"type": "object", "properties": schema_properties(same, 0)},
        },
        "type": "object",
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "annotations": {"controller-gen.kubebuilder.io/version": "v0.13.0"},
            "name": f"{kind.lower()}s.{spec.group}",
        },
        "spec": {
            "group": spec.group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": f"{kind.lower()}s",
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                *(
                    {
                        "name": name,
                        "schema": {"openAPIV3Schema": _KEPT_SCHEMA},
                        "served": False,
                        "storage": False,
                    }
                    for name in api_versions(release)[:-1]
                ),
                {
                    "name": api_version(release),
                    "schema": {"openAPIV3Schema": schema},
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                },
            ],
        },
    }


def bundle_object(manifest: dict[str, Any]) -> dict[str, Any]:
    """An olm.bundle.object property as opm renders it (compact JSON with sorted keys)."""
    data = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {
        "type": "olm.bundle.object",
        "value": {"data": base64.b64encode(data.encode()).decode()},
    }


def csv_metadata(csv: dict[str, Any]) -> dict[str, Any]:
    """The olm.csv.metadata property opm derives from a CSV."""
    spec = csv["spec"]
    return {
        "type": "olm.csv.metadata",
        "value": {
            "annotations": csv["metadata"]["annotations"],
            "apiServiceDefinitions": {},
            "crdDescriptions": spec["customresourcedefinitions"],
            "description": spec["description"],
            "displayName": spec["displayName"],
            "installModes": spec["installModes"],
            "keywords": spec["keywords"],
            "labels": csv["metadata"]["labels"],
            "links": spec["links"],
            "maintainers": spec["maintainers"],
            "maturity": spec["maturity"],
            "minKubeVersion": spec["minKubeVersion"],
            "provider": spec["provider"],
        },
    }


# --- blobs ---------------------------------------------------------------------------------


def package_blob(plan: Plan, texts: BundleTexts) -> dict[str, Any]:
    return {
        "schema": "olm.package",
        "name": plan.spec.name,
        "defaultChannel": plan.default_channel,
        "icon": texts.icon,
        "description": texts.description[:1500],
    }


def channel_blobs(plan: Plan) -> list[dict[str, Any]]:
    blobs = []
    for name, releases in plan.channels.items():
        entries = []
        for release in releases:
            entry: dict[str, Any] = {"name": release.name}
            if release.replaces:
                entry["replaces"] = release.replaces
            if release.skips:
                entry["skips"] = list(release.skips)
            if release.skip_range:
                entry["skipRange"] = release.skip_range
            entries.append(entry)
        blobs.append(
            {"schema": "olm.channel", "name": name, "package": plan.spec.name, "entries": entries}
        )
    return blobs


def bundle_properties(
    plan: Plan, release: Release, payload: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    spec = plan.spec
    properties = [
        {
            "type": "olm.gvk",
            "value": {"group": spec.group, "kind": kind, "version": api_version(release)},
        }
        for kind in spec.kinds
    ]
    if plan.requires_gvk:
        group, version, kind = plan.requires_gvk
        properties.append(
            {
                "type": "olm.gvk.required",
                "value": {"group": group, "kind": kind, "version": version},
            }
        )
    properties.append(
        {"type": "olm.package", "value": {"packageName": spec.name, "version": release.semver}}
    )
    if plan.requires_package:
        properties.append(
            {
                "type": "olm.package.required",
                "value": {"packageName": plan.requires_package, "versionRange": ">=0.1.0"},
            }
        )
    if release.version[1] % 4 == 1:
        properties.append({"type": "olm.maxOpenShiftVersion", "value": "4.16"})
    return properties + payload


def bundle_blob(
    plan: Plan, release: Release, texts: BundleTexts, rng: random.Random
) -> dict[str, Any]:
    images_ = images(plan.spec, rng)
    csv = csv_manifest(plan.spec, release, texts, images_, rng)
    if rng.random() < BUNDLE_OBJECT_SHARE:
        payload = [bundle_object(csv), bundle_object(crd_manifest(plan.spec, release, rng))]
    else:
        payload = [csv_metadata(csv)]
    related = sorted(
        ({"name": "" if n == "bundle" else n, "image": i} for n, i in images_.items()),
        key=lambda r: r["image"],
    )
    return {
        "schema": "olm.bundle",
        "name": release.name,
        "package": plan.spec.name,
        "image": images_["bundle"],
        "properties": bundle_properties(plan, release, payload),
        "relatedImages": related,
    }


def package_blobs(index: int, packages: int, bundles: int, seed: int) -> list[dict[str, Any]]:
    """Every blob of package ``index`` in opm's order: package, channels, bundles, deprecations."""
    plan = plan_package(index, packages, bundles, seed)
    texts = package_texts(plan.spec, package_rng(seed, index, "texts"))
    rng = package_rng(seed, index, "bundles")
    blobs = [package_blob(plan, texts), *channel_blobs(plan)]
    blobs += sorted(
        (bundle_blob(plan, r, texts, rng) for r in plan.releases), key=lambda b: b["name"]
    )
    if plan.deprecated:
        blobs.append(
            {"schema": "olm.deprecations", "package": plan.spec.name, "entries": plan.deprecated}
        )
    return blobs


# --- writing ------------------------------------------------------------------------------


def serialize(blobs: list[dict[str, Any]], fmt: str) -> str:
    """opm's layout: 4-space JSON objects one after another, or ``---``-separated YAML."""
    if fmt == "json":
        return "".join(json.dumps(b, indent=4, ensure_ascii=False) + "\n" for b in blobs)
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return "".join(
        "---\n" + yaml.dump(b, Dumper=dumper, sort_keys=True, width=1 << 20) for b in blobs
    )


@dataclass
class Stats:
    packages: int = 0
    bundles: int = 0
    channels: int = 0
    bytes: int = 0
    seconds: float = 0.0


def iter_packages(packages: int, bundles: int, seed: int) -> Iterator[list[dict[str, Any]]]:
    for index in range(packages):
        yield package_blobs(index, packages, bundles, seed)


def generate(out_dir: Path, packages: int, bundles: int, fmt: str = "json", seed: int = 1) -> Stats:
    """Write ``<out_dir>/<package>/catalog.<fmt>`` for every package; returns what it wrote."""
    started = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = Stats()
    for blobs in iter_packages(packages, bundles, seed):
        directory = out_dir / blobs[0]["name"]
        directory.mkdir(exist_ok=True)
        text = serialize(blobs, fmt).encode()
        (directory / f"catalog.{fmt}").write_bytes(text)
        stats.packages += 1
        stats.bundles += sum(b["schema"] == "olm.bundle" for b in blobs)
        stats.channels += sum(b["schema"] == "olm.channel" for b in blobs)
        stats.bytes += len(text)
    stats.seconds = time.perf_counter() - started
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="where to write <package>/catalog.<format>")
    parser.add_argument("--packages", type=int, default=10)
    parser.add_argument("--bundles-per-package", type=int, default=20)
    parser.add_argument("--format", choices=FORMATS, default="json")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.packages < 1 or args.bundles_per_package < 1:
        parser.error("--packages and --bundles-per-package must be at least 1")
    stats = generate(args.out_dir, args.packages, args.bundles_per_package, args.format, args.seed)
    print(
        f"{args.out_dir}: {stats.packages} packages, {stats.channels} channels, "
        f"{stats.bundles} bundles, {stats.bytes / 2**20:.1f} MB "
        f"({stats.bytes / max(stats.bundles, 1) / 2**10:.1f} KB/bundle) in {stats.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
