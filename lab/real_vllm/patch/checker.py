"""Notebook 08's checker: the attendee's ``draft_model`` fix (lines for ``StandaloneARSpeculator.propose``,
lab/exercises/nb08_fix_draft_model.py) applied to vLLM 0.33.0 in an overlay and run on the exercise's
scenario in ``.venv-vllm`` (lab/real_vllm/patch/runner.py: never in the notebook's own process), judged
like ``python -m lab patch`` (judge.py). A wrong fix gets its findings, the correctness bugs first; from
the second wrong try on, the hint of its first named mistake.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from lab.exercises import nb08_fix_draft_model as ex
from lab.real_vllm.patch import runner
from lab.real_vllm.patch.diff import PatchError, apply_patch
from lab.real_vllm.patch.judge import judge
from lab.real_vllm.patch.patched_trace import draft_walked, patched_trace
from lab.scenario import parse_spec
from lab.trace.recorder import simulate

_tries = {"wrong": 0}


@dataclass
class FixReport:
    right: bool
    lines: list[str] = field(default_factory=list)
    trace: object = None  # the patched Trace (a fix that ran)
    kinds: set = field(default_factory=set)  # the verdict's finding kinds

    def __str__(self) -> str:
        return "\n".join(self.lines)

    __repr__ = __str__  # a notebook without Markdown output shows the words, not the dataclass

    def _repr_markdown_(self) -> str:
        return "\n\n".join(
            f'<span style="color:#b00020"><b>{x}</b></span>' if x.startswith("CORRECTNESS BUG") else x
            for x in self.lines
        )


@functools.cache
def _wheel():
    vllm_dir = runner.vllm_dir()
    return vllm_dir, (vllm_dir / ex.TARGET[len("vllm/") :]).read_text()


@functools.cache
def _unpatched(spec: str) -> dict:
    return runner.run_harness(spec, None)


def reset_tries() -> None:
    _tries["wrong"] = 0


def _wrong(report: FixReport, first_finding: str | None) -> FixReport:
    _tries["wrong"] += 1
    hint = ex.hint_for(first_finding) if first_finding else None
    if _tries["wrong"] >= 2 and hint:
        report.lines.append(f"Hint: {hint}")
    return report


def check_fix(lines: str | None, spec: str = ex.SPEC) -> FixReport:
    """Run the attendee's fix (module docstring) and say what the lab finds."""
    if not lines or not lines.strip():
        return FixReport(False, ["Write your fix first: the lines that go into StandaloneARSpeculator.propose."])
    try:
        vllm_dir, original = _wheel()
        applied = apply_patch(ex.fix_diff(original, lines), vllm_dir)
    except (PatchError, ValueError) as e:
        return FixReport(False, [f"Not run: {e}"])
    scenario = parse_spec(spec)
    try:
        with ThreadPoolExecutor(2) as pool:
            base_f = pool.submit(_unpatched, spec)
            patched = runner.run_harness(spec, applied)
            base = base_f.result()
    except runner.PatchRunError as e:
        applied.remove()
        return _wrong(FixReport(False, ["Your fix raised inside vLLM (vLLM's traceback):", str(e)]), None)
    applied.remove()
    verdict = judge(base, patched, scenario)
    findings = [f for f in verdict.sorted() if f.kind in ("bug", "capture", "collateral", "mistake")]
    trace = patched_trace(scenario, patched, {"label": applied.label, "patch_id": applied.patch_id})
    if findings:
        report = FixReport(False, [f.text for f in findings], trace, verdict.kinds)
        return _wrong(report, findings[0].text)
    reset_tries()
    before, after = int(draft_walked(simulate(scenario)).sum()), int(draft_walked(trace).sum())
    ran = [f.text for f in verdict.sorted() if f.kind == "ran"]
    return FixReport(
        True,
        [
            f"Right: every draft pass is told between what its requests need and min(max upper bound + K, "
            f"max_model_len); no collateral change; capture untouched ({applied.label}).",
            *ran,
            f"Block-table entries the draft passes walk over the run: {before:,} unpatched -> {after:,} patched.",
        ],
        trace,
        verdict.kinds,
    )
