"""Several releases of one package in ``olmtool.yaml`` (``bundle.releases``): each a
release's keys laid over the shared ``bundle:`` section, resolved to a
:class:`ResolvedRelease` with ``BundleSettings`` of its own. The format and its rules are in ``docs/releases.md``;
problems are :class:`~olmtool.errors.SettingError` s naming the key
(``releases[2].channels``), so the error points at that key's line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field, ValidationError, create_model, field_validator
from pydantic.fields import FieldInfo

from olmtool.errors import (
    InputError,
    SettingError,
    SettingErrors,
    raise_settings,
    setting_problems,
)
from olmtool.images import expand_image
from olmtool.versions import parse_version, precedence_key

if TYPE_CHECKING:
    from olmtool.bundle.settings import BundleSettings

# Bundle keys that are the package's, never a release's.
PACKAGE_KEYS = ("package", "output", "releases", "version")
# Release keys that stand for a csv or deployment key: shorthand -> (section, key).
SHORTHANDS = {
    "replaces": ("csv", "replaces"),
    "skips": ("csv", "skips"),
    "skipRange": ("csv", "skipRange"),
    "image": ("deployment", "image"),
}
EDGES = ("replaces", "skips", "skipRange")


@dataclass(frozen=True)
class ResolvedRelease:
    """One release as the settings of a single bundle, and what the build must know."""

    settings: BundleSettings  # ``version`` set, images expanded, ``releases`` empty
    frozen: bool = False  # built once: ``bundle build`` never rewrites it
    own_crds: bool = False  # the release names its own ``crds`` folder
    newest: bool = True  # the highest version of the package's releases

    @property
    def version(self) -> str:
        return str(self.settings.version)


# -- the Release model -----------------------------------------------------------------


def release_model(
    bundle: type[BaseModel], base: type[BaseModel], check_version: Callable[[str], str]
) -> type[BaseModel]:
    """The model of one ``releases`` entry: every key of ``bundle`` a release may change,
    optional (``csv``/``deployment`` as partial models), plus the release's own keys."""

    class ReleaseKeys(base):  # type: ignore[misc, valid-type]
        version: str
        frozen: bool = False
        replaces: str | None = None
        skips: list[str] = Field(None)  # type: ignore[assignment]  # unset: none
        skip_range: str | None = None
        image: str = Field(None, min_length=1)  # type: ignore[assignment]

        @field_validator("version")
        @classmethod
        def _semver(cls, value: str) -> str:
            return check_version(value)

    fields: dict[str, Any] = {}
    for name, info in bundle.model_fields.items():
        if name in PACKAGE_KEYS:
            continue
        annotation = info.annotation
        if _is_section(annotation):
            annotation = partial_model(annotation, base)
        fields[name] = (_constrained(annotation, info), Field(None))
    return create_model("Release", __base__=ReleaseKeys, **fields)


def partial_model(model: type[BaseModel], base: type[BaseModel]) -> type[BaseModel]:
    """``model`` with every key optional and unset by default (each keeps its type and
    constraints, so a release's ``csv: {displayName: ""}`` is refused as in ``bundle``)."""
    fields: dict[str, Any] = {
        name: (_constrained(info.annotation, info), Field(None))
        for name, info in model.model_fields.items()
    }
    return create_model(f"{model.__name__}Override", __base__=base, **fields)


def _constrained(annotation: Any, info: FieldInfo) -> Any:
    return Annotated[(annotation, *info.metadata)] if info.metadata else annotation


def _is_section(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


# -- resolution ------------------------------------------------------------------------


def resolve_releases(settings: BundleSettings) -> list[ResolvedRelease]:
    """Every release of ``settings``, oldest first (raises :class:`SettingError`, or
    :class:`SettingErrors` for all the problems of several releases)."""
    if not settings.releases:
        return [_single(settings)]
    problems: list[SettingError] = []
    if settings.version is not None:
        problems.append(SettingError("version", "with releases, each release has its own version"))
    csv = settings.csv
    for edge, value in zip(EDGES, (csv.replaces, csv.skips, csv.skip_range), strict=True):
        if value:
            message = f"with releases, each release names its own {edge}"
            problems.append(SettingError(f"csv.{edge}", message))
    problems += _duplicates(settings)
    newest = max(settings.releases, key=lambda r: version_key(r.version)).version
    resolved = []
    for index, release in enumerate(settings.releases):
        try:
            resolved.append(_resolve(settings, index, newest=release.version == newest))
        except SettingErrors as exc:
            problems += exc.problems
        except SettingError as exc:
            problems.append(exc)
    raise_settings(problems)
    return sorted(resolved, key=lambda r: version_key(r.version))


def version_key(version: str) -> tuple[object, ...]:
    """Order of releases: semantic version precedence, as OLM orders bundles."""
    return precedence_key(parse_version(version))


def _single(settings: BundleSettings) -> ResolvedRelease:
    """The one-release form: ``settings`` itself, with its images expanded."""
    if settings.version is None:
        raise SettingError("version", "required key is missing (or list releases)")
    if not settings.channels:
        raise SettingError("channels", "required key is missing")
    expanded = _with_images_expanded(settings, settings.version)
    release = ResolvedRelease(expanded)
    expanded._resolved = [release]
    return release


def _with_images_expanded(settings: BundleSettings, version: str) -> BundleSettings:
    """``settings`` with ``{version}``/``{package}`` filled in wherever an image is named."""
    expand = _expander(settings.package, version)
    deployment, csv = settings.deployment, settings.csv
    related = [
        item.model_copy(update={"image": expand(item.image, f"csv.relatedImages[{i}].image")})
        for i, item in enumerate(csv.related_images)
    ]
    container = csv.container_image and expand(csv.container_image, "csv.containerImage")
    image = expand(deployment.image, "deployment.image")
    return settings.model_copy(
        update={
            "deployment": deployment.model_copy(update={"image": image}),
            "csv": csv.model_copy(update={"related_images": related, "container_image": container}),
        }
    )


def _expander(package: str, version: str) -> Callable[[str, str], str]:
    def expand(pattern: str, where: str) -> str:
        try:
            return expand_image(pattern, package=package, version=version)
        except InputError as exc:
            raise SettingError(where, exc.message) from None

    return expand


def _duplicates(settings: BundleSettings) -> list[SettingError]:
    seen: dict[str, int] = {}
    problems = []
    for index, release in enumerate(settings.releases):
        if release.version in seen:
            message = f"{release.version} is listed twice (also releases[{seen[release.version]}])"
            problems.append(SettingError(f"releases[{index}].version", message))
        seen.setdefault(release.version, index)
    return problems


def _resolve(settings: BundleSettings, index: int, *, newest: bool) -> ResolvedRelease:
    release = settings.releases[index]
    where = f"releases[{index}]"
    data, overrides = merged_data(settings, release, where)
    try:
        single = type(settings).model_validate(data)
    except ValidationError as exc:
        problems = [
            SettingError(_release_path(path, overrides, where), message)
            for error in exc.errors()
            for path, message in setting_problems(error)
        ]
        raise_settings(problems)
        raise  # pragma: no cover - a ValidationError has at least one error
    resolved = single.resolved_releases()[0]
    return ResolvedRelease(
        resolved.settings,
        frozen=release.frozen,
        own_crds="crds" in release.model_fields_set,
        newest=newest,
    )


def merged_data(
    settings: BundleSettings, release: BaseModel, where: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """The data of one release's bundle (the shared keys with the release's laid over
    them), and which of its keys came from the release: resolved path -> release path."""
    data = settings.model_dump(by_alias=True, exclude_unset=True, exclude={"releases"})
    given = release.model_dump(by_alias=True, exclude_unset=True)
    overrides = _lay_over(data, release, given)
    _lay_over_shorthands(data, given, overrides, where)
    data["version"] = release.version  # type: ignore[attr-defined]
    channels = data.get("channels") or []
    if not channels:
        raise SettingError(where, "no channels: give the release channels, or bundle channels")
    if "defaultChannel" not in given and data.get("defaultChannel") not in channels:
        data.pop("defaultChannel", None)  # the shared default is not one of its channels
    return data, overrides


def _lay_over(data: dict[str, Any], release: BaseModel, given: dict[str, Any]) -> dict[str, str]:
    """The release's bundle keys over ``data``: sections (``csv``, ``deployment``) key by
    key, other values whole; returns the paths set."""
    overrides: dict[str, str] = {"version": "version"}
    for key, value in given.items():
        if key in ("version", "frozen") or key in SHORTHANDS:
            continue
        if isinstance(value, dict) and _is_section(_field_type(release, key)):
            data[key] = {**data.get(key, {}), **value}
            overrides.update({f"{key}.{sub}": f"{key}.{sub}" for sub in value})
        else:
            data[key] = value
            overrides[key] = key
    return overrides


def _lay_over_shorthands(
    data: dict[str, Any], given: dict[str, Any], overrides: dict[str, str], where: str
) -> None:
    for short, (section, key) in SHORTHANDS.items():
        if short not in given:
            continue
        if f"{section}.{key}" in overrides:
            raise SettingError(f"{where}.{short}", f"give {short} once: here or as {section}.{key}")
        data.setdefault(section, {})[key] = given[short]
        overrides[f"{section}.{key}"] = short


def _field_type(model: BaseModel, alias: str) -> Any:
    for name, info in type(model).model_fields.items():
        if info.alias == alias or name == alias:
            return info.annotation
    return None


def _release_path(path: str, overrides: dict[str, str], where: str) -> str:
    """Where a problem of a release's merged bundle at ``path`` comes from: the release
    key that set it, else the shared key (a ``{tag}`` in the shared image, say)."""
    for resolved in sorted(overrides, key=len, reverse=True):
        if path == resolved or path.startswith((f"{resolved}.", f"{resolved}[")):
            return f"{where}.{overrides[resolved]}{path[len(resolved) :]}"
    return path
