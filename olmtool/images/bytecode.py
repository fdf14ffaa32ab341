"""Python bytecode for image layers, the same bytes for the same sources.

An image's Python cannot write ``__pycache__`` on a read-only root, so without bytecode in
the image every start compiles every module it imports again (the etcd operator: 3.1 s
to ``--help`` instead of 0.95 s). The bytecode is hash-based and unchecked (PEP 552): no
source timestamps in it, and the interpreter trusts it, since an image's files never
change. It is compiled by this interpreter, so only when this interpreter's minor version
is the image's (the bytecode format is per minor version); otherwise nothing is added.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping

CACHE_TAG = "__pycache__"


def compile_sources(sources: Mapping[str, bytes], python: str) -> dict[str, bytes]:
    """``{image path: bytecode}`` under ``__pycache__`` for each ``*.py`` of ``sources``
    (image paths without a leading slash), compiled as they sit in the image; empty when
    this interpreter is not Python ``python`` ("3.11"). A module that does not compile
    (test data, templates) just gets none, as with Debian's py3compile."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" != python:
        return {}
    modules = {path: data for path, data in sources.items() if path.endswith(".py")}
    if not modules:
        return {}
    with tempfile.TemporaryDirectory(prefix="olmtool-pyc-") as tmp:
        for path, data in modules.items():
            target = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "compileall",
                "-q",
                "-j",
                "0",
                "--invalidation-mode",
                "unchecked-hash",
                "-s",
                tmp,
                "-p",
                "/",
                tmp,
            ],
            capture_output=True,
            timeout=900,
            env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": ""},
        )
        compiled: dict[str, bytes] = {}
        for root, _, files in os.walk(tmp):
            if os.path.basename(root) != CACHE_TAG:
                continue
            for name in files:
                full = os.path.join(root, name)
                with open(full, "rb") as handle:
                    compiled[os.path.relpath(full, tmp)] = handle.read()
    return compiled
