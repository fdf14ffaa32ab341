"""``bundle build``: the generated bundle (golden files), merging into a hand-edited base
CSV, refusing bad input with file:line, and writing atomically."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from olmtool import fsutil, yamlwrite
from olmtool.actions import bundle_build
from olmtool.bundle import build_bundle, write_bundle
from olmtool.bundle.model import load_bundle
from olmtool.bundle.validate import select_suites, validate_bundle
from olmtool.config import load_project
from olmtool.errors import InputError
from olmtool.fsutil import read_tree

GOLDEN = Path(__file__).parent / "golden" / "widget-operator" / "1.2.0"
CSV = "manifests/widget-operator.clusterserviceversion.yaml"


def _build(root: Path, **update):
    loaded = load_project(root / "olmtool.yaml")
    settings = loaded.settings.bundle
    if update:
        settings = settings.model_copy(update=update)
    return build_bundle(settings, root)


def test_bundle_matches_golden_files(project: Path) -> None:
    bundle = _build(project)
    if os.environ.get("UPDATE_GOLDEN"):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        write_bundle(bundle.__class__(GOLDEN, bundle.files, bundle.labels))
    assert bundle.files == read_tree(GOLDEN)


def test_layout_annotations_and_dockerfile_agree(project: Path) -> None:
    bundle = _build(project)
    assert sorted(bundle.files) == [
        "bundle.Dockerfile",
        "manifests/features.olmtool.dev_widgets.yaml",
        "manifests/widget-operator-metrics_v1_service.yaml",
        CSV,
        "manifests/widget-operator_policy_v1_poddisruptionbudget.yaml",
        "metadata/annotations.yaml",
        "tests/scorecard/config.yaml",
    ]
    annotations = yamlwrite.loads(bundle.files["metadata/annotations.yaml"])["annotations"]
    assert annotations["operators.operatorframework.io.bundle.channels.v1"] == "stable,fast"
    assert annotations["operators.operatorframework.io.bundle.channel.default.v1"] == "stable"
    assert annotations == bundle.labels
    for key, value in annotations.items():
        assert f"LABEL {key}={value}\n" in bundle.files["bundle.Dockerfile"]
    assert bundle.directory == project / "out" / "widget-operator" / "1.2.0"


def test_generated_csv_fields(project: Path) -> None:
    csv = yamlwrite.plain(yamlwrite.loads(_build(project).files[CSV]))
    spec = csv["spec"]
    assert csv["metadata"]["name"] == "widget-operator.v1.2.0"
    assert spec["version"] == "1.2.0"
    assert [m for m in spec["installModes"] if m["supported"]] == [
        {"supported": True, "type": "OwnNamespace"},
        {"supported": True, "type": "AllNamespaces"},
    ]
    (deployment,) = spec["install"]["spec"]["deployments"]
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[0] == {
        "name": "WATCH_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}},
    }
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    owned = spec["customresourcedefinitions"]["owned"]
    assert [(o["name"], o["version"]) for o in owned] == [
        ("widgets.features.olmtool.dev", "v1"),
        ("widgets.features.olmtool.dev", "v1beta1"),
    ]
    assert csv["metadata"]["annotations"]["olm.skipRange"] == ">=1.0.0 <1.2.0"
    assert spec["skips"] == ["widget-operator.v1.1.1"]


def test_hand_edits_in_the_base_csv_survive(project: Path) -> None:
    text = _build(project).files[CSV]
    # Comments, unknown fields and hand-written entries are kept where they were.
    assert "support: Example Inc.  # who answers the phone\n" in text
    assert "# mirrored for disconnected installs; not known to olmtool.yaml\n" in text
    assert "# hand-written action descriptors survive\n" in text
    assert "customField: kept\n" in text
    assert "label: {tier: control-plane}\n" in text
    csv = yamlwrite.plain(yamlwrite.loads(text))
    images = {i["name"]: i["image"] for i in csv["spec"]["relatedImages"]}
    assert images == {
        "widget-agent": "example.com/widget-agent:1.2.0",
        "widget-operator": "example.com/widget-operator:1.2.0",
        "widget-sidecar": "example.com/widget-sidecar:2.0",
    }
    v1 = csv["spec"]["customresourcedefinitions"]["owned"][0]
    assert v1["actionDescriptors"] == [{"path": "restart", "displayName": "Restart"}]
    assert v1["specDescriptors"][0]["path"] == "replicas"
    # Generated fields replace the base's values.
    assert csv["spec"]["displayName"] == "Widget operator"
    assert "generated: replaced on every build" not in text


def test_base_keeps_fields_the_config_leaves_out(project: Path) -> None:
    settings = load_project(project / "olmtool.yaml").settings.bundle
    csv_settings = settings.csv.model_copy(update={"replaces": None})
    bundle = _build(project, csv=csv_settings)
    csv = yamlwrite.plain(yamlwrite.loads(bundle.files[CSV]))
    assert csv["spec"]["replaces"] == "widget-operator.v0.9.0"


def test_rebuilding_changes_nothing_and_check_sees_hand_edits(project: Path) -> None:
    bundle = _build(project)
    assert write_bundle(bundle).stale
    assert not write_bundle(_build(project)).stale
    csv_path = bundle.directory / CSV
    csv_path.write_text(csv_path.read_text().replace("Makes widgets.", "Makes gadgets."))
    (bundle.directory / "manifests" / "extra.yaml").write_text("{}\n")
    difference = write_bundle(_build(project), check=True)
    assert difference.modified == [CSV]
    assert difference.removed == ["manifests/extra.yaml"]
    assert "-  description: Makes gadgets." in difference.diffs[-1] + difference.diffs[0]
    assert (bundle.directory / "manifests" / "extra.yaml").exists()  # check writes nothing


def test_built_bundle_validates(project: Path) -> None:
    bundle = _build(project)
    write_bundle(bundle)
    report = validate_bundle(load_bundle(bundle.directory), suites=select_suites(["all"]))
    # the base CSV's own spec.customField is kept, and OLM's CRD drops it (a warning)
    assert [(f.check, f.path) for f in report.findings] == [
        ("operatorhub/icon-missing", "spec"),
        ("csv/schema", "spec.customField"),
    ]


# A non-root operator with a read-only root filesystem and a writable /tmp.
HARDENED = (
    "    command: [widget-operator]\n"
    "    securityContext: {readOnlyRootFilesystem: true, runAsNonRoot: true}\n"
    "    podSecurityContext: {runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}\n"
    "    volumes: [{name: tmp, emptyDir: {}}]\n"
    "    volumeMounts: [{name: tmp, mountPath: /tmp}]\n"
)


def test_volumes_and_mounts_reach_the_deployment(project: Path) -> None:
    config = project / "olmtool.yaml"
    config.write_text(config.read_text().replace("    command: [widget-operator]\n", HARDENED))
    bundle = _build(project)
    csv = yamlwrite.plain(yamlwrite.loads(bundle.files[CSV]))
    pod = csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {}}]
    assert pod["securityContext"] == {
        "runAsUser": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    (container,) = pod["containers"]
    assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert container["securityContext"] == {"readOnlyRootFilesystem": True, "runAsNonRoot": True}
    write_bundle(bundle)
    report = validate_bundle(load_bundle(bundle.directory), suites=select_suites(["all"]))
    assert [f.check for f in report.findings] == ["operatorhub/icon-missing", "csv/schema"]


def test_without_volumes_the_deployment_has_none(project: Path) -> None:
    csv = yamlwrite.plain(yamlwrite.loads(_build(project).files[CSV]))
    pod = csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
    assert "volumes" not in pod and "volumeMounts" not in pod["containers"][0]


def test_a_mount_of_no_volume_names_the_key_and_line(project: Path) -> None:
    config = project / "olmtool.yaml"
    text = config.read_text().replace("    command: [widget-operator]\n", HARDENED)
    config.write_text(text.replace("{name: tmp, mountPath", "{name: scratch, mountPath"))
    with pytest.raises(InputError) as exc:
        load_project(config)
    assert str(exc.value).endswith(
        "olmtool.yaml:40: bundle.deployment.volumeMounts[0].name: "
        "'scratch' is not one of volumes (tmp)"
    )


def _assert_input_error(
    exc: pytest.ExceptionInfo[InputError], file: str, line: int | None, text: str
):
    assert exc.value.path is not None and exc.value.path.endswith(file), exc.value
    assert exc.value.line == line, exc.value
    assert text in exc.value.message, exc.value


def test_unsupported_kind_is_an_error_naming_file_and_line(project: Path) -> None:
    extra = project / "extra" / "metrics.yaml"
    extra.write_text(
        extra.read_text() + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"
    )
    with pytest.raises(InputError) as exc:
        _build(project)
    _assert_input_error(
        exc, "extra/metrics.yaml", 17, "kind Deployment cannot be shipped in a bundle"
    )


MONITOR = """\
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: widget-operator}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: widget-operator}}
  endpoints:
    - port: metrics
      interval: {interval}
"""


def test_valid_service_monitor_is_shipped(project: Path) -> None:
    (project / "extra" / "monitor.yaml").write_text(MONITOR.replace("{interval}", "30s"))
    built = _build(project)
    assert "manifests/widget-operator_monitoring.coreos.com_v1_servicemonitor.yaml" in built.files


def test_monitoring_object_the_crd_rejects_is_an_error_naming_file_and_line(
    project: Path,
) -> None:
    (project / "extra" / "monitor.yaml").write_text(MONITOR.replace("{interval}", "30sec"))
    with pytest.raises(InputError) as exc:
        _build(project)
    _assert_input_error(
        exc,
        "extra/monitor.yaml",
        8,
        "ServiceMonitor widget-operator: spec.endpoints[0].interval: '30sec' is not a "
        "Prometheus duration",
    )


def test_csv_among_extra_manifests_points_at_base(project: Path) -> None:
    shutil.copy(project / "base" / "widget-operator.clusterserviceversion.yaml", project / "extra")
    with pytest.raises(InputError, match=r"belongs in bundle\.base"):
        _build(project)


def test_example_is_validated_against_its_crd(project: Path) -> None:
    sample = project / "samples" / "widget.yaml"
    sample.write_text(sample.read_text().replace("replicas: 2", "replicas: two"))
    with pytest.raises(InputError) as exc:
        _build(project)
    _assert_input_error(exc, "samples/widget.yaml", 1, "example Widget example: spec.replicas")


SECOND_EXAMPLE = """\
apiVersion: features.olmtool.dev/v1
kind: Widget
metadata:
  name: second
spec:
  paused: maybe
  replicas: many
"""


def test_every_example_problem_in_one_error(project: Path) -> None:
    """Like ``bundle validate``: all problems of all examples, each with file:line and
    path; the error placed on the first example; nothing written. ``validate.ignore``
    accepts them file by file."""
    sample = project / "samples" / "widget.yaml"
    sample.write_text(sample.read_text().replace("replicas: 2", "replicas: two"))
    (project / "samples" / "second.yaml").write_text(SECOND_EXAMPLE)
    config = project / "olmtool.yaml"
    config.write_text(
        config.read_text().replace(
            "examples: [samples/widget.yaml]",
            "examples: [samples/widget.yaml, samples/second.yaml]",
        )
    )
    settings = load_project(config).settings.bundle
    output = project / settings.output / settings.package / settings.version
    with pytest.raises(InputError) as exc:
        bundle_build(config=config)
    _assert_input_error(exc, "samples/widget.yaml", 1, "3 problems in the examples: ")
    entries = exc.value.message.split(": ", 1)[1].split("; ")
    assert [(e.split(":")[1], e.rsplit("project/", 1)[1]) for e in entries] == [
        (" spec.replicas", "samples/widget.yaml:6)"),
        (" spec.paused", "samples/second.yaml:6)"),
        (" spec.replicas", "samples/second.yaml:7)"),
    ], entries
    assert entries[0].startswith("example Widget example: spec.replicas: ")
    assert not output.exists()

    ignore = "validate:\n  ignore:\n    - check: bundle/example-invalid\n      file: {}\n      reason: demo\n"
    config.write_text(config.read_text() + ignore.format("samples/second.yaml"))
    with pytest.raises(InputError) as exc:
        bundle_build(config=config)
    assert exc.value.message.startswith("example Widget example: spec.replicas: ")
    assert exc.value.message.endswith("/samples/widget.yaml:6)") and ";" not in exc.value.message
    assert not output.exists()
    config.write_text(config.read_text() + "    - bundle/example-invalid=shows errors on purpose\n")
    built = bundle_build(config=config)
    assert len(built.as_dict()["waived"]) == 3 and output.is_dir()


def test_example_of_a_kind_no_crd_serves(project: Path) -> None:
    sample = project / "samples" / "widget.yaml"
    sample.write_text(sample.read_text().replace("/v1\n", "/v9\n"))
    with pytest.raises(
        InputError, match=r"features\.olmtool\.dev/v9 Widget is not served by any CRD"
    ):
        _build(project)


def test_missing_inputs_are_named(project: Path) -> None:
    with pytest.raises(InputError, match="no such CRD directory"):
        _build(project, crds="nowhere")
    with pytest.raises(InputError, match=r"listed in bundle\.manifests"):
        _build(project, manifests=["missing.yaml"])


def test_bad_base_csv_yaml_names_file_and_line(project: Path) -> None:
    base = project / "base" / "widget-operator.clusterserviceversion.yaml"
    base.write_text(base.read_text().replace("  customField: kept", "  customField: [kept"))
    with pytest.raises(InputError) as exc:
        _build(project)
    assert exc.value.path.endswith("widget-operator.clusterserviceversion.yaml")
    assert exc.value.line is not None and "invalid YAML" in exc.value.message


def test_config_error_names_the_key_and_line(project: Path) -> None:
    config = project / "olmtool.yaml"
    config.write_text(
        config.read_text().replace("maturity: stable", "maturity: stable\n    colour: red")
    )
    with pytest.raises(InputError) as exc:
        load_project(config)
    assert str(exc.value).endswith("olmtool.yaml:20: bundle.csv.colour: unknown key")
    config.write_text(config.read_text().replace("email: widgets@example.com", "mail: x@y.z"))
    with pytest.raises(InputError) as exc:
        load_project(config)
    # every problem, in file order: the misspelled key beside the required key it left out
    lines = [line.split("olmtool.yaml:", 1)[1] for line in str(exc.value).splitlines()]
    assert lines == [
        "16: bundle.csv.maintainers[0].email: required key is missing",
        "16: bundle.csv.maintainers[0].mail: unknown key (did you mean email?)",
        "20: bundle.csv.colour: unknown key",
    ]
    assert (exc.value.line, exc.value.message) == (
        16,
        "bundle.csv.maintainers[0].email: required key is missing",
    )


def test_a_failed_write_leaves_the_old_bundle_intact(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _build(project)
    write_bundle(bundle)
    before = read_tree(bundle.directory)
    calls = {"n": 0}
    original = fsutil._write_file

    def flaky(path: Path, text: str) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        original(path, text)

    changed = bundle.__class__(bundle.directory, {**bundle.files, "metadata/new.yaml": "x\n"})
    monkeypatch.setattr(fsutil, "_write_file", flaky)
    with pytest.raises(OSError, match="disk full"):
        write_bundle(changed)
    monkeypatch.undo()
    assert read_tree(bundle.directory) == before
    assert sorted(p.name for p in bundle.directory.parent.iterdir()) == ["1.2.0"]
