"""Notebook 04's exercises (mamba-hybrid models and the history: #40654, #43991, #46759), read off
``Step.history()``."""

from __future__ import annotations

from lab.exercises.checker import Exercise, Trap, era_handed, step_of, trace_of


def _first_fixed_era_for_drafts() -> int:
    """The PR of the first era in which Eagle's draft passes 1..K-1 got the batch maximum + K instead of
    max_model_len (eagle-k3)."""
    st = step_of("eagle-k3", 10)
    mml = trace_of("eagle-k3").scenario.max_model_len
    for era, h in st.history().items():
        if any(d["max_seq_len"] != mml for d in h["drafts"][1:]):
            return int(era.split("#")[1])
    raise AssertionError("no era passes the batch maximum + K to the draft decodes")


def _era_walk(name: str, era: str) -> int:
    """Block-table entries the target pass walks over a whole trace, as vLLM in ``era`` launched it: each step's
    walk sized by what the chosen backend's launch is observed to be handed (checker.py ``era_handed``)."""
    return sum(st.num_reqs_padded * era_handed(name, st.index, era).columns for st in trace_of(name).steps)


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "04.1",
        "`mamba-hybrid`, step 20: how many block-table entries did the target pass walk in the era after #40654?",
        lambda: step_of("mamba-hybrid", 20).num_reqs_padded * era_handed("mamba-hybrid", 20, "after #40654").columns,
        hint="rows (padded included) x cdiv(what that era's launch is handed, block_size); step.history() and "
        "step.era_modes(era) have every era.",
        nudge="step.era_modes('after #40654')[0] is the mode that era's target metadata had; "
        "lab.deployment.walks.pass_walk(trace, step, that mode).value is what the launch is handed; cdiv by "
        "trace.scenario.block_size, times step.num_reqs_padded; the eras view draws it, docs/eras.md says what "
        "each era changed.",
        traps=(
            Trap(
                lambda: (
                    step_of("mamba-hybrid", 20).num_reqs_padded * era_handed("mamba-hybrid", 20, "after #43991").columns
                ),
                "too low: that's after #43991; #40654 fixed DefaultModelState.prepare_attn only, and this "
                "model runs MambaHybridModelState",
            ),
            Trap(
                lambda: era_handed("mamba-hybrid", 20, "after #40654").value,
                "that's the max_seq_len of one row, in tokens: the walk is rows x columns of blocks",
            ),
        ),
    ),
    Exercise(
        "04.2",
        "Which PR first gave Eagle's draft passes 1..K-1 the batch maximum + K instead of max_model_len? "
        "(the PR number)",
        _first_fixed_era_for_drafts,
        kind="pr",
        hint="read step.history() era by era on `eagle-k3`, in the drafts.",
        nudge="simulate(Scenario.preset('eagle-k3')).steps[10].history(): for each era in order, read "
        "h['drafts'][1:] and their max_seq_len; the first era whose values are not "
        "trace.scenario.max_model_len is named after the PR (docs/eras.md).",
        traps=(
            Trap(
                lambda: 40654,
                "#40654 fixed the target path of DefaultModelState only: look at "
                "history()['after #40654']['drafts'][1:]",
            ),
            Trap(
                lambda: 46759,
                "#46759 changed no max_seq_len: it forwards seq_lens_cpu_upper_bound to the mamba metadata builders",
            ),
        ),
    ),
    Exercise(
        "04.3",
        "`mamba-hybrid`, whole trace, target pass: how many fewer block-table entries are walked after "
        "#43991 than after #40654?",
        lambda: _era_walk("mamba-hybrid", "after #40654") - _era_walk("mamba-hybrid", "after #43991"),
        hint="per step: rows (padded included) x cdiv(what the era's launch is handed, block_size); sum, subtract.",
        nudge="lab.deployment.walks.class_totals(trace, all_passes=False) of `mamba-hybrid` (each walk sized by what "
        "the launch is handed): ['baseline']['walked'] minus ['fixed']['walked'] (for this model state the "
        "baseline is still the after-#40654 walk); or sum each era's walk over trace.steps.",
        traps=(
            Trap(lambda: 0, "too low: #40654 did not touch MambaHybridModelState, #43991 did"),
            Trap(
                lambda: _era_walk("mamba-hybrid", "after #40654"),
                "too high: that's the whole walk after #40654, not the difference",
            ),
        ),
    ),
)
