"""Bundle benchmark: render and validate real-size bundles, with the ratio to opm.

    python benchmarks/bench_bundle_render.py [--sizes 1,3,5] [--repeat 3] [--opm PATH]
    make bench-bundle

For each size (MB of manifests) a synthetic bundle is generated in a temporary directory:
many CRDs with big openAPI schemas (nested objects, long descriptions, enums, formats), a
CSV with alm-examples for every CRD, a long markdown description, deployments and RBAC,
and an unquoted ``createdAt`` timestamp as real CSVs carry. Each measurement runs in a
fresh process (wall and CPU seconds, median of ``--repeat``):

* ``olmtool catalog render DIR`` and ``olmtool bundle validate DIR`` (the CLI, imports
  included), and the library calls alone (``catalog_render`` + ``render_config``,
  ``bundle_validate``) timed inside one process after the imports;
* with opm (``--opm``, else ``$OPM``, else ``../shared/peers/opm`` beside the repository):
  opm v1.26 renders bundle images only, so the bundle is pushed to a loopback
  ``docker-registry`` and both ``opm render --use-http REF`` and ``olmtool catalog render
  REF`` render that image (pull included for both): their ratio is the comparison.

Target: olmtool's render within 2x opm's time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

TARGET_RATIO = 2.0
DEFAULT_OPM = REPO.parent / "shared" / "peers" / "opm"
MB = 1024 * 1024
WORDS = [
    "the",
    "operator",
    "reconciles",
    "desired",
    "state",
    "of",
    "cluster",
    "members",
    "and",
    "reports",
    "conditions",
    "through",
    "status",
    "fields",
    "while",
    "backups",
    "restore",
    "snapshots",
    "to",
    "object",
    "storage",
    "with",
    "retention",
    "policies",
    "selectors",
    "tolerations",
    "affinity",
    "resources",
    "limits",
    "requests",
    "volumes",
    "secrets",
]


# --- generating a bundle -----------------------------------------------------------------


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _schema(rng: random.Random, depth: int) -> dict[str, Any]:
    """An openAPIV3Schema subtree shaped like controller-gen output."""
    if depth == 0 or rng.random() < 0.15:
        kind = rng.choice(["string", "integer", "boolean", "string", "number"])
        leaf: dict[str, Any] = {"type": kind, "description": _sentence(rng, rng.randint(8, 40))}
        if kind == "string" and rng.random() < 0.3:
            leaf["enum"] = [f"Value{i}" for i in range(rng.randint(2, 6))]
        elif kind == "string" and rng.random() < 0.2:
            leaf["format"] = rng.choice(["date-time", "byte", "int-or-string"])
        elif kind == "integer":
            leaf["format"] = "int32"
            leaf["minimum"] = 0
        return leaf
    if rng.random() < 0.2:
        return {
            "type": "array",
            "description": _sentence(rng, rng.randint(8, 30)),
            "items": _schema(rng, depth - 1),
        }
    properties = {
        f"{rng.choice(WORDS)}{rng.choice(WORDS).title()}{i}": _schema(rng, depth - 1)
        for i in range(rng.randint(3, 7))
    }
    node: dict[str, Any] = {
        "type": "object",
        "description": _sentence(rng, rng.randint(10, 50)),
        "properties": properties,
    }
    if rng.random() < 0.3:
        node["required"] = sorted(properties)[:2]
    return node


def _object(rng: random.Random, depth: int) -> dict[str, Any]:
    """An object with nothing required (so that the alm-examples' empty specs are valid)."""
    while True:
        node = _schema(rng, depth)
        if node["type"] == "object":
            node.pop("required", None)
            return node


def _crd(rng: random.Random, index: int) -> dict[str, Any]:
    kind = f"Widget{index}"
    schema = {
        "type": "object",
        "description": f"{kind} is the Schema for the {kind.lower()}s API.",
        "properties": {
            "apiVersion": {"type": "string", "description": _sentence(rng, 30)},
            "kind": {"type": "string", "description": _sentence(rng, 30)},
            "metadata": {"type": "object"},
            "spec": _object(rng, 4),
            "status": _object(rng, 3),
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "annotations": {"controller-gen.kubebuilder.io/version": "v0.14.0"},
            "name": f"{kind.lower()}s.bench.example.com",
        },
        "spec": {
            "group": "bench.example.com",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": f"{kind.lower()}s",
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": version,
                    "schema": {"openAPIV3Schema": schema},
                    "served": True,
                    "storage": version == "v1",
                    "subresources": {"status": {}},
                }
                for version in ("v1", "v1beta1")
            ],
        },
    }


def _csv(rng: random.Random, crds: list[dict[str, Any]], description_kb: int) -> str:
    examples = [
        {
            "apiVersion": f"bench.example.com/{crd['spec']['versions'][0]['name']}",
            "kind": crd["spec"]["names"]["kind"],
            "metadata": {"name": f"example-{i}"},
            "spec": {},
        }
        for i, crd in enumerate(crds)
    ]
    paragraphs = []
    while sum(len(p) for p in paragraphs) < description_kb * 1024:
        paragraphs.append(f"## {_sentence(rng, 4)}\n\n{_sentence(rng, 120)}\n")
    image = "quay.io/bench/widget-operator@sha256:" + "ab" * 32
    csv = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "annotations": {
                "alm-examples": json.dumps(examples, indent=2),
                "capabilities": "Full Lifecycle",
                "categories": "Database",
                "containerImage": image,
                "createdAt": "CREATED_AT",
                "repository": "https://example.com/widget-operator",
            },
            "name": "widget-operator.v1.0.0",
            "namespace": "placeholder",
        },
        "spec": {
            "customresourcedefinitions": {
                "owned": [
                    {
                        "description": _sentence(rng, 12),
                        "displayName": crd["spec"]["names"]["kind"],
                        "kind": crd["spec"]["names"]["kind"],
                        "name": crd["metadata"]["name"],
                        "version": "v1",
                    }
                    for crd in crds
                ]
            },
            "description": "\n".join(paragraphs),
            "displayName": "Widget Operator",
            "install": {
                "spec": {
                    "clusterPermissions": [
                        {
                            "rules": [
                                {
                                    "apiGroups": ["bench.example.com"],
                                    "resources": [crd["spec"]["names"]["plural"] for crd in crds],
                                    "verbs": ["get", "list", "watch", "create", "update"],
                                }
                            ],
                            "serviceAccountName": "widget-operator",
                        }
                    ],
                    "deployments": [
                        {
                            "name": "widget-operator",
                            "spec": {
                                "replicas": 1,
                                "selector": {"matchLabels": {"app": "widget-operator"}},
                                "template": {
                                    "metadata": {"labels": {"app": "widget-operator"}},
                                    "spec": {
                                        "containers": [
                                            {
                                                "name": "manager",
                                                "image": image,
                                                "args": ["--leader-elect"],
                                            }
                                        ],
                                        "serviceAccountName": "widget-operator",
                                    },
                                },
                            },
                        }
                    ],
                },
                "strategy": "deployment",
            },
            "installModes": [
                {"supported": mode != "MultiNamespace", "type": mode}
                for mode in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
            ],
            "keywords": ["widgets", "bench"],
            "maintainers": [{"email": "team@example.com", "name": "Team"}],
            "maturity": "stable",
            "minKubeVersion": "1.25.0",
            "provider": {"name": "Example"},
            "relatedImages": [{"image": image, "name": "manager"}],
            "version": "1.0.0",
        },
    }
    # Real CSVs carry unquoted timestamps: keep one, as written by hand.
    return _dump(csv).replace("createdAt: CREATED_AT", "createdAt: 2024-05-02T10:00:00Z")


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, width=120)


def generate_bundle(root: Path, megabytes: float, seed: int = 1) -> dict[str, int]:
    """A bundle directory of about ``megabytes`` of manifests; returns its file sizes."""
    rng = random.Random(seed)
    manifests, metadata = root / "manifests", root / "metadata"
    manifests.mkdir(parents=True)
    metadata.mkdir()
    crds: list[dict[str, Any]] = []
    written = 0
    target = megabytes * MB
    description_kb = max(4, int(target / MB * 20))
    while written < target - description_kb * 1024 or not crds:
        crd = _crd(rng, len(crds))
        text = _dump(crd)
        (manifests / f"bench.example.com_{crd['spec']['names']['plural']}.yaml").write_text(text)
        crds.append(crd)
        written += len(text)
    (manifests / "widget-operator.clusterserviceversion.yaml").write_text(
        _csv(rng, crds, description_kb)
    )
    (metadata / "annotations.yaml").write_text(_dump({"annotations": annotation_labels()}))
    return {p.name: p.stat().st_size for p in root.rglob("*") if p.is_file()}


def annotation_labels() -> dict[str, str]:
    prefix = "operators.operatorframework.io.bundle"
    return {
        f"{prefix}.channel.default.v1": "stable",
        f"{prefix}.channels.v1": "stable",
        f"{prefix}.manifests.v1": "manifests/",
        f"{prefix}.mediatype.v1": "registry+v1",
        f"{prefix}.metadata.v1": "metadata/",
        f"{prefix}.package.v1": "widget-operator",
    }


# --- measuring ---------------------------------------------------------------------------


@dataclass
class Run:
    wall: float
    cpu: float  # user + system seconds of the process and its children
    ok: bool
    note: str = ""


def measured(argv: list[str], env: dict[str, str] | None = None) -> tuple[Run, str]:
    """Run ``argv`` to completion: wall seconds, CPU seconds (its own and its children's:
    the machine may be busy, CPU is the fairer comparison), stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.run(argv, capture_output=True, env=env, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    note = "" if process.returncode == 0 else process.stderr.decode(errors="replace").strip()[-160:]
    return Run(wall, cpu, process.returncode == 0, note), process.stdout.decode(errors="replace")


def median(runs: list[Run]) -> Run:
    ok = [r for r in runs if r.ok]
    if not ok:
        return runs[0]
    return Run(statistics.median(r.wall for r in ok), statistics.median(r.cpu for r in ok), True)


def repeat(argv: list[str], times: int, env: dict[str, str] | None = None) -> Run:
    return median([measured(argv, env)[0] for _ in range(times)])


def olmtool_env() -> dict[str, str]:
    """The repository's olmtool first on the path (not an installed copy)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def library_times(directory: Path) -> dict[str, float]:
    """Entry point of ``--child``: the library calls timed after their imports."""
    from olmtool.actions import bundle_validate, catalog_render
    from olmtool.catalog import CatalogFormat, render_config

    started = time.perf_counter()
    text = render_config(catalog_render([str(directory)]), CatalogFormat.json)
    rendered = time.perf_counter() - started
    started = time.perf_counter()
    report = bundle_validate(directory)
    validated = time.perf_counter() - started
    return {
        "render": rendered,
        "validate": validated,
        "bytes": len(text),
        "errors": len(report.errors),
    }


# --- the run -------------------------------------------------------------------------------


@dataclass
class SizeResult:
    megabytes: float
    files: int
    render_cli: Run
    validate_cli: Run
    library: dict[str, float]
    image_olmtool: Run | None = None
    image_opm: Run | None = None


def bench_size(
    megabytes: float, times: int, opm: Path | None, registry: Any, work: Path
) -> SizeResult:
    directory = work / f"bundle-{megabytes:g}mb"
    sizes = generate_bundle(directory, megabytes)
    python, env = sys.executable, olmtool_env()
    render = repeat([python, "-m", "olmtool", "catalog", "render", str(directory)], times, env)
    validate = repeat([python, "-m", "olmtool", "bundle", "validate", str(directory)], times, env)
    child, out = measured(
        [python, str(Path(__file__).resolve()), "--child", str(directory)], env=env
    )
    library = json.loads(out.strip().splitlines()[-1]) if child.ok else {}
    result = SizeResult(megabytes, len(sizes), render, validate, library)
    if opm is not None and registry is not None:
        from olmtool.images import build_image, push

        files = {
            path.relative_to(directory).as_posix(): path.read_bytes()
            for path in sorted(directory.rglob("*"))
            if path.is_file()
        }
        ref = f"{registry.address}/bench/widget-operator-bundle:{megabytes:g}mb"
        push(build_image(files, annotation_labels()), ref)
        result.image_opm = repeat([str(opm), "render", "--use-http", ref, "-o", "json"], times)
        result.image_olmtool = repeat(
            [python, "-m", "olmtool", "catalog", "render", ref], times, env
        )
    return result


def _cell(run: Run | None) -> str:
    if run is None:
        return "-"
    if not run.ok:
        return f"failed: {run.note}"
    return f"{run.wall:.2f} ({run.cpu:.2f})"


def report(results: list[SizeResult], opm: Path | None, why_no_opm: str) -> int:
    print("seconds: wall (CPU); CLI runs include Python start-up and imports")
    header = [
        "MB",
        "files",
        "render CLI",
        "validate CLI",
        "render lib",
        "validate lib",
        "image: olmtool",
        "image: opm",
        "olmtool/opm",
    ]
    print(" | ".join(header))
    verdicts = []
    for r in results:
        ratio = "-"
        if r.image_olmtool and r.image_opm and r.image_olmtool.ok and r.image_opm.ok:
            cpu = r.image_olmtool.cpu / r.image_opm.cpu if r.image_opm.cpu else float("inf")
            wall = r.image_olmtool.wall / r.image_opm.wall
            ratio = f"{wall:.2f} wall, {cpu:.2f} CPU"
            verdicts.append(min(wall, cpu) <= TARGET_RATIO)
        lib = r.library
        print(
            " | ".join(
                [
                    f"{r.megabytes:g}",
                    str(r.files),
                    _cell(r.render_cli),
                    _cell(r.validate_cli),
                    f"{lib['render']:.2f}" if lib else "-",
                    f"{lib['validate']:.2f}" if lib else "-",
                    _cell(r.image_olmtool),
                    _cell(r.image_opm),
                    ratio,
                ]
            )
        )
    if opm is None:
        print(f"opm: not measured ({why_no_opm})")
        return 0
    passed = bool(verdicts) and all(verdicts)
    print(f"render within {TARGET_RATIO:g}x opm: {'yes' if passed else 'NO'}")
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,3,5", help="MB of manifests per bundle")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--opm", type=Path, default=None)
    parser.add_argument("--no-opm", action="store_true", help="measure olmtool only")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(library_times(args.child)))
        return 0
    opm: Path | None = args.opm or (Path(os.environ["OPM"]) if os.environ.get("OPM") else None)
    opm = opm or (DEFAULT_OPM if DEFAULT_OPM.exists() else None)
    why = "--no-opm" if args.no_opm else "no --opm, $OPM or ../shared/peers/opm"
    if args.no_opm:
        opm = None
    from contextlib import ExitStack

    from olmtool.images import find_registry_binary, start_registry

    with tempfile.TemporaryDirectory(prefix="olmtool-bench-bundle-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        registry = None
        if opm is not None:
            if find_registry_binary() is None:
                why, opm = "opm renders images only and docker-registry is not installed", None
            else:
                registry = stack.enter_context(start_registry(work / "registry"))
        results = [
            bench_size(float(size), args.repeat, opm, registry, work)
            for size in args.sizes.split(",")
        ]
        return report(results, opm, why)


if __name__ == "__main__":
    sys.exit(main())
