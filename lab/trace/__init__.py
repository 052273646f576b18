"""The trace: what the runner did at every step, in both modes, and its JSON file.

- lab/trace/schema.py: every array, its dtype, shape and meaning;
- lab/trace/step.py: ``Step`` and ``DraftPass``, the views a learner reads;
- lab/trace/trace.py: ``Trace``, the block tables rebuilt from the trace, totals, kernel timings;
- lab/trace/io.py: the versioned JSON file, checked on load (``TraceFormatError``).

- lab/trace/recorder.py: ``Recorder``, the step observer that builds a trace, and ``simulate``;
- lab/trace/era_recordings.py: the committed recordings of every era (data/eras).

Data flows one way: the engine hands ``StepRecord``s to its observers and never imports the trace.
"""

from lab.trace.io import TraceFormatError, scenario_from_dict, scenario_to_dict
from lab.trace.step import DraftPass, Step, StepList
from lab.trace.trace import Trace

__all__ = ["Trace", "Step", "DraftPass", "StepList", "TraceFormatError", "scenario_to_dict", "scenario_from_dict"]
