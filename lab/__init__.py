"""The max_seq_len lab: how vLLM's Model Runner V2 builds attention metadata, and what PR #43991
changed. Public API (the trace contract, docs/trace.md; the layers, docs/architecture.md)::

    >>> from lab import Scenario, simulate, Trace
    >>> trace = simulate(Scenario.from_spec("4p256o32_mml=32k"))
    >>> step = trace.steps[-1]
    >>> step.max_seq_len["baseline"], step.max_seq_len["fixed"]
    (32768, 287)
    >>> trace.save("/tmp/lab-example.json"); len(Trace.load("/tmp/lab-example.json").steps) == len(trace.steps)
    True

``run(scenario, backend="torch-reference", every=10)`` also times attention kernels in both modes.
"""

from lab.history import REFERENCE_RELEASE
from lab.presets import list_presets
from lab.scenario import RequestSpec, Scenario
from lab.trace import Step, Trace, TraceFormatError
from lab.trace.recorder import simulate

__version__ = "0.1.0"


def run(
    scenario: Scenario,
    backend: str = "torch-reference",
    device: str = "cpu",
    every: int = 1,
    *,
    steps: list[int] | None = None,
    repeats: int = 3,
    warmup: int = 1,
    head_config=None,
    seed: int = 0,
    threads: int | None = None,
    seconds: float | None = None,
    trace: Trace | None = None,
    progress=None,
) -> Trace:
    """A timed run: ``simulate(scenario)`` (or the given ``trace``), then the attention kernels of
    ``backend`` on ``device`` in both modes, baseline and fixed interleaved, on every ``every``-th
    step (or the given ``steps``): ``repeats`` timed launches after ``warmup``. ``head_config``: a
    ``lab.kernels.batch.HeadConfig`` (None: the backend's default); ``seed`` fills the KV cache;
    ``threads`` sets torch's CPU threads for the run; ``seconds`` is a time budget (the steps not
    reached are left untimed); ``progress(done, total)`` is called after each timed step. Returns the
    trace with ``trace.timings`` and ``step.timing`` attached (lab/kernels/timed_run.py)."""
    from lab.kernels.timed_run import run as timed_run  # deferred: imports torch

    return timed_run(
        scenario,
        backend=backend,
        device=device,
        every=every,
        steps=steps,
        repeats=repeats,
        warmup=warmup,
        head_config=head_config,
        seed=seed,
        threads=threads,
        seconds=seconds,
        trace=trace,
        progress=progress,
    )


VLLM_REFERENCE_VERSION = REFERENCE_RELEASE  # lab/history.py

__all__ = [
    "Scenario",
    "RequestSpec",
    "simulate",
    "run",
    "Trace",
    "Step",
    "TraceFormatError",
    "list_presets",
    "__version__",
    "VLLM_REFERENCE_VERSION",
]
