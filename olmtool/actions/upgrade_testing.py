"""``test upgrade``: can every version of a package reach the channel head through OLM v0?

>>> plan = upgrade_test("catalog", "etcd-operator")
>>> [(p.bundle, p.hops) for p in plan.paths]
[('etcd-operator.v0.3.0', []), ('etcd-operator.v0.2.0', ['etcd-operator.v0.3.0']), ...]

The static check: for each bundle of the channel, the hops OLM v0 takes to the head
(repeated resolution: replaces / skips / skipRange, nearest to the head first), with the
problems that strand users (unreachable head, stranded bundles, cycles, skipRange
mistakes). ``catalog`` is a catalog directory, a registry address (``host:port``) or a
catalog image (rendered as ``opm render`` does).

The dynamic check (:func:`upgrade_test_dynamic`) does it for real on a cluster with OLM:
per start version, :func:`~olmtool.olm.upgrade_run.run_upgrade` installs it with Manual
approval in a namespace of its own, creates the CSV's ``alm-examples``, writes the
operator package's probe data, then approves OLM's upgrade InstallPlans hop by hop to the
head, checking the CSV, the operator's Deployments, the examples and the probe at each
hop. Start versions run oldest first: an older release's CRD cannot replace a newer one
whose stored versions it lacks (OLM fails that InstallPlan), so a newer start would
strand the older ones on the same cluster; ``reset_crds`` deletes the package's CRDs
(and with them every object of theirs, cluster-wide) before each start version.

A catalog directory is served for the run by ``olmtool catalog serve``'s server started
in this process on a free loopback port: OLM's catalog operator dials that address, so
this works only where OLM runs on this machine, i.e. with a cluster whose API server is
on loopback (the local cluster, with OLM running as host processes). Any other cluster
needs a registry address it can reach, or a catalog image.
"""

from __future__ import annotations

import contextlib
import importlib
import ipaddress
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from kubernetes.client.exceptions import ApiException

from olmtool.actions.catalog_render import catalog_render
from olmtool.actions.install import classify_catalog
from olmtool.catalog import declcfg as dc
from olmtool.catalog import load_catalog_strict
from olmtool.cluster import resolve_target
from olmtool.errors import ArgumentError, OlmtoolError
from olmtool.kube import OUTAGE_GRACE, cluster_errors
from olmtool.olm import (
    EXAMPLES,
    Probe,
    UpgradePlan,
    UpgradeReport,
    UpgradeRun,
    clean_up,
    connect_olm,
    fetch_config,
    run_upgrade,
    upgrade_plan,
    write_junit,
)
from olmtool.serve import start_server
from olmtool.versions import parse_version, precedence_key

if TYPE_CHECKING:
    from olmtool.kube import Kube

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def catalog_kind(catalog: str) -> str:
    """ "directory", "address" (host:port) or "image" (naming its registry, like
    ``quay.io/org/catalog:tag``, so that a mistyped directory is never pulled): the one
    rule of :func:`olmtool.actions.install.classify_catalog`."""
    return classify_catalog(catalog).kind.value


def _config(catalog: str) -> dc.DeclarativeConfig:
    kind = catalog_kind(catalog)
    if kind == "directory":
        return load_catalog_strict(Path(catalog))
    if kind == "address":
        return fetch_config(catalog)
    return catalog_render([catalog])


def upgrade_test(
    catalog: str | Path, package: str, channel: str | None = None, *, junit: Path | None = None
) -> UpgradePlan:
    """The upgrade plan of ``package`` in ``channel`` (the default channel when None);
    ``junit``: also write it as JUnit XML there (one testcase per start bundle)."""
    plan = upgrade_plan(_config(str(catalog)), package, channel)
    if junit is not None:
        write_junit(plan, junit)
    return plan


# -- the dynamic test --------------------------------------------------------------------


def load_probe(spec: str, path: str | Path | None = None) -> Probe:
    """The probe named ``module:Class`` (or ``DIR:module:Class``), instantiated without
    arguments; ``path`` (or ``DIR``) is put first on ``sys.path`` to import it."""
    parts = spec.rsplit(":", 2)
    if len(parts) == 3:
        path, module_name, attribute = parts
    elif len(parts) == 2:
        module_name, attribute = parts
    else:
        raise ArgumentError(f'"{spec}" is not module:Class or DIR:module:Class', argument="probe")
    if path:
        directory = str(Path(path).resolve())
        if not Path(directory).is_dir():
            raise ArgumentError(f"{path} is not a directory", argument="probe_path")
        if directory not in sys.path:
            sys.path.insert(0, directory)
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ArgumentError(f'"{spec}" cannot be loaded: {exc}', argument="probe") from None
    probe = found() if isinstance(found, type) else found
    if not (callable(getattr(probe, "write", None)) and callable(getattr(probe, "check", None))):
        raise ArgumentError(f'"{spec}" has no write() and check() methods', argument="probe")
    return probe  # type: ignore[no-any-return]


def start_versions(plan: UpgradePlan, start: str | None, every: bool) -> list[str]:
    """The CSV names to start from: ``start`` (a version or a CSV name), or with ``every``
    each bundle of the channel but the head, oldest first."""
    if bool(start) == every:
        raise ArgumentError("give one start version or all of them, not both", argument="start")
    if not plan.head:
        raise ArgumentError(
            f"channel {plan.channel} of {plan.package} has no head to upgrade to",
            argument="start",
        )
    candidates = [p for p in plan.paths if p.bundle != plan.head]
    if every:
        if not candidates:
            raise ArgumentError(
                f"channel {plan.channel} of {plan.package} has no bundle but its head",
                argument="start",
            )
        return [p.bundle for p in sorted(candidates, key=_oldest_first)]
    found = next((p for p in plan.paths if start in (p.bundle, p.version)), None)
    if found is None:
        names = ", ".join(p.version or p.bundle for p in plan.paths)
        raise ArgumentError(
            f"{start} is not in channel {plan.channel} of {plan.package} ({names})",
            argument="start",
        )
    if found.bundle == plan.head:
        raise ArgumentError(f"{start} is the channel head: nothing to upgrade", argument="start")
    return [found.bundle]


def _oldest_first(path: Any) -> tuple[object, ...]:
    try:
        return (0, precedence_key(parse_version(path.version)), path.bundle)
    except ValueError:
        return (1, (), path.bundle)


def is_loopback_server(server: str) -> bool:
    """Whether an API server URL (``https://127.0.0.1:6443``) is on this machine."""
    host = urlsplit(server if "://" in server else f"https://{server}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _namespace(package: str, csv: str) -> str:
    """A fresh namespace for one start version (a DNS label)."""
    version = csv.rsplit(".v", 1)[-1] if ".v" in csv else csv
    stem = re.sub(r"[^a-z0-9-]+", "-", f"{package[:24]}-up-{version}".lower()).strip("-")
    return f"{stem[:54]}-{uuid.uuid4().hex[:6]}"


def _provided(config: dc.DeclarativeConfig, package: str) -> set[tuple[str, str]]:
    """(group, kind) of every API a bundle of ``package`` provides (``olm.gvk``)."""
    return {
        (str(p.value.get("group", "")), str(p.value.get("kind", "")))
        for b in config.bundles
        if b.package == package
        for p in b.properties_of(dc.PROP_GVK)
        if isinstance(p.value, dict)
    }


def delete_crds(kube: Kube, apis: set[tuple[str, str]], timeout: float = 120.0) -> list[str]:
    """Delete the CRDs serving ``apis`` (every object of theirs goes too) and wait until
    they are gone; their names. Objects still held by a finalizer after half of
    ``timeout`` (their operator is gone) lose their finalizers."""
    crds = [
        crd
        for crd in kube.get(CRDS).get("items", [])
        if (crd["spec"]["group"], crd["spec"]["names"]["kind"]) in apis
    ]
    names = [crd["metadata"]["name"] for crd in crds]
    for name in names:
        with contextlib.suppress(ApiException):  # already going
            kube.delete(f"{CRDS}/{name}")
    started = time.monotonic()
    released = False
    while any(kube.get_or_none(f"{CRDS}/{n}") is not None for n in names):
        waited = time.monotonic() - started
        if waited > timeout:
            raise OlmtoolError(f"CRDs {', '.join(names)} not deleted after {timeout:g}s")
        if waited > timeout / 2 and not released:
            for crd in crds:
                _release_finalizers(kube, crd)
            released = True
        time.sleep(0.5)
    return names


def _release_finalizers(kube: Kube, crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    path = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"
    with contextlib.suppress(ApiException):
        for item in kube.get(path).get("items", []):
            meta = item["metadata"]
            if meta.get("finalizers"):
                where = f"namespaces/{meta['namespace']}/" if meta.get("namespace") else ""
                kube.patch(
                    f"/apis/{spec['group']}/{version}/{where}{spec['names']['plural']}/"
                    f"{meta['name']}",
                    {"metadata": {"finalizers": None}},
                )


@contextlib.contextmanager
def _served(catalog: str, kube: Kube) -> Iterator[tuple[str, str]]:
    """(address, image) for the CatalogSources; a directory is served for the duration."""
    kind = catalog_kind(catalog)
    if kind == "directory":
        if not is_loopback_server(kube.server):
            raise ArgumentError(
                f"a catalog directory is served on this machine's loopback, which the "
                f"cluster at {kube.server} cannot reach: give a registry address or an image",
                argument="catalog",
            )
        with start_server(catalog, grpc_port=0, http_port=None, host="127.0.0.1") as server:
            yield server.grpc_address, ""
        return
    yield (catalog, "") if kind == "address" else ("", catalog)


def upgrade_test_dynamic(
    catalog: str | Path,
    package: str,
    channel: str | None = None,
    *,
    start: str | None = None,
    every: bool = False,
    kubeconfig: Path | None = None,
    name: str | None = None,
    probe: Probe | str | None = None,
    probe_path: str | Path | None = None,
    timeout: float = 300.0,
    reset_crds: bool = False,
    keep: bool = False,
    junit: Path | None = None,
    progress: Callable[[str], None] | None = None,
    examples: str = "ready",
) -> UpgradeReport:
    """Install ``start`` (a version or CSV name), or with ``every`` each non-head bundle
    of the channel, and upgrade it through OLM to the head; one run per start version.

    ``probe`` is a :class:`~olmtool.olm.upgrade_run.Probe` or its ``module:Class`` name
    (see :func:`load_probe`). Unless ``keep``, each run's examples are deleted afterwards
    (while the operator still runs to handle their finalizers), then its namespace.
    ``junit`` also writes the report as JUnit XML. ``examples`` is what each run does with
    the CSV's alm-examples: ``ready`` (create them, each must become Ready after the
    install and every hop), ``create`` (create them, never wait) or ``none``. A failed
    run is recorded in the report (``report.passed``); arguments that cannot work raise
    ArgumentError first.

    The cluster is ``kubeconfig``'s, else the local cluster ``name``'s (see
    :func:`olmtool.cluster.target.resolve_target`); it must answer before anything
    starts, its failures are one-line OlmtoolErrors, and an apiserver outage of up to
    :data:`~olmtool.kube.OUTAGE_GRACE` seconds is ridden out."""
    if examples not in EXAMPLES:
        raise ArgumentError(
            f"{examples!r} is not one of {', '.join(EXAMPLES)}", argument="examples"
        )
    say = progress or (lambda _line: None)
    text = str(catalog)
    config = _config(text)
    plan = upgrade_plan(config, package, channel)
    starts = start_versions(plan, start, every)
    loaded = load_probe(probe, probe_path) if isinstance(probe, str) else probe
    report = UpgradeReport(plan, text)
    started = time.monotonic()
    target = resolve_target(kubeconfig, name)
    kube = connect_olm(target, outage_grace=OUTAGE_GRACE, progress=say)
    try:
        with cluster_errors(kube, target), _served(text, kube) as (address, image):
            for number, csv in enumerate(starts, 1):
                prefix = f"[{number}/{len(starts)}] {csv}"
                namespace = _namespace(package, csv)
                if reset_crds:
                    say(f"{prefix}: deleting the package's CRDs")
                    try:
                        delete_crds(kube, _provided(config, package), timeout)
                    except (OlmtoolError, ApiException) as exc:
                        failed = UpgradeRun(
                            package, csv, csv, channel=plan.channel, examples=examples
                        )
                        failed.failure = f"resetting the CRDs: {exc}"
                        report.runs.append(failed)
                        continue
                run = run_upgrade(
                    kube,
                    catalog_address=address,
                    catalog_image=image,
                    package=package,
                    start_csv=csv,
                    head_csv=plan.head,
                    namespace=namespace,
                    channel=plan.channel,
                    probe=loaded,
                    timeout=timeout,
                    examples=examples,
                    on_change=lambda line, p=prefix: say(f"{p}: {line}"),
                )
                report.runs.append(run)
                verdict = "passed" if run.passed else "failed"
                say(f"{prefix}: {verdict}, reached {run.reached}")
                if not keep:
                    say(f"{prefix}: deleting its examples and namespace {namespace}")
                    clean_up(kube, run, timeout)
    finally:
        report.seconds = time.monotonic() - started
        kube.close()
        if junit is not None:
            write_junit(report, junit)
    return report


__all__ = [
    "catalog_kind",
    "delete_crds",
    "load_probe",
    "start_versions",
    "upgrade_test",
    "upgrade_test_dynamic",
]
