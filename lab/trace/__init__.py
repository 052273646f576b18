"""The trace: what the runner did at every step, in both modes, and its JSON file.

- lab/trace/schema.py: every array, its dtype, shape and meaning;
- lab/trace/views.py: ``Step`` and ``DraftPass``, the views a learner reads;
- lab/trace/trace.py: ``Trace``, the block tables rebuilt from the trace, totals, kernel timings;
- lab/trace/io.py: the versioned JSON file, checked on load (``TraceFormatError``).

``simulate`` (the engine run that makes a trace) lives in lab/engine/runner.py: the trace knows
nothing of the runner.
"""

from lab.trace.io import TraceFormatError, scenario_from_dict, scenario_to_dict
from lab.trace.trace import Trace
from lab.trace.views import DraftPass, Step, StepList

__all__ = ["Trace", "Step", "DraftPass", "StepList", "TraceFormatError", "scenario_to_dict", "scenario_from_dict"]
