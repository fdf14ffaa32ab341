"""The sandbox (pause) image: Kubernetes' own ``build/pause``, compiled by the asset build.

Upstream's ``registry.k8s.io/pause`` is the same program in a FROM-scratch image; this
one is built from the Debian source package's copy, so it stands in for it under the
name containerd's ``sandbox_image`` gives (imported into the node, never pulled).
"""

from __future__ import annotations

from pathlib import Path

from olmtool.images import EPOCH, Image, digest_of, gzip_layer, layer_tar, stack_image

PAUSE_IMAGE = "registry.k8s.io/pause:3.4.1"  # what kubeadm 1.20 pins
PAUSE_USER = "65535:65535"


def pause_image(binary: Path) -> Image:
    """A one-layer image of ``binary`` at ``/pause``, run as 65535 (upstream's user)."""
    tar = layer_tar({"pause": binary.read_bytes()}, executable={"pause"})
    config = {"Entrypoint": ["/pause"], "User": PAUSE_USER}
    history = [{"created": EPOCH, "created_by": "olmtool: build/pause of Kubernetes 1.20.2"}]
    return stack_image(None, [gzip_layer(tar)], [digest_of(tar)], config, history, EPOCH)
