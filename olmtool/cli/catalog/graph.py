"""``olmtool catalog graph``: upgrade graphs as a tree, as Mermaid, or as OLM's upgrade paths."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from olmtool import actions
from olmtool.catalog import GraphView, OpmCompat
from olmtool.cli.catalog import app, opm_compat_option
from olmtool.cli.output import OutputFormat, OutputOption, emit, escape, stdout

if TYPE_CHECKING:
    from rich.table import Table
    from rich.tree import Tree

    from olmtool.catalog import ChannelView, EntryView, PackageView, UpgradePath


@app.command()
def graph(
    directory: Path = typer.Argument(..., help="The catalog's root directory (or one file)."),
    package: str | None = typer.Option(None, "--package", "-p", help="Show only this package."),
    fmt: GraphView = typer.Option(
        GraphView.tree,
        "--format",
        "-f",
        help="tree: channels and entries for the terminal; mermaid: what `opm alpha "
        "render-graph` prints; paths: the upgrades OLM v0 and OLM v1 would make.",
    ),
    minimum_version: str | None = typer.Option(
        None,
        "--minimum-version",
        help="mermaid only: leave out bundles below this version (or below this bundle, "
        "like opm's --minimum-edge).",
    ),
    opm_compat: OpmCompat = opm_compat_option("mermaid: the graph"),
    output: OutputFormat = OutputOption,
) -> None:
    """Show a catalog's upgrade graph, and the upgrade paths OLM would take.

    --format paths lists, for every bundle of every channel:

    * the hops OLM v0 makes to the channel head, one resolution at a time:
    of the entries that replace the bundle, skip it or whose skipRange holds
    its version, the one nearest the head wins (then the higher version);
    or where it gets stuck;

    * the single hop OLM v1 makes: the highest-versioned of those entries.

    -o json/yaml applies to --format paths.

    Examples:

      olmtool catalog graph catalog/

      olmtool catalog graph catalog/ --format mermaid > graph.mmd

      olmtool catalog graph catalog/ -f mermaid --opm-compat 1.26   # opm v1.26's bytes

      olmtool catalog graph catalog/ --format paths -o json
    """
    if output is not OutputFormat.text and fmt is not GraphView.paths:
        raise typer.BadParameter(
            f"-o {output.value} needs --format paths", param_hint="'--output' / '-o'"
        )
    if minimum_version is not None and fmt is not GraphView.mermaid:
        raise typer.BadParameter("needs --format mermaid", param_hint="'--minimum-version'")
    if opm_compat is not OpmCompat.latest and fmt is not GraphView.mermaid:
        raise typer.BadParameter("needs --format mermaid", param_hint="'--opm-compat'")
    graph = actions.catalog_graph(
        directory,
        view=fmt,
        package=package,
        minimum_version=minimum_version,
        opm_compat=opm_compat,
    )
    if fmt is GraphView.mermaid:
        sys.stdout.write(graph.mermaid)
    elif fmt is GraphView.tree:
        for view in graph.packages:
            # soft_wrap=False: long entries wrap inside the tree instead of being cropped.
            stdout.print(_package_tree(view), soft_wrap=False)
    else:
        emit([p.as_dict() for p in graph.paths], output, lambda: _print_paths(graph.paths))


# --- tree ---------------------------------------------------------------------------------------


def _package_tree(view: PackageView) -> Tree:
    label = f"[bold]{escape(view.name)}[/]"
    if view.deprecated:
        label += f"  [yellow]deprecated:[/] {escape(view.deprecated)}"
    from rich.tree import Tree

    tree = Tree(label)
    if not view.channels:
        tree.add("[dim](no channels)[/]")
    for channel in view.channels:
        _add_channel(tree, channel)
    return tree


def _add_channel(tree: Tree, channel: ChannelView) -> None:
    label = f"[bold cyan]{escape(channel.name)}[/]"
    if channel.default:
        label += "  [green](default)[/]"
    if len(channel.heads) == 1:
        label += f"  head {escape(channel.heads[0])}"
    else:
        heads = ", ".join(channel.heads) or "none"
        label += f"  [red]{len(channel.heads)} heads: {escape(heads)}[/]"
    if channel.deprecated:
        label += f"  [yellow]deprecated:[/] {escape(channel.deprecated)}"
    branch = tree.add(label)
    for entry in channel.entries:
        branch.add(_entry_label(entry))


def _entry_label(entry: EntryView) -> str:
    parts = [f"[bold]{escape(entry.name)}[/]" if entry.head else escape(entry.name)]
    parts.append(f"[dim]{escape(entry.version or 'no version')}[/]")
    if entry.head:
        parts.append("[green]head[/]")
    if entry.replaces:
        parts.append(f"replaces {escape(entry.replaces)}")
    if entry.skips:
        parts.append(f"skips {escape(', '.join(entry.skips))}")
    if entry.skip_range:
        parts.append(f"skipRange {escape(repr(entry.skip_range))}")
    if entry.deprecated:
        parts.append(f"[yellow]deprecated:[/] {escape(entry.deprecated)}")
    return "  ".join(parts)


# --- paths --------------------------------------------------------------------------------------


def _print_paths(paths: list[UpgradePath]) -> None:
    if not paths:
        stdout.print("no channels")
        return
    groups: dict[tuple[str, str], list[UpgradePath]] = {}
    for path in paths:
        groups.setdefault((path.package, path.channel), []).append(path)
    for (package, channel), rows in groups.items():
        stdout.print(_paths_table(package, channel, rows), soft_wrap=False)


def _paths_table(package: str, channel: str, rows: list[UpgradePath]) -> Table:
    """One channel's bundles, each with its OLM v0 path to the head and OLM v1's next."""
    from rich import box
    from rich.table import Table

    head = rows[0].head or "none"
    table = Table(
        title=f"{escape(package)} / {escape(channel)}  (head {escape(head)})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    # Bundle names get their full width where the terminal allows, and fold (never an
    # ellipsis: a cut bundle name is useless) where it does not.
    width = max(len(name) for row in rows for name in (row.bundle, *row.v0_path))
    table.add_column("installed", overflow="fold", min_width=width)
    table.add_column("OLM v0 path to head", overflow="fold", min_width=width)
    table.add_column("hops", justify="right", no_wrap=True)
    table.add_column("OLM v1 next", overflow="fold")
    for row in rows:
        v1_next = escape(row.v1_next) if row.v1_next else "[dim]-[/]"
        table.add_row(escape(row.bundle), _v0_text(row), str(row.v0_hops), v1_next)
    return table


def _v0_text(row: UpgradePath) -> str:
    """One hop per line, then where the walk stopped when it is not the head."""
    if row.v0_status == "at-head":
        return "[green]at head[/]"
    lines = [escape(name) for name in row.v0_path]
    if row.v0_status != "reaches-head":
        where = escape(row.v0_path[-1] if row.v0_path else row.bundle)
        what = "stuck at" if row.v0_status == "stuck" else "loops back from"
        lines.append(f"[red]{what} {where}[/]")
    return "\n".join(lines)
