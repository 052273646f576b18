"""Notebook 06's exercises (real vLLM, live): the scenario a CPU run of vLLM can serve, simulated."""

from __future__ import annotations

from lab.blocks import cdiv
from lab.exercises.checker import Exercise, Trap, step_of, trace_of

# The live-style scenario of notebook 06: what a CPU run of real vLLM can serve (block size a multiple
# of 32, every step eager), small enough to record in seconds.
LIVE_SPEC = "4p96o24_bs=32_mml=2k_cg=none"

EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "06.1",
        f"`{LIVE_SPEC}` (the live scenario), step 10: how many block-table columns does the fixed "
        "kernel walk in every row?",
        lambda: cdiv(step_of(LIVE_SPEC, 10).kernel_max_seq_len["fixed"], trace_of(LIVE_SPEC).scenario.block_size),
        hint="cdiv(kernel-visible max_seq_len, block_size), with this run's block size.",
        nudge="simulate(Scenario.from_spec(LIVE_SPEC)), that step: cdiv(step.kernel_max_seq_len['fixed'], "
        "trace.scenario.block_size), the block size being the spec's bs= field; the block_table view's "
        "fixed line sits there.",
        traps=(
            Trap(
                lambda: cdiv(step_of(LIVE_SPEC, 10).kernel_max_seq_len["fixed"], 16),
                "too high: that's block size 16; vLLM's CPU_ATTN, which this dense model runs, needs a multiple of "
                "32 (see the spec)",
            ),
            Trap(
                lambda: cdiv(
                    step_of(LIVE_SPEC, 10).kernel_max_seq_len["baseline"], trace_of(LIVE_SPEC).scenario.block_size
                ),
                "too high: that's the baseline walk (max_model_len)",
            ),
        ),
    ),
    Exercise(
        "06.2",
        f"`{LIVE_SPEC}`: how many columns wide is the persistent block table (R6)?",
        lambda: trace_of(LIVE_SPEC).meta["width"],
        hint="cdiv(max_model_len, block_size), rounded to cover a multiple of 128 tokens.",
        nudge="trace.meta['width'] of simulate(Scenario.from_spec(LIVE_SPEC)), the persistent table's "
        "columns; the block_table view's column axis runs to it.",
        traps=(
            Trap(
                lambda: cdiv(trace_of(LIVE_SPEC).scenario.max_model_len, 16),
                "too high: that's block size 16; this run uses the block size in its spec",
            ),
            Trap(
                lambda: trace_of(LIVE_SPEC).scenario.max_model_len,
                "too high: that's tokens; the table holds one block id per block_size tokens",
            ),
        ),
    ),
)
