"""``olm.template.substitutes``: FBC entries plus substitutions, each a rendered bundle that
takes over a base bundle's edges and skips it (upstream's processSubstitution)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from olmtool.catalog import declcfg as dc
from olmtool.catalog.templates.documents import (
    Document,
    NodePath,
    get_list,
    get_str,
    strict_fields,
)
from olmtool.catalog.templates.entries import (
    SCHEMA_SUBSTITUTES,
    BundleRef,
    BundleRenderer,
    add_entries,
    placed,
    render_entries,
)
from olmtool.errors import InputError


@dataclass(frozen=True)
class Substitution:
    """``{name, base}``: the bundle rendered from ``name`` takes over bundle ``base``'s edges."""

    name: str
    base: str
    line: int | None = None


@dataclass
class SubstitutesTemplate:
    """``olm.template.substitutes``: FBC entries (bundle references allowed, as in the basic
    template) and substitutions applied in order."""

    file: str
    config: dc.DeclarativeConfig = field(default_factory=dc.DeclarativeConfig)
    bundles: list[BundleRef] = field(default_factory=list)
    substitutions: list[Substitution] = field(default_factory=list)
    line: int | None = None


def parse_substitutes(doc: Document) -> SubstitutesTemplate:
    allowed = ("schema", "entries", "substitutions")
    fields = strict_fields(doc, doc.data, (), allowed, SCHEMA_SUBSTITUTES)
    template = SubstitutesTemplate(file=doc.file, line=doc.line)
    add_entries(doc, fields, template.config, template.bundles, SCHEMA_SUBSTITUTES)
    key, substitutions = get_list(doc, fields, "substitutions", (), SCHEMA_SUBSTITUTES)
    for index, item in enumerate(substitutions):
        template.substitutions.append(_substitution(doc, item, (key, index), f"{key}[{index}]"))
    return template


def _substitution(doc: Document, item: Any, path: NodePath, where: str) -> Substitution:
    sub = strict_fields(doc, item, path, ("name", "base"), where)
    name = get_str(doc, sub, "name", path, where)
    base = get_str(doc, sub, "base", path, where)
    if not name or not base:
        raise doc.error(f'{where} needs both "name" (a bundle reference) and "base"', *path)
    if name == base:
        raise doc.error(f"{where}: name and base are the same ({name!r})", *path)
    return Substitution(name, base, doc.line_of(*path))


def render_substitutes(
    template: SubstitutesTemplate, renderer: BundleRenderer
) -> dc.DeclarativeConfig:
    config = render_entries(template.config, template.bundles, template.file, renderer)
    for substitution in template.substitutions:
        bundle = placed(renderer(substitution.name), template.file, substitution.line)
        _substitute(config, substitution, bundle, template.file)
    return config


def _substitute(
    config: dc.DeclarativeConfig, substitution: Substitution, bundle: dc.Bundle, file: str
) -> None:
    """Upstream's processSubstitution, with its model validation reduced to the checks that
    concern the substitution itself (the result is still an ordinary catalog to validate)."""
    holders = [c for c in config.channels if any(e.name == substitution.base for e in c.entries)]
    problem = _conflict(config, substitution, bundle, holders)
    if problem:
        where = f"substitution {substitution.base} -> {substitution.name}"
        raise InputError(f"{where}: {problem}", path=file, line=substitution.line)
    for channel in holders:
        _take_over(channel, substitution.base, bundle.name)
    config.bundles.append(bundle)


def _conflict(
    config: dc.DeclarativeConfig,
    substitution: Substitution,
    bundle: dc.Bundle,
    holders: list[dc.Channel],
) -> str | None:
    """Why the substitution cannot be applied, if it cannot."""
    if not holders:
        return f'base bundle "{substitution.base}" is not an entry of any channel'
    if any(b.name == bundle.name for b in config.bundles):
        return f'the substitute renders to bundle "{bundle.name}", which already exists'
    for channel in holders:
        if channel.package != bundle.package:
            return (
                f'the substitute belongs to package "{bundle.package}", but channel '
                f'"{channel.name}" to "{channel.package}"'
            )
    return None


def _take_over(channel: dc.Channel, base: str, name: str) -> None:
    """Bundle ``name`` takes over ``base``'s edges in ``channel``, and edges to ``base`` now
    lead to ``name``."""
    originals = len(channel.entries)
    added: list[dc.ChannelEntry] = []
    for entry in channel.entries:
        if entry.name != base:
            continue
        added.append(dc.ChannelEntry(name, entry.replaces, [*entry.skips, base], entry.skip_range))
        entry.replaces, entry.skips, entry.skip_range = "", [], ""
    # upstream appends the new entries in reverse order of the base's occurrences
    channel.entries.extend(reversed(added))
    for entry in channel.entries[:originals]:
        if entry.replaces == base:
            entry.replaces = name
            entry.skips = [*entry.skips, base]
        elif base in entry.skips:
            entry.skips = [s for s in [*entry.skips, name] if s != base]
