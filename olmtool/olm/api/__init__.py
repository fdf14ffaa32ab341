"""The ``operators.coreos.com`` API as OLM v0.18.3 serves it, declared with olmtool's own
CRD generator (:mod:`olmtool.crd`). ``python -m olmtool.olm.crdfiles`` writes the CRDs to
``olmtool/olm/crds/``; ``olmtool cluster up`` installs them."""

from olmtool.crd import CustomResource
from olmtool.olm.api.catalogsource import catalog_source
from olmtool.olm.api.clusterserviceversion import cluster_service_version
from olmtool.olm.api.common import GROUP
from olmtool.olm.api.installplan import install_plan
from olmtool.olm.api.operator import operator
from olmtool.olm.api.operatorcondition import operator_condition
from olmtool.olm.api.operatorgroup import operator_group
from olmtool.olm.api.subscription import subscription

RESOURCES: tuple[CustomResource, ...] = (
    catalog_source,
    cluster_service_version,
    install_plan,
    operator_condition,
    operator_group,
    operator,
    subscription,
)
"""Every kind, in CRD-name order."""

__all__ = [
    "GROUP",
    "RESOURCES",
    "catalog_source",
    "cluster_service_version",
    "install_plan",
    "operator",
    "operator_condition",
    "operator_group",
    "subscription",
]
