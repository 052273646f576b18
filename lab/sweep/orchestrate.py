"""Run a sweep: expand it, reuse the points already in its folder, run the rest (locally or on
Ray), keep each finished point on disk, and return the tidy table (one row per point and seed)."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field

from lab.gpu_model import GPUS
from lab.sweep.executors import default_workers, run_local, run_ray
from lab.sweep.spec import SweepSpec, point_key
from lab.sweep.store import ResultStore
from lab.sweep.table import write_tables

# Seconds per engine-only point, measured for the default preset on the 2-core development VM
# (about 0.08 s single-threaded, docs/sweeps.md); used to say when a sweep needs minutes.
SECONDS_PER_POINT = 0.1


@dataclass
class SweepResult:
    spec: SweepSpec
    rows: list[dict]
    computed: int = 0
    reused: int = 0
    interrupted: bool = False
    seconds: float = 0.0
    executor: str = "local"
    files: dict = field(default_factory=dict)


def text_progress(out=None, width: int = 30):
    """A one-line progress bar on stderr: done/total, points per second, time left."""
    out = out or sys.stderr
    t0 = time.perf_counter()

    def report(done: int, total: int) -> None:
        dt = time.perf_counter() - t0
        rate = done / dt if dt > 0 else 0.0
        left = (total - done) / rate if rate > 0 else float("nan")
        n = width * done // max(total, 1)
        eta = f"{left:5.0f} s left" if left == left else "      "
        out.write(f"\rsweep [{'#' * n}{'.' * (width - n)}] {done}/{total} points  {rate:6.1f}/s  {eta}")
        if done == total:
            out.write("\n")
        out.flush()

    return report


def kernel_key(kernels: dict | None, gpus=()) -> dict:
    out = {"kernels": dict(sorted(kernels.items()))} if kernels else {}
    if gpus:
        out["gpus"] = list(gpus)
    return out


def row_of(point, row: dict) -> dict:
    """The tidy row: point index, seed, the axis values, then the point's columns."""
    return {"point": point.index, "seed": point.seed, **point.values, **row}


def run_sweep(
    spec: SweepSpec,
    out_dir: str | None = None,
    workers: int | None = None,
    ray: str | None = None,
    kernels: dict | None = None,
    progress=None,
    stop_after: int | None = None,
    ray_num_cpus: int | None = None,
    gpus=(),
    deadline_s: float | None = None,
    metric: str | None = None,
) -> SweepResult:
    """Run ``spec``. ``out_dir`` keeps results.jsonl (resume) and gets the CSV/JSON tables;
    ``ray``: None for local processes, "local" for a Ray instance started here, else a Ray
    address; ``stop_after`` stops after that many new points (as an interruption would);
    ``gpus`` adds lab.gpu_model's predictions for those GPUs ("H200", "B200", ...) to each row;
    ``deadline_s`` stops (as an interruption) once that many seconds have passed; ``metric`` is the
    column figure.html plots."""
    gpus = tuple(g.upper() for g in gpus)
    bad = [g for g in gpus if g not in GPUS]
    if bad:
        raise ValueError(f"unknown GPU {bad[0]!r}; known: {', '.join(GPUS)}")
    points = spec.points()
    extra = kernel_key(kernels, gpus)
    keys = [point_key(p.spec, extra) for p in points]
    store = ResultStore(os.path.join(out_dir, "results.jsonl") if out_dir else None)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "sweep.json"), "w", encoding="utf-8") as f:
            json.dump(
                {**spec.to_dict(), "kernels": kernels, "gpus": list(gpus), "command": spec.command()}, f, indent=1
            )
    todo = [(p, k) for p, k in zip(points, keys) if k not in store.done]
    reused = len(points) - len(todo)
    by_spec = {}
    for p, k in todo:
        by_spec.setdefault(p.spec, []).append((p, k))  # the same spec twice runs once
    unique = [v[0][0] for v in by_spec.values()]
    t0 = time.perf_counter()
    done = reused
    if progress:
        progress(done, len(points))
    computed = 0
    interrupted = False
    if ray is not None:
        runner = run_ray(unique, None if ray == "local" else ray, kernels, num_cpus=ray_num_cpus, gpus=gpus)
        executor = f"ray ({ray})"
    else:
        w = workers or (1 if kernels else default_workers())
        runner = run_local(unique, w, kernels, gpus)
        executor = f"local ({w} process{'es' if w > 1 else ''})"
    try:
        for p, row in runner:
            for q, k in by_spec[p.spec]:
                store.add(k, q, row)
                done += 1
            computed += 1
            if progress:
                progress(done, len(points))
            if done < len(points) and (
                stop_after is not None
                and computed >= stop_after
                or deadline_s is not None
                and time.perf_counter() - t0 > deadline_s
            ):
                interrupted = True
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        close = getattr(runner, "close", None)
        if close:
            close()
        store.close()
    rows = [row_of(p, store.done[k]["row"]) for p, k in zip(points, keys) if k in store.done]
    res = SweepResult(spec, rows, computed, reused, interrupted, time.perf_counter() - t0, executor)
    if out_dir and not interrupted:
        res.files = write_tables(res, out_dir)
        html = write_figure(res, out_dir, metric)
        if html:
            res.files["html"] = html
    return res


def write_figure(result: SweepResult, out_dir: str, metric: str | None = None) -> str | None:
    """figure.html of the sweep (plotly, in the app extra), or None without plotly or axes."""
    rows = result.rows
    if metric is not None and rows and not isinstance(rows[0].get(metric), (int, float)):
        numeric = [c for c in rows[0] if isinstance(rows[0].get(c), (int, float)) and c not in ("point", "seed")]
        raise ValueError(f"--metric {metric!r} is not a numeric column; try one of: {', '.join(numeric)}")
    try:
        from lab.sweep.figures import sweep_figure
    except ImportError:  # pragma: no cover - plotly is in the app extra
        return None
    fig = sweep_figure(result, metric)
    if fig is None:
        return None
    html = os.path.join(out_dir, "figure.html")
    fig.write_html(html, include_plotlyjs="cdn")
    return html
