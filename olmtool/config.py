"""The project file, ``olmtool.yaml``: where an operator's schemas and outputs live.

Example::

    crd:
      paths: [operator]              # put on sys.path to import the schemas
      modules: [etcd_operator.api]   # modules (or .py files) declaring CustomResources
      output: operator/config/crd    # where generated CRDs go
    bundle:                          # see olmtool.bundle.settings
      package: etcd-operator
      version: 0.3.0
      ...
    catalog:                         # see olmtool.catalog.settings
      packages: [{name: etcd-operator, bundles: ["bundle/etcd-operator/*"]}]
    image:                           # see olmtool.images.build.settings
      name: localhost:5000/olmtool/etcd-operator
      packages: [operator/etcd_operator]
      entrypoint: [python3, -m, etcd_operator]
    validate:                        # see olmtool.waivers
      ignore: [{check: good-practices/channel-name, reason: alpha is our preview channel}]

Paths are relative to the directory holding ``olmtool.yaml``. Commands look for the
file in the current directory and its parents, or take ``--config``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from olmtool import kyaml
from olmtool.bundle import BundleSettings
from olmtool.catalog import CatalogSettings
from olmtool.errors import InputError, ProjectNotFound, display_path, setting_problem
from olmtool.images import ImageSettings
from olmtool.waivers import ValidateSettings, Waiver

CONFIG_NAME = "olmtool.yaml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CrdSettings(_Section):
    modules: list[str] = Field(min_length=1)
    paths: list[str] = []
    output: str = "config/crd"


class Settings(_Section):
    crd: CrdSettings | None = None
    bundle: BundleSettings | None = None
    catalog: CatalogSettings | None = None
    image: ImageSettings | None = None
    # "validate" would shadow pydantic's BaseModel.validate: the key is an alias
    validation: ValidateSettings | None = Field(None, alias="validate")


@dataclass(frozen=True)
class Project:
    """A loaded ``olmtool.yaml`` and the directory its paths are relative to."""

    settings: Settings
    root: Path
    file: Path
    source: kyaml.YamlFile | None = field(default=None, repr=False, compare=False)

    def path(self, relative: str) -> Path:
        return self.root / relative

    def line_at(self, path: str) -> int | None:
        """The line of a key path (``validate.ignore[0]``) in the project file."""
        return self.source.line_at(0, path) if self.source else None

    @property
    def waivers(self) -> list[Waiver]:
        """The ``validate.ignore`` waivers, each naming its file and line as its source."""
        if self.settings.validation is None:
            return []
        name = display_path(self.file)
        return [
            setting.waiver(f"{name}:{self.line_at(f'validate.ignore[{index}]') or 1}")
            for index, setting in enumerate(self.settings.validation.ignore)
        ]


def find_config(start: Path | None = None) -> Path | None:
    """``olmtool.yaml`` in ``start`` (default: the working directory) or its parents."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def load_project(config: Path | None = None) -> Project:
    """Load the project file, from ``config`` or found by :func:`find_config`."""
    path = config or find_config()
    if path is None:
        raise ProjectNotFound(
            f"no {CONFIG_NAME} in this directory or its parents (olmtool init writes one)"
        )
    return parse_project(kyaml.read_text(path), path)


def parse_project(text: str, path: Path) -> Project:
    """The project file's ``text`` validated as if read from ``path`` (which ``bundle
    release`` checks before it writes)."""
    source = kyaml.parse(text, path=path, single=True)  # as Kubernetes reads YAML
    data = source.documents[0] if source.documents else None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"must be a mapping, not {type(data).__name__}", path=path, line=1)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        loc, message = setting_problem(exc.errors()[0])
        raise InputError(f"{loc}: {message}", path=path, line=source.line_at(0, loc)) from None
    return Project(settings=settings, root=path.parent, file=path, source=source)
