"""Benchmarks of sweeps (docs/sweeps.md): engine points per second locally, and Ray's overhead per
point against local processes on the same machine, for the same points.

    python -m lab.commands.bench.sweep [--points 500] [--workers 2] [--ray]

The Ray figure leaves out starting Ray (printed apart): it is paid once per sweep, not per point.
Both runs must give the same rows (checked).
"""

from __future__ import annotations

import argparse
import sys
import time

from lab.blocks import cdiv
from lab.sweep.executors import ray_init
from lab.sweep.orchestrate import run_sweep
from lab.sweep.point import deterministic
from lab.sweep.spec import SweepSpec

BASE = "32p512o192_mml=128k_cg=piecewise"  # the default preset (short-decode-long-context)


def sweep_of(points: int) -> SweepSpec:
    seeds = max(1, cdiv(points, 32))
    return SweepSpec.make(BASE, ["mml=4k:128k:4k"], seeds=seeds)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.commands.bench.sweep")
    p.add_argument("--points", type=int, default=500)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--ray", action="store_true", help="also run the points on a local Ray instance")
    args = p.parse_args(argv)
    spec = sweep_of(args.points)
    n = spec.num_points
    t0 = time.perf_counter()
    local = run_sweep(spec, workers=args.workers)
    t_local = time.perf_counter() - t0
    print(
        f"local: {n} points of {BASE} in {t_local:.1f} s on {args.workers} processes "
        f"({t_local / n * 1000:.1f} ms per point, target: 500 points <= 60 s)"
    )
    if not args.ray:
        return 0
    import ray  # optional (pip install -e '.[ray]')

    t0 = time.perf_counter()
    ray_init(None, num_cpus=args.workers)
    t_start = time.perf_counter() - t0
    try:
        # one warm-up task per CPU, so worker start-up is not billed to the points
        run_sweep(
            SweepSpec.make(BASE, [f"mml={','.join(str(4096 * (i + 1)) for i in range(args.workers))}"]), ray="local"
        )
        t0 = time.perf_counter()
        on_ray = run_sweep(spec, ray="local")
        t_ray = time.perf_counter() - t0
    finally:
        ray.shutdown()
    same = [deterministic(r) for r in on_ray.rows] == [deterministic(r) for r in local.rows]
    over = (t_ray - t_local) / t_local * 100
    print(
        f"ray:   {n} points in {t_ray:.1f} s on a local Ray instance with {args.workers} CPUs "
        f"({t_ray / n * 1000:.1f} ms per point; overhead {over:+.0f}% of the local run, target <= 20%); "
        f"starting Ray took {t_start:.1f} s; rows identical to the local run: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
