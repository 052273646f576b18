"""Notebook 01's exercises (the tour: R1, R2, R6): the metadata, the walk and its out-of-range entries
of one step of a preset the tour does not open, so the answers must be computed. The walk is sized by what the
chosen backend's launch is observed to be handed (checker.py ``handed`` / ``walk``: lab/deployment/walks.py), as every
view draws it."""

from __future__ import annotations

from lab.blocks import cdiv
from lab.exercises.checker import Exercise, Trap, handed, outside, step_of, trace_of, walk

# A preset the tour does not open.
TOUR = "mixed-long-short"

EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "01.1",
        "`mixed-long-short`, step 30: what `max_seq_len` does the fixed metadata carry?",
        lambda: step_of(TOUR, 30).max_seq_len["fixed"],
        hint="R2: the fixed prepare_attn takes the largest seq_lens_cpu_upper_bound of the real rows.",
        nudge="open the preset (simulate(Scenario.preset('mixed-long-short')).steps[30]) and read "
        "step.max_seq_len['fixed']; the lengths view at that step draws it as the fixed era's solid line.",
        traps=(
            Trap(
                lambda: trace_of(TOUR).scenario.max_model_len,
                "that's max_model_len: what the baseline passes, not the fixed metadata",
            ),
            Trap(
                lambda: max(step_of(TOUR, 30).num_computed_tokens),
                "too low by this step's tokens: R1 adds num_scheduled_tokens to num_computed_tokens",
            ),
            Trap(
                lambda: round(sum(step_of(TOUR, 30).seq_lens_cpu_upper_bound) / step_of(TOUR, 30).num_reqs),
                "that's an average: the metadata takes the maximum",
            ),
        ),
    ),
    Exercise(
        "01.2",
        "Same step: how many block-table columns does the *fixed* kernel walk in every row?",
        lambda: handed(TOUR, 30, "fixed").columns,
        hint="the walk covers cdiv(the max_seq_len the launch is handed, block_size) columns.",
        nudge="lab.deployment.walks.pass_walk(trace, step, 'fixed').value of that step (what the chosen backend's "
        "launch is observed to be handed) and trace.scenario.block_size, through lab.blocks.cdiv; the "
        "block_table view draws it as the fixed mode's vertical line.",
        traps=(
            Trap(
                lambda: handed(TOUR, 30, "fixed").value,
                "that's tokens: the kernel walks blocks, block_size tokens each",
            ),
            Trap(
                lambda: handed(TOUR, 30, "fixed").value // trace_of(TOUR).scenario.block_size,
                "too low: rounded down, but a partly filled block is walked too",
            ),
            Trap(
                lambda: cdiv(trace_of(TOUR).scenario.max_model_len, trace_of(TOUR).scenario.block_size),
                "that's the baseline walk (max_model_len); the question asks for the fixed one",
            ),
        ),
    ),
    Exercise(
        "01.3",
        "Same step: how many block-table entries does the *fixed* walk still read past the valid "
        "region (all rows together)?",
        lambda: outside(walk(TOUR, 30, "fixed")),
        hint="the walk's classes (the oor view's); the valid entries are in_range.",
        nudge="add up null, live and free of lab.deployment.walks.walk_counts(trace, step, 'fixed') for that step (the "
        "walk sized by what the launch is handed; leave out in_range and padded); the oor view shows the same "
        "classes.",
        traps=(
            Trap(lambda: 0, "too low: every row walks the longest row's width, and most rows are short"),
            Trap(
                lambda: walk(TOUR, 30, "fixed")["walked"],
                "too high: that counts the valid entries (in_range) too",
            ),
            Trap(lambda: outside(walk(TOUR, 30, "baseline")), "too high: that's the baseline walk"),
        ),
    ),
)
