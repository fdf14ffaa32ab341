"""Bundles upstream accepts must not fail by default: one synthetic case per false finding
seen on real, published bundles.

Each case is the etcd-operator 0.3.0 bundle with one change that real bundles make
(written for this project, not copied from any operator). It must give no error, and
exactly the warnings listed: olmtool's checks beyond upstream warn unless OLM, opm or the
apiserver would certainly refuse the bundle.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from olmtool.bundle import format as fmt
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import select_suites, validate_bundle
from tests.bundle.test_corpus import (
    BACKUP_OWNED,
    CRD,
    CSV,
    DOCKERFILE,
    ICON,
    SERVICE,
    SOURCE,
    V1BETA1_BACKUP_CRD,
    Mutation,
    annotation,
    chain,
    replace,
    write,
)

DIGEST = "sha256:" + "0123456789abcdef" * 4

V1BETA1_CRD = V1BETA1_BACKUP_CRD + "  validation:\n    openAPIV3Schema:\n      type: object\n"

# A CRD root with CEL rules and preserve-unknown-fields next to a status subresource, and
# a Gateway-API-style header-name pattern (its *+ is inside a character class).
ROOT_SCHEMA = """\
        openAPIV3Schema:
          x-kubernetes-preserve-unknown-fields: true
          x-kubernetes-validations:
            - rule: self.metadata.name.size() <= 40
              message: names are at most 40 characters
"""
HEADER_PATTERN = r"^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$"


@dataclass(frozen=True)
class Case:
    id: str
    mutate: Mutation
    warnings: frozenset[str] = frozenset()  # the checks that warn, nothing else
    select: tuple[str, ...] = ()


def _icon_wrapped(root: Path) -> None:
    """Wrap the CSV icon's base64data over several lines (a YAML block scalar)."""
    path = root / CSV
    text = path.read_text(encoding="utf-8")
    start = text.index("    - base64data: ") + len("    - base64data: ")
    end = text.index("\n", start)
    data = text[start:end]
    lines = "".join(f"        {data[i : i + 60]}\n" for i in range(0, len(data), 60))
    path.write_text(text[:start] + "|\n" + lines.rstrip("\n") + text[end:], encoding="utf-8")


CASES = [
    Case(
        # the schema verdict stands, but OLM never applies examples
        "example-omits-a-required-field",
        replace(
            CSV,
            '            "storageSize": "1Gi",\n',
            '            "restore": {"claimName": "seed"},\n            "storageSize": "1Gi",\n',
        ),
        frozenset({"bundle/example-invalid"}),
    ),
    Case(
        "dockerfile-label-differs",
        replace(DOCKERFILE, f"LABEL {fmt.CHANNELS}=stable\n", f"LABEL {fmt.CHANNELS}=alpha\n"),
        frozenset({"format/dockerfile-labels"}),
    ),
    Case(
        "no-dockerfile-label-at-all",
        replace(DOCKERFILE, f"LABEL {fmt.PACKAGE}=etcd-operator\n", ""),
        frozenset({"format/dockerfile-labels"}),
    ),
    Case(
        "crd-root-validations-and-preserve-unknown-fields",
        replace(CRD, "        openAPIV3Schema:\n", ROOT_SCHEMA, count=2),
    ),
    Case(
        "crd-header-name-pattern",
        replace(
            CRD,
            "pattern: ^[A-Za-z0-9][A-Za-z0-9._-]*$\n",
            f"pattern: {HEADER_PATTERN}\n",  # a plain scalar: the ' stays
        ),
    ),
    Case(
        "crd-empty-string-default",
        replace(
            CRD,
            "                    claimName:\n",
            "                    claimName:\n                      default: ''\n",
        ),
    ),
    Case(
        # upstream reads a v1beta1 CRD's singular spec.version
        "v1beta1-crd-with-singular-version",
        chain(
            write("manifests/etcd.olmtool.dev_etcdbackups.yaml", V1BETA1_CRD),
            replace(CSV, "  description: |\n", BACKUP_OWNED + "  description: |\n"),
        ),
        frozenset({"csv/owned-without-example"}),
    ),
    Case(
        # the default channel is the package's: another bundle brings it
        "default-channel-of-another-bundle",
        annotation(fmt.DEFAULT_CHANNEL, "fast"),
        frozenset({"format/default-channel-unknown"}),
    ),
    Case(
        "related-image-with-a-run-of-dashes",
        replace(
            CSV,
            "    - image: quay.io/coreos/etcd:v3.4.27\n",
            f"    - image: quay.io/example/che--proxy@{DIGEST}\n",
        ),
    ),
    Case(
        "csv-api-version-other-than-v1alpha1",
        replace(
            CSV,
            "apiVersion: operators.coreos.com/v1alpha1\n",
            "apiVersion: operators.coreos.com/v1\n",
        ),
        frozenset({"csv/type-meta"}),
    ),
    Case(
        "object-without-api-version",
        replace(SERVICE, "apiVersion: v1\n", ""),
        frozenset({"content/type-meta"}),
    ),
    Case(
        # Go reads a null annotation (or label) into a string as ""
        "null-annotation-and-label",
        replace(
            CSV,
            "    repository: https://github.com/olmtool/olmtool\n  labels:\n",
            "    repository: https://github.com/olmtool/olmtool\n    support:\n"
            "  labels:\n    example.com/tier:\n",
        ),
    ),
    Case(
        "replaces-empty-string",
        replace(CSV, "  replaces: etcd-operator.v0.2.0\n", "  replaces: ''\n"),
    ),
    Case("icon-base64-wrapped-over-lines", _icon_wrapped, select=("operatorhub",)),
    Case(
        "install-modes-listed-twice",
        replace(
            CSV,
            "  installModes:\n",
            "  installModes:\n    - supported: true\n      type: AllNamespaces\n",
        ),
        frozenset({"csv/install-modes-duplicate"}),
    ),
    Case(
        "directory-annotation-with-another-value",
        annotation(fmt.METADATA, "meta/"),
        frozenset({"format/directory-annotation"}),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_accepted(case: Case, tmp_path: Path) -> None:
    root = tmp_path / "etcd-operator"
    shutil.copytree(SOURCE, root)
    case.mutate(root)
    report = validate_bundle(load_bundle(root), suites=select_suites(case.select))
    shown = "\n".join(f"{f.severity} [{f.check}] {f}" for f in report.findings)
    assert report.passed(), shown
    assert {f.check for f in report.findings} == case.warnings, shown
    assert not report.passed(strict=True) if case.warnings else report.passed(strict=True)


def test_the_wrapped_icon_really_is_wrapped(tmp_path: Path) -> None:
    shutil.copytree(SOURCE, tmp_path / "b")
    _icon_wrapped(tmp_path / "b")
    csv = (tmp_path / "b" / CSV).read_text(encoding="utf-8")
    assert "    - base64data: |\n        PHN2Zy" in csv
    assert ICON  # the corpus's icon pattern still names the one-line form
