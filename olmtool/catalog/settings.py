"""The ``catalog:`` section of ``olmtool.yaml``: which bundles make up which package.

Example::

    catalog:
      output: catalog                 # the FBC root; catalog.Dockerfile goes beside it
      format: yaml
      opmCompat: latest               # "1.26": templates render as opm v1.26 renders them
      packages:
        - name: etcd-operator
          bundles: ["bundle/etcd-operator/*"]     # bundle directories (globs) or images
          image: "localhost:5000/olmtool/etcd-operator-bundle:{version}"
          deprecations:
            - bundle: etcd-operator.v0.1.0
              message: "0.1.0 stores v1alpha1 only; upgrade to 0.3.0."

Channels come from the bundles themselves (annotations.yaml channels, CSV
``spec.replaces``/``spec.skips`` and the ``olm.skipRange`` annotation) — the way
``opm index add`` built them — unless ``template:`` names a basic or semver template.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from olmtool.errors import InputError
from olmtool.images import expand_image

DEFAULT_BASE_IMAGE = "quay.io/operator-framework/opm:latest"


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class DeprecationSetting(_Section):
    """Deprecate the whole package (``package: true``), a channel, or a bundle."""

    package: bool = False
    channel: str | None = None
    bundle: str | None = None
    message: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one_target(self) -> DeprecationSetting:
        targets = [t for t in (self.package or None, self.channel, self.bundle) if t]
        if len(targets) != 1:
            raise ValueError("name exactly one of package: true, channel or bundle")
        return self


class PackageSource(_Section):
    name: str = Field(min_length=1)
    bundles: list[str] = []
    # pull spec for directory bundles (of ``bundles`` or the template); {package} and
    # {version} expand; without it publishing refuses unless told (--allow-empty-image)
    image: str | None = None
    template: str | None = None
    default_channel: str | None = None
    deprecations: list[DeprecationSetting] = []

    @field_validator("image")
    @classmethod
    def _placeholders(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                expand_image(value, package="package", version="0.0.0")
            except InputError as exc:
                raise ValueError(exc.message) from None
        return value

    @model_validator(mode="after")
    def _some_source(self) -> PackageSource:
        if bool(self.bundles) == bool(self.template):
            raise ValueError("give either bundles (directories or images) or a template")
        return self


class CatalogSettings(_Section):
    output: str = "catalog"
    format: Literal["json", "yaml"] = "json"
    payload: Literal["objects", "csv-metadata"] = "objects"
    dockerfile: str | None = None  # default: <output>.Dockerfile beside the root
    base_image: str = DEFAULT_BASE_IMAGE
    # which opm semver templates render like: newer opm's edges, or "1.26" (docs/opm-compat.md)
    opm_compat: Literal["latest", "1.26"] = "latest"
    packages: list[PackageSource] = Field(min_length=1)
