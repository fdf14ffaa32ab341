"""The EtcdCluster API, declared once; `olmtool crd generate` writes its CRD."""

from etcd_operator.api import v1alpha1, v1beta1
from olmtool.crd import CustomResource, PrinterColumn, Scale, Version

GROUP = "etcd.olmtool.dev"

_columns = (
    PrinterColumn(name="Replicas", json_path=".spec.replicas", type="integer",
                  description="Desired number of members"),
    PrinterColumn(name="Ready", json_path=".status.readyMembers", type="integer",
                  description="Healthy members"),
    PrinterColumn(name="Version", json_path=".status.currentVersion",
                  description="etcd version running"),
    PrinterColumn(name="Phase", json_path=".status.phase"),
    PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
)  # fmt: skip
_scale = Scale(spec_replicas_path=".spec.replicas", status_replicas_path=".status.readyMembers")

etcd_cluster = CustomResource(
    group=GROUP,
    kind="EtcdCluster",
    plural="etcdclusters",
    short_names=("etcd", "etcdc"),
    categories=("all", "etcd"),
    description="EtcdCluster is an etcd cluster managed by the etcd operator.",
    versions=(
        Version(
            name="v1alpha1",
            spec=v1alpha1.EtcdClusterSpec,
            status=v1alpha1.EtcdClusterStatus,
            deprecated=True,
            deprecation_warning=f"{GROUP}/v1alpha1 EtcdCluster is deprecated; use {GROUP}/v1beta1",
            scale=_scale,
            printer_columns=_columns,
        ),
        Version(
            name="v1beta1",
            spec=v1beta1.EtcdClusterSpec,
            status=v1beta1.EtcdClusterStatus,
            storage=True,
            scale=_scale,
            printer_columns=_columns,
        ),
    ),
)

__all__ = ["GROUP", "etcd_cluster", "v1alpha1", "v1beta1"]
