"""``bundle.dependencies``, ``bundle.properties`` and ``bundle.webhooks`` in olmtool.yaml:
each mistake is one error naming the key and its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from olmtool.config import load_project
from olmtool.errors import InputError

HEAD = """\
bundle:
  package: gadget-operator
  version: 0.4.0
  channels: [stable]
  csv:
    displayName: Gadget operator
    installModes: [OwnNamespace, AllNamespaces]
  deployment:
    name: gadget-operator
    image: example.com/gadget:1
    ports: [{name: webhook, containerPort: 9443}]
"""  # the snippets below start on line 12

HOOK = """\
  webhooks:
    - type: ValidatingAdmissionWebhook
      generateName: vwidget.example.com
      targetPort: webhook
      sideEffects: None
      rules: [{operations: [CREATE], apiGroups: [example.com], apiVersions: [v1], resources: [widgets]}]
"""


def _load(tmp_path: Path, snippet: str):
    config = tmp_path / "olmtool.yaml"
    config.write_text(HEAD + snippet)
    return load_project(config)


def _error(tmp_path: Path, snippet: str) -> InputError:
    with pytest.raises(InputError) as exc:
        _load(tmp_path, snippet)
    return exc.value


def _hook(**changes: str) -> str:
    """HOOK with lines replaced (key -> new line text, '' drops the line) or appended."""
    lines = HOOK.splitlines()
    for key, text in changes.items():
        index = next(
            (i for i, line in enumerate(lines) if line.strip(" -").startswith(f"{key}:")), None
        )
        if index is None:
            lines.append(f"      {text}")
        elif text:
            lines[index] = ("    - " if lines[index].strip().startswith("-") else "      ") + text
        else:
            del lines[index]
    return "\n".join(lines) + "\n"


CASES = [
    # dependencies
    (
        "  dependencies:\n    - {type: olm.package, value: {packageName: x, version: 'one'}}\n",
        "bundle.dependencies[0].value.version: 'one' is not a semver version range",
        13,
    ),
    (
        "  dependencies:\n    - {type: olm.package, value: {packageName: x}}\n",
        "bundle.dependencies[0].value.version: required key is missing",
        13,
    ),
    (
        "  dependencies:\n    - {type: olm.gvk, value: {group: g, version: '', kind: K}}\n",
        "bundle.dependencies[0].value.version: String should have at least 1 character",
        13,
    ),
    (
        "  dependencies:\n    - type: olm.gvk\n      value: {group: g, version: v1, kind: K, plural: ks}\n",
        "bundle.dependencies[0].value.plural: unknown key",
        14,
    ),
    (
        "  dependencies:\n    - {type: olm.pkg, value: {}}\n",
        "bundle.dependencies[0].type: Input should be 'olm.package', 'olm.gvk', 'olm.label' or 'olm.constraint'",
        13,
    ),
    (
        "  dependencies:\n    - type: olm.constraint\n      value: {failureMessage: m}\n",
        "bundle.dependencies[0].value: a constraint needs exactly one of gvk, package, cel, all, any, not (found 0)",
        14,
    ),
    (
        "  dependencies:\n    - type: olm.constraint\n      value:\n        all:\n          constraints:\n"
        "            - cel: {rule: ''}\n",
        "bundle.dependencies[0].value.all.constraints[0].cel.rule: String should have at least 1 character",
        17,
    ),
    (
        "  dependencies:\n    - {type: olm.label, value: {label: gpu}}\n    - {type: olm.label, value: {label: gpu}}\n",
        "bundle.dependencies[1]: the same dependency as entry 0",
        14,
    ),
    # properties
    (
        "  properties:\n    - {type: olm.package, value: {packageName: x, version: 1.0.0}}\n",
        "bundle.properties[0].type: property type olm.package is not declared by hand: opm derives it",
        13,
    ),
    (
        "  properties:\n    - {type: olm.gvk.required, value: {group: g, version: v1, kind: K}}\n",
        "declare it under bundle.dependencies as type olm.gvk",
        13,
    ),
    (
        "  properties:\n    - {type: olm.maxOpenShiftVersion, value: 4.16}\n",
        'bundle.properties[0].value: olm.maxOpenShiftVersion needs a string such as "4.16"',
        13,
    ),
    (
        "  properties:\n    - {type: example.dev/x}\n",
        "bundle.properties[0].value: required key is missing",
        13,
    ),
    # webhooks
    (_hook(generateName="generateName: vwidget.example"), "at least three segments", 14),
    (
        _hook(generateName="generateName: VWidget.example.com"),
        "a lowercase RFC 1123 subdomain must consist of",
        14,
    ),
    (
        _hook(failurePolicy="failurePolicy: Maybe"),
        "failurePolicy: Input should be 'Ignore' or 'Fail'",
        18,
    ),
    (
        _hook(matchPolicy="matchPolicy: Fuzzy"),
        "matchPolicy: Input should be 'Exact' or 'Equivalent'",
        18,
    ),
    (
        _hook(sideEffects="sideEffects: Some"),
        "sideEffects: Input should be 'None' or 'NoneOnDryRun'",
        16,
    ),
    (_hook(sideEffects=""), "sideEffects: required for admission webhooks", 13),
    (
        _hook(timeoutSeconds="timeoutSeconds: 31"),
        "timeoutSeconds: Input should be less than or equal to 30",
        18,
    ),
    (
        _hook(timeoutSeconds="timeoutSeconds: 0"),
        "timeoutSeconds: Input should be greater than or equal to 1",
        18,
    ),
    (
        _hook(targetPort="targetPort: metrics"),
        "targetPort: the webhook's Service sends to port 'metrics'",
        15,
    ),
    (_hook(targetPort=""), "containerPort: the webhook's Service sends to port 443", 13),
    (
        _hook(
            rules="rules: [{operations: [READ], apiGroups: [a.io], apiVersions: [v1], resources: [x]}]"
        ),
        "rules[0].operations[0]: Input should be '*', 'CREATE', 'UPDATE', 'DELETE' or 'CONNECT'",
        17,
    ),
    (
        _hook(
            rules="rules: [{operations: ['*'], apiGroups: ['*'], apiVersions: [v1], resources: [x]}]"
        ),
        "OLM refuses webhook rules over all API groups",
        17,
    ),
    (
        _hook(
            rules="rules: [{operations: [CREATE], apiGroups: [operators.coreos.com], apiVersions: [v1], resources: [x]}]"
        ),
        "operators.coreos.com",
        17,
    ),
    (
        _hook(
            rules="rules: [{operations: [CREATE], apiGroups: [a.io], apiVersions: [v1], resources: ['*/*', pods]}]"
        ),
        "rules[0].resources: if '*/*' is present, must not specify other resources",
        17,
    ),
    (
        _hook(
            rules="rules: [{operations: [CREATE, '*'], apiGroups: [a.io], apiVersions: [v1], resources: [x]}]"
        ),
        "rules[0].operations: if '*' is present, must not specify other operations",
        17,
    ),
    (
        _hook(
            rules="rules: [{operations: [CREATE], apiGroups: [a.io], apiVersions: [v1], resources: [x], scope: All}]"
        ),
        "scope: Input should be 'Cluster', 'Namespaced' or '*'",
        17,
    ),
    (_hook(rules="rules: []"), "rules: an admission webhook without rules is never called", 17),
    (
        _hook(reinvocationPolicy="reinvocationPolicy: IfNeeded"),
        "only a MutatingAdmissionWebhook is reinvoked",
        18,
    ),
    (
        _hook(conversionCRDs="conversionCRDs: [widgets.example.com]"),
        "only a ConversionWebhook converts CRDs",
        18,
    ),
    (_hook(webhookPath="webhookPath: validate"), "webhookPath: must start with a '/'", 18),
    (
        _hook(admissionReviewVersions="admissionReviewVersions: [v2]"),
        "must include at least one of v1, v1beta1",
        18,
    ),
    (
        _hook(objectSelector="objectSelector: {matchExpressions: [{key: tier, operator: In}]}"),
        "objectSelector.matchExpressions[0].values: must be specified when `operator` is 'In' or 'NotIn'",
        18,
    ),
    (
        _hook(objectSelector="objectSelector: {matchLabels: {'-bad': x}}"),
        "objectSelector.matchLabels.-bad",
        18,
    ),
    (
        HOOK + HOOK.replace("  webhooks:\n", ""),
        "bundle.webhooks[1].generateName: 'vwidget.example.com' is also webhook 0's name",
        19,
    ),
    (
        _hook(type="type: ConversionWebhook", rules="", targetPort="targetPort: webhook").replace(
            "      sideEffects: None\n", ""
        )
        + "      conversionCRDs: [widgets.features.olmtool.dev]\n",
        "bundle.webhooks[0].type: OLM installs conversion webhooks only for operators whose csv.installModes",
        13,
    ),
    (
        _hook(type="type: ConversionWebhook").replace("      sideEffects: None\n", ""),
        "bundle.webhooks[0].rules: a ConversionWebhook has no rules",
        16,
    ),
]


@pytest.mark.parametrize(("snippet", "message", "line"), CASES)
def test_settings_error_names_key_and_line(
    tmp_path: Path, snippet: str, message: str, line: int
) -> None:
    error = _error(tmp_path, snippet)
    assert message in error.message, error.message
    assert error.line == line, (error.line, error.message)
    assert error.path is not None and error.path.endswith("olmtool.yaml")


def test_valid_sections_load(tmp_path: Path) -> None:
    project = _load(
        tmp_path,
        HOOK
        + "  dependencies:\n    - {type: olm.package, value: {packageName: x, version: '>=1.0.0 <2.0.0 || 3.x'}}\n"
        + "  properties:\n    - {type: olm.label, value: {label: gpu}}\n",
    )
    bundle = project.settings.bundle
    assert bundle is not None
    assert bundle.dependencies[0].as_entry() == {
        "type": "olm.package",
        "value": {"packageName": "x", "version": ">=1.0.0 <2.0.0 || 3.x"},
    }
    (hook,) = bundle.webhooks
    assert hook.description("gadget-operator") == {
        "type": "ValidatingAdmissionWebhook",
        "generateName": "vwidget.example.com",
        "deploymentName": "gadget-operator",
        "containerPort": 443,
        "targetPort": "webhook",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": ["example.com"],
                "apiVersions": ["v1"],
                "resources": ["widgets"],
            }
        ],
    }
