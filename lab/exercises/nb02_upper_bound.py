"""Notebook 02's exercises (the upper bound against exact lengths, and what the kernel gets: R1, R8,
R9)."""

from __future__ import annotations

from lab.exercises.checker import Exercise, Trap, handed, outside, step_of, trace_of, walk

# Arrivals every 3 steps under capture sizes up to 8: FULL replays and eager steps mixed.
GRAPHS_SPEC = "10p300o40a0+3_capture=1/2/4/8"

EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "02.1",
        "`eagle-k3`, step 10: by how many tokens does the fixed `max_seq_len` exceed the longest "
        "exact length in the batch (`max(seq_lens)`)?",
        lambda: (
            step_of("eagle-k3", 10).max_seq_len["fixed"]
            - max(step_of("eagle-k3", 10).seq_lens[: step_of("eagle-k3", 10).num_reqs])
        ),
        hint="compare the two maxima, not row by row.",
        nudge="on that step of simulate(Scenario.preset('eagle-k3')): step.max_seq_len['fixed'] minus "
        "max(step.seq_lens[: step.num_reqs]); the lengths view draws the solid line over the exact-length bars.",
        traps=(
            Trap(
                lambda: max(
                    u - s
                    for u, s in zip(step_of("eagle-k3", 10).seq_lens_cpu_upper_bound, step_of("eagle-k3", 10).seq_lens)
                ),
                "too high: that's the largest gap of a single row; the question compares the batch maxima",
            ),
            Trap(
                lambda: trace_of("eagle-k3").scenario.num_speculative_tokens,
                "too high: K is the most a row's bound can be ahead (all drafts rejected); look at this step's maxima",
            ),
        ),
    ),
    Exercise(
        "02.2",
        f"Spec `{GRAPHS_SPEC}` (requests arriving every 3 steps, capture sizes up to 8): on how "
        "many steps does the fix reach the kernel (the kernel-visible `max_seq_len` differs between "
        "the modes)?",
        lambda: sum(
            handed(GRAPHS_SPEC, s.index, "baseline").value != handed(GRAPHS_SPEC, s.index, "fixed").value
            for s in trace_of(GRAPHS_SPEC).steps
        ),
        hint="R9: compare what the launch is handed, not step.max_seq_len.",
        nudge="simulate(Scenario.from_spec(GRAPHS_SPEC)) and count the steps s of trace.steps whose "
        "lab.deployment.walks.pass_walk(trace, s, mode).value (what the chosen backend's launch is observed to be "
        "handed) differs between 'baseline' and 'fixed'; the timeline view's dashed kernel line and its FULL "
        "bands show where they part.",
        traps=(
            Trap(
                lambda: sum(s.max_seq_len["baseline"] != s.max_seq_len["fixed"] for s in trace_of(GRAPHS_SPEC).steps),
                "too high: that counts the metadata; a FULL replay keeps the captured max_model_len (R9)",
            ),
            Trap(
                lambda: sum(s.cudagraph_mode == "FULL" for s in trace_of(GRAPHS_SPEC).steps),
                "that counts the FULL replays: those are the steps where the fix does NOT reach the kernel",
            ),
            Trap(lambda: len(trace_of(GRAPHS_SPEC).steps), "too high: that's every step"),
        ),
    ),
    Exercise(
        "02.3",
        "`full-graph-vs-eager`, step 60 (a FULL replay): how many entries does the baseline walk "
        "read past the valid region of the real requests?",
        lambda: outside(walk("full-graph-vs-eager", 60, "baseline")),
        hint="the classes of the walk: null, live, free belong to real rows; padded to padded rows.",
        nudge="lab.deployment.walks.walk_counts(trace, step, 'baseline') of that step (the walk sized by what the "
        "launch is handed): null + live + free; in_range and padded stay out (padded rows are FULL-graph "
        "padding). The oor view splits a step's walk the same way.",
        traps=(
            Trap(
                lambda: (
                    walk("full-graph-vs-eager", 60, "baseline")["walked"]
                    - walk("full-graph-vs-eager", 60, "baseline")["in_range"]
                ),
                "too high: that counts the padded rows too",
            ),
            Trap(
                lambda: walk("full-graph-vs-eager", 60, "baseline")["walked"],
                "too high: that's every entry walked, valid ones and padded rows included",
            ),
        ),
    ),
)
