"""Resolution of one namespace, as OLM v0's catalog operator decides it (no Kubernetes I/O).

OLM v0 (operator-lifecycle-manager ``pkg/controller/registry/resolver/resolver.go``,
``SatResolver``) hands a SAT solver, per Subscription, its candidates in preference order
and, per bundle, one dependency constraint per requirement with the providers in
preference order; the solver takes the first preferred choice that satisfies everything.
This module makes the same choices greedily, which gives the same answer for the
preferences OLM expresses:

- a Subscription with an installed CSV: the entries of its channel whose skipRange
  contains the installed version, or that replace or skip it, nearest the channel head
  first; when none can be installed the installed CSV stays (AtLatestKnown), one hop per
  resolution. Without one: the startingCSV, else the channel's entries head first (so an
  older entry is taken when the head's dependencies cannot be met, as the solver does);
- a requirement (``olm.gvk.required``, ``olm.package.required``) is met by an installed
  CSV, an API the cluster already serves, or a bundle this resolution already chose; else
  by a catalog bundle: the requiring bundle's catalog first, then by priority (higher
  first), the namespace's catalogs before the global ones, then by name; inside a catalog
  default channels first, then package and channel name, each channel head first;
- at most one operator per package in a namespace.

Greedy, it never revisits an earlier Subscription's choice to satisfy a later one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import semver

from olmtool.catalog.model import GVK
from olmtool.olm.resolver.channels import (
    Candidate,
    ChannelOrderError,
    catalog_candidates,
    dependency_order,
    next_in_channel,
    subscription_order,
)
from olmtool.olm.resolver.types import (
    CONSTRAINTS_NOT_SATISFIABLE,
    ERROR_PREVENTED_RESOLUTION,
    CatalogSource,
    InstalledCSV,
    Resolution,
    ResolutionFailed,
    ResolvedBundle,
    Subscription,
    SubscriptionResult,
)
from olmtool.versions import parse_range, parse_version

# OLM's global catalog namespace (the catalog operator's -namespace flag; "olm" upstream,
# "openshift-marketplace" on OpenShift): its CatalogSources serve every namespace.
GLOBAL_NAMESPACE = "olm"


class _Unsatisfiable(Exception):
    def __init__(self, messages: list[str]) -> None:
        super().__init__(", ".join(messages))
        self.messages = messages


@dataclass(frozen=True)
class _Requirement:
    gvk: GVK | None = None
    package: str = ""
    version_range: str = ""

    def describe(self) -> str:
        # cache.Predicate String(): gvkPredicate, and And(PkgPredicate, VersionInRange)
        # joined with " and " (pkg/controller/registry/resolver/cache/predicates.go)
        if self.gvk is not None:
            group, version, kind = self.gvk
            return f"providing an API with group: {group}, version: {version}, kind: {kind}"
        return f"with package: {self.package} and with version in range: {self.version_range}"


@dataclass
class _Choice:
    candidate: Candidate
    replaces: str = ""
    subscription: str = ""
    required_by: list[str] = field(default_factory=list)


def resolve_namespace(
    namespace: str,
    catalogs: Sequence[CatalogSource],
    subscriptions: Sequence[Subscription],
    installed: Iterable[InstalledCSV] = (),
    existing_apis: Iterable[GVK] = (),
    *,
    global_namespace: str = GLOBAL_NAMESPACE,
) -> Resolution:
    """What OLM v0 installs next in ``namespace``, or why it cannot resolve.

    ``catalogs`` outside ``namespace`` and ``global_namespace`` are invisible, as in OLM.
    ``existing_apis`` are GVKs the cluster serves without an operator (built-in or
    pre-installed CRDs); they satisfy ``olm.gvk.required`` like an installed CSV does.
    """
    visible = [c for c in catalogs if c.namespace in (namespace, global_namespace)]
    state = _Namespace(namespace, visible, list(installed), set(existing_apis))
    resolution = Resolution(namespace=namespace)
    try:
        for subscription in subscriptions:
            resolution.subscriptions.append(state.resolve(subscription))
    except _Unsatisfiable as failed:
        return Resolution(
            namespace, failure=ResolutionFailed(CONSTRAINTS_NOT_SATISFIABLE, failed.messages)
        )
    except ChannelOrderError as error:
        return Resolution(
            namespace, failure=ResolutionFailed(ERROR_PREVENTED_RESOLUTION, [str(error)])
        )
    resolution.dependencies = [_bundle(c) for c in state.chosen if not c.subscription]
    return resolution


class _Namespace:
    """The namespace being resolved: what is there and what has been chosen so far."""

    def __init__(
        self,
        namespace: str,
        catalogs: list[CatalogSource],
        installed: list[InstalledCSV],
        existing_apis: set[GVK],
    ) -> None:
        self.namespace = namespace
        self.catalogs = catalogs
        self.installed = {csv.name: csv for csv in installed}
        self.existing_apis = existing_apis
        self.chosen: list[_Choice] = []

    # --- subscriptions --------------------------------------------------------------------

    def resolve(self, sub: Subscription) -> SubscriptionResult:
        source = self._source(sub.source, sub.source_namespace)
        current = self.installed.get(sub.installed_csv) if sub.installed_csv else None
        entries = self._subscription_entries(sub, source, current)
        if current is not None:
            version = self._installed_version(current, entries)
            candidates = next_in_channel(subscription_order(entries), current.name, version)
        else:
            candidates = subscription_order(entries)
        failures: list[str] = []
        for candidate in candidates:
            if self._already_chosen(candidate):
                return self._result(sub, self._choice_of(candidate))
            choice = _Choice(candidate, current.name if current else "", sub.name)
            try:
                self._choose(choice)
            except _Unsatisfiable as unmet:
                failures += [m for m in unmet.messages if m not in failures]
                continue
            return self._result(sub, choice)
        if current is not None:
            # the installed CSV is the Subscription's last (and here only) option
            return SubscriptionResult(sub.name, None, "AtLatestKnown")
        raise _Unsatisfiable(
            [_requires(sub.name, candidates), f"subscription {sub.name} exists", *failures]
        )

    def _subscription_entries(
        self, sub: Subscription, source: CatalogSource | None, current: InstalledCSV | None
    ) -> list[Candidate]:
        """The entries the Subscription may take, or OLM's message when there are none
        (the CountingPredicate cases of ``getSubscriptionInstallables``)."""
        everything = list(catalog_candidates(source)) if source is not None else []
        in_package = [c for c in everything if c.package.name == sub.package]
        in_channel = [c for c in in_package if not sub.channel or c.channel.name == sub.channel]
        named = in_channel
        if current is None and sub.starting_csv:
            named = [c for c in in_channel if c.entry.name == sub.starting_csv]
        reason = None
        if not everything:
            reason = (
                f"no operators found from catalog {sub.source} in namespace "
                f"{sub.source_namespace} referenced by subscription {sub.name}"
            )
        elif not in_package:
            reason = (
                f"no operators found in package {sub.package} in the catalog referenced by "
                f"subscription {sub.name}"
            )
        elif not in_channel:
            reason = (
                f"no operators found in channel {sub.channel} of package {sub.package} in the "
                f"catalog referenced by subscription {sub.name}"
            )
        elif not named:
            reason = (
                f"no operators found with name {sub.starting_csv} in channel {sub.channel} of "
                f"package {sub.package} in the catalog referenced by subscription {sub.name}"
            )
        if reason is not None:
            # NewInvalidSubscriptionInstallable: Prohibited(reason) + Mandatory("... exists");
            # OLM prints them in this order in the Subscription's condition.
            raise _Unsatisfiable([reason, f"subscription {sub.name} exists"])
        return named

    def _installed_version(
        self, current: InstalledCSV, entries: list[Candidate]
    ) -> semver.Version | None:
        """The installed CSV's spec.version, else its catalog bundle's; None if neither parses."""
        texts = [current.version] + [
            c.bundle.version for c in entries if c.entry.name == current.name
        ]
        for text in texts:
            with contextlib.suppress(ValueError):
                return parse_version(text)
        return None

    def _result(self, sub: Subscription, choice: _Choice) -> SubscriptionResult:
        choice.subscription = choice.subscription or sub.name
        state = "UpgradePending"
        return SubscriptionResult(sub.name, _bundle(choice), state)

    # --- choosing bundles and their dependencies ------------------------------------------

    def _choose(self, choice: _Choice) -> None:
        """Add ``choice`` and whatever its requirements pull in, or leave nothing added."""
        mark = len(self.chosen)
        self.chosen.append(choice)
        try:
            for requirement in _requirements(choice.candidate):
                self._satisfy(choice.candidate, requirement)
        except _Unsatisfiable:
            del self.chosen[mark:]
            raise

    def _satisfy(self, requirer: Candidate, requirement: _Requirement) -> None:
        if self._met_already(requirement):
            return
        failures: list[str] = []
        for provider in self._providers(requirer.source, requirement):
            if self._package_taken(provider.package.name):
                continue  # "there can be only one operator from package <p>"
            try:
                self._choose(_Choice(provider, required_by=[requirer.entry.name]))
            except _Unsatisfiable as unmet:
                failures += [m for m in unmet.messages if m not in failures]
                continue
            return
        # PrettyConstraint of getBundleInstallables: "bundle %s requires an operator %s"
        raise _Unsatisfiable(
            [
                f"bundle {requirer.entry.name} requires an operator {requirement.describe()}",
                *failures,
            ]
        )

    def _met_already(self, requirement: _Requirement) -> bool:
        if requirement.gvk is not None:
            if requirement.gvk in self.existing_apis:
                return True
            if any(requirement.gvk in csv.provides for csv in self.installed.values()):
                return True
            return any(requirement.gvk in c.candidate.bundle.provides for c in self.chosen)
        installed = [(csv.package, csv.version) for csv in self.installed.values()]
        chosen = [(c.candidate.package.name, c.candidate.bundle.version) for c in self.chosen]
        return any(_package_matches(requirement, p, v) for p, v in installed + chosen)

    def _providers(self, preferred: CatalogSource, requirement: _Requirement) -> list[Candidate]:
        """Catalog bundles meeting ``requirement``, best first (``FindPreferred`` + ``sortBundles``).

        Whole (package, channel) groups with at least one provider are ordered, then
        filtered: a channel whose middle entry lacks the API still sorts.
        """
        found: list[Candidate] = []
        for source in self._catalog_order(preferred):
            pairs = list(catalog_candidates(source))
            groups = {(c.package.name, c.channel.name) for c in pairs if _provides(c, requirement)}
            ordered = dependency_order(
                c for c in pairs if (c.package.name, c.channel.name) in groups
            )
            found += [c for c in ordered if _provides(c, requirement)]
        return found

    def _catalog_order(self, preferred: CatalogSource) -> list[CatalogSource]:
        # sortableSnapshots.Less: the preferred catalog, then priority (higher first), the
        # resolving namespace before the global one, then name
        def key(source: CatalogSource) -> tuple[int, int, int, str]:
            return (
                0 if source.key == preferred.key else 1,
                -source.priority,
                0 if source.namespace == self.namespace else 1,
                source.name,
            )

        return sorted(self.catalogs, key=key)

    def _package_taken(self, package: str) -> bool:
        if any(csv.package == package for csv in self.installed.values()):
            return True
        return any(c.candidate.package.name == package for c in self.chosen)

    def _already_chosen(self, candidate: Candidate) -> bool:
        return any(c.candidate.entry.name == candidate.entry.name for c in self.chosen)

    def _choice_of(self, candidate: Candidate) -> _Choice:
        return next(c for c in self.chosen if c.candidate.entry.name == candidate.entry.name)

    def _source(self, name: str, namespace: str) -> CatalogSource | None:
        return next((c for c in self.catalogs if c.key == (name, namespace)), None)


def _requirements(candidate: Candidate) -> list[_Requirement]:
    bundle = candidate.bundle
    gvks = [_Requirement(gvk=gvk) for gvk in bundle.requires]
    packages = [_Requirement(package=p, version_range=r) for p, r in bundle.requires_packages]
    return gvks + packages


def _provides(candidate: Candidate, requirement: _Requirement) -> bool:
    if requirement.gvk is not None:
        return requirement.gvk in candidate.bundle.provides
    return _package_matches(requirement, candidate.package.name, candidate.bundle.version)


def _package_matches(requirement: _Requirement, package: str, version: str) -> bool:
    if package != requirement.package or not version:
        return False
    try:
        return parse_range(requirement.version_range).contains(version)
    except ValueError:
        return False


def _requires(subscription: str, candidates: list[Candidate]) -> str:
    """NewSubscriptionInstallable's dependency constraint, as OLM words it."""
    ids = [c.identifier for c in candidates]
    if not ids:
        return f"no operators found matching the criteria of subscription {subscription}"
    if len(ids) == 1:
        return f"subscription {subscription} requires {ids[0]}"
    return (
        f"subscription {subscription} requires at least one of {', '.join(ids[:-1])} or {ids[-1]}"
    )


def _bundle(choice: _Choice) -> ResolvedBundle:
    c = choice.candidate
    return ResolvedBundle(
        name=c.entry.name,
        package=c.package.name,
        channel=c.channel.name,
        version=c.bundle.version,
        catalog=c.source.name,
        catalog_namespace=c.source.namespace,
        image=c.bundle.image,
        replaces=choice.replaces,
        subscription=choice.subscription,
        required_by=list(choice.required_by),
    )
