"""The max_seq_len lab: how vLLM's Model Runner V2 builds attention metadata, and what PR #43991
changed. Public API (the trace contract, docs/trace.md)::

    from lab import Scenario, simulate, Trace, list_presets
    trace = run(scenario, backend="torch-reference", device="cpu")   # + kernel timings (lab/kernels)
"""

from lab.presets import list_presets
from lab.scenario import RequestSpec, Scenario
from lab.trace import Step, Trace, TraceFormatError
from lab.trace.recorder import simulate

__version__ = "0.1.0"


def run(
    scenario, backend: str = "torch-reference", device: str = "cpu", every: int = 1, progress=None, **kwargs
) -> Trace:
    """A live run: ``simulate(scenario)``, then the attention kernels of ``backend`` on ``device``
    on every ``every``-th step in both modes; returns the trace with ``trace.timings`` and
    ``step.timing`` attached. Options: ``repeats``, ``warmup``, ``head_config``, ``seed``, ``trace``
    (an existing trace instead of simulating). See lab/kernels/timed_run.py; torch is imported here."""
    from lab.kernels.timed_run import run as _run

    return _run(scenario, backend=backend, device=device, every=every, progress=progress, **kwargs)


VLLM_REFERENCE_VERSION = "0.33.0"

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
