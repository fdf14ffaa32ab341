"""The node agent: olmtool's own kubelet, running Pods as local processes.

>>> from olmtool.cluster.node import NodeAgent, read_logs
>>> with NodeAgent(plane.kubeconfig, state_dir / "node") as agent:
...     ...  # Pods scheduled to "olmtool-node" run as processes on this machine
>>> print(read_logs(state_dir / "node", "default", "my-pod"))

Run it on its own with ``python -m olmtool.cluster.node --kubeconfig K --state-dir D
[--node-name N] [--registry HOST:PORT] [--network-index I] [--tls-cert-file C
--tls-private-key-file K]`` (the serving certificate turns the kubelet API on); SIGTERM
stops every Pod and exits 0.

What a Pod gets, and how it differs from a real kubelet:

* **Processes, not containers.** Each container is a process (in its own process group
  and, as root, its own mount and UTS namespace) running a host program: the image is
  resolved by :mod:`.runtime` (olmtool's images from the cluster registry run with the
  host Python; etcd, busybox, alpine and python images map to host binaries). The
  ``containerID`` is ``olmtool://<pid>``. There are no cgroups: resource requests and
  limits are reported to the scheduler but not enforced, and ``securityContext`` users
  are ignored (processes run as the agent's user).
* **Paths.** Volumes are directories under the state dir (:mod:`.volumes`), bind-mounted
  at their ``mountPath`` in the container's mount namespace when the mount point exists
  on the host or can be made under ``/tmp``, ``/var/tmp``, ``/run`` or ``/var/run``;
  any other mountPath (``/data``) is *rewritten*: the prefix is replaced by the host
  directory in the command, arguments, environment values and working directory. The
  service account's token (TokenRequest, 1 h, renewed), ``ca.crt`` and ``namespace``
  are mounted at ``/var/run/secrets/kubernetes.io/serviceaccount`` (unless
  ``automountServiceAccountToken`` is false) and ``KUBERNETES_SERVICE_HOST``/``PORT``
  point at the ``kubernetes`` Service (or, without Pod networking, at the apiserver on
  127.0.0.1), so in-cluster clients work.
* **Network.** Given its cluster's network (``--network-index``, see
  :mod:`olmtool.cluster.network`) and root, each Pod has its own network namespace on
  the cluster's bridge with an address from ``10.244.<i>.0/24`` (stable per
  namespace/name), so Pods may bind the same port and reach each other by Pod IP. The
  agent proxies Service ClusterIPs (TCP) and host ports (:mod:`.services`), and each
  Pod's ``/etc/hosts`` resolves the Services (``name``, ``name.ns[.svc[.cluster.local]]``),
  the Pod's own hostname and the node's Pods behind headless Services, rewritten as they
  change; there is no cluster DNS and no route out of the cluster network. Without
  root or a network, Pods share the host's network stack with loopback IPs
  (``127.<i>.0.0/16``) and ClusterIPs do not answer (see :mod:`.network`).
* **Logs** are files, ``<state>/pods/<ns>_<pod>_<uid>/<container>/<restart>.log``,
  read with :func:`read_logs`, or through the kubelet API (:mod:`.kubeletapi`, when the
  agent has a serving certificate), which also runs ``kubectl exec`` commands.
* **Storage.** The agent runs :mod:`.provisioner`: the default StorageClass
  ``standard`` provisions hostPath volumes under ``<state>/volumes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from olmtool.cluster.node.logs import LogsError, read_logs

if TYPE_CHECKING:
    from olmtool.cluster.node.agent import NodeAgent
    from olmtool.cluster.node.kube import Kube
    from olmtool.cluster.provisioner import Provisioner

__all__ = ["Kube", "LogsError", "NodeAgent", "Provisioner", "read_logs"]


def __getattr__(name: str) -> Any:
    # the agent pulls in the kubernetes client; reading logs should not have to
    if name == "NodeAgent":
        from olmtool.cluster.node.agent import NodeAgent

        return NodeAgent
    if name == "Kube":
        from olmtool.cluster.node.kube import Kube

        return Kube
    if name == "Provisioner":
        from olmtool.cluster.provisioner import Provisioner

        return Provisioner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
