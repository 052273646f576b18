"""Notebook 03's exercises (Eagle/MTP draft windows: R4, R5; the other speculators)."""

from __future__ import annotations

from lab.exercises.checker import Exercise, Trap, step_of, trace_of

# Prompts that end a few tokens short of max_model_len, drafting K tokens.
NEAR_LIMIT_SPEC = "2p2040o4_mml=2k_k={k}_cg=piecewise"


def _smallest_k_reaching_mml() -> int:
    for k in range(1, 16):
        tr = trace_of(NEAR_LIMIT_SPEC.format(k=k))
        st = tr.steps[0]
        if len(st.drafts) > 1 and st.drafts[1].max_seq_len["fixed"] == tr.scenario.max_model_len:
            return k
    raise AssertionError("no K up to 15 reaches max_model_len")


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "03.1",
        "`eagle-k3`, step 10: what `draft_max_seq_len` do draft passes 1 and 2 get in the fixed mode?",
        lambda: step_of("eagle-k3", 10).drafts[1].max_seq_len["fixed"],
        hint="R4: min(max upper bound + K, max_model_len).",
        nudge="step.drafts[1].max_seq_len['fixed'] of that step (drafts[0] is pass 0, the target's "
        "metadata); the drafts view draws every pass's draft_max_seq_len.",
        traps=(
            Trap(
                lambda: step_of("eagle-k3", 10).max_seq_len["fixed"],
                "too low: that's pass 0, which reuses the target metadata; the decode passes add K",
            ),
            Trap(
                lambda: max(step_of("eagle-k3", 10).drafts[1].seq_lens_cpu_upper_bound),
                "too low: that's the longest window of pass 1; the bound adds K to the target maximum",
            ),
            Trap(
                lambda: max(step_of("eagle-k3", 10).drafts[2].seq_lens_cpu_upper_bound),
                "too low: that's the longest window of pass 2; the bound adds K to the target maximum",
            ),
            Trap(
                lambda: trace_of("eagle-k3").scenario.max_model_len,
                "that's max_model_len: the baseline (before #43991)",
            ),
        ),
    ),
    Exercise(
        "03.2",
        "Spec `" + NEAR_LIMIT_SPEC + "`: which is the smallest K for which the draft decode passes "
        "of step 0 get `draft_max_seq_len == max_model_len`?",
        _smallest_k_reaching_mml,
        hint="step 0's upper bound is the prompt; the draft bound is min(that + K, max_model_len).",
        # The spec's own text, not a name the notebook does not import; K from 2: K = 1 has no decode pass, so
        # steps[0].drafts[1] raised IndexError (ux review 5 minor 4).
        nudge='try K = 2, 3, … in turn: simulate(Scenario.from_spec(f"'
        + NEAR_LIMIT_SPEC.replace("{k}", "{K}")
        + '")), '
        "then compare the decode passes of steps[0] (step.drafts[1:], empty for K = 1; their "
        ".max_seq_len['fixed']) with trace.scenario.max_model_len; the drafts view shows when they reach the cap.",
        traps=(
            Trap(lambda: _smallest_k_reaching_mml() + 1, "too high: a smaller K already reaches it"),
            Trap(
                lambda: _smallest_k_reaching_mml() - 1,
                "too low: with that K, upper bound + K stays below max_model_len",
            ),
        ),
    ),
    Exercise(
        "03.3",
        "`draft-model-k3` (method=draft_model), step 10: what `max_seq_len` do its draft passes get in the "
        "fixed mode, vLLM 0.33.0 as shipped?",
        lambda: step_of("draft-model-k3", 10).drafts[1].max_seq_len["fixed"],
        hint='StandaloneARSpeculator: "doesn\'t do per-batch adjustment; cap at max" (docs/rules.md).',
        nudge="step.drafts[1].max_seq_len['fixed'] of that step, next to trace.scenario.max_model_len; "
        "lab/speculators.py's table says which speculators adjust per batch.",
        traps=(
            Trap(
                lambda: min(
                    max(step_of("draft-model-k3", 10).seq_lens_cpu_upper_bound) + 3,
                    trace_of("draft-model-k3").scenario.max_model_len,
                ),
                "that's Eagle's rule (max upper bound + K); #43991 did not change the draft-model speculator",
            ),
        ),
    ),
)
