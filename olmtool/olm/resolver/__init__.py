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

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.olm.resolver.channels": (
            "Candidate",
            "ChannelOrderError",
            "sort_channel",
        ),
        "olmtool.olm.resolver.plan": (
            "BundlePath",
            "PlanProblem",
            "UpgradePlan",
            "upgrade_plan",
        ),
        "olmtool.olm.resolver.resolve": (
            "GLOBAL_NAMESPACE",
            "resolve_namespace",
        ),
        "olmtool.olm.resolver.types": (
            "CONSTRAINTS_NOT_SATISFIABLE",
            "ERROR_PREVENTED_RESOLUTION",
            "CatalogSource",
            "InstalledCSV",
            "Resolution",
            "ResolutionFailed",
            "ResolvedBundle",
            "Subscription",
            "SubscriptionResult",
        ),
    },
)
