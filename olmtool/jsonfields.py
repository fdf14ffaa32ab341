"""Results as ``-o json`` prints them: a dataclass's fields under camelCase keys, in the
order they are declared (``install_seconds`` -> ``installSeconds``), as Kubernetes and
OLM spell their own JSON.

>>> from dataclasses import dataclass
>>> @dataclass
... class Run:
...     start: str
...     install_seconds: float
...     created: list[str]
>>> json_fields(Run("v1", 3.14159, []), skip=("created",), install_seconds=3.14)
{'start': 'v1', 'installSeconds': 3.14}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any


def camel(name: str) -> str:
    """``olm_crds`` -> ``olmCrds``: Python's snake_case as a JSON key."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def json_fields(
    result: Any,
    *,
    rename: Mapping[str, str] | None = None,
    skip: Collection[str] = (),
    **values: Any,
) -> dict[str, Any]:
    """``result``'s fields but ``skip``, each under ``rename``'s key or its camelCase name;
    ``values`` (by field name) replace a field's value, or are added after the fields."""
    keys = rename or {}
    data: dict[str, Any] = {}
    for field in dataclasses.fields(result):
        if field.name not in skip:
            value = values.pop(field.name) if field.name in values else getattr(result, field.name)
            data[keys.get(field.name, camel(field.name))] = value
    data.update({keys.get(name, camel(name)): value for name, value in values.items()})
    return data
