"""Turning TLS on, planned (pure): the TLS stage each member's Pod starts in and the one
it must be restarted into (:func:`etcd_operator.plan.next_step` rolls the members)."""

from __future__ import annotations

from etcd_operator.plan_model import MemberPod, Observed, pod_of


def tls_next(observed: Observed, pod: MemberPod) -> str | None:
    """The TLS stage a member must be restarted into, or None. Turning TLS on takes two
    rolls: each member first gets its certificates while it still serves plain ("ready":
    it can then dial peers that serve TLS), then, once every member has them, each in
    turn moves to https ("on"); at no point can two members not reach each other."""
    if not observed.tls or pod.tls == "on":
        return None
    if not pod.tls:
        return "ready"
    ready = all(pod_of(observed, m.name).tls for m in observed.members or ())
    return "on" if ready else None


def start_stage(observed: Observed, name: str) -> str:
    """The TLS stage a member's new Pod starts in: "on" when etcd has an https peer URL
    for it (or it is new in a TLS cluster), "ready" while TLS is being turned on."""
    if not observed.tls:
        return ""
    member = next((m for m in observed.members or () if m.name == name), None)
    if member is None or member.peer_url.startswith("https://"):
        return "on"
    return "ready"


def tls_migrating(observed: Observed) -> bool:
    return bool(observed.tls) and any(
        pod_of(observed, m.name).tls != "on" for m in observed.members or ()
    )
