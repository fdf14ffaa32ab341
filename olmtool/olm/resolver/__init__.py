"""OLM v0's resolver as pure functions: what a namespace installs next, and upgrade plans.

    resolution = resolve_namespace("ns", [CatalogSource("cat", "ns", model)], [subscription])
    resolution.next_for("etcd")            # ResolvedBundle (with its replaces) or None
    resolution.failure.message             # "constraints not satisfiable: ..."
    upgrade_plan("catalog/", "etcd-operator").as_dict()

:mod:`~olmtool.olm.resolver.channels` orders channels as OLM does (head first along
``replaces``, skipped bundles left out), :mod:`~olmtool.olm.resolver.resolve` resolves a
namespace (Subscriptions, dependencies, OLM's failure messages), and
:mod:`~olmtool.olm.resolver.plan` walks every bundle of a channel to its head.
"""

from olmtool.olm.resolver.channels import Candidate, ChannelOrderError, sort_channel
from olmtool.olm.resolver.plan import BundlePath, PlanProblem, UpgradePlan, upgrade_plan
from olmtool.olm.resolver.resolve import GLOBAL_NAMESPACE, resolve_namespace
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

__all__ = [
    "CONSTRAINTS_NOT_SATISFIABLE",
    "ERROR_PREVENTED_RESOLUTION",
    "GLOBAL_NAMESPACE",
    "BundlePath",
    "Candidate",
    "CatalogSource",
    "ChannelOrderError",
    "InstalledCSV",
    "PlanProblem",
    "Resolution",
    "ResolutionFailed",
    "ResolvedBundle",
    "Subscription",
    "SubscriptionResult",
    "UpgradePlan",
    "resolve_namespace",
    "sort_channel",
    "upgrade_plan",
]
