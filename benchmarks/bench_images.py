"""olmtool's images from Debian packages: build times of the Python base and the size of
every image (compressed, as a registry stores it, and unpacked).

* cold: an empty cache (``$OLMTOOL_CACHE`` pointed at a new directory): ``apt-get
  download`` of every locked package, unpacking, one layer, gzip;
* debs cached: the packages on disk, the image rebuilt (what a changed recipe costs);
* warm: the built layout found in the cache (what every later build pays).

Then the sizes of the four stand-in images, the etcd operator image built by ``olmtool
image build`` on the base, and the catalog image ``olmtool catalog publish --image``
builds for this repository's catalog.

    python benchmarks/bench_images.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from olmtool.images import Image  # noqa: E402
from olmtool.images.debian import RECIPES, build_recipe, python_base  # noqa: E402
from olmtool.images.debian.recipes import PYTHON_311  # noqa: E402


def timed(step: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def sizes(image: Image) -> tuple[int, int]:
    """(compressed bytes of every layer, bytes of the unpacked files)."""
    compressed = sum(len(layer) for layer in image.layers)
    unpacked = sum(len(data) for data in image.files().values())
    return compressed, unpacked


def mb(size: int) -> str:
    return f"{size / 1e6:6.1f} MB"


def build_times(repeat: int) -> None:
    real_cache = os.environ.get("OLMTOOL_CACHE")
    with tempfile.TemporaryDirectory(prefix="olmtool-bench-images-") as tmp:
        cache = Path(tmp)
        os.environ["OLMTOOL_CACHE"] = str(cache)

        def cold() -> None:
            shutil.rmtree(cache, ignore_errors=True)
            python_base()

        def debs_cached() -> None:
            shutil.rmtree(cache / "images", ignore_errors=True)
            python_base()

        cold_s = timed(cold, repeat)
        rebuilt_s = timed(debs_cached, repeat)
        warm_s = timed(python_base, max(repeat, 5))
    if real_cache is None:
        os.environ.pop("OLMTOOL_CACHE")
    else:
        os.environ["OLMTOOL_CACHE"] = real_cache
    packages = len(PYTHON_311.debs)
    print(f"Python base ({packages} Debian packages), median of {repeat}:")
    print(f"  cold (download + build)  {cold_s:6.1f} s")
    print(f"  debs cached (rebuild)    {rebuilt_s:6.1f} s")
    print(f"  warm (cached layout)     {warm_s * 1000:6.0f} ms")


def image_sizes() -> None:
    rows: list[tuple[str, Image]] = []
    for recipe in sorted(RECIPES.values(), key=lambda r: r.reference):
        rows.append((recipe.reference, build_recipe(recipe).image))
    with tempfile.TemporaryDirectory(prefix="olmtool-bench-images-") as tmp:
        rows.append(("etcd operator (image build)", _operator_image(Path(tmp))))
        rows.append(("catalog (catalog publish --image)", _catalog_image(Path(tmp))))
    print("Image sizes (compressed layers / unpacked files):")
    for name, image in rows:
        compressed, unpacked = sizes(image)
        print(f"  {name:42} {mb(compressed)} / {mb(unpacked)}  {len(image.layers)} layers")


def _operator_image(tmp: Path) -> Image:
    from olmtool.actions import image_build
    from olmtool.images import read_oci_layout

    result = image_build(config=ROOT / "olmtool.yaml", tags=["bench-images"])
    layout = result.tags[0].layout
    try:
        return read_oci_layout(layout)
    finally:
        shutil.rmtree(layout, ignore_errors=True)


def _catalog_image(tmp: Path) -> Image:
    from olmtool.actions import catalog_publish
    from olmtool.images import ImageTarget, read_oci_layout

    layout = tmp / "catalog-layout"
    catalog_publish(
        config=ROOT / "olmtool.yaml",
        output_dir=tmp / "catalog",
        image=ImageTarget("localhost:5000/olmtool/catalog:bench", layout),
    )
    return read_oci_layout(layout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    build_times(args.repeat)
    image_sizes()


if __name__ == "__main__":
    main()
