"""Schemas the generator must refuse, with a message naming the model and the field.

The models are declared at module level (not inside the tests) so that ``render_crd`` can
find their source: every ``SchemaError`` it raises carries this file and the field's line.
"""

import inspect
import re
from pathlib import Path
from typing import Annotated, Any, Optional

import pytest
from pydantic import ConfigDict, Field, ValidationError

from olmtool.crd import (
    CustomResource,
    IntOrString,
    LoadedResource,
    PreserveUnknownFields,
    Scale,
    Schema,
    Version,
    model_to_openapi,
    render_crd,
)
from olmtool.errors import OlmtoolError, SchemaError

GROUP = "bad.olmtool.dev"


class Alpha(Schema):
    """One object model."""

    size: int = 0


class Beta(Schema):
    """Another object model."""

    name: str = ""


class UnionOfModels(Schema):
    """A Union of two object models."""

    choice: Alpha | Beta
    """Either kind of object: no structural schema can say so."""


class TreeNode(Schema):
    """A self-referencing model."""

    label: str = ""
    children: list["TreeNode"] = []


class Ping(Schema):
    """First half of a cycle Ping -> Pong -> Ping."""

    pong: Optional["Pong"] = None


class Pong(Schema):
    """Second half of the cycle."""

    ping: Ping | None = None


Ping.model_rebuild()


class CycleHolder(Schema):
    """Reaches the cycle through a field."""

    start: Ping = Field(default_factory=Ping)


class UntypedDict(Schema):
    """dict[str, Any] without PreserveUnknownFields()."""

    replicas: int = 1
    extras: dict[str, Any] = {}


class UntypedAny(Schema):
    """typing.Any without a marker."""

    payload: Any = None


class IntOrStr(Schema):
    """int | str written by hand instead of IntOrString."""

    port: int | str = 80


class Pair(Schema):
    """A tuple."""

    bounds: tuple[int, str]


class TypedExtras(Schema):
    """Declared fields plus typed extra values (additionalProperties next to properties)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, int]

    name: str = ""


class SnakeCaseField(Schema):
    """The offending field has a multi-word (snake_case) name."""

    replicas: int = 1
    extra_settings: dict[str, Any] = {}


class InvalidDefault(Schema):
    """pydantic does not validate defaults; the apiserver does."""

    replicas: Annotated[int, Field(ge=3)] = 1


class Fine(Schema):
    """A model the generator accepts."""

    replicas: int = 1
    anything: Annotated[Any, PreserveUnknownFields()] = None
    port: IntOrString = 80


def _resource(spec: type[Schema], *, status: type[Schema] | None = None) -> CustomResource:
    return CustomResource(
        group=GROUP,
        kind="Bad",
        versions=(Version(name="v1", spec=spec, status=status, storage=True),),
    )


def _refuse(spec: type[Schema]) -> SchemaError:
    """The error of both model_to_openapi and render_crd (which also locates it)."""
    with pytest.raises(SchemaError) as direct:
        model_to_openapi(spec)
    with pytest.raises(SchemaError) as rendered:
        render_crd(LoadedResource(_resource(spec), f"{__name__}:{spec.__name__}"))
    assert rendered.value.message == direct.value.message
    assert (rendered.value.model, rendered.value.field) == (direct.value.model, direct.value.field)
    return rendered.value


def _line_of(model: type, attribute: str | None = None) -> int:
    """Line of ``class Model`` or of ``attribute:`` (the Python name) inside it."""
    lines, start = inspect.getsourcelines(model)
    if attribute is None:
        return start
    (offset,) = [i for i, text in enumerate(lines) if re.match(rf"\s+{attribute}\s*:", text)]
    return start + offset


# --- refusals: message names the model and the field --------------------------------------


def test_union_of_models():
    error = _refuse(UnionOfModels)
    assert (error.model, error.field) == ("UnionOfModels", "choice")
    assert str(error.message).startswith("UnionOfModels.choice: Union of Alpha, Beta")
    assert "PreserveUnknownFields()" in error.message
    assert isinstance(error, OlmtoolError)


def test_self_referencing_model():
    error = _refuse(TreeNode)
    assert error.model == "TreeNode"
    assert error.field == "children.[]"
    assert "recursive model (TreeNode -> TreeNode)" in error.message
    assert error.message.startswith("TreeNode.children")


def test_mutually_recursive_models():
    error = _refuse(CycleHolder)
    # the cycle is reported where it closes: Pong.ping refers back to Ping
    assert (error.model, error.field) == ("Pong", "ping")
    assert "recursive model (Ping -> Pong -> Ping)" in error.message
    assert error.message.startswith("Pong.ping: ")


def test_untyped_dict():
    error = _refuse(UntypedDict)
    assert (error.model, error.field) == ("UntypedDict", "extras")
    assert error.message.startswith("UntypedDict.extras: untyped dict")
    assert "PreserveUnknownFields()" in error.message


def test_any_without_marker():
    error = _refuse(UntypedAny)
    assert (error.model, error.field) == ("UntypedAny", "payload")
    assert error.message.startswith("UntypedAny.payload: has no type")
    assert "PreserveUnknownFields()" in error.message


def test_int_or_str_hints_int_or_string():
    error = _refuse(IntOrStr)
    assert (error.model, error.field) == ("IntOrStr", "port")
    assert error.message.startswith("IntOrStr.port: Union of integer, string")
    assert error.message.endswith("use IntOrString")


def test_tuple():
    error = _refuse(Pair)
    assert (error.model, error.field) == ("Pair", "bounds")
    assert error.message.startswith("Pair.bounds: tuples cannot be expressed")
    assert "list[T]" in error.message


def test_fields_with_typed_extras():
    schema = TypedExtras.model_json_schema()
    if not (schema.get("properties") and isinstance(schema.get("additionalProperties"), dict)):
        pytest.skip("this pydantic does not emit typed additionalProperties next to properties")
    error = _refuse(TypedExtras)
    assert error.model == "TypedExtras" and error.field is None
    assert "properties and additionalProperties are mutually exclusive" in error.message


def test_generator_accepts_the_fixed_versions():
    generated = render_crd(LoadedResource(_resource(Fine), f"{__name__}:Fine"))
    assert generated.name.endswith(".yaml")
    assert "kind: CustomResourceDefinition" in generated.text


def test_invalid_default_is_refused_by_the_crd_check():
    """Not a conversion error: the CRD is built, then check_crd finds the bad default."""
    with pytest.raises(SchemaError) as caught:
        render_crd(LoadedResource(_resource(InvalidDefault), "m:r", file=Path(__file__)))
    error = caught.value
    assert "the generated CRD would be rejected" in error.message
    assert "replicas" in error.message and "default" in error.message
    assert error.model == "Bad"
    assert error.path is not None and error.path.endswith("tests/crd/test_bad_schemas.py")


# --- CustomResource declarations pydantic itself refuses -------------------------------


def test_two_storage_versions():
    with pytest.raises(ValidationError, match="exactly one version must be the storage version"):
        CustomResource(
            group=GROUP,
            kind="Bad",
            versions=(
                Version(name="v1", spec=Fine, storage=True),
                Version(name="v2", spec=Fine, storage=True),
            ),
        )


def test_no_storage_version():
    with pytest.raises(ValidationError, match="got none"):
        CustomResource(group=GROUP, kind="Bad", versions=(Version(name="v1", spec=Fine),))


def test_no_versions():
    with pytest.raises(ValidationError):
        CustomResource(group=GROUP, kind="Bad", versions=())


def test_duplicate_version_names():
    with pytest.raises(ValidationError, match="version names must be unique"):
        CustomResource(
            group=GROUP,
            kind="Bad",
            versions=(Version(name="v1", storage=True), Version(name="v1")),
        )


def test_scale_without_status():
    with pytest.raises(ValidationError, match="scale subresource needs the status subresource"):
        Version(name="v1", spec=Fine, storage=True, scale=Scale())
    with pytest.raises(ValidationError, match="scale subresource needs the status subresource"):
        Version(name="v1", spec=Fine, status=Fine, status_subresource=False, scale=Scale())
    Version(name="v1", spec=Fine, status=Fine, scale=Scale())  # with a status it is fine


def test_deprecation_warning_needs_deprecated():
    with pytest.raises(ValidationError, match="only allowed on a deprecated version"):
        Version(name="v1", deprecation_warning="old")


# --- render_crd attaches the file and line of the offending declaration -------------------


@pytest.mark.parametrize(
    ("model", "attribute"),
    [
        (UnionOfModels, "choice"),
        (TreeNode, "children"),
        (UntypedDict, "extras"),
        (UntypedAny, "payload"),
        (IntOrStr, "port"),
        (Pair, "bounds"),
    ],
)
def test_error_points_at_the_field(model, attribute):
    error = _refuse(model)
    assert error.path is not None and error.path.endswith("test_bad_schemas.py")
    assert error.line == _line_of(model, attribute)
    assert str(error).startswith(f"{error.path}:{error.line}: {model.__name__}.")


def test_error_in_a_nested_model_points_at_that_model():
    error = _refuse(CycleHolder)
    assert error.path.endswith("test_bad_schemas.py")
    assert error.line == _line_of(Pong, "ping")


def test_model_level_error_points_at_the_class():
    if not isinstance(TypedExtras.model_json_schema().get("additionalProperties"), dict):
        pytest.skip("this pydantic does not emit typed additionalProperties next to properties")
    error = _refuse(TypedExtras)
    assert error.path.endswith("test_bad_schemas.py")
    assert error.line == _line_of(TypedExtras)


def test_error_points_at_a_snake_case_field():
    error = _refuse(SnakeCaseField)
    assert error.field == "extraSettings"  # the message names the CRD (JSON) field
    assert error.line == _line_of(SnakeCaseField, "extra_settings")
