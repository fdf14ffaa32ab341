"""OLM v0 from the outside: its API (:mod:`~olmtool.olm.api`, the ``operators.coreos.com``
CRDs), its resolver as pure functions, catalog sources over the registry's gRPC API, and
what a client does with a cluster that runs OLM (subscribe and follow an install, remove
it, run upgrades). The engine that plays OLM's operators on the local cluster is
:mod:`olmtool.engine`, a layer above."""

from olmtool._lazy import lazy_package

__all__ = lazy_package(
    __name__,
    {
        "olmtool.olm.crdfiles": ("olm_crds",),
        "olmtool.olm.discovery": (
            "OLM_API",
            "connect_olm",
            "require_olm",
        ),
        "olmtool.olm.removal": (
            "csv_names",
            "remove_made",
            "uninstall",
        ),
        "olmtool.olm.resolver": (
            "CONSTRAINTS_NOT_SATISFIABLE",
            "ERROR_PREVENTED_RESOLUTION",
            "GLOBAL_NAMESPACE",
            "BundlePath",
            "CatalogSource",
            "InstalledCSV",
            "PlanProblem",
            "Resolution",
            "ResolutionFailed",
            "ResolvedBundle",
            "Subscription",
            "SubscriptionResult",
            "UpgradePlan",
            "resolve_namespace",
            "upgrade_plan",
        ),
        "olmtool.olm.source": (
            "READY",
            "CatalogSourceUnavailable",
            "Connection",
            "default_channel",
            "fetch_config",
            "fetch_manifests",
            "probe",
        ),
        "olmtool.olm.subscription": (
            "InstallFailed",
            "InstallMode",
            "Made",
            "SubscriptionSpec",
            "ensure_catalog_source",
            "ensure_operator_group",
            "ensure_subscription",
            "follow",
            "subscribe",
        ),
        "olmtool.olm.upgrade_report": (
            "UpgradeReport",
            "plan_junit_xml",
            "run_seconds",
            "write_junit",
        ),
        "olmtool.olm.upgrade_run": (
            "EXAMPLES",
            "Probe",
            "UpgradeRun",
            "clean_up",
            "run_upgrade",
        ),
    },
)
