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

import difflib
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from olmtool import yamlread
from olmtool.bundle import BundleSettings
from olmtool.catalog import CatalogSettings
from olmtool.errors import (
    InputError,
    InputErrors,
    ProjectNotFound,
    display_path,
    setting_problems,
)
from olmtool.images import ImageSettings
from olmtool.waivers import Waiver, split_waiver, unknown_check_problem

CONFIG_NAME = "olmtool.yaml"
MAX_PROBLEMS = 20  # past this, "... and N more": the first ones are what to fix first


def known_checks() -> set[str]:
    """Every check id of ``bundle validate`` and ``catalog validate``."""
    from olmtool.bundle import CHECKS as BUNDLE_CHECKS
    from olmtool.catalog import CHECKS as CATALOG_CHECKS

    return set(BUNDLE_CHECKS) | set(CATALOG_CHECKS)


class WaiverSetting(BaseModel):
    """One ``validate.ignore`` entry: a mapping, or ``"CHECK[:FILE]=REASON"``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: str
    reason: str
    file: str = ""

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        if isinstance(data, str):
            check, file, reason = split_waiver(data)
            return {"check": check, "file": file, "reason": reason}
        return data

    @field_validator("check")
    @classmethod
    def _known(cls, check: str) -> str:
        problem = unknown_check_problem(check.strip(), known_checks())
        if problem:
            raise ValueError(problem)
        return check.strip()

    @field_validator("reason")
    @classmethod
    def _given(cls, reason: str) -> str:
        if not reason.strip():
            raise ValueError("a waiver in olmtool.yaml needs a reason (say why it is accepted)")
        return reason.strip()

    def waiver(self, source: str) -> Waiver:
        return Waiver(self.check, self.reason, self.file.strip(), source)


class ValidateSettings(BaseModel):
    """The ``validate:`` section of ``olmtool.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ignore: list[WaiverSetting] = []


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
    source: yamlread.YamlFile | None = field(default=None, repr=False, compare=False)

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
    return parse_project(yamlread.read_text(path), path)


def parse_project(text: str, path: Path) -> Project:
    """The project file's ``text`` validated as if read from ``path`` (which ``bundle
    release`` checks before it writes)."""
    source = yamlread.parse(text, path=path, single=True)  # as Kubernetes reads YAML
    data = source.documents[0] if source.documents else None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"must be a mapping, not {type(data).__name__}", path=path, line=1)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise settings_error(exc, source, path) from None
    return Project(settings=settings, root=path.parent, file=path, source=source)


def settings_error(exc: ValidationError, source: yamlread.YamlFile, path: Path) -> InputError:
    """Every problem pydantic found, a line each in file order: an unknown key (with the
    key it is probably a typo of) next to the required key it left missing."""
    problems: dict[tuple[int, str], InputError] = {}
    for error in exc.errors():
        for loc, message in setting_problems(error):
            if error["type"] == "extra_forbidden":
                message += _did_you_mean(error["loc"])
            line = source.line_at(0, loc)
            problem = InputError(f"{loc}: {message}", path=path, line=line)
            problems.setdefault((line or 0, loc), problem)
    ordered = [problems[key] for key in sorted(problems)]
    if len(ordered) > MAX_PROBLEMS:
        more = len(ordered) - MAX_PROBLEMS
        ordered = [
            *ordered[:MAX_PROBLEMS],
            InputError(f"... and {more} more problem(s)", path=path),
        ]
    return ordered[0] if len(ordered) == 1 else InputErrors(ordered)


def _did_you_mean(loc: tuple[int | str, ...]) -> str:
    """`` (did you mean channels?)`` for an unknown key close to one its section takes."""
    *parent, key = loc
    if not isinstance(key, str):
        return ""
    known = sorted({name for model in _models_at(tuple(parent)) for name in _keys(model)})
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _models_at(loc: tuple[int | str, ...]) -> list[type[BaseModel]]:
    """The settings models that may stand at ``loc`` (a pydantic error location)."""
    kinds: list[Any] = [Settings]
    for part in loc:
        stepped = [inner for kind in kinds for inner in _step(kind, part)]
        if stepped or isinstance(part, int):
            kinds = stepped
        # else: a union member's tag or a validator's name, not a key: stay
    return [model for kind in kinds for model in _alternatives(kind) if _is_model(model)]


def _step(kind: Any, part: int | str) -> list[Any]:
    """What stands below ``kind`` at key or index ``part``."""
    found: list[Any] = []
    for each in _alternatives(kind):
        origin = get_origin(each)
        if isinstance(part, int):
            if origin in (list, tuple, set, frozenset):
                found.extend(get_args(each)[:1])
        elif _is_model(each):
            found.extend(
                info.annotation
                for name, info in each.model_fields.items()
                if part in (name, info.alias)
            )
        elif origin in (dict, Mapping):
            found.extend(get_args(each)[1:2])
    return found


def _alternatives(kind: Any) -> list[Any]:
    """``X | Y | None`` and ``Annotated[X, ...]`` as the types they allow."""
    origin = get_origin(kind)
    if origin is Annotated:
        return _alternatives(get_args(kind)[0])
    if origin in (Union, types.UnionType):
        return [inner for arg in get_args(kind) for inner in _alternatives(arg)]
    return [kind]


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _keys(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]
