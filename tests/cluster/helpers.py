"""Test helpers: OCI images like the ones olmtool builds for operators."""

from __future__ import annotations

import gzip

from olmtool.images import Image, layer_tar
from olmtool.images.image import OCI_CONFIG, OCI_LAYER_GZIP, OCI_MANIFEST, canonical_json, digest_of


def python_image(files: dict[str, bytes], config: dict) -> Image:
    """A one-layer image of ``files`` whose config holds ``config`` (Entrypoint, Cmd, Env...)."""
    layer = layer_tar(files)
    blob = gzip.compress(layer, mtime=0)
    config_blob = canonical_json(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [digest_of(layer)]},
        }
    )
    manifest = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": OCI_CONFIG,
                "digest": digest_of(config_blob),
                "size": len(config_blob),
            },
            "layers": [{"mediaType": OCI_LAYER_GZIP, "digest": digest_of(blob), "size": len(blob)}],
        }
    )
    return Image(manifest, config_blob, (blob,), OCI_MANIFEST)


OPERATOR_FILES = {
    "app/hello_op/__init__.py": b"",
    "app/hello_op/__main__.py": (
        b"import os, sys, greeting\n"
        b"print(greeting.WORD, os.environ['GREETING'], os.getcwd(), *sys.argv[1:])\n"
    ),
    "app/config/settings.txt": b"from the image\n",
    "usr/local/lib/python3.11/site-packages/greeting.py": b"WORD = 'hello'\n",
    "usr/local/bin/hello-op": b"#!/usr/local/bin/python3.11\nimport runpy\nrunpy.run_module('hello_op', run_name='__main__')\n",
}
OPERATOR_CONFIG = {
    "Entrypoint": ["python3", "-m", "hello_op"],
    "Cmd": ["--from-cmd"],
    "Env": ["GREETING=hi", "PATH=/usr/local/bin:/usr/bin:/bin"],
    "WorkingDir": "/app",
}


def runnable_operator_image() -> Image:
    """``OPERATOR_FILES`` on olmtool's Python base (built from Debian packages): an image
    a real node runs (``python_image`` alone has no interpreter)."""
    from olmtool.images import gzip_layer, stack_image
    from olmtool.images.debian import python_base
    from olmtool.images.image import EPOCH

    tar = layer_tar(OPERATOR_FILES)
    env = [*OPERATOR_CONFIG["Env"], "PYTHONPATH=/usr/local/lib/python3.11/site-packages"]
    config = {**OPERATOR_CONFIG, "Env": env, "User": "65532"}
    history = [{"created": EPOCH, "created_by": "tests: hello-op"}]
    return stack_image(
        python_base().image, [gzip_layer(tar)], [digest_of(tar)], config, history, EPOCH
    )
