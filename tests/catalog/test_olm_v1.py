"""``catalog validate --select olm-v1``: the bundles OLM v1 cannot install, and the upgrades
OLM v1 would resolve to them. Each case is a small catalog written here: one package, a
channel 1.0.0 -> 1.1.0 (replaces), bundles carrying their CSV as olm.bundle.object."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from olmtool.actions import catalog_validate
from olmtool.catalog.checks import CHECKS
from olmtool.catalog.validate import validate_catalog
from olmtool.errors import InputError
from tests.catalog.test_cli_validate import validate

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "gizmo-operator"
ALL_MODES = [
    {"type": t, "supported": True}
    for t in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
]


def _object(manifest: dict[str, Any]) -> dict[str, Any]:
    data = base64.b64encode(json.dumps(manifest).encode()).decode()
    return {"type": "olm.bundle.object", "value": {"data": data}}


def _csv(version: str, **spec: Any) -> dict[str, Any]:
    replaces = {"replaces": f"{PACKAGE}.v1.0.0"} if version == "1.1.0" else {}
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": f"{PACKAGE}.v{version}"},
        "spec": {"version": version, "installModes": ALL_MODES, **replaces, **spec},
    }


def bundle(
    version: str,
    *,
    image: str | None = None,
    csv: dict[str, Any] | None = None,
    properties: list[dict[str, Any]] = (),  # type: ignore[assignment]
    objects: bool = True,
) -> dict[str, Any]:
    package = {"type": "olm.package", "value": {"packageName": PACKAGE, "version": version}}
    return {
        "schema": "olm.bundle",
        "name": f"{PACKAGE}.v{version}",
        "package": PACKAGE,
        "image": f"quay.io/example/gizmo-bundle:v{version}" if image is None else image,
        "properties": [
            package,
            *properties,
            *([_object(csv or _csv(version))] if objects else []),
        ],
    }


def write_catalog(root: Path, bundles: list[dict[str, Any]]) -> Path:
    blobs = [
        {"schema": "olm.package", "name": PACKAGE, "defaultChannel": "stable"},
        {
            "schema": "olm.channel",
            "name": "stable",
            "package": PACKAGE,
            "entries": [
                {"name": f"{PACKAGE}.v1.0.0"},
                {"name": f"{PACKAGE}.v1.1.0", "replaces": f"{PACKAGE}.v1.0.0"},
            ],
        },
        *bundles,
    ]
    directory = root / PACKAGE
    directory.mkdir(parents=True)
    (directory / "catalog.json").write_text("\n".join(json.dumps(b, indent=2) for b in blobs))
    return root


REQUIRED_GVK = {
    "type": "olm.gvk.required",
    "value": {"group": "a.io", "kind": "A", "version": "v1"},
}
OWN_ONLY = [
    {"type": "OwnNamespace", "supported": True},
    {"type": "AllNamespaces", "supported": False},
]
WEBHOOK = {
    "type": "ValidatingAdmissionWebhook",
    "generateName": "v.gizmo.io",
    "deploymentName": "gizmo",
}
API_SERVICE = {
    "group": "metrics.gizmo.io",
    "version": "v1",
    "kind": "GizmoMetrics",
    "name": "gizmometrics",
}
GOOD = bundle("1.0.0")

# case -> (the 1.1.0 bundle, the expected (check, scope, message fragment) findings)
CASES: dict[str, tuple[dict[str, Any], list[tuple[str, str, str]]]] = {
    "install-modes-of-the-csv": (
        bundle("1.1.0", csv=_csv("1.1.0", installModes=OWN_ONLY)),
        [("olm-v1/install-modes", "bundle", "(supported: OwnNamespace)")],
    ),
    "install-modes-of-csv-metadata": (
        bundle("1.1.0", objects=False, properties=[{"type": "olm.csv.metadata", "value": {"installModes": OWN_ONLY}}]),
        [("olm-v1/install-modes", "bundle", "(supported: OwnNamespace)")],
    ),
    "a-csv-without-install-modes": (
        bundle("1.1.0", csv={**_csv("1.1.0"), "spec": {"version": "1.1.0", "replaces": f"{PACKAGE}.v1.0.0"}}),
        [("olm-v1/install-modes", "bundle", "(supported: none)")],
    ),
    "dependencies": (
        bundle("1.1.0", properties=[REQUIRED_GVK, {"type": "olm.constraint", "value": {"cel": {"rule": "true"}}}]),
        [("olm-v1/dependencies", "bundle", "declares dependencies (olm.constraint, olm.gvk.required)")],
    ),
    "webhooks": (
        bundle("1.1.0", csv=_csv("1.1.0", webhookdefinitions=[WEBHOOK])),
        [("olm-v1/webhooks", "bundle", "its CSV has 1 webhookdefinitions")],
    ),
    "api-services-of-csv-metadata": (
        bundle("1.1.0", properties=[{"type": "olm.csv.metadata", "value": {"installModes": ALL_MODES, "apiServiceDefinitions": {"owned": [API_SERVICE]}}}]),
        [("olm-v1/api-services", "bundle", "owns 1 API service(s)")],
    ),
    "image-empty": (
        bundle("1.1.0", image=""),
        [("olm-v1/image-empty", "bundle", "no bundle image")],
    ),
}  # fmt: skip


def _blocked_upgrade(check: str) -> tuple[str, str, str]:
    return (
        "olm-v1/upgrade-blocked",
        "channel",
        f"OLM v1 upgrades {PACKAGE}.v1.0.0 to {PACKAGE}.v1.1.0, its newest successor, "
        f"which OLM v1 cannot install ({check})",
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_case(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    later, expected = CASES[case]
    monkeypatch.chdir(write_catalog(tmp_path, [GOOD, later]))
    assert validate_catalog(".").findings == [], "olm-v1 runs only when selected"
    report = validate_catalog(".", suites=["olm-v1"])
    expected = [*expected, _blocked_upgrade(expected[0][0])]  # 1.0.0 cannot upgrade to it
    got = [(f.check, (f.scope or "").split()[0], f.message) for f in report.findings]
    assert len(got) == len(expected), got
    for (check, scope, message), (want, want_scope, fragment) in zip(got, expected, strict=True):
        assert (check, scope) == (want, want_scope) and fragment in message, got
    assert [f.severity for f in report.findings] == ["error", "warning"]
    assert all(f.file == f"{PACKAGE}/catalog.json" and f.line for f in report.findings)
    assert all(f.package == PACKAGE for f in report.findings)


def test_a_blocked_bundle_blocks_no_upgrade_from_itself(tmp_path: Path) -> None:
    """1.0.0 OLM v1 cannot install either: nobody has it installed by OLM v1."""
    root = write_catalog(tmp_path, [bundle("1.0.0", image=""), bundle("1.1.0", image="")])
    report = validate_catalog(root, suites=["olm-v1"])
    assert [f.check for f in report.findings] == ["olm-v1/image-empty", "olm-v1/image-empty"]


def test_what_the_blob_does_not_say_is_not_guessed(tmp_path: Path) -> None:
    """An image-only bundle (no CSV, no olm.csv.metadata): install modes and webhooks are
    unknown until OLM v1 pulls it."""
    root = write_catalog(tmp_path, [GOOD, bundle("1.1.0", objects=False)])
    assert validate_catalog(root, suites=["olm-v1"]).findings == []


def test_the_repository_catalog_installs_with_olm_v1() -> None:
    """Every release installs; OLM v1 refuses the upgrades from 0.1.0 and 0.2.0, whose
    storageSize took any quantity: 0.3.0 requires a positive one (a minimum and a
    narrower pattern). olmtool.yaml waives those two checks with that reason."""
    report = validate_catalog(REPO / "catalog", suites=["olm-v1"])
    assert {f.check for f in report.findings} == {"crd-upgrade/bounds", "crd-upgrade/unhandled"}
    for found in report.findings:
        assert "^.spec.storageSize" in found.message, found
        assert found.message.startswith(
            ("upgrade from etcd-operator.v0.2.0", "upgrades from etcd-operator.v0.1.0")
        ), found


def test_every_olm_v1_check_is_proved_here() -> None:
    proved = {check for _, expected in CASES.values() for check, *_ in expected}
    proved.add("olm-v1/upgrade-blocked")
    assert proved == {check for check in CHECKS if check.startswith("olm-v1/")}


def test_unknown_suite() -> None:
    with pytest.raises(
        InputError, match=r"unknown suite olm-v2 \(catalog suites: olm-v1, crd-upgrade\)"
    ):
        catalog_validate(REPO / "catalog", select=["olm-v2"])


# --- the command: --select, --ignore and olmtool.yaml's validate.ignore ----------------------


def test_command_select_ignore_and_project_waivers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(write_catalog(tmp_path / "cat", [GOOD, bundle("1.1.0", image="")]).parent)
    refused = validate("cat", "--select", "olm-v1")
    assert refused.returncode == 1
    assert refused.stdout.splitlines()[0] == "invalid index:"
    assert refused.stdout.splitlines()[-1] == "cat: invalid: 1 error(s), 1 warning(s)"

    waived = validate(
        "cat", "--select", "olm-v1", "--strict",
        "--ignore", f"olm-v1/image-empty:{PACKAGE}/*=served to OLM v0 only",
        "--ignore", "olm-v1/upgrade-blocked=follows from it",
        "--ignore", "olm-v1/webhooks=never had any",
    )  # fmt: skip
    assert waived.returncode == 0, waived.stdout
    lines = waived.stdout.splitlines()
    assert lines[0].startswith(f"waived [olm-v1/image-empty] cat/{PACKAGE}/catalog.json:41: ")
    assert lines[1].startswith(f"waived [olm-v1/upgrade-blocked] cat/{PACKAGE}/catalog.json:6: ")
    assert lines[0].endswith("no bundle image: OLM v1 installs what it pulls from the image and never reads olm.bundle.object properties (served to OLM v0 only; --ignore)")  # fmt: skip
    assert lines[2] == "note: waiver olm-v1/webhooks (--ignore) matched no finding"
    assert lines[3] == "cat: valid: 0 error(s), 0 warning(s), 2 waived"

    (tmp_path / "olmtool.yaml").write_text(
        "validate:\n  ignore:\n"
        "    - check: olm-v1/image-empty\n      reason: served to OLM v0 only\n"
        "    - {check: good-practices/channel-name, reason: 'a bundle check: not catalog''s'}\n"
    )
    data = json.loads(validate("cat", "--select", "olm-v1", "-o", "json").stdout)
    assert data["passed"] is True
    assert [f["check"] for f in data["findings"]] == ["olm-v1/upgrade-blocked"]
    (item,) = data["waived"]
    assert (item["check"], item["origin"], item["reason"], item["waiver"]) == (
        "olm-v1/image-empty", "olmtool", "served to OLM v0 only", "olmtool.yaml:3",
    )  # fmt: skip
    assert data["unused_waivers"] == []  # the bundle check's waiver is not catalog's to report

    unknown = validate("cat", "--ignore", "olm-v1/image-emptyy")
    assert unknown.returncode == 2
    assert "did you mean olm-v1/image-empty?" in " ".join(unknown.stderr.replace("│", " ").split())
