"""What the ``bundle:`` settings' newer sections share: the pydantic base (camelCase keys,
no unknown keys, frozen) and errors placed on the exact key they are about.

A validator that checks one field against another (a webhook's port against the
deployment's ports) is declared on the enclosing model, so pydantic would place its error
on that model's key; :func:`fail_at` places it deeper, so ``olmtool.yaml``'s error names
the line of the offending key (:func:`olmtool.config.load_project`).
"""

from __future__ import annotations

from typing import Annotated, Any, NoReturn

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from olmtool.versions import parse_range


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


def fail_at(loc: tuple[int | str, ...], message: str, value: Any = None) -> NoReturn:
    """Raise a validation error at ``loc`` (relative to the field being validated)."""
    error = PydanticCustomError("value_error", message)  # type: ignore[arg-type]
    details = InitErrorDetails(type=error, loc=loc, input=value)
    raise ValidationError.from_exception_data("olmtool.yaml", [details])


def checked_range(value: str) -> str:
    """``value``, if blang/semver (which OLM and opm use) parses it as a version range."""
    try:
        parse_range(value)
    except ValueError as exc:
        detail = str(exc).removeprefix(f"{value!r} is not a version range: ")
        raise ValueError(f"{value!r} is not a semver version range: {detail}") from None
    return value


# A key holding a version range: a skipRange, a dependency's version.
VersionRange = Annotated[str, AfterValidator(checked_range)]
