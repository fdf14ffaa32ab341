"""OLM's API (the ``operators.coreos.com`` CRDs) on a local cluster.

``cluster up`` applies the CRDs as soon as the apiserver answers and waits for them to be
Established only at the end, so the apiserver sets them up while the controllers,
registry and node start. Server-side apply creates a missing CRD and updates one an
older olmtool installed in a single request (the CSV CRD is too big for client-side apply's
last-applied annotation).
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from olmtool.errors import OlmtoolError

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
OLM_GROUP = "operators.coreos.com"
FIELD_MANAGER = "olmtool"


class OlmCrdError(OlmtoolError):
    """OLM's CRDs could not be installed on the cluster."""


@dataclass(frozen=True)
class Api:
    """Just enough of an apiserver client: the admin token over the cluster's CA."""

    server: str
    ca_file: str
    token: str

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.server + path, data, headers, method=method)
        context = ssl.create_default_context(cafile=self.ca_file)
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = _status_message(exc.read()) or exc.reason
            raise OlmCrdError(f"{method} {path}: {exc.code} {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise OlmCrdError(f"{method} {path}: {exc}") from None


def _status_message(body: bytes) -> str | None:
    try:
        return json.loads(body).get("message")
    except ValueError:
        return body.decode(errors="replace")[:500] or None


def apply_crds(api: Api, crds: Sequence[dict[str, Any]]) -> list[str]:
    """Server-side apply each CRD (created, or updated to this olmtool's); their names."""
    names = []
    for crd in crds:
        name = crd["metadata"]["name"]
        path = f"{CRDS}/{name}?fieldManager={FIELD_MANAGER}&force=true"
        api.request("PATCH", path, crd, content_type="application/apply-patch+yaml")
        names.append(name)
    return names


def established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def wait_established(api: Api, names: Sequence[str], timeout: float) -> None:
    """Until every CRD serves its API (usually at once: they were applied seconds ago)."""
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending:
        pending = [
            name for name in pending if not established(api.request("GET", f"{CRDS}/{name}"))
        ]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise OlmCrdError(f"CRDs not Established after {timeout:.0f}s: {', '.join(pending)}")
        time.sleep(0.1)


def established_olm_crds(api: Api) -> list[str]:
    """Names of the Established ``operators.coreos.com`` CRDs on the cluster."""
    listed = api.request("GET", CRDS).get("items") or []
    return sorted(
        crd["metadata"]["name"]
        for crd in listed
        if crd.get("spec", {}).get("group") == OLM_GROUP and established(crd)
    )
