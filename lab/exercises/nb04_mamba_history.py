"""Notebook 04's exercises (mamba-hybrid models and the history: #40654, #43991, #46759), read off
``Step.history()``."""

from __future__ import annotations

from lab.blocks import cdiv
from lab.exercises.checker import Exercise, Trap, step_of, trace_of


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
    """Block-table entries the target pass walks over a whole trace, as vLLM in ``era`` launched it."""
    tr = trace_of(name)
    bs = tr.scenario.block_size
    return sum(st.num_reqs_padded * cdiv(st.history()[era]["kernel_max_seq_len"], bs) for st in tr.steps)


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "04.1",
        "`mamba-hybrid`, step 20: how many block-table entries did the target pass walk in the era after #40654?",
        lambda: (
            step_of("mamba-hybrid", 20).num_reqs_padded
            * cdiv(
                step_of("mamba-hybrid", 20).history()["after #40654"]["kernel_max_seq_len"],
                trace_of("mamba-hybrid").scenario.block_size,
            )
        ),
        hint="rows (padded included) x cdiv(that era's kernel max_seq_len, block_size); step.history() has every era.",
        nudge="step.history()['after #40654']['kernel_max_seq_len'] of that step, cdiv by "
        "trace.scenario.block_size, times step.num_reqs_padded; docs/eras.md says what each era changed.",
        traps=(
            Trap(
                lambda: (
                    step_of("mamba-hybrid", 20).num_reqs_padded
                    * cdiv(
                        step_of("mamba-hybrid", 20).history()["after #43991"]["kernel_max_seq_len"],
                        trace_of("mamba-hybrid").scenario.block_size,
                    )
                ),
                "too low: that's after #43991; #40654 fixed DefaultModelState.prepare_attn only, and this "
                "model runs MambaHybridModelState",
            ),
            Trap(
                lambda: step_of("mamba-hybrid", 20).history()["after #40654"]["kernel_max_seq_len"],
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
        hint="per step: rows (padded included) x cdiv(the era's kernel max_seq_len, block_size); sum, subtract.",
        nudge="trace.totals(all_passes=False) of `mamba-hybrid`: ['baseline']['walked'] minus "
        "['fixed']['walked'] (for this model state the baseline is still the after-#40654 walk); or "
        "sum each era's walk over trace.steps from step.history().",
        traps=(
            Trap(lambda: 0, "too low: #40654 did not touch MambaHybridModelState, #43991 did"),
            Trap(
                lambda: _era_walk("mamba-hybrid", "after #40654"),
                "too high: that's the whole walk after #40654, not the difference",
            ),
        ),
    ),
)
