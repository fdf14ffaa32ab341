"""A corpus of broken bundles: the valid etcd-operator 0.3.0 bundle with one defect each.

Every case copies bundle/etcd-operator/0.3.0, applies one mutation and validates with every
suite. It must report the expected check (with the expected severity, file and line) and
no error from any other check, unless the case lists it in ``also`` and says why.

``UPDATE_GOLDEN=1 pytest tests/bundle/test_corpus.py`` rewrites golden/corpus.txt (every
finding of every case, as the CLI prints it) and passes; review the diff before committing.
"""

from __future__ import annotations

import base64
import os
import random
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from olmtool import yamlwrite
from olmtool.bundle import format as fmt
from olmtool.bundle.checks import DEFAULT_SUITES, OPTIONAL_SUITES, TARGET_SUITES
from olmtool.bundle.checks.table import CHECKS
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import Report, select_suites, validate_bundle
from olmtool.errors import InputError

SOURCE = Path(__file__).resolve().parents[2] / "bundle" / "etcd-operator" / "0.3.0"
GOLDEN = Path(__file__).parent / "golden" / "corpus.txt"
CHECKS_DIR = Path(__file__).resolve().parents[2] / "olmtool" / "bundle" / "checks"

CSV = "manifests/etcd-operator.clusterserviceversion.yaml"
CRD = "manifests/etcd.olmtool.dev_etcdclusters.yaml"
SERVICE = "manifests/etcd-operator-health_v1_service.yaml"
MONITOR = "manifests/etcd-metrics_monitoring.coreos.com_v1_servicemonitor.yaml"
RULES = "manifests/etcd-alerts_monitoring.coreos.com_v1_prometheusrule.yaml"
ANNOTATIONS = fmt.ANNOTATIONS_FILE
DOCKERFILE = fmt.DOCKERFILE

Mutation = Callable[[Path], None]
Doc = Any  # a ruamel round-trip document


# -- mutations ---------------------------------------------------------------------------


def replace(file: str, old: str, new: str, count: int = 1) -> Mutation:
    """Replace ``old`` (which must occur exactly ``count`` times) in a file's text."""

    def mutate(root: Path) -> None:
        path = root / file
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == count, f"{old!r} occurs {text.count(old)} times in {file}"
        path.write_text(text.replace(old, new), encoding="utf-8")

    return mutate


def replace_bytes(file: str, old: bytes, new: bytes) -> Mutation:
    """Like :func:`replace`, for bytes that are not UTF-8."""

    def mutate(root: Path) -> None:
        path = root / file
        data = path.read_bytes()
        assert data.count(old) == 1, old
        path.write_bytes(data.replace(old, new))

    return mutate


def replace_re(file: str, pattern: str, new: str | Callable[[re.Match], str]) -> Mutation:
    """Replace the one match of a multi-line regular expression."""

    def mutate(root: Path) -> None:
        path = root / file
        repl = new if callable(new) else (lambda match: new)
        text, found = re.subn(pattern, repl, path.read_text(encoding="utf-8"), flags=re.M)
        assert found == 1, f"{pattern!r} matches {found} times in {file}"
        path.write_text(text, encoding="utf-8")

    return mutate


def edit(file: str, change: Callable[[Doc], object]) -> Mutation:
    """Change a YAML file through a ruamel round trip (comments and layout are kept)."""

    def mutate(root: Path) -> None:
        path = root / file
        document = yamlwrite.loads(path.read_text(encoding="utf-8"))
        change(document)
        path.write_text(yamlwrite.dump_document(document), encoding="utf-8")

    return mutate


def write(file: str, content: str | bytes) -> Mutation:
    def mutate(root: Path) -> None:
        path = root / file
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")

    return mutate


def delete(file: str) -> Mutation:
    def mutate(root: Path) -> None:
        path = root / file
        assert path.exists(), path
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()

    return mutate


def symlink(file: str, target: str) -> Mutation:
    """``file`` becomes a symlink to ``target`` (relative to the link's directory)."""

    def mutate(root: Path) -> None:
        (root / file).symlink_to(target)

    return mutate


def copy(source: str, target: str, change: Callable[[str], str] = lambda text: text) -> Mutation:
    def mutate(root: Path) -> None:
        text = (root / source).read_text(encoding="utf-8")
        (root / target).write_text(change(text), encoding="utf-8")

    return mutate


def annotation(key: str, value: str | None) -> Mutation:
    """Set (or with None remove) an annotation in annotations.yaml AND bundle.Dockerfile, so
    that the two stay consistent and only the annotation's value is the defect."""

    def mutate(root: Path) -> None:
        for file, pattern, line in (
            (ANNOTATIONS, rf"^  {re.escape(key)}:.*\n", f"  {key}: {value!r}\n"),
            (DOCKERFILE, rf"^LABEL {re.escape(key)}=.*\n", f"LABEL {key}={value}\n"),
        ):
            path = root / file
            text, found = re.subn(
                pattern, "" if value is None else line, path.read_text(), flags=re.M
            )
            assert found == 1, (file, key)
            path.write_text(text)

    return mutate


def chain(*mutations: Mutation) -> Mutation:
    """Several edits that together make ONE defect (e.g. a manifest plus what refers to it)."""

    def mutate(root: Path) -> None:
        for mutation in mutations:
            mutation(root)

    return mutate


def csv_edit(change: Callable[[Doc], object]) -> Mutation:
    return edit(CSV, change)


def _owned(doc: Doc) -> list:
    return doc["spec"]["customresourcedefinitions"]["owned"]


def _spec_property(doc: Doc, name: str) -> Doc:
    """A property of the storage version's (v1beta1's) spec schema in the CRD."""
    schema = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema["properties"]["spec"]["properties"][name]


def examples(text: str | None) -> Mutation:
    """Replace (or with None remove) the CSV's alm-examples annotation."""
    block = "".join(f"      {line}\n" for line in (text or "").splitlines())
    return replace_re(
        CSV,
        r"^    alm-examples: \|\n(?:      .*\n)+",
        "" if text is None else f"    alm-examples: |\n{block}",
    )


ICON = r"^    - base64data: .*\n      mediatype: image/svg\+xml\n"


def append_to_spec(text: str) -> Mutation:
    """Add fields at the end of the CSV's spec (the file ends with spec.version)."""
    return replace(CSV, "\n  version: 0.3.0\n", f"\n  version: 0.3.0\n{text}")


def config_map(name: str, size: int, seed: int) -> str:
    """A ConfigMap holding ``size`` random (incompressible) bytes.

    Seeded, not os.urandom: the golden file records the exact compressed size.
    """
    data = base64.b64encode(random.Random(seed).randbytes(size)).decode()
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
        f"binaryData:\n  seed.bin: {data}\n"
    )


# -- manifests added by some cases -------------------------------------------------------

BACKUP_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: etcdbackups.etcd.olmtool.dev
spec:
  group: etcd.olmtool.dev
  names:
    kind: EtcdBackup
    listKind: EtcdBackupList
    plural: etcdbackups
    singular: etcdbackup
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                cluster:
                  type: string
"""

# The same kind as a v1beta1 CRD: singular spec.version, no schema.
V1BETA1_BACKUP_CRD = """\
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: etcdbackups.etcd.olmtool.dev
spec:
  group: etcd.olmtool.dev
  version: v1
  names:
    kind: EtcdBackup
    listKind: EtcdBackupList
    plural: etcdbackups
    singular: etcdbackup
  scope: Namespaced
"""

BACKUP_OWNED = """\
      - name: etcdbackups.etcd.olmtool.dev
        description: EtcdBackup is a one-off snapshot of an etcd cluster.
        displayName: etcd Backup
        kind: EtcdBackup
        version: v1
"""


def pdb(api_version: str, budget: str) -> str:
    return f"""\
apiVersion: {api_version}
kind: PodDisruptionBudget
metadata:
  name: etcd-operator
spec:
  {budget}
  selector:
    matchLabels:
      app.kubernetes.io/name: etcd-operator
"""


def role(api_version: str, kind: str = "Role", name: str = "etcd-operator-reader") -> str:
    return f"""\
apiVersion: {api_version}
kind: {kind}
metadata:
  name: {name}
rules:
  - apiGroups:
      - ''
    resources:
      - configmaps
    verbs:
      - get
"""


SERVICE_ACCOUNT = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: etcd-operator
"""

PRIORITY_CLASS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: etcd-critical
value: 1000000
globalDefault: true
description: etcd members are evicted last.
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: etcd-migrate
spec:
  template:
    spec:
      containers:
        - image: quay.io/coreos/etcd:v3.5.1
          name: migrate
      restartPolicy: Never
"""

HPA = """\
apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata:
  name: etcd-operator
spec:
  maxReplicas: 3
  minReplicas: 1
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: etcd-operator
"""

DEPENDENCIES = """\
dependencies:
  - type: olm.gvk
    value:
      group: monitoring.coreos.com
      kind: ServiceMonitor
      version: v1
"""

CONVERSION_WEBHOOK = """\
  webhookdefinitions:
    - type: ConversionWebhook
      admissionReviewVersions:
        - v1
      containerPort: 443
      conversionCRDs:
        - etcdclusters.etcd.olmtool.dev
      deploymentName: etcd-operator
      generateName: cetcdclusters.kb.io
      sideEffects: None
      targetPort: 9443
      webhookPath: /convert
"""

VALIDATING_WEBHOOK = """\
  webhookdefinitions:
    - type: ValidatingAdmissionWebhook
      admissionReviewVersions:
        - v1
      containerPort: 443
      deploymentName: etcd-webhook
      generateName: vetcdcluster.kb.io
      sideEffects: None
      webhookPath: /validate-etcd-olmtool-dev-v1beta1-etcdcluster
"""

# A valid admission webhook served by the operator's own deployment (its port 8080).
OPERATOR_WEBHOOK = """\
  webhookdefinitions:
    - type: ValidatingAdmissionWebhook
      admissionReviewVersions:
        - v1
      containerPort: 443
      targetPort: 8080
      deploymentName: etcd-operator
      generateName: vetcdcluster.etcd.olmtool.dev
      sideEffects: None
      webhookPath: /validate-etcd-olmtool-dev-v1beta1-etcdcluster
"""

EXAMPLE = """[
  {
    "apiVersion": "etcd.olmtool.dev/v1beta1",
    "kind": "EtcdCluster",
    "metadata": {"name": "example"},
    "spec": {"replicas": %s}
  }%s
]
"""
BACKUP_EXAMPLE = """,
  {
    "apiVersion": "etcd.olmtool.dev/v1",
    "kind": "EtcdBackup",
    "metadata": {"name": "nightly"},
    "spec": {"cluster": "example"}
  }"""

# Frequently used text of the valid bundle.
INSTALL_MODES = """\
  installModes:
    - supported: true
      type: OwnNamespace
    - supported: true
      type: SingleNamespace
    - supported: true
      type: MultiNamespace
    - supported: true
      type: AllNamespaces
"""
CONTAINER_IMAGE = "                    image: localhost:5000/olmtool/etcd-operator:0.3.0\n"
REQUESTS = """\
                      requests:
                        cpu: 50m
                        memory: 96Mi
"""


# -- the corpus --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    mutate: Mutation
    expected_check: str
    expected_severity: str
    k8s_version: str | None = None
    # Other checks the same defect legitimately triggers as errors (each with a comment).
    also: tuple[str, ...] = ()
    # Where the findings of expected_check are: a path relative to the bundle ("." for the
    # bundle itself) and, inside a YAML document, the line they point at, given as that
    # line's exact text after the mutation (unique in the file) or (text, occurrence).
    file: str = CSV
    at: str | tuple[str, int] | None = None
    xfail: str | None = None


CASES: list[Case] = [
    # -- loader --------------------------------------------------------------------------
    Case("loader/no-csv", delete(CSV), "loader/no-csv", "error", file="manifests"),
    Case(
        "loader/csv-parse/yaml-syntax-error",
        replace(CSV, "  version: 0.3.0\n", "  version: 0.3.0: final\n"),
        "loader/csv-parse",
        "error",
        at="  version: 0.3.0: final",
    ),
    Case(
        "loader/csv-parse/tab-indentation",
        replace(CSV, "  maturity: alpha\n", "\tmaturity: alpha\n"),
        "loader/csv-parse",
        "error",
        at="\tmaturity: alpha",
    ),
    Case(
        "loader/csv-parse/not-utf8",
        replace_bytes(CSV, b"  maturity: alpha\n", b"  maturity: \xe9tape\n"),
        "loader/csv-parse",
        "error",
    ),
    Case(
        "loader/manifest-parse",
        replace(SERVICE, "  name: etcd-operator-health\n", "  name: etcd-operator-health: x\n"),
        "loader/manifest-parse",
        "error",
        file=SERVICE,
        at="  name: etcd-operator-health: x",
    ),
    Case(
        "loader/duplicate-key",
        replace(CSV, "  maturity: alpha\n", "  maturity: alpha\n  maturity: stable\n"),
        "loader/duplicate-key",
        "warning",
        at="  maturity: stable",
    ),
    Case(
        "loader/hidden-file",
        write("manifests/.notes.yaml", "# release notes\n"),
        "loader/hidden-file",
        "error",
        file="manifests/.notes.yaml",
    ),
    Case(
        "loader/subdirectory",
        write("manifests/extra/etcd-operator-reader.yaml", role("rbac.authorization.k8s.io/v1")),
        "loader/subdirectory",
        "error",
        file="manifests/extra",
    ),
    Case(
        "loader/multiple-csvs",
        copy(
            CSV,
            "manifests/zz-etcd-operator.v0.3.1.clusterserviceversion.yaml",
            lambda text: text.replace("etcd-operator.v0.3.0", "etcd-operator.v0.3.1"),
        ),
        "loader/multiple-csvs",
        "error",
        file="manifests/zz-etcd-operator.v0.3.1.clusterserviceversion.yaml",
        at="apiVersion: operators.coreos.com/v1alpha1",
    ),
    Case(
        "loader/crd-api-version",
        replace(
            CRD, "apiVersion: apiextensions.k8s.io/v1\n", "apiVersion: apiextensions.k8s.io/v2\n"
        ),
        "loader/crd-api-version",
        "error",
        file=CRD,
        at="apiVersion: apiextensions.k8s.io/v2",
    ),
    Case(
        "loader/unreadable-file/dangling-symlink",
        symlink("manifests/etcd-operator-reader.yaml", "etcd-operator-reader.yaml.orig"),
        "loader/unreadable-file",
        "error",
        file="manifests/etcd-operator-reader.yaml",
    ),
    Case(
        "loader/unreadable-file/fifo",
        lambda root: os.mkfifo(root / "manifests" / "etcd-operator-reader.yaml"),
        "loader/unreadable-file",
        "error",
        file="manifests/etcd-operator-reader.yaml",
    ),
    # -- format --------------------------------------------------------------------------
    Case(
        "format/manifests-missing",
        delete("manifests"),
        "format/manifests-missing",
        "error",
        file=".",
    ),
    Case(
        "format/metadata-missing", delete("metadata"), "format/metadata-missing", "error", file="."
    ),
    Case(
        "format/annotations-missing",
        delete(ANNOTATIONS),
        "format/annotations-missing",
        "error",
        file="metadata",
    ),
    Case(
        "format/annotations-parse/yaml-syntax-error",
        replace(ANNOTATIONS, "package.v1: etcd-operator\n", "package.v1: etcd-operator: x\n"),
        "format/annotations-parse",
        "error",
        file=ANNOTATIONS,
        at="  operators.operatorframework.io.bundle.package.v1: etcd-operator: x",
    ),
    Case(
        "format/annotations-parse/not-a-mapping",
        write(ANNOTATIONS, "annotations:\n  - registry+v1\n"),
        "format/annotations-parse",
        "error",
        file=ANNOTATIONS,
        at="annotations:",
    ),
    Case(
        "format/annotation-missing/package",
        annotation(fmt.PACKAGE, None),
        "format/annotation-missing",
        "error",
        file=ANNOTATIONS,
        at="annotations:",
    ),
    Case(
        "format/annotation-missing/channels",
        annotation(fmt.CHANNELS, None),
        "format/annotation-missing",
        "error",
        file=ANNOTATIONS,
        at="annotations:",
    ),
    Case(
        "format/mediatype",
        annotation(fmt.MEDIATYPE, "plain+v0"),
        "format/mediatype",
        "error",
        file=ANNOTATIONS,
        at=f"  {fmt.MEDIATYPE}: 'plain+v0'",
    ),
    Case(
        # Upstream never compares these values; opm and OLM read manifests/ anyway.
        "format/directory-annotation",
        annotation(fmt.MANIFESTS, "deploy/"),
        "format/directory-annotation",
        "warning",
        file=ANNOTATIONS,
        at=f"  {fmt.MANIFESTS}: 'deploy/'",
    ),
    Case(
        # Upstream does not catch an empty package.
        "format/package-empty",
        annotation(fmt.PACKAGE, ""),
        "format/package-empty",
        "error",
        file=ANNOTATIONS,
        at=f"  {fmt.PACKAGE}: ''",
    ),
    Case(
        "format/channels-empty",
        annotation(fmt.CHANNELS, ""),
        "format/channels-empty",
        "error",
        file=ANNOTATIONS,
        at=f"  {fmt.CHANNELS}: ''",
    ),
    Case(
        "format/channels-empty/trailing-comma",
        annotation(fmt.CHANNELS, "stable,"),
        "format/channels-empty",
        "error",
        file=ANNOTATIONS,
        at=f"  {fmt.CHANNELS}: 'stable,'",
    ),
    Case(
        "format/default-channel-empty",
        annotation(fmt.DEFAULT_CHANNEL, ""),
        "format/default-channel-empty",
        "error",
        file=ANNOTATIONS,
        at=f"  {fmt.DEFAULT_CHANNEL}: ''",
    ),
    Case(
        # package-level: another bundle may bring the channel
        "format/default-channel-unknown",
        annotation(fmt.DEFAULT_CHANNEL, "fast"),
        "format/default-channel-unknown",
        "warning",
        file=ANNOTATIONS,
        at=f"  {fmt.DEFAULT_CHANNEL}: 'fast'",
    ),
    Case(
        "format/dockerfile-labels/differs",
        replace(DOCKERFILE, f"LABEL {fmt.PACKAGE}=etcd-operator\n", f"LABEL {fmt.PACKAGE}=etcd\n"),
        "format/dockerfile-labels",
        "warning",
        file=DOCKERFILE,
        at=f"LABEL {fmt.PACKAGE}=etcd",
    ),
    Case(
        "format/dockerfile-labels/missing",
        replace(DOCKERFILE, f"LABEL {fmt.CHANNELS}=stable\n", ""),
        "format/dockerfile-labels",
        "warning",
        file=DOCKERFILE,
    ),
    Case(
        "format/dependencies/unknown-type",
        write(
            "metadata/dependencies.yaml",
            DEPENDENCIES + "  - type: olm.gvk.required\n"
            "    value:\n      group: cert-manager.io\n      kind: Certificate\n"
            "      version: v1\n",
        ),
        "format/dependencies",
        "error",
        file="metadata/dependencies.yaml",
        at="  - type: olm.gvk.required",
    ),
    Case(
        "format/dependencies/no-value",
        write("metadata/dependencies.yaml", DEPENDENCIES + "  - type: olm.package\n"),
        "format/dependencies",
        "error",
        file="metadata/dependencies.yaml",
        at="  - type: olm.package",
    ),
    Case(
        "format/dependencies/not-a-list",
        write("metadata/dependencies.yaml", "dependencies:\n  type: olm.gvk\n"),
        "format/dependencies",
        "error",
        file="metadata/dependencies.yaml",
        at="dependencies:",
    ),
    Case(
        # The parser notices the unclosed '[' on the line after it (so the line is that one).
        "format/dependencies/yaml-syntax-error",
        write(
            "metadata/dependencies.yaml",
            DEPENDENCIES.replace("kind: ServiceMonitor", "kind: [ServiceMonitor"),
        ),
        "format/dependencies",
        "error",
        file="metadata/dependencies.yaml",
        at="      version: v1",
    ),
    # -- content -------------------------------------------------------------------------
    Case(
        # upstream silently drops such files when generating the bundle
        "content/unsupported-kind",
        write("manifests/etcd-migrate_batch_v1_job.yaml", JOB),
        "content/unsupported-kind",
        "error",
        file="manifests/etcd-migrate_batch_v1_job.yaml",
        at="kind: Job",
    ),
    Case(
        "content/kind-missing",
        replace(SERVICE, "kind: Service\n", ""),
        "content/kind-missing",
        "error",
        file=SERVICE,
        at="apiVersion: v1",
    ),
    Case(
        "content/type-meta",
        replace(SERVICE, "apiVersion: v1\n", ""),
        "content/type-meta",
        "warning",
        file=SERVICE,
        at="kind: Service",
    ),
    Case(
        "csv/api-version-missing",
        replace(CSV, "apiVersion: operators.coreos.com/v1alpha1\n", ""),
        "csv/api-version-missing",
        "error",
        at="kind: ClusterServiceVersion",
    ),
    Case(
        # Without a kind the CSV is no ClusterServiceVersion: the bundle has none.
        "content/kind-missing/csv",
        replace(CSV, "kind: ClusterServiceVersion\n", ""),
        "content/kind-missing",
        "error",
        also=("loader/no-csv",),
        at="apiVersion: operators.coreos.com/v1alpha1",
    ),
    Case(
        "content/metadata/bad-name",
        replace(SERVICE, "  name: etcd-operator-health\n", "  name: etcd_operator_health\n"),
        "content/metadata",
        "error",
        file=SERVICE,
        at="  name: etcd_operator_health",
    ),
    Case(
        "content/metadata/bad-label-key",
        replace(
            SERVICE,
            "    app.kubernetes.io/name: etcd-operator\n  name:",
            "    app.kubernetes.io/name: etcd-operator\n    app.kubernetes.io/-part-of: etcd\n"
            "  name:",
        ),
        "content/metadata",
        "error",
        file=SERVICE,
        at="    app.kubernetes.io/-part-of: etcd",
    ),
    Case(
        "content/metadata/bad-label-value",
        replace(
            SERVICE,
            "    app.kubernetes.io/name: etcd-operator\n  name:",
            "    app.kubernetes.io/name: etcd operator\n  name:",
        ),
        "content/metadata",
        "error",
        file=SERVICE,
        at="    app.kubernetes.io/name: etcd operator",
    ),
    Case(
        # the classic: an unquoted boolean annotation
        "content/metadata/annotation-not-a-string",
        replace(
            CSV,
            "features.operators.openshift.io/disconnected: 'true'\n",
            "features.operators.openshift.io/disconnected: true\n",
        ),
        "content/metadata",
        "error",
        at="    features.operators.openshift.io/disconnected: true",
    ),
    Case(
        "content/metadata/rbac-name-with-slash",
        write(
            "manifests/reader_rbac.yaml",
            role("rbac.authorization.k8s.io/v1", "ClusterRole", "etcd/reader"),
        ),
        "content/metadata",
        "error",
        file="manifests/reader_rbac.yaml",
        at="  name: etcd/reader",
    ),
    Case(
        "content/metadata/missing",
        write("manifests/etcd-config.yaml", "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n"),
        "content/metadata",
        "error",
        file="manifests/etcd-config.yaml",
        at="apiVersion: v1",
    ),
    # -- csv -----------------------------------------------------------------------------
    Case(
        "csv/type-meta",
        replace(
            CSV,
            "apiVersion: operators.coreos.com/v1alpha1\n",
            "apiVersion: operators.coreos.com/v1\n",
        ),
        "csv/type-meta",
        "warning",
        at="apiVersion: operators.coreos.com/v1",
    ),
    Case(
        "csv/name",
        replace(CSV, "  name: etcd-operator.v0.3.0\n", "  name: etcd-operator.v0.3.0_rc1\n"),
        "csv/name",
        "error",
        at="  name: etcd-operator.v0.3.0_rc1",
    ),
    Case(
        "csv/replaces",
        replace(CSV, "  replaces: etcd-operator.v0.2.0\n", "  replaces: etcd-operator v0.2.0\n"),
        "csv/replaces",
        "error",
        at="  replaces: etcd-operator v0.2.0",
    ),
    Case(
        "csv/no-examples",
        examples(None),
        "csv/no-examples",
        "warning",
        at="  annotations:",
    ),
    Case(
        "csv/examples-both",
        replace(CSV, "    alm-examples: |\n", "    olm.examples: '[]'\n    alm-examples: |\n"),
        "csv/examples-both",
        "warning",
        at="    alm-examples: |",
    ),
    Case(
        "csv/examples-json/syntax-error",
        replace(CSV, '            "name": "example"\n', '            "name": "example",\n'),
        "csv/examples-json",
        "error",
        at=("          },", 0),  # the JSON's line 7, where the error is
    ),
    Case(
        "csv/examples-json/not-an-array",
        examples('{"kind": "EtcdCluster"}'),
        "csv/examples-json",
        "error",
        at="    alm-examples: |",
    ),
    Case(
        "csv/examples-json/item-not-an-object",
        examples(EXAMPLE % (3, ',\n  "EtcdBackup"')),
        "csv/examples-json",
        "error",
        at='        "EtcdBackup"',
    ),
    Case(
        "csv/example-not-owned",
        examples(EXAMPLE % (3, BACKUP_EXAMPLE)),
        "csv/example-not-owned",
        "error",
        at=("        {", 1),  # where the example starts
    ),
    Case(
        "csv/owned-without-example",
        examples("[]"),
        "csv/owned-without-example",
        "warning",
        at="    alm-examples: |",
    ),
    Case(
        # A name that is not <plural>.<group> cannot be the name of any CRD, so the owned
        # CRD is also missing from the bundle.
        "csv/owned-crd-name",
        csv_edit(lambda doc: _owned(doc)[1].__setitem__("name", "etcdclusters")),
        "csv/owned-crd-name",
        "error",
        also=("bundle/owned-crd-missing",),
        at="        name: etcdclusters",
    ),
    Case(
        "csv/install-modes/empty",
        replace(CSV, INSTALL_MODES, "  installModes: []\n"),
        "csv/install-modes",
        "error",
        at="  installModes: []",
    ),
    Case(
        "csv/install-modes/none-supported",
        replace(
            CSV,
            "    - supported: true\n      type:",
            "    - supported: false\n      type:",
            count=4,
        ),
        "csv/install-modes",
        "error",
        at="  installModes:",
    ),
    Case(
        "csv/install-modes/unknown-type",
        replace(
            CSV,
            "    - supported: true\n      type: MultiNamespace\n",
            "    - type: ClusterWide\n      supported: true\n",
        ),
        "csv/install-modes",
        "error",
        at="    - type: ClusterWide",
    ),
    Case(
        # upstream never fires (bug); OLM keeps one of them
        "csv/install-modes-duplicate",
        replace(
            CSV, INSTALL_MODES, INSTALL_MODES + "    - type: OwnNamespace\n      supported: false\n"
        ),
        "csv/install-modes-duplicate",
        "warning",
        at="    - type: OwnNamespace",
    ),
    Case(
        "csv/conversion-webhook",
        append_to_spec(CONVERSION_WEBHOOK),
        "csv/conversion-webhook",
        "error",
        at="  installModes:",
    ),
    Case(
        "csv/min-kube-version-empty",
        replace(CSV, "  minKubeVersion: 1.20.0\n", ""),
        "csv/min-kube-version-empty",
        "warning",
        at="spec:",
    ),
    Case(
        "csv/min-kube-version",
        replace(CSV, "  minKubeVersion: 1.20.0\n", "  minKubeVersion: latest\n"),
        "csv/min-kube-version",
        "error",
        at="  minKubeVersion: latest",
    ),
    Case(
        "csv/annotation-case",
        replace(
            CSV, "    olm.skipRange: '>=0.1.0 <0.3.0'\n", "    olm.skiprange: '>=0.1.0 <0.3.0'\n"
        ),
        "csv/annotation-case",
        "error",
        at="    olm.skiprange: '>=0.1.0 <0.3.0'",
    ),
    Case(
        "csv/olm-properties",
        replace(
            CSV,
            "    olm.skipRange: '>=0.1.0 <0.3.0'\n",
            "    olm.skipRange: '>=0.1.0 <0.3.0'\n"
            """    olm.properties: '[{"type": "olm.maxOpenShiftVersion", "value": "4.16"}]'\n""",
        ),
        "csv/olm-properties",
        "warning",
        at="""    olm.properties: '[{"type": "olm.maxOpenShiftVersion", "value": "4.16"}]'""",
    ),
    Case(
        "csv/field-type",
        replace(
            CSV,
            "  keywords:\n    - etcd\n    - key value\n    - database\n    - olmtool\n",
            "  keywords: etcd, key value, database\n",
        ),
        "csv/field-type",
        "error",
        at="  keywords: etcd, key value, database",
    ),
    Case(
        # upstream cannot decode the CSV: Go's message
        "csv/field-type/install-mode-type-mapping",
        replace(CSV, "      type: AllNamespaces\n", "      type:\n        AllNamespaces: true\n"),
        "csv/field-type",
        "error",
        at="      type:",
    ),
    Case(
        "csv/field-type/deployment-spec-string",
        csv_edit(
            lambda doc: doc["spec"]["install"]["spec"]["deployments"][0].__setitem__(
                "spec", "replicas=1"
            )
        ),
        "csv/field-type",
        "error",
        at="          spec: replicas=1",
    ),
    Case(
        "csv/field-type/labels-list",
        csv_edit(lambda doc: doc["spec"].__setitem__("labels", ["app=etcd"])),
        "csv/field-type",
        "error",
        at=("  labels:", 1),
    ),
    Case(
        # OLM's CRD requires it (the apiserver refuses the CSV)
        "csv/schema",
        append_to_spec(OPERATOR_WEBHOOK.replace("      sideEffects: None\n", "")),
        "csv/schema",
        "error",
        at="    - type: ValidatingAdmissionWebhook",
    ),
    Case(
        "csv/schema/unknown-field",
        append_to_spec("  webhookDefinitions: []\n"),
        "csv/schema",
        "warning",
        at="  webhookDefinitions: []",
    ),
    Case(
        "csv/webhook",
        append_to_spec(OPERATOR_WEBHOOK.replace("sideEffects: None", "sideEffects: Some")),
        "csv/webhook",
        "error",
        at="      sideEffects: Some",
    ),
    Case(
        "csv/webhook/target-port-not-declared",
        append_to_spec(OPERATOR_WEBHOOK.replace("targetPort: 8080", "targetPort: 9443")),
        "csv/webhook",
        "warning",
        at="      targetPort: 9443",
    ),
    Case(
        "csv/required/display-name",
        replace(CSV, "  displayName: etcd operator (olmtool)\n", ""),
        "csv/required",
        "error",
        at="spec:",
    ),
    Case(
        "csv/required/install-strategy",
        replace(CSV, "    strategy: deployment\n", ""),
        "csv/required",
        "error",
        at="  install:",
    ),
    Case(
        "csv/required/unknown-install-strategy",
        replace(CSV, "    strategy: deployment\n", "    strategy: helm\n"),
        "csv/required",
        "error",
        at="    strategy: helm",
    ),
    Case(
        "csv/required/owned-crd-kind",
        csv_edit(lambda doc: _owned(doc)[1].pop("kind")),
        "csv/required",
        "error",
        at=("      - description: EtcdCluster is an etcd cluster managed by the etcd operator.", 1),
    ),
    Case(
        "csv/version",
        replace(CSV, "  version: 0.3.0\n", "  version: '0.3'\n"),
        "csv/version",
        "error",
        at="  version: '0.3'",
    ),
    Case(
        "csv/skip-range",
        replace(
            CSV, "    olm.skipRange: '>=0.1.0 <0.3.0'\n", "    olm.skipRange: '0.1.0 - latest'\n"
        ),
        "csv/skip-range",
        "error",
        at="    olm.skipRange: '0.1.0 - latest'",
    ),
    Case(
        "csv/deployment/selector-mismatch",
        replace(
            CSV,
            "                labels:\n                  app.kubernetes.io/name: etcd-operator\n",
            "                labels:\n                  app.kubernetes.io/name: etcd\n",
        ),
        "csv/deployment",
        "error",
        at="            selector:",
    ),
    Case(
        "csv/deployment/container-without-image",
        replace(CSV, CONTAINER_IMAGE, ""),
        "csv/deployment",
        "error",
        at="                  - args:",
    ),
    Case(
        "csv/deployment/bad-name",
        replace(CSV, "        - name: etcd-operator\n", "        - name: etcd_operator\n"),
        "csv/deployment",
        "error",
        at="        - name: etcd_operator",
    ),
    Case(
        "csv/deployment/restart-policy",
        replace(
            CSV,
            "                serviceAccountName: etcd-operator\n",
            "                serviceAccountName: etcd-operator\n                restartPolicy: OnFailure\n",
        ),
        "csv/deployment",
        "error",
        at="                restartPolicy: OnFailure",
    ),
    # -- crd -----------------------------------------------------------------------------
    Case(
        "crd/schema/property-without-type",
        replace(
            CRD,
            "                    - 7\n                  type: integer\n",
            "                    - 7\n",
            count=2,
        ),
        "crd/schema",
        "error",
        file=CRD,
        at=("                replicas:", 0),
    ),
    Case(
        # upstream drops errors found under openAPIV3Schema and status (bug)
        "crd/schema/status-property-without-type",
        replace(
            CRD,
            "description: Number of healthy members.\n                  minimum: 0\n"
            "                  type: integer\n",
            "description: Number of healthy members.\n                  minimum: 0\n",
            count=2,
        ),
        "crd/schema",
        "error",
        file=CRD,
        at=("                readyMembers:", 0),
    ),
    Case(
        # the apiserver cannot decode the CRD: Go's message, nothing else is checked
        "crd/schema/type-not-a-string",
        edit(CRD, lambda doc: _spec_property(doc, "backupSchedule").__setitem__("type", 5)),
        "crd/schema",
        "error",
        file=CRD,
        at="                  type: 5",
    ),
    Case(
        "crd/schema/pattern-list",
        edit(CRD, lambda doc: _spec_property(doc, "backupSchedule").__setitem__("pattern", ["a"])),
        "crd/schema",
        "error",
        file=CRD,
        at="                  pattern:",
    ),
    Case(
        "crd/schema/printer-column-string",
        edit(CRD, lambda doc: doc["spec"]["versions"][0]["additionalPrinterColumns"].append("Age")),
        "crd/schema",
        "error",
        file=CRD,
        at="        - Age",
    ),
    Case(
        "crd/schema/scale-path-mapping",
        edit(
            CRD,
            lambda doc: doc["spec"]["versions"][0]["subresources"]["scale"].__setitem__(
                "specReplicasPath", {"path": ".spec.replicas"}
            ),
        ),
        "crd/schema",
        "error",
        file=CRD,
        at="          specReplicasPath:",
    ),
    Case(
        "crd/schema/scope",
        replace(CRD, "  scope: Namespaced\n", "  scope: Namespace\n"),
        "crd/schema",
        "error",
        file=CRD,
        at="  scope: Namespace",
    ),
    # -- bundle --------------------------------------------------------------------------
    Case(
        "bundle/duplicate-crd/same-name",
        copy(CRD, "manifests/zz-etcdclusters.yaml"),
        "bundle/duplicate-crd",
        "error",
        file="manifests/zz-etcdclusters.yaml",
        at="  name: etcdclusters.etcd.olmtool.dev",
    ),
    Case(
        # a second CRD (owned too) serving the same group/version/kind under another plural
        "bundle/duplicate-crd/same-gvk",
        chain(
            copy(
                CRD,
                "manifests/etcd.olmtool.dev_etcds.yaml",
                lambda text: text.replace("etcdclusters", "etcds").replace(
                    "singular: etcdcluster", "singular: etcd"
                ),
            ),
            csv_edit(
                lambda doc: _owned(doc).append({**_owned(doc)[0], "name": "etcds.etcd.olmtool.dev"})
            ),
        ),
        "bundle/duplicate-crd",
        "error",
        file="manifests/etcd.olmtool.dev_etcds.yaml",
        at="    kind: EtcdCluster",
    ),
    Case(
        "bundle/owned-crd-missing",
        replace(CSV, "  description: |\n", BACKUP_OWNED + "  description: |\n"),
        "bundle/owned-crd-missing",
        "error",
        at="      - name: etcdbackups.etcd.olmtool.dev",
    ),
    Case(
        "bundle/owned-crd-missing/crd-file-removed",
        delete(CRD),
        "bundle/owned-crd-missing",
        "error",
        at=("      - description: EtcdCluster is an etcd cluster managed by the etcd operator.", 0),
    ),
    Case(
        "bundle/crd-not-owned",
        write("manifests/etcd.olmtool.dev_etcdbackups.yaml", BACKUP_CRD),
        "bundle/crd-not-owned",
        "error",
        file="manifests/etcd.olmtool.dev_etcdbackups.yaml",
        at="  name: etcdbackups.etcd.olmtool.dev",
    ),
    Case(
        "bundle/owned-crd-version/version",
        replace(CSV, "        version: v1alpha1\n", "        version: v1\n"),
        "bundle/owned-crd-version",
        "error",
        at="        version: v1",
    ),
    Case(
        "bundle/owned-crd-version/kind",
        csv_edit(lambda doc: _owned(doc)[1].__setitem__("kind", "EtcdClusters")),
        "bundle/owned-crd-version",
        "error",
        at="        kind: EtcdClusters",
    ),
    Case(
        # OLM never applies examples
        "bundle/example-invalid",
        replace(CSV, '            "replicas": 3,\n', '            "replicas": 4,\n'),
        "bundle/example-invalid",
        "warning",
        at='            "replicas": 4,',
    ),
    Case(
        "bundle/service-account",
        write("manifests/etcd-operator_v1_serviceaccount.yaml", SERVICE_ACCOUNT),
        "bundle/service-account",
        "error",
        file="manifests/etcd-operator_v1_serviceaccount.yaml",
        at="  name: etcd-operator",
    ),
    Case(
        "bundle/file-size/error",
        write("manifests/etcd-seed_v1_configmap.yaml", config_map("etcd-seed", 800_000, 1)),
        "bundle/file-size",
        "error",
        file="manifests",
    ),
    Case(
        "bundle/file-size/warning",
        write("manifests/etcd-seed_v1_configmap.yaml", config_map("etcd-seed", 700_000, 2)),
        "bundle/file-size",
        "warning",
        file="manifests",
    ),
    Case(
        "bundle/release/name",
        replace(CSV, "\nspec:\n", "\nspec:\n  release: '1'\n"),
        "bundle/release",
        "error",
        at="  name: etcd-operator.v0.3.0",
    ),
    Case(
        "bundle/release/format",
        replace(CSV, "\nspec:\n", "\nspec:\n  release: rc_1\n"),
        "bundle/release",
        "error",
        at="  release: rc_1",
    ),
    Case(
        "bundle/related-images/empty",
        replace(CSV, "    - image: quay.io/coreos/etcd:v3.4.27\n", "    - image: ''\n"),
        "bundle/related-images",
        "error",
        at="    - image: ''",
    ),
    Case(
        "bundle/related-images/unparsable",
        replace(
            CSV,
            "    - image: quay.io/coreos/etcd:v3.4.27\n",
            "    - image: quay.io/CoreOS/etcd:v3.4.27\n",
        ),
        "bundle/related-images",
        "error",
        at="    - image: quay.io/CoreOS/etcd:v3.4.27",
    ),
    Case(
        "bundle/webhook-deployment",
        append_to_spec(VALIDATING_WEBHOOK),
        "bundle/webhook-deployment",
        "error",
        at="      deploymentName: etcd-webhook",
    ),
    # -- objects -------------------------------------------------------------------------
    Case(
        "objects/schema",
        replace(SERVICE, "      port: 8080\n", "      port: '8080'\n"),
        "objects/schema",
        "error",
        file=SERVICE,
        at="      port: '8080'",
    ),
    Case(
        "objects/schema/deployment-enum",
        replace(
            CSV,
            "                    ports:\n",
            "                    imagePullPolicy: Sometimes\n                    ports:\n",
        ),
        "objects/schema",
        "error",
        at="                    imagePullPolicy: Sometimes",
    ),
    Case(
        "objects/schema/unknown-field",
        replace(SERVICE, "  selector:\n", "  selectr:\n"),
        "objects/schema",
        "warning",
        file=SERVICE,
        at="  selectr:",
    ),
    Case(
        "objects/pdb/max-unavailable-0",
        write("manifests/etcd-operator_policy_v1_pdb.yaml", pdb("policy/v1", "maxUnavailable: 0")),
        "objects/pdb",
        "error",
        file="manifests/etcd-operator_policy_v1_pdb.yaml",
        at="  maxUnavailable: 0",
    ),
    Case(
        "objects/pdb/min-available-100%",
        write("manifests/etcd-operator_policy_v1_pdb.yaml", pdb("policy/v1", "minAvailable: 100%")),
        "objects/pdb",
        "error",
        file="manifests/etcd-operator_policy_v1_pdb.yaml",
        at="  minAvailable: 100%",
    ),
    Case(
        "objects/priority-class",
        write("manifests/etcd-critical_priorityclass.yaml", PRIORITY_CLASS),
        "objects/priority-class",
        "error",
        file="manifests/etcd-critical_priorityclass.yaml",
        at="globalDefault: true",
    ),
    Case(
        "objects/monitoring/no-selector",
        replace_re(MONITOR, r"^  selector:\n(?:    .*\n)+", ""),
        "objects/monitoring",
        "error",
        file=MONITOR,
        at="spec:",
    ),
    Case(
        "objects/monitoring/interval-not-a-duration",
        replace(MONITOR, "    - interval: 30s\n", "    - interval: 30 seconds\n"),
        "objects/monitoring",
        "error",
        file=MONITOR,
        at="    - interval: 30 seconds",
    ),
    Case(
        "objects/monitoring/port-number",
        replace(MONITOR, "      port: metrics\n", "      port: 2381\n"),
        "objects/monitoring",
        "error",
        file=MONITOR,
        at="      port: 2381",
    ),
    Case(
        "objects/monitoring/scheme",
        replace(MONITOR, "      path: /metrics\n", "      path: /metrics\n      scheme: HTTP\n"),
        "objects/monitoring",
        "error",
        file=MONITOR,
        at="      scheme: HTTP",
    ),
    Case(
        "objects/monitoring/scrape-timeout-over-interval",
        replace(MONITOR, "      port: metrics\n", "      port: metrics\n      scrapeTimeout: 1m\n"),
        "objects/monitoring",
        "warning",
        file=MONITOR,
        at="      scrapeTimeout: 1m",
    ),
    Case(
        "objects/monitoring/unknown-field",
        replace(MONITOR, "    - interval: 30s\n", "    - intervall: 30s\n"),
        "objects/monitoring",
        "warning",
        file=MONITOR,
        at="    - intervall: 30s",
    ),
    Case(
        "objects/monitoring/empty-selector",
        replace_re(MONITOR, r"^  selector:\n(?:    .*\n)+", "  selector: {}\n"),
        "objects/monitoring",
        "warning",
        file=MONITOR,
        at="  selector: {}",
    ),
    Case(
        "objects/monitoring/duplicate-group",
        replace(RULES, "  groups:\n", "  groups:\n    - name: etcd\n      rules: []\n"),
        "objects/monitoring",
        "error",
        file=RULES,
        at=("    - name: etcd", 1),
    ),
    Case(
        "objects/monitoring/group-without-name",
        replace(RULES, "    - name: etcd\n      rules:\n", "    - rules:\n"),
        "objects/monitoring",
        "error",
        file=RULES,
        at="    - rules:",
    ),
    Case(
        "objects/monitoring/alert-and-record",
        replace(
            RULES,
            "        - alert: etcdNoLeader\n",
            "        - alert: etcdNoLeader\n          record: etcd:no_leader\n",
        ),
        "objects/monitoring",
        "warning",
        file=RULES,
        at="        - alert: etcdNoLeader",
    ),
    Case(
        "objects/monitoring/neither-alert-nor-record",
        replace(
            RULES,
            "        - alert: etcdMembersDown\n          annotations:\n",
            "        - annotations:\n",
        ),
        "objects/monitoring",
        "warning",
        file=RULES,
        at="        - annotations:",
    ),
    Case(
        "objects/monitoring/empty-expr",
        replace(
            RULES,
            '          expr: etcd_server_has_leader{job="etcd"} == 0\n',
            "          expr: ''\n",
        ),
        "objects/monitoring",
        "warning",
        file=RULES,
        at="          expr: ''",
    ),
    Case(
        "objects/monitoring/for-not-a-duration",
        replace(RULES, "          for: 1m\n", "          for: 1 minute\n"),
        "objects/monitoring",
        "error",
        file=RULES,
        at="          for: 1 minute",
    ),
    Case(
        "objects/monitoring/label-not-a-string",
        replace_re(
            RULES,
            r"(- alert: etcdNoLeader\n(?:.*\n)*?          labels:\n)            severity: critical\n",
            lambda match: match[1] + "            severity: 1\n",
        ),
        "objects/monitoring",
        "error",
        file=RULES,
        at="            severity: 1",
    ),
    Case(
        "objects/monitoring/recording-rule-with-for",
        replace(
            RULES,
            "  groups:\n",
            "  groups:\n    - name: etcd.rules\n      rules:\n        - record: etcd:up:sum\n"
            '          expr: sum(up{job="etcd"})\n          for: 5m\n',
        ),
        "objects/monitoring",
        "warning",
        file=RULES,
        at=("          for: 5m", 0),
    ),
    # -- operatorhub ---------------------------------------------------------------------
    Case(
        "operatorhub/provider",
        replace(
            CSV,
            "    name: olmtool\n    url: https://olmtool.dev\n",
            "    name: ''\n    url: https://olmtool.dev\n",
        ),
        "operatorhub/provider",
        "error",
        at="  provider:",
    ),
    Case(
        "operatorhub/maintainers/no-email",
        replace(
            CSV,
            "    - email: maintainers@olmtool.dev\n      name: olmtool maintainers\n",
            "    - name: olmtool maintainers\n",
        ),
        "operatorhub/maintainers",
        "error",
        at="    - name: olmtool maintainers",
    ),
    Case(
        "operatorhub/maintainers/bad-email",
        replace(
            CSV,
            "    - email: maintainers@olmtool.dev\n",
            "    - email: maintainers at olmtool.dev\n",
        ),
        "operatorhub/maintainers",
        "error",
        at="    - email: maintainers at olmtool.dev",
    ),
    Case(
        "operatorhub/links/no-url",
        replace(
            CSV,
            "    - name: Source\n      url: https://github.com/olmtool/olmtool\n",
            "    - name: Source\n",
        ),
        "operatorhub/links",
        "error",
        at="    - name: Source",
    ),
    Case(
        "operatorhub/links/bad-url",
        replace(
            CSV,
            "      url: https://github.com/olmtool/olmtool\n",
            "      url: github.com/olmtool/olmtool\n",
        ),
        "operatorhub/links",
        "error",
        at="      url: github.com/olmtool/olmtool",
    ),
    Case(
        "operatorhub/version",
        replace(CSV, "  version: 0.3.0\n", ""),
        "operatorhub/version",
        "error",
        at="spec:",
    ),
    Case(
        "operatorhub/icon-missing",
        replace_re(CSV, r"^  icon:\n" + ICON, ""),
        "operatorhub/icon-missing",
        "warning",
        at="spec:",
    ),
    Case(
        "operatorhub/icon/two-icons",
        replace_re(CSV, ICON, lambda match: match[0] * 2),
        "operatorhub/icon",
        "error",
        at="  icon:",
    ),
    Case(
        "operatorhub/icon-data",
        replace_re(CSV, ICON, "    - base64data: <svg/>\n      mediatype: image/svg+xml\n"),
        "operatorhub/icon-data",
        "warning",
        at="    - base64data: <svg/>",
    ),
    Case(
        "operatorhub/icon/no-data",
        replace_re(CSV, ICON, "    - mediatype: image/svg+xml\n"),
        "operatorhub/icon",
        "error",
        also=("csv/schema",),  # OLM's CRD requires base64data: the apiserver refuses the CSV
        at="    - mediatype: image/svg+xml",
    ),
    Case(
        "operatorhub/icon/bad-mediatype",
        replace(CSV, "      mediatype: image/svg+xml\n", "      mediatype: image/svg\n"),
        "operatorhub/icon",
        "error",
        at="      mediatype: image/svg",
    ),
    Case(
        "operatorhub/capabilities",
        replace(
            CSV, "    capabilities: Seamless Upgrades\n", "    capabilities: Seamless Upgrade\n"
        ),
        "operatorhub/capabilities",
        "error",
        at="    capabilities: Seamless Upgrade",
    ),
    Case(
        "operatorhub/categories",
        replace(CSV, "    categories: Database\n", "    categories: Database, Key-Value Store\n"),
        "operatorhub/categories",
        "error",
        at="    categories: Database, Key-Value Store",
    ),
    # -- good-practices ------------------------------------------------------------------
    Case(
        "good-practices/no-deployments",
        csv_edit(lambda doc: doc["spec"]["install"]["spec"].__setitem__("deployments", [])),
        "good-practices/no-deployments",
        "error",
        at="  install:",
    ),
    Case(
        "good-practices/resource-requests",
        replace(CSV, REQUESTS, ""),
        "good-practices/resource-requests",
        "warning",
        at="                  - args:",
    ),
    Case(
        "good-practices/crd-description",
        csv_edit(lambda doc: _owned(doc)[1].pop("description")),
        "good-practices/crd-description",
        "warning",
        at=("      - displayName: etcd Cluster", 0),
    ),
    Case(
        "good-practices/channel-name",
        chain(annotation(fmt.CHANNELS, "beta"), annotation(fmt.DEFAULT_CHANNEL, "beta")),
        "good-practices/channel-name",
        "warning",
        file=ANNOTATIONS,
        at=f"  {fmt.CHANNELS}: 'beta'",
    ),
    Case(
        "good-practices/rbac-crd-write",
        replace(
            CSV,
            "      permissions:\n",
            "      clusterPermissions:\n"
            "        - rules:\n"
            "            - apiGroups:\n"
            "                - apiextensions.k8s.io\n"
            "              resources:\n"
            "                - customresourcedefinitions\n"
            "              verbs:\n"
            "                - create\n"
            "          serviceAccountName: etcd-operator\n"
            "      permissions:\n",
        ),
        "good-practices/rbac-crd-write",
        "warning",
        at=("            - apiGroups:", 0),
    ),
    Case(
        "good-practices/csv-name",
        replace(CSV, "  name: etcd-operator.v0.3.0\n", "  name: etcd.v0.3.0\n"),
        "good-practices/csv-name",
        "warning",
        at="  name: etcd.v0.3.0",
    ),
    # -- deprecated-apis -----------------------------------------------------------------
    Case(
        "deprecated-apis/removed-api/crd-v1beta1-k8s-1.22",
        replace(
            CRD,
            "apiVersion: apiextensions.k8s.io/v1\n",
            "apiVersion: apiextensions.k8s.io/v1beta1\n",
        ),
        "deprecated-apis/removed-api",
        "error",
        k8s_version="1.22",
        file=CRD,
        at="apiVersion: apiextensions.k8s.io/v1beta1",
    ),
    Case(
        # no --k8s-version: the newest Kubernetes olmtool knows is the target
        "deprecated-apis/removed-api/crd-v1beta1",
        replace(
            CRD,
            "apiVersion: apiextensions.k8s.io/v1\n",
            "apiVersion: apiextensions.k8s.io/v1beta1\n",
        ),
        "deprecated-apis/removed-api",
        "error",
        file=CRD,
        at="apiVersion: apiextensions.k8s.io/v1beta1",
    ),
    Case(
        "deprecated-apis/removed-api/crd-v1beta1-k8s-1.20",
        replace(
            CRD,
            "apiVersion: apiextensions.k8s.io/v1\n",
            "apiVersion: apiextensions.k8s.io/v1beta1\n",
        ),
        "deprecated-apis/removed-api",
        "warning",
        k8s_version="1.20",
        file=CRD,
        at="apiVersion: apiextensions.k8s.io/v1beta1",
    ),
    Case(
        # upstream: an error when either --k8s-version or minKubeVersion is past removal
        "deprecated-apis/removed-api/crd-v1beta1-k8s-older-than-min-kube-version",
        chain(
            replace(
                CRD,
                "apiVersion: apiextensions.k8s.io/v1\n",
                "apiVersion: apiextensions.k8s.io/v1beta1\n",
            ),
            replace(CSV, "  minKubeVersion: 1.20.0\n", "  minKubeVersion: 1.22.0\n"),
        ),
        "deprecated-apis/removed-api",
        "error",
        k8s_version="1.20",
        file=CRD,
        at="apiVersion: apiextensions.k8s.io/v1beta1",
    ),
    Case(
        "deprecated-apis/removed-api/rbac-v1beta1-k8s-1.22",
        write(
            "manifests/etcd-operator-reader_rbac.yaml", role("rbac.authorization.k8s.io/v1beta1")
        ),
        "deprecated-apis/removed-api",
        "error",
        k8s_version="v1.22.3",
        file="manifests/etcd-operator-reader_rbac.yaml",
        at="apiVersion: rbac.authorization.k8s.io/v1beta1",
    ),
    Case(
        "deprecated-apis/removed-api/rbac-v1beta1-k8s-1.21",
        write(
            "manifests/etcd-operator-reader_rbac.yaml", role("rbac.authorization.k8s.io/v1beta1")
        ),
        "deprecated-apis/removed-api",
        "warning",
        k8s_version="1.21",
        file="manifests/etcd-operator-reader_rbac.yaml",
        at="apiVersion: rbac.authorization.k8s.io/v1beta1",
    ),
    Case(
        "deprecated-apis/removed-api/pdb-v1beta1-k8s-1.25",
        write("manifests/etcd-operator_pdb.yaml", pdb("policy/v1beta1", "minAvailable: 1")),
        "deprecated-apis/removed-api",
        "error",
        k8s_version="1.25",
        file="manifests/etcd-operator_pdb.yaml",
        at="apiVersion: policy/v1beta1",
    ),
    Case(
        "deprecated-apis/removed-api/pdb-v1beta1-k8s-1.24",
        write("manifests/etcd-operator_pdb.yaml", pdb("policy/v1beta1", "minAvailable: 1")),
        "deprecated-apis/removed-api",
        "warning",
        k8s_version="1.24",
        file="manifests/etcd-operator_pdb.yaml",
        at="apiVersion: policy/v1beta1",
    ),
    Case(
        # A HorizontalPodAutoscaler is not a kind OLM installs from a bundle at all.
        "deprecated-apis/removed-api/hpa-v2beta2-k8s-1.26",
        write("manifests/etcd-operator_hpa.yaml", HPA),
        "deprecated-apis/removed-api",
        "error",
        k8s_version="1.26",
        also=("content/unsupported-kind",),
        file="manifests/etcd-operator_hpa.yaml",
        at="apiVersion: autoscaling/v2beta2",
    ),
]

# Checks the corpus does not cover, and why.
NOT_COVERED = {
    # Only applies to images (labels of the image config); tested with the image loader.
    "format/image-labels",
    # No bundle can cause it (a check that crashes is a bug): tested in test_hostile.py.
    "internal/check-crashed",
    # The olm-v1 target suite runs only when selected by name (not with "all", which the
    # corpus runs): each of its checks is proved in test_olm_v1.py.
    "olm-v1/install-modes",
    "olm-v1/dependencies",
    "olm-v1/webhooks",
    "olm-v1/api-services",
}


# -- running a case ----------------------------------------------------------------------


def _param(case: Case):
    marks = [pytest.mark.xfail(reason=case.xfail, strict=True)] if case.xfail else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    root = tmp_path / "etcd-operator"
    shutil.copytree(SOURCE, root)
    return root


def run(case: Case, root: Path) -> Report:
    case.mutate(root)
    suites = select_suites(["all"])
    return validate_bundle(load_bundle(root), suites=suites, k8s_version=case.k8s_version)


def render(report: Report, root: Path) -> list[str]:
    lines = []
    for finding in report.findings:
        text = f"{finding.severity} [{finding.check}] {finding}"
        for prefix in {str(root.resolve()), str(root)}:
            text = text.replace(prefix, "<bundle>")
        lines.append(text)
    return lines


def expected_line(root: Path, case: Case) -> int:
    needle, occurrence = case.at if isinstance(case.at, tuple) else (case.at, None)
    text = (root / case.file).read_bytes().decode("utf-8", errors="replace")
    numbers = [n for n, line in enumerate(text.split("\n"), start=1) if line.rstrip() == needle]
    if occurrence is None:
        assert len(numbers) == 1, f"{needle!r} is on lines {numbers} of {case.file}"
        return numbers[0]
    return numbers[occurrence]


def golden_sections() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in GOLDEN.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:], [])
        elif line:
            current.append(line)
    return sections


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_case(case: Case, bundle_dir: Path):
    report = run(case, bundle_dir)
    findings = report.findings
    shown = "\n".join(render(report, bundle_dir))

    # (1) the defect is found, with the expected severity
    matching = [
        f
        for f in findings
        if f.check == case.expected_check and f.severity == case.expected_severity
    ]
    assert matching, f"no {case.expected_severity} from {case.expected_check}:\n{shown}"

    # every finding has the origin and a severity its check's table line allows
    for finding in findings:
        assert finding.severity in CHECKS[finding.check].severities, finding

    # (2) one defect each: no error from any other check than those the case expects
    allowed = {case.expected_check, *case.also}
    stray = [f for f in report.errors if f.check not in allowed]
    assert not stray, f"errors from other checks:\n{shown}"
    for check in case.also:
        assert any(f.check == check for f in report.errors), f"{check} no longer fires:\n{shown}"

    # (3) every finding of the check says what and where
    expected_file = (bundle_dir / case.file).resolve()
    for finding in (f for f in findings if f.check == case.expected_check):
        assert finding.message.strip(), finding
        assert finding.file, finding
        assert Path(finding.file).resolve() == expected_file, f"{finding.file} != {case.file}"
    if case.at is not None:
        line = expected_line(bundle_dir, case)
        assert line in {f.line for f in matching}, f"expected line {line}:\n{shown}"

    # the golden file records every finding as printed
    if os.environ.get("UPDATE_GOLDEN") != "1":
        assert GOLDEN.exists(), f"missing {GOLDEN}; run with UPDATE_GOLDEN=1"
        assert render(report, bundle_dir) == golden_sections().get(case.id), case.id


def test_golden_file(tmp_path: Path):
    """The golden file lists the cases in order; UPDATE_GOLDEN=1 rewrites it."""
    if os.environ.get("UPDATE_GOLDEN") == "1":
        out = []
        for index, case in enumerate(CASES):
            root = tmp_path / str(index) / "etcd-operator"
            shutil.copytree(SOURCE, root)
            out += [f"## {case.id}", *render(run(case, root), root), ""]
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text("\n".join(out), encoding="utf-8")
    assert list(golden_sections()) == [case.id for case in CASES]


# -- coverage of the corpus itself -------------------------------------------------------


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))


def test_every_check_is_covered():
    declared = set()
    for path in CHECKS_DIR.glob("*.py"):
        if path.name == "table.py":
            continue
        declared |= set(re.findall(r'"((?:[a-z]+-)*[a-z0-9]+/[a-z0-9-]+)"', path.read_text()))
    loader = (CHECKS_DIR.parent / "model.py").read_text()
    declared |= set(re.findall(r'"((?:loader|format)/[a-z0-9-]+)"', loader))
    driver = (CHECKS_DIR.parent / "validate.py").read_text()
    declared |= set(re.findall(r'"(internal/[a-z0-9-]+)"', driver))
    suites = (*DEFAULT_SUITES, *OPTIONAL_SUITES, *TARGET_SUITES, "internal")
    declared = {c for c in declared if c.split("/")[0] in suites}
    covered = {case.expected_check for case in CASES}
    assert declared - covered == NOT_COVERED
    assert covered <= declared
    # --previous's checks are proved in tests/crd (they need two bundles)
    from olmtool.bundle.checks.crdupgrade import CHECK_IDS

    assert declared | set(CHECK_IDS) == set(CHECKS), "every check id has a line in table.py"


def test_table_severities_and_origins():
    """An olmtool check reports errors only where it says who would refuse the bundle."""
    for check, info in CHECKS.items():
        assert info.origin in ("upstream", "olmtool"), check
        assert info.severities and set(info.severities) <= {"error", "warning"}, check
        if info.origin == "olmtool" and "error" in info.severities:
            # internal/: olmtool's own failure, not a verdict on the bundle
            assert "refused" in info.summary or check.startswith("internal/"), check


# -- suites, strictness ------------------------------------------------------------------


def _case(case_id: str) -> Case:
    (case,) = [c for c in CASES if c.id == case_id]
    return case


def test_unmodified_copy_is_valid(bundle_dir: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.undo()  # parse for real
    report = validate_bundle(load_bundle(bundle_dir), suites=select_suites(["all"]))
    assert report.findings == []
    assert report.passed(strict=True)


@pytest.mark.parametrize(
    ("suite", "case_id"),
    [
        ("operatorhub", "operatorhub/capabilities"),
        ("good-practices", "good-practices/no-deployments"),
        ("deprecated-apis", "deprecated-apis/removed-api/rbac-v1beta1-k8s-1.22"),
    ],
)
def test_optional_suites_do_not_run_by_default(suite: str, case_id: str, bundle_dir: Path):
    assert suite not in select_suites([])
    case = _case(case_id)
    case.mutate(bundle_dir)
    bundle = load_bundle(bundle_dir)
    default = validate_bundle(bundle, suites=select_suites([]), k8s_version=case.k8s_version)
    assert default.findings == []
    selected = validate_bundle(bundle, suites=select_suites([suite]), k8s_version=case.k8s_version)
    assert {f.check for f in selected.findings} == {case.expected_check}


def test_comma_separated_suites(bundle_dir: Path):
    suites = select_suites(["operatorhub,good-practices"])
    assert suites == (*DEFAULT_SUITES, "operatorhub", "good-practices")
    assert select_suites([" operatorhub , good-practices "]) == suites
    assert select_suites(["operatorhub", "good-practices"]) == suites
    for case_id in (
        "operatorhub/capabilities",
        "good-practices/csv-name",
        "deprecated-apis/removed-api/rbac-v1beta1-k8s-1.21",
    ):
        _case(case_id).mutate(bundle_dir)
    report = validate_bundle(load_bundle(bundle_dir), suites=suites)
    assert {f.check for f in report.findings} == {
        "operatorhub/capabilities",
        "good-practices/csv-name",
    }


def test_all_selects_every_suite():
    assert select_suites(["all"]) == (*DEFAULT_SUITES, *OPTIONAL_SUITES)
    assert select_suites(["operatorhub", "all"]) == (*DEFAULT_SUITES, *OPTIONAL_SUITES)


@pytest.mark.parametrize("selected", [["operatorhubs"], ["operatorhub,bogus"], ["ALL"]])
def test_unknown_suite(selected: list[str]):
    with pytest.raises(InputError, match="unknown suite"):
        select_suites(selected)


def test_default_suite_names_and_empty_items_select_nothing_extra():
    assert select_suites([]) == DEFAULT_SUITES
    assert select_suites(["csv,", ""]) == DEFAULT_SUITES


def test_strict_fails_on_a_warning(bundle_dir: Path):
    case = _case("good-practices/csv-name")
    report = run(case, bundle_dir)
    assert report.warnings and not report.errors
    assert report.passed()
    assert not report.passed(strict=True)
    assert report.as_dict(strict=True)["passed"] is False
    assert report.as_dict()["passed"] is True
