"""What the resolver reads and what it answers: plain, typed records.

Inputs mirror the cluster objects OLM v0's catalog operator reads when it resolves one
namespace (CatalogSources with their content, Subscriptions, the CSVs already there, the
APIs the cluster serves); outputs mirror what it writes (the CSVs an InstallPlan creates,
with the ``spec.replaces`` it sets, or a Subscription's ResolutionFailed condition).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from olmtool.catalog.model import GVK, ResolvedCatalog

# The condition reasons OLM v0 puts on a Subscription's ResolutionFailed condition
# (operator-lifecycle-manager pkg/controller/operators/catalog/operator.go): unsatisfiable
# constraints, or any other error of the resolver (a broken channel order, ...).
CONSTRAINTS_NOT_SATISFIABLE = "ConstraintsNotSatisfiable"
ERROR_PREVENTED_RESOLUTION = "ErrorPreventedResolution"


@dataclass(frozen=True)
class CatalogSource:
    """A CatalogSource and the catalog it serves (a built catalog model)."""

    name: str
    namespace: str
    catalog: ResolvedCatalog
    priority: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.namespace)


@dataclass(frozen=True)
class Subscription:
    """The fields of a Subscription that resolution reads.

    ``channel`` "" means every channel of the package, the default one first (OLM's empty
    channel predicate matches all channels). ``installed_csv`` is ``status.installedCSV``.
    """

    name: str
    package: str
    source: str
    source_namespace: str
    channel: str = ""
    starting_csv: str = ""
    installed_csv: str = ""


@dataclass(frozen=True)
class InstalledCSV:
    """A ClusterServiceVersion already in the namespace.

    ``version`` is ``spec.version`` ("" to take it from the catalog bundle of that name);
    ``package`` comes from its properties (""  when unknown); ``provides`` are its owned
    CRDs and APIServices.
    """

    name: str
    version: str = ""
    package: str = ""
    provides: tuple[GVK, ...] = ()


@dataclass
class ResolvedBundle:
    """One CSV the InstallPlan would create.

    ``replaces`` is what the resolver writes into the new CSV's ``spec.replaces`` (the
    installed CSV it replaces, "" for a fresh install); ``subscription`` names the
    Subscription it resolves, "" for a dependency, which ``required_by`` explains.
    """

    name: str
    package: str
    channel: str
    version: str
    catalog: str
    catalog_namespace: str
    image: str = ""
    replaces: str = ""
    subscription: str = ""
    required_by: list[str] = field(default_factory=list)

    @property
    def identifier(self) -> str:
        """OLM's solver identifier of the bundle: ``<catalog>/<namespace>/<channel>/<csv>``."""
        return f"{self.catalog}/{self.catalog_namespace}/{self.channel}/{self.name}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


SubscriptionState = Literal["UpgradePending", "AtLatestKnown"]


@dataclass
class SubscriptionResult:
    """Per Subscription: the bundle to install next, or None when it is at the latest."""

    subscription: str
    bundle: ResolvedBundle | None
    state: SubscriptionState

    def as_dict(self) -> dict[str, Any]:
        return {
            "subscription": self.subscription,
            "bundle": self.bundle.as_dict() if self.bundle is not None else None,
            "state": self.state,
        }


@dataclass
class ResolutionFailed:
    """The ResolutionFailed condition: ``reason`` and the constraint ``messages``.

    ``message`` is what OLM writes: ``constraints not satisfiable: <m1>, <m2>, ...`` for
    ConstraintsNotSatisfiable (the solver's NotSatisfiable error), the error itself else.
    """

    reason: str
    messages: list[str]

    @property
    def message(self) -> str:
        if self.reason == CONSTRAINTS_NOT_SATISFIABLE:
            return "constraints not satisfiable: " + ", ".join(self.messages)
        return ", ".join(self.messages)

    def as_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "message": self.message, "messages": list(self.messages)}


@dataclass
class Resolution:
    """One namespace's resolution: per Subscription, plus the dependencies pulled in.

    On failure nothing is installed (OLM fails the namespace as a whole) and ``failure``
    is set; ``subscriptions`` and ``dependencies`` are then empty.
    """

    namespace: str
    subscriptions: list[SubscriptionResult] = field(default_factory=list)
    dependencies: list[ResolvedBundle] = field(default_factory=list)
    failure: ResolutionFailed | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def bundles(self) -> list[ResolvedBundle]:
        """Every CSV the InstallPlan creates: the Subscriptions' then the dependencies."""
        own = [s.bundle for s in self.subscriptions if s.bundle is not None]
        return own + self.dependencies

    def next_for(self, subscription: str) -> ResolvedBundle | None:
        for result in self.subscriptions:
            if result.subscription == subscription:
                return result.bundle
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "ok": self.ok,
            "subscriptions": [s.as_dict() for s in self.subscriptions],
            "dependencies": [d.as_dict() for d in self.dependencies],
            "failure": self.failure.as_dict() if self.failure is not None else None,
        }
