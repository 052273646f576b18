"""Notebook 08's exercise, "Fix what #43991 missed": the attendee writes the ``draft_model`` fix in vLLM
0.33.0's own ``StandaloneARSpeculator.propose``; lab/real_vllm/patch/checker.py runs it (the patch machinery
of ``python -m lab patch``) and names the common mistakes. This module holds the exercise itself, pure: the
scenario, where the attendee's lines go, the worked answer, the typical wrong answers and the hint each
mistake gets from the second wrong try on.

The worked answer mirrors ``TargetDependentARSpeculator.propose`` (vllm spec_decode/target_dependent_ar/
speculator.py, #43991): ``draft_max_seq_len = min(max(seq_lens_cpu_upper_bound[:num_reqs]) + K,
max_model_len)``, set per batch before the draft prefill. For the standalone draft model the + K covers the
correction token of the prefill (step 0 reads one past the upper bound) and the K - 1 decode steps
(``step=step + 1``): its last pass reads K tokens past the batch's upper bound.
"""

from __future__ import annotations

import difflib
import textwrap

from lab.exercises.checker import Exercise, Trap, step_of, trace_of

# A short request alone for 5 steps, then one that runs to within K of max_model_len (the clamp); block size 4 so the
# walked entries show the fix; async scheduling, so exact lengths trail the upper bounds after rejections.
# Ten steps: each check is two short vLLM runs.
SPEC = "p8o16_p52o10a5_mml=64_bs=4_k=3_method=draft-model"
TARGET = "vllm/v1/worker/gpu/spec_decode/standalone_ar/speculator.py"
# The attendee's lines go right after this line of StandaloneARSpeculator.propose (num_reqs is known there).
ANCHOR = "        skip_attn = dummy_run and skip_attn_for_dummy_run\n"
INDENT = " " * 8

WORKED_FIX = """\
max_seq_len = input_batch.seq_lens_cpu_upper_bound[:num_reqs].max().item()
self.draft_max_seq_len = min(max_seq_len + self.num_speculative_steps, self.max_model_len)
"""

# Typical wrong answers, each with the finding kind the checker must name (tests/conformance/test_patch_vllm.py).
WRONG_FIXES = {
    "step forgotten": (
        "self.draft_max_seq_len = min(input_batch.seq_lens_cpu_upper_bound[:num_reqs].max().item(), "
        "self.max_model_len)\n"
    ),
    "no clamp": "self.draft_max_seq_len = input_batch.seq_lens_cpu_upper_bound[:num_reqs].max().item() + "
    "self.num_speculative_steps\n",
    "correction slot ignored": (
        "self.draft_max_seq_len = min(input_batch.seq_lens_cpu_upper_bound[:num_reqs].max().item()"
        " + self.num_speculative_steps - 1, self.max_model_len)\n"
    ),
    "own lengths": (
        "self.draft_max_seq_len = min(int(input_batch.seq_lens[:num_reqs].max()) + self.num_speculative_steps, "
        "self.max_model_len)\n"
    ),
}

# The hint a mistake gets from the second wrong try on (the first words of the checker's finding -> hint).
HINTS = {
    "CORRECTNESS BUG": "Count what the last draft pass reads: the draft prefill writes one correction token past "
    "the upper bound (step 0), then each decode pass one more (step=step + 1). Which pass reads farthest?",
    "the + step forgotten": "The drafts are written after the target's tokens: the draft's last position is the "
    "upper bound plus how many tokens?",
    "the standalone draft model's extra correction slot ignored": "EAGLE's last pass runs at step K - 1; the "
    "standalone draft model's at step K (its prefill adds a correction token). Read _multi_step_decode's step=.",
    "no clamp to max_model_len": "A request never grows past max_model_len: R4 is min(…, max_model_len), as in "
    "TargetDependentARSpeculator.propose.",
    "the draft's own lengths used": "input_batch.seq_lens lives on the GPU; the CPU knows "
    "seq_lens_cpu_upper_bound without a sync (R1).",
    "below the rule": "Each pass must be told at least min(max upper bound + step, max_model_len): the upper "
    "bound, not this run's lengths, is what the CPU can promise.",
    "not fixed": "Set self.draft_max_seq_len in propose, per batch, before the draft prefill builds its metadata.",
    "capture changed": "Leave capture alone: a FULL graph replays the value it was captured with (R3).",
    "collateral change": "Change only what the draft passes are told: the steps, the lengths and the batch stay "
    "as vLLM 0.33.0 has them.",
    "the patch's added lines never ran": "Put your lines in StandaloneARSpeculator.propose, where every step passes.",
}


def fix_diff(original: str, lines: str) -> str:
    """The unified diff that puts ``lines`` (the attendee's, any indentation) into ``propose`` after
    ``ANCHOR`` in vLLM 0.33.0's ``TARGET`` (``original``: the wheel's text)."""
    if original.count(ANCHOR) != 1:
        raise ValueError(f"{TARGET}: the line {ANCHOR.strip()!r} is not there once: is this vLLM 0.33.0?")
    body = textwrap.indent(textwrap.dedent(lines).strip("\n") + "\n", INDENT)
    patched = original.replace(ANCHOR, ANCHOR + body)
    diff = difflib.unified_diff(
        original.splitlines(keepends=True), patched.splitlines(keepends=True), f"a/{TARGET}", f"b/{TARGET}"
    )
    return f"diff --git a/{TARGET} b/{TARGET}\n" + "".join(diff)


def hint_for(finding_text: str) -> str | None:
    """The hint of the mistake a finding names (None: no hint for it)."""
    return next((hint for start, hint in HINTS.items() if finding_text.startswith(start)), None)


def _max_ub(index: int) -> int:
    st = step_of(SPEC, index)
    return max(st.seq_lens_cpu_upper_bound[: st.num_reqs])


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "08.1",
        f"Spec `{SPEC}`, step 1: with the fix, what `max_seq_len` is the standalone draft model's last draft pass "
        "(pass 2) told?",
        lambda: min(_max_ub(1) + trace_of(SPEC).scenario.num_speculative_tokens, trace_of(SPEC).scenario.max_model_len),
        hint="R4 as TargetDependentARSpeculator.propose has it since #43991: the batch's max upper bound plus K, "
        "clamped to max_model_len.",
        nudge="max(step.seq_lens_cpu_upper_bound) of step 1, then R4; the draft passes view draws each pass's window.",
        traps=(
            Trap(lambda: _max_ub(1), "too low: the + K is forgotten; the drafts go past the upper bound"),
            Trap(lambda: _max_ub(1) + 2, "one short: the correction token of the draft prefill is a step too"),
            Trap(lambda: trace_of(SPEC).scenario.max_model_len, "that's what vLLM 0.33.0 tells it unpatched"),
        ),
    ),
)
