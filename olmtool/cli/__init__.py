"""The ``olmtool`` command line: argument parsing and rendering over the library."""

from __future__ import annotations

import os
import sys
import traceback

import typer

from olmtool import __version__
from olmtool.cli import bundle, catalog, cluster, crd, image, project_init, testing
from olmtool.cli import install as install_cli
from olmtool.cli.output import EXIT_INTERNAL_ERROR, error, error_line, exit_code
from olmtool.errors import OlmtoolError
from olmtool.images import Credentials, add_credential_source

app = typer.Typer(
    name="olmtool",
    help=(
        "Package Kubernetes operators for the Operator Lifecycle Manager (OLM): CRDs from "
        "Python schemas, bundles, file-based catalogs.\n\n"
        "Example: olmtool crd generate --check\n\n"
        "Exit codes: 0 ok, 1 findings or failure, 2 usage error, 3 internal error (a bug)."
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(crd.app, name="crd")
app.add_typer(bundle.app, name="bundle")
app.add_typer(catalog.app, name="catalog")
app.add_typer(cluster.app, name="cluster")
app.add_typer(image.app, name="image")
app.add_typer(testing.app, name="test")
app.command("init")(project_init.init)
app.command("install")(install_cli.install)
app.command("uninstall")(install_cli.uninstall)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"olmtool {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        help="Print the version and exit.",
        callback=_show_version,
        is_eager=True,
    ),
) -> None:
    """Exit codes: 0 ok, 1 findings or failure, 2 usage error, 3 internal error (a bug)."""


ISSUES = "https://github.com/olmtool/olmtool/issues"


def _local_cluster_login(registry: str) -> Credentials | None:
    """A running local cluster's registry login (its module is imported on first push)."""
    from olmtool.cluster import registry_credentials

    return registry_credentials(registry)


def main() -> None:
    """Console entry point: user errors become one line on stderr (one per problem) and
    exit code 1, or 2 for a usage error (as the parser's own); any other exception is a
    bug in olmtool: its traceback, a line saying where to report it, and exit code 3, so
    that CI tells a crash from a verdict."""
    add_credential_source(_local_cluster_login)  # the registry client knows no cluster
    try:
        app()
    except OlmtoolError as exc:
        for line in error_line(exc).splitlines():
            error(line)
        sys.exit(exit_code(exc))
    except KeyboardInterrupt:
        error("interrupted")
        sys.exit(130)
    except BrokenPipeError:  # the reader went away (olmtool ... | head): not a bug
        _quiet_stdout()
        sys.exit(1)
    except Exception as exc:
        traceback.print_exc()
        print(internal_error_line(exc), file=sys.stderr)
        sys.exit(EXIT_INTERNAL_ERROR)


def internal_error_line(exc: BaseException) -> str:
    return (
        f"olmtool: internal error (a bug, not a finding): {type(exc).__name__}: {exc}; "
        f"please report it at {ISSUES} with the command you ran"
    )


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
