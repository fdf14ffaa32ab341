"""``olmtool catalog validate``: opm's checks as an error tree, plus the ones opm misses."""

from __future__ import annotations

from pathlib import Path

import typer

from olmtool import actions
from olmtool.catalog import CATALOG_SUITES
from olmtool.cli import output as out
from olmtool.cli.catalog import app
from olmtool.errors import display_path


@app.command()
def validate(
    directory: Path | None = typer.Argument(
        None, help="The catalog's root directory (or one file)."
    ),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too."),
    select: list[str] = typer.Option(
        None,
        "--select",
        "-s",
        help=f"Optional suites to run too ({', '.join(CATALOG_SUITES)}: what OLM v1 "
        "cannot install or upgrade to, the CRD changes OLM v1's preflight refuses on "
        "every upgrade edge); comma lists allowed.",
    ),
    verbose: bool = typer.Option(
        False,
        "--verbose",
        "-v",
        help="List every finding (text output summarizes a check found more than 10 times).",
    ),
    list_checks: bool = out.ListChecksOption,
    ignore: list[str] = out.ignore_option("catalog validate"),
    config: Path | None = out.ConfigOption,
    output: out.OutputFormat = out.OutputOption,
) -> None:
    """Check a file-based catalog the way `opm validate` does, and more.

    Beyond opm (warnings; --list-checks shows each check's origin): skips naming
    nothing, skipRanges matching nothing, CSV replaces that disagree with the channel,
    bundles with no upgrade path to the head, a default channel whose head is older
    than another channel's, GVK and icon sanity. An upgrade edge whose CRD drops a
    version clusters store is an error (OLM v0 and v1 refuse it). --select olm-v1 adds
    the bundles OLM v1 cannot install (errors), the upgrades that resolve to them
    (warnings) and the crd-upgrade suite: every CRD change on an upgrade edge OLM v1's
    CRD Upgrade Safety preflight refuses (errors).

    Exit 0 when valid, 1 on errors (or on warnings with --strict); waived findings
    (--ignore, olmtool.yaml's validate.ignore) do not count.

    Examples:

      olmtool catalog validate catalog/

      olmtool catalog validate catalog/ --strict -o json

      olmtool catalog validate catalog/ --verbose    # every finding, none summarized

      olmtool catalog validate catalog/ --select olm-v1 --ignore 'olm-v1/image-empty:legacy/*=served to OLM v0 only'

      olmtool catalog validate catalog/ --select crd-upgrade --ignore 'crd-upgrade/enum=mode values were never used'

      olmtool catalog validate --list-checks
    """
    listing = actions.catalog_checks
    needed = "a catalog directory"
    if out.listed_checks(
        list_checks, listing, output, given=directory, needed=needed, hint="DIRECTORY"
    ):
        return
    with out.usage_error("ignore", "--ignore"):
        report = actions.catalog_validate(
            directory, select=select or [], ignore=ignore or [], config=config
        )
    passed = report.passed(strict=strict)

    def text() -> None:
        if report.findings:
            from olmtool.catalog import summary_lines

            # one write: a catalog can hold tens of thousands of findings
            lines = summary_lines(report.findings, verbose=verbose)
            out.stdout.print(out.escape("\n".join(lines)))
        out.print_waivers(report)
        verdict = "[green]valid[/]" if passed else "[red]invalid[/]"
        out.stdout.print(
            f"{out.escape(display_path(directory))}: {verdict}: {len(report.errors)} error(s), "
            f"{len(report.warnings)} warning(s){out.waived_count(report)}"
        )

    out.emit(report.as_dict(strict=strict), output, text)
    out.exit_if(not passed)
