"""What stops ``catalog publish`` (and ``catalog add``) before anything is written: a
package that would not validate (findings ``validate.ignore`` waives aside), and bundles
without image unless asked for."""

from __future__ import annotations

from collections.abc import Sequence

from olmtool.catalog import declcfg as dc
from olmtool.catalog.validate import Report, validate_config
from olmtool.errors import ArgumentError, InputError
from olmtool.findings import Finding
from olmtool.waivers import Waiver, waive


def check_package(
    config: dc.DeclarativeConfig,
    package: str,
    waivers: Sequence[Waiver] = (),
    explain: Sequence[Finding] = (),
) -> Report:
    """Validate a package before writing it; errors stop publishing (unless waived).
    Returns the report: its warnings and waived findings. The error names ``explain``'s
    findings too (publishing's own warnings on why the package is as it is, e.g. a
    stranded bundle, lost otherwise with the result)."""
    report = validate_config(config)
    waive(report, waivers, checks=())  # unused waivers are validate's to report
    if report.errors:
        first = report.errors[0]
        more = f" (and {len(report.errors) - 1} more)" if len(report.errors) > 1 else ""
        why = "".join(f"; {finding.scope or ''}: {finding.message}" for finding in explain)
        raise InputError(
            f"catalog package {package!r} would be invalid, nothing written: {first}{more}{why}"
        )
    return report


def refuse_empty_images(assembled: dict[str, dc.DeclarativeConfig]) -> None:
    """A bundle published with ``image: ''`` is one OLM v1 cannot install and OLM v0 only
    from its objects: refused unless asked for (``allow_empty_image``)."""
    for package, config in assembled.items():
        for bundle in config.bundles:
            if not bundle.image:
                raise ArgumentError(
                    f"is needed to publish bundle {bundle.name} of package {package!r} with "
                    f"image '' (or give the package an image pattern in catalog.packages, "
                    f"e.g. image: registry.example.com/{package}-bundle:{{version}})",
                    argument="allow_empty_image",
                )
