"""kube-proxy 1.20 in iptables mode, inside the node's network namespace.

It authenticates as ``system:kube-proxy`` (the user the built-in ``system:node-proxier``
binding names) with a certificate from the cluster CA and reaches the apiserver at the
host's end of the node's link. Its rules live in the node's namespace: Pod and host
traffic to Service addresses passes through it (the host routes the Service range
there). Conntrack limits are left as the kernel has them.
"""

from __future__ import annotations

from pathlib import Path

from olmtool import yamlwrite
from olmtool.cluster import pki
from olmtool.cluster.controlplane import write_kubeconfig
from olmtool.cluster.kubeletnode.hostnet import in_netns
from olmtool.cluster.network import NodeNetwork


def identity(pki_dir: Path, ca: pki.KeyPair) -> pki.KeyPair:
    pair = pki.KeyPair(pki_dir / "kube-proxy.crt", pki_dir / "kube-proxy.key")
    if pki.issued_by(pair, ca):
        return pair
    return pki.create_client_cert(pki_dir, ca, "system:kube-proxy", file_stem="kube-proxy")


def proxy_config(
    *, kubeconfig: Path, network: NodeNetwork, node: str, healthz_port: int, metrics_port: int
) -> dict[str, object]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "mode": "iptables",
        # every node's Pods: traffic from elsewhere (the host) is masqueraded
        "clusterCIDR": network.cluster_pod_cidr,
        "hostnameOverride": node,
        "bindAddress": network.node_netns_address,
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "nodePortAddresses": [f"{network.node_netns_address}/32"],
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "iptables": {"syncPeriod": "30s", "minSyncPeriod": "1s", "masqueradeAll": False},
    }


def kube_proxy_command(
    directory: Path,
    *,
    binary: Path,
    server: str,
    ca: pki.KeyPair,
    pki_dir: Path,
    network: NodeNetwork,
    node: str,
    healthz_port: int,
    metrics_port: int,
) -> list[str]:
    """Identity, kubeconfig and config written; the argv (entering the node's namespace)."""
    directory.mkdir(parents=True, exist_ok=True)
    kubeconfig = directory / "kubeconfig"
    write_kubeconfig(kubeconfig, server=server, ca_file=ca.cert, client=identity(pki_dir, ca))
    config = directory / "config.yaml"
    document = proxy_config(
        kubeconfig=kubeconfig, network=network, node=node, healthz_port=healthz_port,
        metrics_port=metrics_port,
    )  # fmt: skip
    pki.write_private(config, yamlwrite.dump(document).encode())
    return in_netns(network, str(binary), f"--config={config}", "--v=1")
