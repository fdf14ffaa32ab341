"""The catalog checks: their ids, severities and what they catch, and how a finding is made.

One table for every producer of catalog findings (the loader, the model's resolution,
the bundle and graph checks of :mod:`olmtool.catalog.validate`), so that a check id has
one severity wherever it is reported. The table's order is also the order findings of
one object are listed in.
"""

from __future__ import annotations

from olmtool.catalog import declcfg as dc
from olmtool.findings import CheckRow, Finding, Origin, Severity

# check id -> (severity, what it catches). "extra:" marks checks opm does not make: their
# origin is "olmtool" (else "upstream": opm's verdict and severity), and they warn, since
# opm serves such catalogs and OLM installs from them; only the olm-v1 suite's, run when
# selected, are errors where OLM v1 refuses.
CHECKS: dict[str, tuple[Severity, str]] = {
    "parse": ("error", "a file is not valid JSON or YAML"),
    "duplicate-key": ("error", "schema/package/name given twice in different case"),
    "schema-missing": ("error", "a blob has no schema"),
    "decode": ("error", "a field has the wrong type"),
    "package-name": ("error", "package name empty or not a DNS-1123 label"),
    "package-duplicate": ("error", "two olm.package blobs with one name"),
    "package-missing": ("error", "a channel, bundle or deprecation names an unknown package"),
    "default-channel": ("error", "default channel unset or not a channel of the package"),
    "package-no-channels": ("error", "a package without channels"),
    "channel-name": ("error", "a channel without a name"),
    "channel-duplicate": ("error", "two channels of one package with one name"),
    "channel-entry-duplicate": ("error", "a channel lists a bundle twice"),
    "channel-empty": ("error", "a channel without entries"),
    "channel-entry-bundle": ("error", "a channel entry names no olm.bundle"),
    "channel-head": ("error", "a channel has no head or several"),
    "channel-cycle": ("error", "the replaces chain from the head loops"),
    "channel-stranded": ("error", "a bundle neither on the replaces chain nor skipped"),
    "skips-empty": ("error", "an empty string in skips"),
    "skip-range": ("error", "skipRange is not a semver range"),
    "bundle-name": ("error", "a bundle without a name"),
    "bundle-duplicate": ("error", "two bundles of one package with one name"),
    "bundle-not-in-channel": ("error", "a bundle in no channel"),
    "property-decode": ("error", "a known property with a malformed value"),
    "package-property": ("error", "not exactly one olm.package property, or the wrong package"),
    "csv-metadata-multiple": ("error", "more than one olm.csv.metadata property"),
    "image-reference": ("error", "image or related image is not a valid pull spec"),
    "image-missing": ("error", "no image and no olm.bundle.object properties"),
    "version": ("error", "the olm.package version is not semver"),
    "version-duplicate": ("error", "two bundles of a package with one version"),
    "release-name": ("error", "a bundle with a release not named <pkg>-v<version>-<release>"),
    "deprecation-duplicate": ("error", "more than one olm.deprecations blob per package"),
    "deprecation-reference": ("error", "a deprecation names an unknown bundle or channel"),
    "deprecation-message": ("error", "a deprecation entry without a message"),
    # extra: what opm lets through
    "unreachable-head": ("warning", "extra: a bundle with no upgrade path to its channel head"),
    "gvk": ("warning", "extra: an olm.gvk that is not a valid group/version/kind"),
    "skips-unknown": ("warning", "extra: skips names no bundle of the package"),
    "skip-range-unmatched": ("warning", "extra: skipRange matches no bundle of the package"),
    "replaces-mismatch": ("warning", "extra: the CSV's spec.replaces disagrees with the channel"),
    "default-channel-stale": (
        "warning",
        "extra: another channel's head is newer than the default's",
    ),
    "related-image-empty": ("warning", "extra: a related image without an image"),
    "icon": ("warning", "extra: the package icon is not base64 image data"),
    # olm-v1 (--select olm-v1): what OLM v1 (operator-controller) refuses; errors, since
    # OLM v1 certainly fails the ClusterExtension (see olmtool.catalog.olmv1)
    "olm-v1/install-modes": ("error", "extra: a bundle without AllNamespaces (OLM v1 refuses)"),
    "olm-v1/dependencies": (
        "error",
        "extra: olm.package.required/olm.gvk.required/olm.constraint (OLM v1 refuses)",
    ),
    "olm-v1/webhooks": ("error", "extra: a CSV with webhookdefinitions (OLM v1 refuses)"),
    "olm-v1/api-services": ("error", "extra: a bundle owning API services (OLM v1 refuses)"),
    "olm-v1/image-empty": ("error", "extra: a bundle without image (OLM v1 pulls the image)"),
    "olm-v1/upgrade-blocked": (
        "warning",
        "extra: the OLM v1 next bundle of an upgrade is one OLM v1 cannot install",
    ),
    # CRD upgrade safety on every upgrade edge (olmtool.catalog.crd_upgrade): errors, since
    # OLM refuses the upgrade; stored-versions always (OLM v0 and v1), the rest with the
    # crd-upgrade suite (--select crd-upgrade, or olm-v1): OLM v1's preflight rules
    "crd-upgrade/stored-versions": (
        "error",
        "extra: an upgrade's CRD drops a version clusters store (OLM v0 and v1 refuse)",
    ),
    "crd-upgrade/scope": ("error", "extra: an upgrade changes a CRD's scope (OLM v1 refuses)"),
    "crd-upgrade/field-removed": (
        "error",
        "extra: an upgrade removes a CRD field (OLM v1 refuses)",
    ),
    "crd-upgrade/required": ("error", "extra: an upgrade adds required fields (OLM v1 refuses)"),
    "crd-upgrade/enum": ("error", "extra: an upgrade adds or narrows an enum (OLM v1 refuses)"),
    "crd-upgrade/bounds": ("error", "extra: an upgrade adds or tightens a bound (OLM v1 refuses)"),
    "crd-upgrade/default": ("error", "extra: an upgrade changes a default (OLM v1 refuses)"),
    "crd-upgrade/type": ("error", "extra: an upgrade changes a field's type (OLM v1 refuses)"),
    "crd-upgrade/one-of": ("error", "extra: an upgrade changes a oneOf (OLM v1 refuses)"),
    "crd-upgrade/unhandled": (
        "error",
        "extra: an upgrade changes what OLM v1 cannot judge: format, pattern... (OLM v1 refuses)",
    ),
}

_ORDER = {check: index for index, check in enumerate(CHECKS)}


def origin_of(check: str) -> Origin | None:
    """``upstream`` for opm's checks, ``olmtool`` for the extras (None: unknown id)."""
    if check not in CHECKS:
        return None
    return "olmtool" if CHECKS[check][1].startswith("extra:") else "upstream"


def check_rows() -> list[CheckRow]:
    """The table as ``--list-checks`` shows it."""
    return [
        CheckRow(check, origin_of(check) or "upstream", severity, what.removeprefix("extra: "))
        for check, (severity, what) in CHECKS.items()
    ]


def finding(
    check: str, message: str, origin: dc.Origin, package: str | None, scope: str | None = None
) -> Finding:
    """A finding of ``check`` (with its severity) about a blob read at ``origin``."""
    severity = CHECKS[check][0]
    file = origin.file or None
    return Finding(
        check, severity, message, file, origin.line, package=package or None, scope=scope
    )


def bundle_scope(name: str) -> str:
    return f'bundle "{name}"'


def channel_scope(name: str) -> str:
    return f'channel "{name}"'


def ordered(findings: list[Finding]) -> list[Finding]:
    """Sorted as reports list them (package, object, check, file, line), duplicates dropped."""
    findings = sorted(
        findings,
        key=lambda f: (
            f.package or "",
            f.scope or "",
            _ORDER.get(f.check, 99),
            f.file or "",
            f.line or 0,
            f.message,
        ),
    )
    seen: set[Finding] = set()
    return [f for f in findings if not (f in seen or seen.add(f))]
