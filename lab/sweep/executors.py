"""How the points of a sweep run: in this process, in local worker processes (the default, one per
core), or as Ray tasks on a Ray cluster (``pip install -e .[ray]``; Ray is imported only here and
only when asked for). Every executor calls the same ``lab.sweep.point.evaluate`` on the same spec
text, so the engine columns of a point are the same whichever runs it.

Each executor is a generator of ``(point, row)`` in the order points finish.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

import lab
from lab.machine import usable_cores
from lab.sweep.point import evaluate


def default_workers() -> int:
    return usable_cores()


def run_inline(points, kernels=None, gpus=()) -> Iterator:
    for p in points:
        yield p, evaluate(p.spec, kernels, gpus)


def _context():
    # forkserver: workers fork from a clean server that imported the lab once (no threads of the
    # caller, e.g. a Gradio server, are forked); spawn where forkserver does not exist.
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["lab.sweep.point"])
        return ctx
    return mp.get_context("spawn")  # pragma: no cover


def run_local(points, workers: int | None = None, kernels=None, gpus=()) -> Iterator:
    """Worker processes, at most ``2 * workers`` points in flight; in this process for one worker."""
    points = list(points)
    workers = workers or default_workers()
    if workers <= 1 or len(points) <= 1:
        yield from run_inline(points, kernels, gpus)
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(points)), mp_context=_context())
    try:
        todo = iter(points)
        running = {}
        for p in todo:
            running[pool.submit(evaluate, p.spec, kernels, gpus)] = p
            if len(running) >= 2 * workers:
                break
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                p = running.pop(fut)
                yield p, fut.result()
                nxt = next(todo, None)
                if nxt is not None:
                    running[pool.submit(evaluate, nxt.spec, kernels, gpus)] = nxt
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def ray_available() -> tuple[bool, str]:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False, "Ray is not installed: pip install -e '.[ray]'"
    return True, ""


def _lab_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(lab.__file__)))


def ray_init(address: str | None = None, num_cpus: int | None = None):
    """Connect to the Ray cluster at ``address`` (``auto`` finds a running one), or start a local
    one (``address`` None or ``local``). Returns True when this call started Ray (the caller shuts
    it down). A local instance gets this checkout on PYTHONPATH; a cluster gets the ``lab``
    package shipped with the job (``py_modules``), numpy must be on its nodes."""
    import ray

    if ray.is_initialized():
        return False
    if address in (None, "", "local"):
        pp = os.pathsep.join(x for x in (_lab_root(), os.environ.get("PYTHONPATH", "")) if x)
        for attempt in range(2):
            # Ray gives its raylet 30 s to register; on a loaded machine that can run out once.
            try:
                ray.init(
                    num_cpus=num_cpus or default_workers(),
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                    runtime_env={"env_vars": {"PYTHONPATH": pp}},
                )
                break
            except Exception:
                ray.shutdown()
                if attempt:
                    raise
    else:
        ray.init(
            address=address,
            log_to_driver=False,
            configure_logging=False,
            runtime_env={"py_modules": [os.path.dirname(os.path.abspath(lab.__file__))]},
        )
    return True


def run_ray(
    points, address: str | None = None, kernels=None, num_cpus: int | None = None, max_in_flight: int = 1000, gpus=()
) -> Iterator:
    """Each point as one Ray task; results as they finish."""
    ok, why = ray_available()
    if not ok:
        raise ValueError(why)
    import sys
    import time

    import ray

    t0 = time.perf_counter()
    started = ray_init(address, num_cpus)
    if started:
        where = "started a local instance" if address in (None, "", "local") else f"connected to {address}"
        sys.stderr.write(f"ray: {where} in {time.perf_counter() - t0:.1f} s\n")
    try:
        task = ray.remote(num_cpus=1)(evaluate)
        todo = iter(points)
        running = {}
        for p in todo:
            running[task.remote(p.spec, kernels, gpus)] = p
            if len(running) >= max_in_flight:
                break
        while running:
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                p = running.pop(ref)
                yield p, ray.get(ref)
                nxt = next(todo, None)
                if nxt is not None:
                    running[task.remote(nxt.spec, kernels, gpus)] = nxt
    finally:
        if started:
            ray.shutdown()
