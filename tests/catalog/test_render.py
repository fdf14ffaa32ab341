"""``catalog render``: bundle directories and images as the olm.bundle blobs opm writes.

Behaviour goes through the library and the ``catalog_render`` action in-process; the CLI
tests check only the wiring (what is printed, exit codes, errors naming flags)."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from olmtool.actions import catalog_render
from olmtool.bundle.model import load_bundle
from olmtool.catalog import declcfg as dc
from olmtool.catalog import opm_bundle
from olmtool.catalog.load import parse_blobs
from olmtool.catalog.publishing import catalog_image
from olmtool.catalog.rendering import BundlePayload, render, render_bundle_dir
from olmtool.errors import ArgumentError, InputError, OlmtoolError
from olmtool.images import LocalRegistry, build_image, push
from tests.catalog.test_cli_validate import cli

REPO = Path(__file__).resolve().parents[2]
ETCD = REPO / "bundle/etcd-operator"


def _types(bundle: dc.Bundle) -> list[str]:
    return [p.type for p in bundle.properties]


def test_bundle_dir_renders_properties_in_opm_order() -> None:
    bundle = render_bundle_dir(ETCD / "0.3.0").bundle
    assert bundle.name == "etcd-operator.v0.3.0"
    assert bundle.package == "etcd-operator"
    assert bundle.image == ""
    manifests = sorted((ETCD / "0.3.0/manifests").iterdir())
    assert _types(bundle) == ["olm.gvk", "olm.gvk", "olm.package"] + ["olm.bundle.object"] * len(
        manifests
    )
    gvks = [p.value for p in bundle.properties_of("olm.gvk")]
    assert gvks == [
        {"group": "etcd.olmtool.dev", "kind": "EtcdCluster", "version": "v1alpha1"},
        {"group": "etcd.olmtool.dev", "kind": "EtcdCluster", "version": "v1beta1"},
    ]
    assert bundle.properties_of("olm.package")[0].value == {
        "packageName": "etcd-operator",
        "version": "0.3.0",
    }
    kinds = sorted(
        json.loads(base64.b64decode(p.value["data"]))["kind"]
        for p in bundle.properties_of("olm.bundle.object")
    )
    assert kinds == [
        "ClusterServiceVersion",
        "CustomResourceDefinition",
        "PrometheusRule",
        "Service",
        "ServiceMonitor",
    ]


def test_bundle_object_is_compact_sorted_json_like_go() -> None:
    bundle = render_bundle_dir(ETCD / "0.3.0").bundle
    for prop in bundle.properties_of("olm.bundle.object"):
        data = base64.b64decode(prop.value["data"]).decode()
        obj = json.loads(data)
        plain = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        # json.Marshal escapes HTML characters (the etcd CSV's skipRange has ">=")
        assert data == plain.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def test_related_images_sorted_by_image_with_operator_and_bundle_image() -> None:
    image = "localhost:5000/olmtool/etcd-operator-bundle:0.3.0"
    bundle = render_bundle_dir(ETCD / "0.3.0", image=image).bundle
    images = [(r.name, r.image) for r in bundle.related_images]
    assert [i for _, i in images] == sorted(i for _, i in images)
    assert ("", image) in images
    assert ("etcd-operator", "localhost:5000/olmtool/etcd-operator:0.3.0") in images
    assert bundle.image == image


def test_csv_metadata_payload_replaces_bundle_objects() -> None:
    bundle = render_bundle_dir(ETCD / "0.3.0", payload=BundlePayload.csv_metadata).bundle
    assert _types(bundle)[-1] == "olm.csv.metadata"
    assert not bundle.properties_of("olm.bundle.object")
    metadata = bundle.properties_of("olm.csv.metadata")[0].value
    assert metadata["displayName"] == "etcd operator (olmtool)"
    assert metadata["installModes"][0]["type"] == "OwnNamespace"
    assert list(metadata) == sorted(metadata)  # Go struct field order is alphabetical here


def _copy_bundle(tmp_path: Path, version: str = "0.3.0") -> Path:
    target = tmp_path / version
    shutil.copytree(ETCD / version, target)
    return target


def test_dependencies_and_properties_files_become_properties(tmp_path: Path) -> None:
    root = _copy_bundle(tmp_path)
    (root / "metadata/dependencies.yaml").write_text(
        "dependencies:\n"
        "  - type: olm.gvk\n"
        "    value: {group: monitoring.coreos.com, kind: Prometheus, version: v1}\n"
        "  - type: olm.package\n"
        "    value: {packageName: cert-manager, version: '>=1.0.0 <2.0.0'}\n"
        "  - type: olm.constraint\n"
        "    value: {failureMessage: needs a gvk, cel: {rule: 'true'}}\n"
    )
    (root / "metadata/properties.yaml").write_text(
        "properties:\n  - type: olm.maxOpenShiftVersion\n    value: '4.14'\n"
    )
    bundle = render_bundle_dir(root).bundle
    assert bundle.properties_of("olm.gvk.required")[0].value == {
        "group": "monitoring.coreos.com",
        "kind": "Prometheus",
        "version": "v1",
    }
    assert bundle.properties_of("olm.package.required")[0].value == {
        "packageName": "cert-manager",
        "versionRange": ">=1.0.0 <2.0.0",
    }
    assert bundle.properties_of("olm.constraint")[0].value["cel"] == {"rule": "true"}
    assert bundle.properties_of("olm.maxOpenShiftVersion")[0].value == "4.14"
    non_object = [t for t in _types(bundle) if t != "olm.bundle.object"]
    assert non_object == sorted(non_object)


def test_other_dependency_types_are_kept_as_properties_like_opm(tmp_path: Path) -> None:
    # opm v1.26 keeps a dependency of any other type as a property of that type
    root = _copy_bundle(tmp_path)
    (root / "metadata/dependencies.yaml").write_text(
        "dependencies:\n  - type: olm.label\n    value: {label: fast}\n"
    )
    bundle = render_bundle_dir(root).bundle
    assert bundle.properties_of("olm.label")[0].value == {"label": "fast"}


def test_dependencies_in_properties_yaml_become_requirements(tmp_path: Path) -> None:
    # opm reads the first metadata file with dependencies, whatever its name
    root = _copy_bundle(tmp_path)
    (root / "metadata/properties.yaml").write_text(
        "properties:\n  - type: olm.maxOpenShiftVersion\n    value: '4.14'\n"
        "dependencies:\n  - type: olm.package\n"
        "    value: {packageName: grafana-operator, version: 4.6.0}\n"
    )
    bundle = render_bundle_dir(root).bundle
    assert [p.value for p in bundle.properties_of("olm.package.required")] == [
        {"packageName": "grafana-operator", "versionRange": "4.6.0"}
    ]
    assert bundle.properties_of("olm.maxOpenShiftVersion")[0].value == "4.14"


def test_related_images_keep_every_csv_entry_like_opm() -> None:
    # duplicates under two names stay; operator images already listed are not repeated
    csv = {
        "spec": {
            "relatedImages": [
                {"name": "agent", "image": "q.dev/a:1"},
                {"name": "agent-old", "image": "q.dev/a:1"},
            ],
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": [
                        {
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [{"image": "q.dev/a:1"}],
                                        "initContainers": [{"image": "q.dev/init:1"}],
                                    }
                                }
                            }
                        }
                    ]
                },
            },
        }
    }
    images = opm_bundle.related_images(csv, "q.dev/bundle:1")
    assert [(r.name, r.image) for r in images] == [
        ("agent", "q.dev/a:1"),
        ("agent-old", "q.dev/a:1"),
        ("", "q.dev/bundle:1"),
        ("", "q.dev/init:1"),
    ]


def test_directory_that_is_not_a_bundle_is_one_clear_error(tmp_path: Path) -> None:
    root = _copy_bundle(tmp_path)
    shutil.rmtree(root / "metadata")
    with pytest.raises(InputError, match="not a valid bundle: the bundle has no metadata/"):
        render_bundle_dir(root)
    # An InputError is what olmtool.cli.main prints as one line, without a traceback.
    with pytest.raises(InputError, match="not a valid bundle"):
        catalog_render([root])
    result = cli("catalog", "render", str(root))
    assert result.returncode == 1
    assert isinstance(result.exception, OlmtoolError)
    assert "not a valid bundle" in (result.error or "")


def test_render_action_renders_each_source_in_order() -> None:
    config = catalog_render([ETCD / "0.1.0", ETCD / "0.2.0"])
    assert [b.name for b in config.bundles] == ["etcd-operator.v0.1.0", "etcd-operator.v0.2.0"]
    image = "localhost:5000/olmtool/etcd-operator-bundle:0.3.0"
    (bundle,) = catalog_render([ETCD / "0.3.0"], image=image).bundles
    assert bundle.image == image
    with pytest.raises(ArgumentError, match="needs exactly one bundle directory") as two:
        catalog_render([ETCD / "0.1.0", ETCD / "0.2.0"], image=image)
    assert two.value.argument == "image"


def test_render_command_emits_json_blobs_the_loader_reads() -> None:
    result = cli("catalog", "render", str(ETCD / "0.1.0"), str(ETCD / "0.2.0"))
    assert result.returncode == 0, result.exception
    blobs, problems = parse_blobs(result.stdout, "stdout")
    assert not problems
    assert [b.data["name"] for b in blobs] == ["etcd-operator.v0.1.0", "etcd-operator.v0.2.0"]
    assert result.stdout.startswith('{\n    "schema": "olm.bundle",')


def test_render_command_yaml_and_flag_errors() -> None:
    as_yaml = cli("catalog", "render", str(ETCD / "0.1.0"), "-o", "yaml")
    assert as_yaml.returncode == 0, as_yaml.exception
    assert as_yaml.stdout.startswith("---\n")
    assert "name: etcd-operator.v0.1.0" in as_yaml.stdout
    two = cli("catalog", "render", str(ETCD / "0.1.0"), str(ETCD / "0.2.0"), "--image", "x:1")
    assert two.returncode == 1
    assert two.error == "--image needs exactly one bundle directory"
    assert cli("catalog", "render").returncode == 2
    assert cli("catalog", "render", str(ETCD / "0.1.0"), "-o", "xml").returncode == 2


def test_render_passes_catalogs_through() -> None:
    config = render([REPO / "catalog"])
    assert [p.name for p in config.packages] == ["etcd-operator"]
    assert len(config.bundles) == 5


@pytest.mark.e2e
def test_render_bundle_and_catalog_images_from_a_registry(
    registry: LocalRegistry, tmp_path: Path
) -> None:
    files = {
        path.relative_to(ETCD / "0.2.0").as_posix(): path.read_bytes()
        for path in sorted((ETCD / "0.2.0").rglob("*"))
        if path.is_file() and path.name != "bundle.Dockerfile"
    }
    loaded = load_bundle(ETCD / "0.2.0")
    bundle_ref = f"{registry.address}/olmtool/etcd-operator-bundle:0.2.0"
    push(build_image(files, {k: v for k, v in (loaded.annotations or {}).items()}), bundle_ref)
    rendered = render([bundle_ref])
    assert rendered.bundles[0].image == bundle_ref
    assert rendered.bundles[0].name == "etcd-operator.v0.2.0"

    catalog_ref = f"{registry.address}/olmtool/etcd-catalog:latest"
    push(catalog_image(REPO / "catalog"), catalog_ref)
    from_image = render([catalog_ref])
    assert sorted(b.name for b in from_image.bundles) == [
        "etcd-operator.v0.1.0",
        "etcd-operator.v0.2.0",
        "etcd-operator.v0.3.0",
        "etcd-operator.v0.4.0",
        "etcd-operator.v0.5.0",
    ]
    assert from_image.bundles[0].origin.file.startswith(f"{catalog_ref}:/configs/")


@pytest.mark.e2e
def test_many_images_render_in_the_order_given_with_errors_in_place(
    registry: LocalRegistry,
) -> None:
    """Several registry images in one render are pulled ahead, a few at a time; the
    result is each source rendered alone, in order, and a missing image fails there."""
    refs = []
    for version in ("0.1.0", "0.2.0", "0.3.0"):
        root = ETCD / version
        files = {
            path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*"))
            if path.is_file() and path.name != "bundle.Dockerfile"
        }
        ref = f"{registry.address}/olmtool/many-bundle:{version}"
        push(build_image(files, dict(load_bundle(root).annotations or {})), ref)
        refs.append(ref)
    sources = [refs[2], str(ETCD / "0.4.0"), refs[0], refs[1], refs[0]]
    together = render(sources)
    one_by_one = [b for source in sources for b in render([source]).bundles]
    assert together.bundles == one_by_one
    assert [b.name for b in together.bundles] == [
        "etcd-operator.v0.3.0",
        "etcd-operator.v0.4.0",
        "etcd-operator.v0.1.0",
        "etcd-operator.v0.2.0",
        "etcd-operator.v0.1.0",
    ]
    missing = f"{registry.address}/olmtool/many-bundle:9.9.9"
    with pytest.raises(OlmtoolError, match=f"pull {missing} refused: 404"):
        render([refs[0], missing, refs[1]])
