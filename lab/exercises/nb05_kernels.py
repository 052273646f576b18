"""Notebook 05's exercises (kernels: out-of-range reads, the trusting kernel, R10), answered from a
trace and the kernel registry without running a kernel."""

from __future__ import annotations

from lab.exercises.checker import Exercise, Trap, outside, step_of, trace_of

# The scenario the kernel walkthrough times (small, so it runs in seconds on a CPU).
KERNEL_SPEC = "6p300o60a0+5_mml=8k_cg=piecewise"
KERNEL_RATIO_STEP = 40


def _trusting_wrong_steps(mode: str, with_padded: bool = False) -> int:
    # The trusting kernel is wrong exactly on the walks with out-of-range entries of real rows
    # (docs/kernels.md; notebook 05 checks it against lab.run on the steps it times).
    def bad(oor):
        return outside(oor) + (oor["padded"] if with_padded else 0) > 0

    return sum(bad(st.oor[mode]) for st in trace_of(KERNEL_SPEC).steps)


def _walk_ratio(index: int) -> float:
    oor = step_of(KERNEL_SPEC, index).oor
    return oor["baseline"]["walked"] / oor["fixed"]["walked"]


def _cuda_backends(changes_work: bool) -> list[str]:
    """The registry's CUDA backends whose work max_seq_len does (or does not) change (R10)."""
    from lab.kernels.registry import backends  # the registry imports torch: only when 05.3 is checked

    return sorted(
        {b["name"] for b in backends() if b["device"] == "cuda" and bool(b["max_seq_len_changes_work"]) == changes_work}
    )


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "05.1",
        f"`{KERNEL_SPEC}`, without running a kernel: on how many of all its steps would the trusting "
        "kernel be wrong in the *fixed* mode?",
        lambda: _trusting_wrong_steps("fixed"),
        hint="the trusting kernel is wrong exactly where a real row's walk leaves its valid blocks "
        "(step.oor: null, live, free).",
        nudge="simulate(Scenario.from_spec(KERNEL_SPEC)) and, over trace.steps, count the steps whose "
        "step.oor['fixed'] has null + live + free above zero (padded does not count); the oor view shows them.",
        traps=(
            Trap(
                lambda: 0,
                "too low: the fix bounds the walk by the batch maximum, it does not stop a "
                "short row from walking the longest row's width",
            ),
            Trap(lambda: _trusting_wrong_steps("baseline"), "too high: that's the baseline; look at the fixed walks"),
            Trap(
                lambda: _trusting_wrong_steps("fixed", with_padded=True),
                "too high: padded rows' outputs are thrown away, their entries do not count",
            ),
        ),
    ),
    Exercise(
        "05.2",
        f"Same scenario, step {KERNEL_RATIO_STEP}: how many times more K/V bytes does the baseline walk "
        "read than the fixed one? (a ratio, two decimals)",
        lambda: round(_walk_ratio(KERNEL_RATIO_STEP), 2),
        kind="float",
        rel_tol=0.005,
        hint="bytes walked are proportional to entries walked (rows x columns).",
        nudge="step.oor['baseline']['walked'] / step.oor['fixed']['walked'] at that step of "
        "simulate(Scenario.from_spec(KERNEL_SPEC)); the block_table view draws both walks.",
        traps=(
            Trap(
                lambda: (
                    step_of(KERNEL_SPEC, KERNEL_RATIO_STEP).kernel_max_seq_len["baseline"]
                    / step_of(KERNEL_SPEC, KERNEL_RATIO_STEP).kernel_max_seq_len["fixed"]
                ),
                "that's the ratio of max_seq_len in tokens: the walk goes in whole blocks",
            ),
        ),
    ),
    Exercise(
        "05.3",
        "R10: which of the registry's CUDA backends does `max_seq_len` *not* change the work of? "
        "(a list of names as `python -m lab backends` prints them)",
        lambda: _cuda_backends(changes_work=False),
        kind="names",
        decoys=lambda: _cuda_backends(changes_work=True),
        hint="python -m lab backends, or lab.kernels.registry.backends(): max_seq_len_changes_work.",
        nudge="filter lab.kernels.registry.backends(): the entries with device == 'cuda' and a false "
        "max_seq_len_changes_work, by their name (docs/kernels.md explains R10).",
    ),
)
