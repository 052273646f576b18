"""Sweeps: one scenario over one or more axes and seeds, each point simulated through the public
API, results as a tidy table (CSV/JSON) with figures; local processes or Ray; resumable.

    from lab.sweep import SweepSpec, run_sweep
    spec = SweepSpec.make("32p512o192_mml=128k_cg=piecewise", ["mml=8k:128k:*2"], seeds=2)
    res = run_sweep(spec, out_dir="sweep-out")          # res.rows: one dict per point and seed
    python -m lab sweep --preset short-decode-long-context --axis mml=8k:128k:*2 --seeds 2 --out sweep-out

docs/sweeps.md has the grammar of axes, the columns and the Ray set-up.
"""

from lab.sweep.orchestrate import SweepResult, run_sweep, text_progress
from lab.sweep.point import deterministic, evaluate, trace_row
from lab.sweep.spec import Axis, Point, SweepSpec, parse_values

__all__ = [
    "SweepSpec",
    "Axis",
    "Point",
    "parse_values",
    "run_sweep",
    "SweepResult",
    "evaluate",
    "trace_row",
    "deterministic",
    "text_progress",
]
