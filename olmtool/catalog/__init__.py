"""File-based catalogs (FBC): load, render, validate, publish, graph and serve them.

    from olmtool.catalog import load_catalog, render_catalog, validate_catalog

:mod:`~olmtool.catalog.declcfg` is the plain data model (one dataclass per schema),
:mod:`~olmtool.catalog.load` reads a tree of blobs into it, :mod:`~olmtool.catalog.write`
lays it out like ``opm migrate``.
"""

from olmtool.catalog.declcfg import DeclarativeConfig
from olmtool.catalog.findings import Finding
from olmtool.catalog.load import LoadResult, load_catalog, load_catalog_strict
from olmtool.catalog.write import CatalogFormat, render_catalog, write_package

__all__ = [
    "CatalogFormat",
    "DeclarativeConfig",
    "Finding",
    "LoadResult",
    "load_catalog",
    "load_catalog_strict",
    "render_catalog",
    "write_package",
]
