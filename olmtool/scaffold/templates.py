"""The files ``olmtool init`` writes, as ``string.Template`` texts (``$name`` placeholders).

Values are filled in by :mod:`olmtool.scaffold.render`, already validated and, where YAML
could misread them, quoted. The layout follows operator-sdk's (``config/manifests/bases``,
``config/samples``) and the Python one the etcd operator in this repository uses.
"""

from __future__ import annotations

from string import Template

PROJECT_FILE = Template("""\
# olmtool project file for $package, written by `olmtool init`.
# Paths are relative to this file. Every key: olmtool's README; a full example: the etcd
# operator's olmtool.yaml in olmtool's repository.

# CRDs: `olmtool crd generate` imports $module.api and writes config/crd/.
crd:
  paths: [.]
  modules: [$module.api]
  output: config/crd

# The OLM bundle: `olmtool bundle build` writes bundle/$package/<version>/, merging the
# generated CSV fields into the base CSV (yours to edit, comments kept).
bundle:
  package: $package
  version: $version
  channels: [$channel]
  defaultChannel: $channel
  output: bundle
  crds: config/crd
  base: config/manifests/bases/$csv_file
  examples: [config/samples]  # each becomes an entry of the CSV's alm-examples
  csv:
    displayName: $display_name
    # What the operator does, in Markdown: OperatorHub and the console show it.
    description: |
      $display_name manages $kind resources ($group/$api_version).
    icon: config/manifests/icon.svg  # a placeholder: replace it with your logo (svg, png)
    keywords: [$package, $kind_lower]
    maintainers:
      - name: $display_name maintainers
        email: maintainers@$domain
    provider:
      name: $domain
      url: https://$domain
    links:
      - name: $display_name
        url: https://$domain
    maturity: alpha
    capabilities: Basic Install
    minKubeVersion: 1.20.0
    installModes: [$install_modes]
  # The operator's Deployment; WATCH_NAMESPACE (the OperatorGroup's target namespaces) is
  # always injected. Build and push the image yourself, or with `olmtool image build`.
  deployment:
    name: $package
    image: $image
    resources:
      requests: {cpu: 10m, memory: 64Mi}
      limits: {memory: 128Mi}
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
  # Namespaced rules, granted in every target namespace (cluster-wide in AllNamespaces
  # mode): what a controller of $kind objects needs. Add the calls your operator makes.
  permissions:
    - apiGroups: [$group]
      resources: [$plural]
      verbs: [get, list, watch, update, patch]
    - apiGroups: [$group]
      resources: [$plural/status]
      verbs: [get, update, patch]
    - apiGroups: [$group]
      resources: [$plural/finalizers]
      verbs: [update]
    - apiGroups: [""]
      resources: [events]
      verbs: [create, patch]

# The file-based catalog: `olmtool catalog publish` writes catalog/$package/ from every
# bundle under bundle/$package/, and catalog.Dockerfile beside it.
catalog:
  output: catalog
  format: yaml
  packages:
    - name: $package
      bundles: ["bundle/$package/*"]
      image: $bundle_image  # where each bundle image is pushed
""")

PACKAGE_INIT = Template('''\
"""$package: an operator for $kind resources ($group)."""
''')

API_INIT = Template('''\
"""The $kind API ($group), declared once; `olmtool crd generate` writes its CRD.

A new API version: a module beside $api_version.py and a Version(...) below; exactly one
version is the storage version.
"""

from olmtool.crd import CustomResource, PrinterColumn, Version

from $module.api import $api_version

GROUP = "$group"

$resource_variable = CustomResource(
    group=GROUP,
    kind="$kind",
    description="$kind is the Schema for the $plural API.",
    versions=(
        Version(
            name="$api_version",
            spec=$api_version.${kind}Spec,
            status=$api_version.${kind}Status,
            storage=True,
            printer_columns=(
                PrinterColumn(name="Size", json_path=".spec.size", type="integer"),
                PrinterColumn(
                    name="Age", json_path=".metadata.creationTimestamp", type="date"
                ),
            ),
        ),
    ),
)
''')

API_VERSION_MODULE = Template('''\
"""$group/$api_version: the $kind API's schema.

Fields are snake_case here and camelCase in the CRD (observed_generation ->
observedGeneration); the string below a field is its description in the CRD.
"""

from __future__ import annotations

from typing import Annotated

from olmtool.crd import Condition, ListType, Schema
from pydantic import Field


class ${kind}Spec(Schema):
    """${kind}Spec is the desired state of a $kind."""

    size: Annotated[int, Field(ge=1, le=10)] = 1
    """Number of instances to run (an example field: replace it with yours)."""


class ${kind}Status(Schema):
    """${kind}Status is the observed state of a $kind."""

    conditions: Annotated[list[Condition], ListType("map", keys=("type",))] = Field(
        default_factory=list
    )
    """Available, Progressing and Degraded conditions, following Kubernetes conventions."""
    observed_generation: Annotated[int, Field(ge=0)] | None = None
    """The .metadata.generation the status describes."""
''')

BASE_CSV = Template("""\
# Hand-maintained part of $package's ClusterServiceVersion.
# `olmtool bundle build` merges the generated fields (from olmtool.yaml, the CRDs and the
# samples) into this document; anything here that it does not generate is kept as is,
# comments included.
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  annotations:
    # Infrastructure features, as shown by OperatorHub's filters: "true" for each the
    # operator supports.
    features.operators.openshift.io/disconnected: "false"
    features.operators.openshift.io/fips-compliant: "false"
    features.operators.openshift.io/proxy-aware: "false"
    features.operators.openshift.io/tls-profiles: "false"
    features.operators.openshift.io/token-auth-aws: "false"
    features.operators.openshift.io/token-auth-azure: "false"
    features.operators.openshift.io/token-auth-gcp: "false"
  labels:
    operatorframework.io/arch.amd64: supported
    operatorframework.io/os.linux: supported
  name: $package.v0.0.0
spec:
  displayName: $display_name
""")

SAMPLE = Template("""\
# An example $kind: `olmtool bundle build` puts it into the CSV's alm-examples, which
# the console offers as a template.
apiVersion: $group/$api_version
kind: $kind
metadata:
  name: $kind_lower-sample
spec:
  size: 1
""")

# A placeholder icon (OperatorHub warns without one): the kind's initial on a tile.
ICON = Template("""\
<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
  <rect width="64" height="64" rx="12" fill="#2f5d8a"/>
  <text x="32" y="43" fill="#ffffff" font-family="sans-serif" font-size="30" \
text-anchor="middle">$initial</text>
</svg>
""")
