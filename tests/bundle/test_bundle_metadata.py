"""``bundle build`` with dependencies, properties and webhooks (tests/bundle/metaproject):
golden files, strict validation, ``catalog render`` (and opm v1.26's, byte for byte),
conversion CRDs, and what a build does with the files already in the bundle directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from olmtool import yamlwrite
from olmtool.actions import bundle_build, catalog_render
from olmtool.bundle import build_bundle, write_bundle
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import select_suites, validate_bundle
from olmtool.catalog import render_config
from olmtool.config import load_project
from olmtool.errors import InputError
from olmtool.fsutil import read_tree
from tests.bundle.conftest import beside_project
from tests.catalog.test_cli_validate import cli

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "gadget-operator" / "0.4.0"
BUNDLE = "out/gadget-operator/0.4.0"
CSV = "manifests/gadget-operator.clusterserviceversion.yaml"
CRD = "manifests/features.olmtool.dev_widgets.yaml"


@pytest.fixture
def meta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tests/bundle/metaproject (beside the project whose CRD and example it uses)."""
    return beside_project(tmp_path, monkeypatch, "metaproject", "metaproject")


def _build(root: Path, **update: object):
    settings = load_project(root / "olmtool.yaml").settings.bundle
    assert settings is not None
    if update:
        settings = settings.model_copy(update=update)
    return build_bundle(settings, root)


def _edit_config(root: Path, old: str, new: str) -> None:
    config = root / "olmtool.yaml"
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new))


# --- the bundle ---------------------------------------------------------------------------


def test_bundle_matches_golden_files(meta: Path) -> None:
    bundle = _build(meta)
    if os.environ.get("UPDATE_GOLDEN"):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        write_bundle(bundle.__class__(GOLDEN, bundle.files, bundle.labels))
    assert bundle.files == read_tree(GOLDEN)


def test_metadata_files_are_what_operator_registry_reads(meta: Path) -> None:
    files = _build(meta).files
    dependencies = yamlwrite.plain(yamlwrite.loads(files["metadata/dependencies.yaml"]))
    assert dependencies["dependencies"][0] == {
        "type": "olm.package",
        "value": {"packageName": "cert-manager", "version": ">=1.10.0 <2.0.0"},
    }
    assert [d["type"] for d in dependencies["dependencies"]] == [
        "olm.package",
        "olm.gvk",
        "olm.constraint",
    ]
    properties = yamlwrite.plain(yamlwrite.loads(files["metadata/properties.yaml"]))["properties"]
    assert properties[0] == {"type": "olm.maxOpenShiftVersion", "value": "4.16"}
    csv = yamlwrite.plain(yamlwrite.loads(files[CSV]))
    assert "olm.properties" not in csv["metadata"]["annotations"]
    (hook,) = csv["spec"]["webhookdefinitions"]
    assert hook["deploymentName"] == "gadget-operator" and hook["containerPort"] == 443


def test_strict_validation_passes_without_the_olm_properties_warning(meta: Path) -> None:
    bundle = _build(meta)
    write_bundle(bundle)
    report = validate_bundle(load_bundle(bundle.directory), suites=select_suites(["all"]))
    assert report.passed(strict=True), [str(f) for f in report.findings]
    assert not [f for f in report.findings if f.check == "csv/olm-properties"]


def test_catalog_render_turns_dependencies_into_required_properties(meta: Path) -> None:
    write_bundle(_build(meta))
    (blob,) = catalog_render([meta / BUNDLE]).bundles
    properties = [(p.type, p.value) for p in blob.properties if p.type != "olm.bundle.object"]
    assert (
        "olm.package.required",
        {"packageName": "cert-manager", "versionRange": ">=1.10.0 <2.0.0"},
    ) in properties
    assert (
        "olm.gvk.required",
        {"group": "monitoring.coreos.com", "kind": "Prometheus", "version": "v1"},
    ) in properties
    constraint = dict(properties)["olm.constraint"]
    assert constraint["failureMessage"].startswith("needs a 4.x trust bundle")
    assert ("olm.maxOpenShiftVersion", "4.16") in properties
    assert ("example.dev/support-tier", {"hours": 24, "tier": "gold"}) in properties


def test_catalog_render_is_byte_identical_to_opm(meta: Path, tmp_path: Path) -> None:
    from tests.catalog.opm_peer import OPM, ImageServer, opm
    from tests.catalog.test_render_opm import bundle_image_files

    if not OPM.is_file():
        pytest.skip(f"no opm at {OPM} (the reference binaries are not on this machine)")
    from olmtool.images import build_image

    bundle = _build(meta)
    write_bundle(bundle)
    image = build_image(bundle_image_files(bundle.directory), bundle.labels)
    with ImageServer().running() as server:
        reference = server.add("fixtures/gadget-operator", "v1", image)
        work = tmp_path / "opm"
        work.mkdir()
        done = opm("render", reference, "--use-http", "-o", "json", cwd=work)
        assert done.returncode == 0, done.stderr
    ours = render_config(catalog_render([bundle.directory], image=reference), raw_values=True)
    assert '"olm.package.required"' in done.stdout
    assert ours == done.stdout


# --- conversion webhooks ---------------------------------------------------------------


CONVERSION = """\
  webhooks:
    - type: ConversionWebhook
      generateName: cwidget.features.olmtool.dev
      targetPort: webhook
      webhookPath: /convert
      admissionReviewVersions: [v1, v1beta1]
      conversionCRDs: [widgets.features.olmtool.dev]
"""


def _conversion_project(meta: Path, crd: str = "widgets.features.olmtool.dev") -> None:
    config = meta / "olmtool.yaml"
    text = config.read_text()
    text = text[: text.index("  webhooks:")] + CONVERSION.replace(
        "widgets.features.olmtool.dev]", f"{crd}]"
    )
    config.write_text(text.replace("[OwnNamespace, AllNamespaces]", "[AllNamespaces]"))


def test_conversion_webhook_sets_the_crds_conversion_as_olm_does(meta: Path) -> None:
    _conversion_project(meta)
    _edit_config(meta, "    minKubeVersion", "    suggestedNamespace: gadgets\n    minKubeVersion")
    files = _build(meta).files
    crd = yamlwrite.plain(yamlwrite.loads(files[CRD]))
    assert crd["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": "gadget-operator-service",
                    "namespace": "gadgets",
                    "path": "/convert",
                    "port": 443,
                }
            },
            "conversionReviewVersions": ["v1", "v1beta1"],
        },
    }
    (hook,) = yamlwrite.plain(yamlwrite.loads(files[CSV]))["spec"]["webhookdefinitions"]
    assert hook["type"] == "ConversionWebhook" and hook["sideEffects"] == "None"
    assert hook["conversionCRDs"] == ["widgets.features.olmtool.dev"]


def test_conversion_webhook_for_a_crd_the_bundle_lacks_names_the_line(meta: Path) -> None:
    _conversion_project(meta, crd="gizmos.features.olmtool.dev")
    with pytest.raises(InputError) as exc:
        _build(meta)
    assert exc.value.message.startswith(
        "bundle.webhooks[0].conversionCRDs[0]: 'gizmos.features.olmtool.dev' is not a CRD"
    )
    lines = (meta / "olmtool.yaml").read_text().splitlines()
    assert exc.value.line is not None and "conversionCRDs" in lines[exc.value.line - 1]


def test_webhook_for_a_deployment_the_csv_lacks_is_refused(meta: Path) -> None:
    _edit_config(meta, "      targetPort: webhook\n", "      deploymentName: other\n")
    with pytest.raises(InputError) as exc:
        _build(meta)
    assert "bundle.webhooks[0].deploymentName: deployment 'other' is not in the CSV" in str(
        exc.value
    )


# --- files already in the bundle directory ---------------------------------------------


def test_build_reports_wrote_replaced_removed_and_kept(meta: Path) -> None:
    assert cli("bundle", "build").returncode == 0
    bundle = meta / BUNDLE
    (bundle / "metadata" / "README.md").write_text("# notes kept by hand\n")
    (bundle / "manifests" / "stray.yaml").write_text("{}\n")
    (bundle / "metadata" / "dependencies.yaml").write_text(
        "dependencies:\n  - {type: olm.label, value: {label: gpu}}\n"
    )
    run = cli("bundle", "build")
    assert run.returncode == 0, run.stderr
    assert "replaced metadata/dependencies.yaml (hand-written; now generated)" in run.stdout
    assert "removed manifests/stray.yaml" in run.stdout
    assert "kept metadata/README.md (hand-added, not written by olmtool)" in run.stdout
    assert (bundle / "metadata" / "README.md").read_text() == "# notes kept by hand\n"
    assert not (bundle / "manifests" / "stray.yaml").exists()
    assert "cert-manager" in (bundle / "metadata" / "dependencies.yaml").read_text()
    # nothing changes on the next build; a check agrees
    assert not bundle_build(check=True).failed
    # settings without dependencies: the generated file goes, and the build says so
    _edit_config(
        meta,
        (meta / "olmtool.yaml").read_text().split("  dependencies:\n")[1].split("  properties:")[0],
        "",
    )
    _edit_config(meta, "  dependencies:\n", "")
    run = cli("bundle", "build")
    assert "removed metadata/dependencies.yaml" in run.stdout
    assert not (bundle / "metadata" / "dependencies.yaml").exists()
    assert bundle_build().bundle.kept == ["metadata/README.md"]


def test_hand_written_metadata_without_settings_is_kept(meta: Path) -> None:
    bundle = _build(meta, dependencies=[], properties=[])
    write_bundle(bundle)
    hand = "properties:\n  - {type: olm.label, value: {label: gpu}}\n"
    (bundle.directory / "metadata" / "properties.yaml").write_text(hand)
    again = _build(meta, dependencies=[], properties=[])
    assert again.kept == ["metadata/properties.yaml"]
    assert not write_bundle(again).stale
    assert (bundle.directory / "metadata" / "properties.yaml").read_text() == hand


def test_metadata_file_competing_with_generated_properties_is_refused(meta: Path) -> None:
    write_bundle(_build(meta))
    extra = meta / BUNDLE / "metadata" / "extra.yaml"
    extra.write_text("properties:\n  - {type: example.dev/x, value: 1}\n")
    with pytest.raises(InputError) as exc:
        _build(meta)
    assert "metadata/extra.yaml declares properties too" in exc.value.message
    assert exc.value.path is not None and exc.value.path.endswith("extra.yaml")


def test_binary_metadata_file_is_refused_not_corrupted(meta: Path) -> None:
    write_bundle(_build(meta))
    (meta / BUNDLE / "metadata" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(InputError, match="not UTF-8 text"):
        _build(meta)
