"""The etcd operator's package lives in operator/ (not importable as ``operator``, a stdlib
name): its directory goes on sys.path, as the image's PYTHONPATH puts /app."""

import sys
from pathlib import Path

OPERATOR_DIR = Path(__file__).resolve().parents[2] / "operator"
if str(OPERATOR_DIR) not in sys.path:
    sys.path.insert(0, str(OPERATOR_DIR))
