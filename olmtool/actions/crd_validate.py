"""``crd validate``: CRD files checked as the kube-apiserver would, structural rules included.

>>> crd_validate([Path("operator/config/crd")]).passed(strict=True)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from olmtool.crd import LintResult, check_crd_files


def crd_validate(paths: Sequence[Path]) -> LintResult:
    """Every violation in the CRDs of ``paths`` (files, or directories searched for them),
    with file, line and JSON path."""
    return check_crd_files(paths)
