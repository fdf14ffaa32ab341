"""Lazy package faces: ``from olmtool.bundle import load_bundle`` imports only the module
that defines it, not the whole package (PEP 562).

Each package's ``__init__`` names its exports and where they live; the first access
imports that one module. Importing the ``olmtool`` CLI so touches almost nothing, and a
command pays only for what it runs (pydantic, jsonschema, httpx, kubernetes and grpc are
imported by the modules that use them, when those are first needed).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any


class _Face(ModuleType):
    """A package module whose exported names are imported on first access."""

    _lazy_exports: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        source = self.__dict__.get("_lazy_exports", {}).get(name)
        if source is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing ``olmtool.actions.bundle_build`` binds the package's attribute
        # ``bundle_build`` to that submodule; the face promises the function of that name
        # (as an eager ``from .bundle_build import bundle_build`` in __init__ did).
        source = self.__dict__.get("_lazy_exports", {}).get(name)
        if isinstance(value, ModuleType) and source == value.__name__ and hasattr(value, name):
            value = getattr(value, name)
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.__dict__.get("_lazy_exports", {})))


def lazy_package(name: str, exports: Mapping[str, Iterable[str]]) -> list[str]:
    """Make package ``name`` (call with ``__name__``) import ``exports`` lazily:
    ``{"olmtool.bundle.model": ("Bundle", "load_bundle"), ...}``; the exported names,
    sorted, for the package's ``__all__``."""
    module = sys.modules[name]
    table = {export: source for source, names in exports.items() for export in names}
    module.__dict__["_lazy_exports"] = table
    module.__class__ = _Face
    return sorted(table)
