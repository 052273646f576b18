"""The workload an answer replays (``Workload``) and the bounds of its sizes, one place for the CLI and the
app's deployment tab (``WORKLOAD_SIZES``, ``size_problem``)."""

from __future__ import annotations

from dataclasses import dataclass

from lab.scenario import RequestSpec, Scenario

MAX_WORKLOAD_REQUESTS = 1024
# Each size of a workload and its upper bound (None: none; a prompt past max_model_len is cut to it), all whole
# numbers from 1: the CLI (Workload) and the app's deployment tab (an inline message per box) check them here.
WORKLOAD_SIZES = {"requests": MAX_WORKLOAD_REQUESTS, "prompt_len": None, "output_len": None}


def size_problem(name: str, value, label: str | None = None) -> str | None:
    """What is wrong with ``value`` as the workload's size ``name`` (WORKLOAD_SIZES), in words that start with
    ``label`` (the box or flag it came from); None when it is a whole number within the bounds."""
    top = WORKLOAD_SIZES[name]
    want = f"a whole number from 1 to {top:,}" if top else "a whole number, 1 or more"
    if value is None or value == "":
        return f"{label or name}: empty; give {want}"
    # a float from the app's number box (2.5, -4.0, 1e+30) or an int (the CLI's, any size: no float() of it)
    whole = isinstance(value, float) and value.is_integer() or isinstance(value, int) and not isinstance(value, bool)
    if not whole or not 1 <= value <= (top or value):
        shown = f"{value:g}" if isinstance(value, float) else repr(value)
        return f"{label or name}: {shown} is not {want}"
    return None


@dataclass(frozen=True)
class Workload:
    """A typical batch: ``requests`` requests of ``prompt_len`` prompt tokens generating ``output_len``,
    arriving together; or ``spec``, the requests of a lab spec (lab/spec_grammar.py)."""

    requests: int = 16
    prompt_len: int = 2048
    output_len: int = 256
    spec: str | None = None

    def request_specs(self) -> tuple[RequestSpec, ...]:
        if self.spec:
            return Scenario.from_spec(self.spec).requests
        problems = [p for name in WORKLOAD_SIZES if (p := size_problem(name, getattr(self, name)))]
        if problems:
            raise ValueError("workload: " + "; ".join(problems))
        return (RequestSpec(0, self.prompt_len, self.output_len),) * self.requests
