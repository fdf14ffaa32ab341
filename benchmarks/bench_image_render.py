"""Render many bundle images from a loopback registry: olmtool beside opm, CPU and wall.

    python benchmarks/bench_image_render.py [--images 200] [--repeat 3] [--opm PATH]
    make bench-image-render          (also run by make bench)

The bundles are the generated catalog's (``catalog_gen.py``: a CSV of 12-20 KB and a CRD
each, with real-looking channels, replaces and skips); each becomes a bundle image
(FROM scratch, one layer, the bundle labels) pushed to a loopback ``docker-registry``.
Then, in fresh processes (median of ``--repeat``), both tools render every reference in
one command, pulls included:

* ``opm render --use-http REF... -o json`` (``--opm``, else ``$OPM``, else
  ``../shared/peers/opm``; without opm only olmtool is measured);
* ``olmtool catalog render REF... -o json``.

CPU is user + system seconds of the process and its children: the fair comparison on a
busy machine. Target (issue 30): olmtool's CPU at most 1.0x opm's. The two outputs must be
byte-identical, so a fast wrong render cannot pass.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import yaml  # noqa: E402
from bench_bundle_render import DEFAULT_OPM, Run, measured, median, olmtool_env  # noqa: E402
from catalog_gen import package_blobs  # noqa: E402

TARGET_CPU_RATIO = 1.0
LABEL = "operators.operatorframework.io.bundle"


def _yaml(data: Any) -> bytes:
    """Block-style YAML, as operator-sdk and controller-gen write bundle manifests."""
    return yaml.safe_dump(data, sort_keys=False, width=120).encode()


def bundle_images(
    count: int, seed: int = 1
) -> Iterator[tuple[str, str, dict[str, bytes], dict[str, str]]]:
    """``(package, version, files, labels)`` for ``count`` generated bundles that carry
    their manifests (olm.bundle.object), packages taken in order."""
    packages, made = max(1, count // 5), 0
    for index in range(packages * 4):
        blobs = package_blobs(index, packages, 10, seed)
        channels = {b["name"]: b for b in blobs if b["schema"] == "olm.channel"}
        default = next(b["defaultChannel"] for b in blobs if b["schema"] == "olm.package")
        for blob in blobs:
            if blob["schema"] != "olm.bundle":
                continue
            objects = [
                json.loads(base64.b64decode(p["value"]["data"]))
                for p in blob["properties"]
                if p["type"] == "olm.bundle.object"
            ]
            if not objects:
                continue
            objects += _missing_crds(objects)
            in_channels = sorted(
                name
                for name, channel in channels.items()
                if any(e["name"] == blob["name"] for e in channel["entries"])
            )
            files = {
                f"manifests/{obj['metadata']['name']}.{obj['kind'].lower()}.yaml": _yaml(obj)
                for obj in objects
            }
            labels = {
                f"{LABEL}.channel.default.v1": default,
                f"{LABEL}.channels.v1": ",".join(in_channels or [default]),
                f"{LABEL}.manifests.v1": "manifests/",
                f"{LABEL}.mediatype.v1": "registry+v1",
                f"{LABEL}.metadata.v1": "metadata/",
                f"{LABEL}.package.v1": blob["package"],
            }
            files["metadata/annotations.yaml"] = _yaml({"annotations": labels})
            yield blob["package"], blob["name"], files, labels
            made += 1
            if made == count:
                return


def _missing_crds(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A CRD for every kind the CSV owns beyond the one the generator wrote (opm refuses a
    bundle without them), copied from that one with the names changed."""
    csv = next(o for o in objects if o["kind"] == "ClusterServiceVersion")
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    have = {c["metadata"]["name"] for c in crds}
    made = []
    for owned in csv["spec"].get("customresourcedefinitions", {}).get("owned", []):
        if owned["name"] in have or not crds:
            continue
        crd = json.loads(json.dumps(crds[0]))
        kind, plural = owned["kind"], owned["name"].split(".", 1)[0]
        crd["metadata"]["name"] = owned["name"]
        crd["spec"]["names"] = {
            "kind": kind,
            "listKind": f"{kind}List",
            "plural": plural,
            "singular": kind.lower(),
        }
        made.append(crd)
    return made


def push_images(address: str, count: int) -> tuple[list[str], int]:
    """Build and push ``count`` bundle images; their references and total layer bytes."""
    from olmtool.images import build_image, push

    refs, size = [], 0
    for package, name, files, labels in bundle_images(count):
        image = build_image(files, labels)
        ref = f"{address}/bench/{package}-bundle:{name.rsplit('.v', 1)[-1]}"
        push(image, ref)
        refs.append(ref)
        size += sum(len(layer) for layer in image.layers)
    return refs, size


def run_tool(argv: list[str], times: int, env: dict[str, str] | None) -> tuple[Run, str]:
    runs, last = [], ""
    for _ in range(times):
        run, out = measured(argv, env)
        runs.append(run)
        last = out if run.ok else last
    return median(runs), last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--opm", type=Path, default=None)
    parser.add_argument("--no-opm", action="store_true", help="measure olmtool only")
    args = parser.parse_args(argv)
    opm: Path | None = args.opm or (Path(os.environ["OPM"]) if os.environ.get("OPM") else None)
    opm = None if args.no_opm else (opm or (DEFAULT_OPM if DEFAULT_OPM.exists() else None))

    from olmtool.images import find_registry_binary, start_registry

    if find_registry_binary() is None:
        print(
            "image render: not measured (docker-registry is not installed: make install-registry)"
        )
        return 0
    with tempfile.TemporaryDirectory(prefix="olmtool-bench-images-") as tmp, ExitStack() as stack:
        registry = stack.enter_context(start_registry(Path(tmp) / "registry"))
        started = time.perf_counter()
        refs, size = push_images(registry.address, args.images)
        print(
            f"{len(refs)} bundle images ({size / 1e6:.1f} MB of layers) pushed to "
            f"{registry.address} in {time.perf_counter() - started:.1f} s"
        )
        ours, our_text = run_tool(
            [sys.executable, "-m", "olmtool", "catalog", "render", *refs, "-o", "json"],
            args.repeat,
            olmtool_env(),
        )
        theirs, their_text = (
            run_tool([str(opm), "render", "--use-http", *refs, "-o", "json"], args.repeat, None)
            if opm
            else (None, "")
        )
    return report(len(refs), ours, theirs, our_text, their_text, args.repeat)


def _cell(run: Run | None) -> str:
    if run is None:
        return "not measured"
    return f"{run.wall:.2f} s wall, {run.cpu:.2f} s CPU" if run.ok else f"failed: {run.note}"


def report(
    count: int, ours: Run, theirs: Run | None, our_text: str, their_text: str, times: int
) -> int:
    print(f"render {count} bundle images (median of {times}, pulls included):")
    print(f"  olmtool  {_cell(ours)}")
    print(f"  opm      {_cell(theirs)}")
    if not ours.ok:
        return 1
    if theirs is None or not theirs.ok:
        print("  olmtool/opm: - (opm not measured: no --opm, $OPM or ../shared/peers/opm)")
        return 0 if theirs is None else 1
    same = our_text == their_text
    cpu, wall = ours.cpu / theirs.cpu, ours.wall / theirs.wall
    print(
        f"  olmtool/opm: {cpu:.2f}x CPU, {wall:.2f}x wall; byte-identical output: {'yes' if same else 'NO'}"
    )
    passed = same and cpu <= TARGET_CPU_RATIO
    print(f"image render at most {TARGET_CPU_RATIO:g}x opm's CPU: {'yes' if passed else 'NO'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
