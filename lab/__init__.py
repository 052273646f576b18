"""The max_seq_len lab: how vLLM's Model Runner V2 builds attention metadata, and what PR #43991
changed. Public API (the trace contract, DESIGN §5)::

    from lab import Scenario, simulate, Trace, list_presets
"""

from lab.presets import list_presets
from lab.scenario import RequestSpec, Scenario
from lab.trace import Step, Trace, TraceFormatError, simulate

__version__ = "0.1.0"
VLLM_REFERENCE_VERSION = "0.33.0"

__all__ = ["Scenario", "RequestSpec", "simulate", "Trace", "Step", "TraceFormatError", "list_presets",
           "__version__", "VLLM_REFERENCE_VERSION"]
