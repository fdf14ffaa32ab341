"""The ``image:`` section of ``olmtool.yaml``: the operator's image, built without Docker.

Example::

    image:
      name: localhost:5000/olmtool/etcd-operator  # repository, no tag
      tag: "{version}"                            # {version} is bundle.version
      packages: [operator/etcd_operator]          # copied to /app/<dir name>
      requirements: operator/requirements.lock    # pip's hash-checked pins
      python: "3.11"                              # the CPython the wheels are for
      entrypoint: [python3, -m, etcd_operator]
      env: {PYTHONUNBUFFERED: "1"}

Paths are relative to ``olmtool.yaml``; keys are camelCase like the image config's.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from olmtool.errors import OlmtoolError
from olmtool.images.reference import parse_reference

_PYTHON = re.compile(r"3\.\d{1,2}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ImageSettings(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )

    name: str = Field(min_length=1)
    tag: str = "{version}"
    packages: list[str] = Field(min_length=1)
    requirements: str | None = None
    python: str = "3.11"
    entrypoint: list[str] = Field(min_length=1)
    cmd: list[str] = []
    env: dict[str, str] = {}
    working_dir: str = "/app"
    labels: dict[str, str] = {}
    base: str | None = None
    output: str = "build/images"

    @field_validator("name")
    @classmethod
    def _repository(cls, value: str) -> str:
        if "@" in value or ":" in value.rpartition("/")[2]:
            raise ValueError("name the repository only; tags come from tag or --tag")
        try:
            parse_reference(value)
        except OlmtoolError as exc:
            raise ValueError(exc.message) from None
        return value

    @field_validator("python")
    @classmethod
    def _python(cls, value: str) -> str:
        if not _PYTHON.fullmatch(value):
            raise ValueError(f"{value!r} is not a CPython 3 version like 3.11")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @field_validator("working_dir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must be an absolute path in the image")
        return value
