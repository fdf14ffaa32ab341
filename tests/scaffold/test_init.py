"""``init`` (the action): the files it writes (golden), that they make a project whose CRD,
sample, bundle and catalog pass every check, refusing to overwrite, and the names it
accepts. The CLI and the end-to-end run of the real command: test_cli_init.py.

``UPDATE_GOLDEN=1 pytest tests/scaffold/test_init.py`` rewrites golden/foo-operator/.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from olmtool import yamlwrite
from olmtool.actions import (
    bundle_build,
    bundle_validate,
    catalog_publish,
    crd_generate,
    project_init,
)
from olmtool.bundle import INSTALL_MODE_TYPES
from olmtool.config import load_project
from olmtool.crd import decode_crd, validate_object
from olmtool.errors import ArgumentError, InputError
from olmtool.fsutil import read_tree
from olmtool.scaffold import project_names, render_project

GOLDEN = Path(__file__).parent / "golden" / "foo-operator"
FOO = {"package": "foo-operator", "group": "demo.example.com", "kind": "Widget"}


@pytest.fixture
def forget_modules() -> Iterator[None]:
    """Schema modules imported by crd generate are dropped again, so that tests importing
    a module of the same name from another directory get their own."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_files_match_golden(tmp_path: Path) -> None:
    project_init(tmp_path, **FOO)
    written = read_tree(tmp_path)
    if os.environ.get("UPDATE_GOLDEN"):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        shutil.copytree(tmp_path, GOLDEN)
    assert written == read_tree(GOLDEN)
    assert sorted(written) == [
        "config/manifests/bases/foo-operator.clusterserviceversion.yaml",
        "config/manifests/icon.svg",
        "config/samples/demo_v1alpha1_widget.yaml",
        "foo_operator/__init__.py",
        "foo_operator/api/__init__.py",
        "foo_operator/api/v1alpha1.py",
        "olmtool.yaml",
    ]


def test_output_is_deterministic_and_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = project_init(Path("a"), **FOO)
    second = project_init(Path("b"), **FOO)
    assert read_tree(tmp_path / "a") == read_tree(tmp_path / "b")
    listed = first.as_dict()
    assert listed["written"] == [
        "a/olmtool.yaml",
        "a/foo_operator/__init__.py",
        "a/foo_operator/api/__init__.py",
        "a/foo_operator/api/v1alpha1.py",
        "a/config/manifests/bases/foo-operator.clusterserviceversion.yaml",
        "a/config/manifests/icon.svg",
        "a/config/samples/demo_v1alpha1_widget.yaml",
    ]
    assert listed["bundle"] == "bundle/foo-operator/0.1.0"
    assert listed["nextSteps"][0] == "cd a"
    assert second.as_dict()["nextSteps"][1:] == listed["nextSteps"][1:]


def test_project_file_holds_the_choices(tmp_path: Path) -> None:
    project_init(tmp_path, **FOO)
    settings = load_project(tmp_path / "olmtool.yaml").settings
    assert settings.crd.modules == ["foo_operator.api"]
    bundle = settings.bundle
    assert (bundle.package, bundle.version, bundle.channels, bundle.default_channel) == (
        "foo-operator",
        "0.1.0",
        ["stable"],
        "stable",
    )
    assert bundle.csv.install_modes == ["OwnNamespace", "SingleNamespace", "AllNamespaces"]
    assert bundle.deployment.image == "localhost:5000/foo-operator:0.1.0"
    assert bundle.csv.provider.url == "https://example.com"
    [package] = settings.catalog.packages
    assert package.image == "localhost:5000/foo-operator-bundle:{version}"
    assert package.bundles == ["bundle/foo-operator/*"]


@pytest.mark.usefixtures("forget_modules")
@pytest.mark.parametrize("modes", [*INSTALL_MODE_TYPES, "default"])
def test_each_install_mode_gives_a_valid_bundle_and_catalog(tmp_path: Path, modes: str) -> None:
    # A package (hence Python module) per case: the schema modules stay importable apart.
    package = f"{modes.lower()}-operator"
    chosen = {} if modes == "default" else {"install_modes": [modes]}
    project_init(tmp_path, package=package, group="demo.example.com", kind="Widget", **chosen)
    config = tmp_path / "olmtool.yaml"
    crds = crd_generate(config=config)
    assert [p.name for p in crds.written] == ["demo.example.com_widgets.yaml"]
    assert not crd_generate(config=config, check=True).failed
    built = bundle_build(config=config)
    assert built.bundle.directory == tmp_path / "bundle" / package / "0.1.0"
    report = bundle_validate(built.bundle.directory, select=["all"])
    assert report.findings == [] and report.passed(strict=True)
    csv = yamlwrite.load(built.bundle.directory / f"manifests/{package}.clusterserviceversion.yaml")
    supported = [m["type"] for m in csv["spec"]["installModes"] if m["supported"]]
    expected = (
        ["OwnNamespace", "SingleNamespace", "AllNamespaces"] if modes == "default" else [modes]
    )
    assert supported == expected
    published = catalog_publish(config=config)
    assert not published.failed
    assert (tmp_path / "catalog" / package / "catalog.yaml").is_file()


@pytest.mark.usefixtures("forget_modules")
def test_sample_validates_against_the_generated_crd(tmp_path: Path) -> None:
    project_init(tmp_path, package="sample-operator", group="shop.example.org", kind="CoffeeOrder")
    crd_generate(config=tmp_path / "olmtool.yaml")
    crd, problems = decode_crd(
        yamlwrite.load(tmp_path / "config/crd/shop.example.org_coffeeorders.yaml")
    )
    assert problems == []
    sample = yamlwrite.load(tmp_path / "config/samples/shop_v1alpha1_coffeeorder.yaml")
    assert validate_object(crd, sample).errors == []
    assert validate_object(crd, {**sample, "spec": {"size": 0}}).errors  # the schema bites


def test_refuses_to_overwrite_and_writes_nothing(tmp_path: Path) -> None:
    project_init(tmp_path, **FOO)
    schema = tmp_path / "foo_operator/api/v1alpha1.py"
    schema.write_text("# mine\n")
    with pytest.raises(InputError, match=r"already exists \(and 6 more\); pass --force") as caught:
        project_init(tmp_path, **FOO)
    assert caught.value.path == str(tmp_path / "olmtool.yaml")
    assert schema.read_text() == "# mine\n"


def test_one_existing_file_stops_everything(tmp_path: Path) -> None:
    sample = tmp_path / "config/samples/demo_v1alpha1_widget.yaml"
    sample.parent.mkdir(parents=True)
    sample.write_text("mine\n")
    with pytest.raises(InputError, match=r"already exists; pass --force") as caught:
        project_init(tmp_path, **FOO)
    assert caught.value.path == str(sample)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config"]


def test_force_overwrites_and_says_what_it_replaced(tmp_path: Path) -> None:
    project_init(tmp_path, **FOO)
    (tmp_path / "olmtool.yaml").write_text("# mine\n")
    result = project_init(tmp_path, **FOO, force=True)
    assert result.replaced == result.written
    assert read_tree(tmp_path) == read_tree(GOLDEN)


def test_unwritable_places_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "config").write_text("a file where a directory goes\n")
    with pytest.raises(InputError, match="cannot write: Not a directory") as caught:
        project_init(tmp_path, **FOO)
    assert "config/manifests/bases" in caught.value.path
    (tmp_path / "config").unlink()
    (tmp_path / "olmtool.yaml").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        project_init(tmp_path, **FOO, force=True)


@pytest.mark.parametrize(
    ("argument", "value", "message"),
    [
        ("package", "Foo", "is not a DNS-1123 label"),
        ("package", "foo_operator", "is not a DNS-1123 label"),
        ("package", "a" * 64, "is not a DNS-1123 label"),
        ("group", "demo", "needs a dot"),
        ("group", "Demo.example.com", "is not a DNS-1123 subdomain"),
        ("group", "apps.k8s.io", "reserved for Kubernetes"),
        ("kind", "widget", "is not UpperCamelCase"),
        ("kind", "My-Widget", "is not UpperCamelCase"),
        ("kind", "W" * 63, "is too long"),
        ("version", "1.0", "is not a semantic version"),
        ("api_version", "v1beta", "is not a Kubernetes API version"),
        ("api_version", "1", "is not a Kubernetes API version"),
        ("channel", "stable channel", "is not a channel name"),
        ("install_modes", ["Own"], "'Own' is not an install mode"),
        ("install_modes", [], "needs an install mode"),
        ("image", "localhost:5000/Foo:1", "must be lower case"),
        ("domain", "Example.com", "is not a DNS-1123 subdomain"),
    ],
)
def test_bad_names_name_their_argument(argument: str, value: object, message: str) -> None:
    with pytest.raises(ArgumentError, match=message) as caught:
        project_names(**{**FOO, argument: value})
    assert caught.value.argument == argument


def test_domain_completes_a_group_without_a_dot() -> None:
    names = project_names(package="foo", group="demo", kind="Widget", domain="acme.io")
    assert (names.group, names.domain) == ("demo.acme.io", "acme.io")
    assert project_names(package="foo", group="example.com", kind="Widget").domain == "example.com"
    assert project_names(**FOO).domain == "example.com"


@pytest.mark.parametrize(
    ("package", "module"),
    [
        ("foo-operator", "foo_operator"),
        ("3scale", "project_3scale"),  # not an identifier
        ("import", "project_import"),  # a keyword
        ("json", "project_json"),  # would shadow the standard library
        ("olmtool", "project_olmtool"),  # would shadow what imports it
    ],
)
def test_python_package_names(package: str, module: str) -> None:
    names = project_names(package=package, group="demo.example.com", kind="Widget")
    assert names.module == module
    assert f"{module}/api/__init__.py" in render_project(names)


@pytest.mark.parametrize(
    ("kind", "variable", "plural"),
    [
        ("Widget", "widget", "widgets"),
        ("EtcdCluster", "etcd_cluster", "etcdclusters"),
        ("HTTPRoute", "http_route", "httproutes"),
        ("Policy", "policy", "policies"),
        ("Import", "import_resource", "imports"),
    ],
)
def test_kind_names(kind: str, variable: str, plural: str) -> None:
    names = project_names(package="foo", group="demo.example.com", kind=kind)
    assert (names.resource_variable, names.plural) == (variable, plural)


@pytest.mark.parametrize(
    ("image", "deployment", "bundle"),
    [
        (
            "quay.io/acme/foo:{version}",
            "quay.io/acme/foo:0.1.0",
            "quay.io/acme/foo-bundle:{version}",
        ),
        ("localhost:5000/{package}", "localhost:5000/foo", "localhost:5000/foo-bundle:{version}"),
        (
            "example.com/foo@sha256:" + "a" * 64,
            "example.com/foo@sha256:" + "a" * 64,
            "example.com/foo-bundle:{version}",
        ),
    ],
)
def test_image_placeholders_and_the_bundle_image(
    tmp_path: Path, image: str, deployment: str, bundle: str
) -> None:
    project_init(tmp_path, package="foo", group="demo.example.com", kind="Widget", image=image)
    settings = load_project(tmp_path / "olmtool.yaml").settings
    assert settings.bundle.deployment.image == deployment
    assert settings.catalog.packages[0].image == bundle


def test_values_yaml_would_misread_are_quoted(tmp_path: Path) -> None:
    project_init(tmp_path, **FOO, channel="1", version="1.0.0-rc.1")
    bundle = load_project(tmp_path / "olmtool.yaml").settings.bundle
    assert (bundle.channels, bundle.default_channel, bundle.version) == (["1"], "1", "1.0.0-rc.1")
    assert 'channels: ["1"]' in (tmp_path / "olmtool.yaml").read_text()
