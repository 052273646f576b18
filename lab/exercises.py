"""Exercises of the walkthrough notebooks, their checker, and the instructor answers.

A learner answers a question at the end of a notebook and checks it::

    from lab.exercises import ask, check
    ask("02.3")                 # the question, with the scenario to open
    check("02.3", 12345)        # right, or why not (never the answer)

Every instructor answer is *computed* from the lab (a trace, a trace's history, the kernel registry),
never typed in: ``solution(qid)`` is the one place the answers live, and the tests use it
(tests/test_exercises.py checks that each right answer is accepted and that the typical wrong ones
get their message). Instructors can print them all with ``python -m lab.exercises``.

A wrong answer gets, in this order: the message of a known mistake it matches (a *trap*: "too high:
that counts the padded rows too"), else "too high" / "too low" and the question's hint.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab import Scenario, simulate
from lab.blocks import cdiv

# --- traces the questions are about (cached: a notebook and the tests ask for them repeatedly) -----------

# Notebook 01's exercises: a preset the tour does not open, so the answers must be computed.
TOUR = "mixed-long-short"
# Notebook 02: arrivals every 3 steps under capture sizes up to 8: FULL replays and eager steps mixed.
GRAPHS_SPEC = "10p300o40a0+3_capture=1/2/4/8"
# The live-style scenario of notebook 06: what a CPU run of real vLLM can serve (block size a multiple
# of 32, every step eager), small enough to record in seconds.
LIVE_SPEC = "4p96o24_bs=32_mml=2k_cg=none"
# Notebook 03: prompts that end a few tokens short of max_model_len, drafting K tokens.
NEAR_LIMIT_SPEC = "2p2040o4_mml=2k_k={k}_cg=piecewise"
# Notebook 05: the scenario the kernel walkthrough times (small, so it runs in seconds on a CPU).
KERNEL_SPEC = "6p300o60a0+5_mml=8k_cg=piecewise"
KERNEL_RATIO_STEP = 40


@functools.cache
def _trace(name: str):
    """A preset by name, or a scenario spec."""
    from lab import list_presets

    scenario = Scenario.preset(name) if name in list_presets() else Scenario.from_spec(name)
    return simulate(scenario)


def _step(name: str, index: int):
    return _trace(name).steps[index]


def _outside(oor_mode: dict) -> int:
    """Entries walked past the valid region of the real rows: null + live + free (not padded rows)."""
    return oor_mode["null"] + oor_mode["live"] + oor_mode["free"]


# --- the questions ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trap:
    """A wrong answer learners typically give, computed like the solution, and what to tell them."""

    value: Callable[[], Any]
    message: str


@dataclass(frozen=True)
class Exercise:
    id: str
    question: str
    solve: Callable[[], Any]
    kind: str = "int"  # "int" | "float" | "names" | "pr"
    hint: str = ""  # said with "too high"/"too low" when no trap matches
    traps: tuple[Trap, ...] = field(default=())
    rel_tol: float = 0.0  # for "float"


def _first_fixed_era_for_drafts() -> int:
    """The PR of the first era in which Eagle's draft passes 1..K-1 got the batch maximum (eagle-k3)."""
    st = _step("eagle-k3", 10)
    mml = _trace("eagle-k3").scenario.max_model_len
    for era, h in st.history().items():
        if any(d["max_seq_len"] != mml for d in h["drafts"][1:]):
            return int(era.split("#")[1])
    raise AssertionError("no era passes the batch maximum to the draft decodes")


def _smallest_k_reaching_mml() -> int:
    for k in range(1, 16):
        tr = _trace(NEAR_LIMIT_SPEC.format(k=k))
        st = tr.steps[0]
        if len(st.drafts) > 1 and st.drafts[1].max_seq_len["fixed"] == tr.scenario.max_model_len:
            return k
    raise AssertionError("no K up to 15 reaches max_model_len")


def _era_walk(name: str, era: str) -> int:
    """Block-table entries the target pass walks over a whole trace, as vLLM in ``era`` launched it."""
    tr = _trace(name)
    bs = tr.scenario.block_size
    return sum(st.num_reqs_padded * cdiv(st.history()[era]["kernel_max_seq_len"], bs) for st in tr.steps)


def _trusting_wrong_steps(mode: str, with_padded: bool = False) -> int:
    # The trusting kernel is wrong exactly on the walks with out-of-range entries of real rows
    # (docs/kernels.md; notebook 05 checks it against lab.run on the steps it times).
    def bad(oor):
        return _outside(oor) + (oor["padded"] if with_padded else 0) > 0

    return sum(bad(st.oor[mode]) for st in _trace(KERNEL_SPEC).steps)


def _walk_ratio(index: int) -> float:
    oor = _step(KERNEL_SPEC, index).oor
    return oor["baseline"]["walked"] / oor["fixed"]["walked"]


def _backends_unmoved() -> list[str]:
    from lab.kernels.registry import backends

    return sorted({b["name"] for b in backends() if b["device"] == "cuda" and not b["max_seq_len_changes_work"]})


def _backends_moved_cuda() -> list[str]:
    from lab.kernels.registry import backends

    return sorted({b["name"] for b in backends() if b["device"] == "cuda" and b["max_seq_len_changes_work"]})


EXERCISES: dict[str, Exercise] = {
    e.id: e
    for e in (
        # 01 the tour
        Exercise(
            "01.1",
            "`mixed-long-short`, step 30: what `max_seq_len` does the fixed metadata carry?",
            lambda: _step(TOUR, 30).max_seq_len["fixed"],
            hint="R2: the fixed prepare_attn takes the largest seq_lens_cpu_upper_bound of the real rows.",
            traps=(
                Trap(
                    lambda: _trace(TOUR).scenario.max_model_len,
                    "that's max_model_len: what the baseline passes, not the fixed metadata",
                ),
                Trap(
                    lambda: max(_step(TOUR, 30).num_computed_tokens),
                    "too low by this step's tokens: R1 adds num_scheduled_tokens to num_computed_tokens",
                ),
                Trap(
                    lambda: round(sum(_step(TOUR, 30).seq_lens_cpu_upper_bound) / _step(TOUR, 30).num_reqs),
                    "that's an average: the metadata takes the maximum",
                ),
            ),
        ),
        Exercise(
            "01.2",
            "Same step: how many block-table columns does the *fixed* kernel walk in every row?",
            lambda: cdiv(_step(TOUR, 30).kernel_max_seq_len["fixed"], _trace(TOUR).scenario.block_size),
            hint="the walk covers cdiv(kernel-visible max_seq_len, block_size) columns.",
            traps=(
                Trap(
                    lambda: _step(TOUR, 30).kernel_max_seq_len["fixed"],
                    "that's tokens: the kernel walks blocks, block_size tokens each",
                ),
                Trap(
                    lambda: _step(TOUR, 30).kernel_max_seq_len["fixed"] // _trace(TOUR).scenario.block_size,
                    "too low: rounded down, but a partly filled block is walked too",
                ),
                Trap(
                    lambda: cdiv(_trace(TOUR).scenario.max_model_len, _trace(TOUR).scenario.block_size),
                    "that's the baseline walk (max_model_len); the question asks for the fixed one",
                ),
            ),
        ),
        Exercise(
            "01.3",
            "Same step: how many block-table entries does the *fixed* walk still read past the valid "
            "region (all rows together)?",
            lambda: _outside(_step(TOUR, 30).oor["fixed"]),
            hint="step.oor['fixed'] has the classes; the valid entries are in_range.",
            traps=(
                Trap(lambda: 0, "too low: every row walks the longest row's width, and most rows are short"),
                Trap(
                    lambda: _step(TOUR, 30).oor["fixed"]["walked"],
                    "too high: that counts the valid entries (in_range) too",
                ),
                Trap(lambda: _outside(_step(TOUR, 30).oor["baseline"]), "too high: that's the baseline walk"),
            ),
        ),
        # 02 upper bound against exact lengths; what the kernel gets
        Exercise(
            "02.1",
            "`eagle-k3`, step 10: by how many tokens does the fixed `max_seq_len` exceed the longest "
            "exact length in the batch (`max(seq_lens)`)?",
            lambda: (
                _step("eagle-k3", 10).max_seq_len["fixed"]
                - max(_step("eagle-k3", 10).seq_lens[: _step("eagle-k3", 10).num_reqs])
            ),
            hint="compare the two maxima, not row by row.",
            traps=(
                Trap(
                    lambda: max(
                        u - s
                        for u, s in zip(_step("eagle-k3", 10).seq_lens_cpu_upper_bound, _step("eagle-k3", 10).seq_lens)
                    ),
                    "too high: that's the largest gap of a single row; the question compares the batch maxima",
                ),
                Trap(
                    lambda: _trace("eagle-k3").scenario.num_speculative_tokens,
                    "too high: K is the most a row's bound can be ahead (all drafts rejected); "
                    "look at this step's maxima",
                ),
            ),
        ),
        Exercise(
            "02.2",
            f"Spec `{GRAPHS_SPEC}` (requests arriving every 3 steps, capture sizes up to 8): on how "
            "many steps does the fix reach the kernel (the kernel-visible `max_seq_len` differs between "
            "the modes)?",
            lambda: sum(
                s.kernel_max_seq_len["baseline"] != s.kernel_max_seq_len["fixed"] for s in _trace(GRAPHS_SPEC).steps
            ),
            hint="R9: compare step.kernel_max_seq_len, not step.max_seq_len.",
            traps=(
                Trap(
                    lambda: sum(s.max_seq_len["baseline"] != s.max_seq_len["fixed"] for s in _trace(GRAPHS_SPEC).steps),
                    "too high: that counts the metadata; a FULL replay keeps the captured max_model_len (R9)",
                ),
                Trap(
                    lambda: sum(s.cudagraph_mode == "FULL" for s in _trace(GRAPHS_SPEC).steps),
                    "that counts the FULL replays: those are the steps where the fix does NOT reach the kernel",
                ),
                Trap(lambda: len(_trace(GRAPHS_SPEC).steps), "too high: that's every step"),
            ),
        ),
        Exercise(
            "02.3",
            "`full-graph-vs-eager`, step 60 (a FULL replay): how many entries does the baseline walk "
            "read past the valid region of the real requests?",
            lambda: _outside(_step("full-graph-vs-eager", 60).oor["baseline"]),
            hint="the classes of step.oor: null, live, free belong to real rows; padded to padded rows.",
            traps=(
                Trap(
                    lambda: (
                        _step("full-graph-vs-eager", 60).oor["baseline"]["walked"]
                        - _step("full-graph-vs-eager", 60).oor["baseline"]["in_range"]
                    ),
                    "too high: that counts the padded rows too",
                ),
                Trap(
                    lambda: _step("full-graph-vs-eager", 60).oor["baseline"]["walked"],
                    "too high: that's every entry walked, valid ones and padded rows included",
                ),
            ),
        ),
        # 03 Eagle/MTP draft windows
        Exercise(
            "03.1",
            "`eagle-k3`, step 10: what `draft_max_seq_len` do draft passes 1 and 2 get in the fixed mode?",
            lambda: _step("eagle-k3", 10).drafts[1].max_seq_len["fixed"],
            hint="R4: min(max upper bound + K, max_model_len).",
            traps=(
                Trap(
                    lambda: _step("eagle-k3", 10).max_seq_len["fixed"],
                    "too low: that's pass 0, which reuses the target metadata; the decode passes add K",
                ),
                Trap(
                    lambda: max(_step("eagle-k3", 10).drafts[1].seq_lens_cpu_upper_bound),
                    "too low: that's the longest window of pass 1; the bound adds K to the target maximum",
                ),
                Trap(
                    lambda: max(_step("eagle-k3", 10).drafts[2].seq_lens_cpu_upper_bound),
                    "too low: that's the longest window of pass 2; the bound adds K to the target maximum",
                ),
                Trap(
                    lambda: _trace("eagle-k3").scenario.max_model_len,
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
            traps=(
                Trap(lambda: _smallest_k_reaching_mml() + 1, "too high: a smaller K already reaches it"),
                Trap(
                    lambda: _smallest_k_reaching_mml() - 1,
                    "too low: with that K, upper bound + K stays below max_model_len",
                ),
            ),
        ),
        # 04 mamba-hybrid and the history
        Exercise(
            "04.1",
            "`mamba-hybrid`, step 20: how many block-table entries did the target pass walk in the era after #40654?",
            lambda: (
                _step("mamba-hybrid", 20).num_reqs_padded
                * cdiv(
                    _step("mamba-hybrid", 20).history()["after #40654"]["kernel_max_seq_len"],
                    _trace("mamba-hybrid").scenario.block_size,
                )
            ),
            hint="rows (padded included) x cdiv(that era's kernel max_seq_len, block_size); step.history() has "
            "every era.",
            traps=(
                Trap(
                    lambda: (
                        _step("mamba-hybrid", 20).num_reqs_padded
                        * cdiv(
                            _step("mamba-hybrid", 20).history()["after #43991"]["kernel_max_seq_len"],
                            _trace("mamba-hybrid").scenario.block_size,
                        )
                    ),
                    "too low: that's after #43991; #40654 fixed DefaultModelState.prepare_attn only, and this "
                    "model runs MambaHybridModelState",
                ),
                Trap(
                    lambda: _step("mamba-hybrid", 20).history()["after #40654"]["kernel_max_seq_len"],
                    "that's the max_seq_len of one row, in tokens: the walk is rows x columns of blocks",
                ),
            ),
        ),
        Exercise(
            "04.2",
            "Which PR first gave Eagle's draft passes 1..K-1 the batch maximum? (the PR number)",
            _first_fixed_era_for_drafts,
            kind="pr",
            hint="read step.history() era by era on `eagle-k3`, in the drafts.",
            traps=(
                Trap(
                    lambda: 40654,
                    "#40654 fixed the target path of DefaultModelState only: look at "
                    "history()['after #40654']['drafts'][1:]",
                ),
                Trap(
                    lambda: 46759,
                    "#46759 changed no max_seq_len: it forwards seq_lens_cpu_upper_bound to "
                    "the mamba metadata builders",
                ),
            ),
        ),
        Exercise(
            "04.3",
            "`mamba-hybrid`, whole trace, target pass: how many fewer block-table entries are walked after "
            "#43991 than after #40654?",
            lambda: _era_walk("mamba-hybrid", "after #40654") - _era_walk("mamba-hybrid", "after #43991"),
            hint="per step: rows (padded included) x cdiv(the era's kernel max_seq_len, block_size); sum, subtract.",
            traps=(
                Trap(lambda: 0, "too low: #40654 did not touch MambaHybridModelState, #43991 did"),
                Trap(
                    lambda: _era_walk("mamba-hybrid", "after #40654"),
                    "too high: that's the whole walk after #40654, not the difference",
                ),
            ),
        ),
        # 05 kernels
        Exercise(
            "05.1",
            f"`{KERNEL_SPEC}`, without running a kernel: on how many of all its steps would the trusting "
            "kernel be wrong in the *fixed* mode?",
            lambda: _trusting_wrong_steps("fixed"),
            hint="the trusting kernel is wrong exactly where a real row's walk leaves its valid blocks "
            "(step.oor: null, live, free).",
            traps=(
                Trap(
                    lambda: 0,
                    "too low: the fix bounds the walk by the batch maximum, it does not stop a "
                    "short row from walking the longest row's width",
                ),
                Trap(
                    lambda: _trusting_wrong_steps("baseline"), "too high: that's the baseline; look at the fixed walks"
                ),
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
            traps=(
                Trap(
                    lambda: (
                        _step(KERNEL_SPEC, KERNEL_RATIO_STEP).kernel_max_seq_len["baseline"]
                        / _step(KERNEL_SPEC, KERNEL_RATIO_STEP).kernel_max_seq_len["fixed"]
                    ),
                    "that's the ratio of max_seq_len in tokens: the walk goes in whole blocks",
                ),
            ),
        ),
        Exercise(
            "05.3",
            "R10: which of the registry's CUDA backends does `max_seq_len` *not* change the work of? "
            "(a list of names as `python -m lab backends` prints them)",
            _backends_unmoved,
            kind="names",
            hint="python -m lab backends, or lab.kernels.registry.backends(): max_seq_len_changes_work.",
        ),
        # 06 real vLLM
        Exercise(
            "06.1",
            f"`{LIVE_SPEC}` (the live scenario), step 10: how many block-table columns does the fixed "
            "kernel walk in every row?",
            lambda: cdiv(_step(LIVE_SPEC, 10).kernel_max_seq_len["fixed"], _trace(LIVE_SPEC).scenario.block_size),
            hint="cdiv(kernel-visible max_seq_len, block_size), with this run's block size.",
            traps=(
                Trap(
                    lambda: cdiv(_step(LIVE_SPEC, 10).kernel_max_seq_len["fixed"], 16),
                    "too high: that's block size 16; a CPU run of vLLM needs a multiple of 32 (see the spec)",
                ),
                Trap(
                    lambda: cdiv(
                        _step(LIVE_SPEC, 10).kernel_max_seq_len["baseline"], _trace(LIVE_SPEC).scenario.block_size
                    ),
                    "too high: that's the baseline walk (max_model_len)",
                ),
            ),
        ),
        Exercise(
            "06.2",
            f"`{LIVE_SPEC}`: how many columns wide is the persistent block table (R6)?",
            lambda: _trace(LIVE_SPEC).meta["width"],
            hint="cdiv(max_model_len, block_size), rounded to cover a multiple of 128 tokens.",
            traps=(
                Trap(
                    lambda: cdiv(_trace(LIVE_SPEC).scenario.max_model_len, 16),
                    "too high: that's block size 16; this run uses the block size in its spec",
                ),
                Trap(
                    lambda: _trace(LIVE_SPEC).scenario.max_model_len,
                    "too high: that's tokens; the table holds one block id per block_size tokens",
                ),
            ),
        ),
    )
}


# --- the checker -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What ``check`` says. True when right; prints as its message."""

    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return self.message

    __str__ = __repr__


def _exercise(qid: str) -> Exercise:
    if qid not in EXERCISES:
        raise KeyError(f"no exercise {qid!r}; the exercises are {', '.join(EXERCISES)}")
    return EXERCISES[qid]


def ask(qid: str) -> str:
    """The question ``qid`` ("01.1", …) as text."""
    return f"{qid}: {_exercise(qid).question}"


def questions(notebook: str | None = None) -> list[str]:
    """The exercise ids, all or one notebook's ("02")."""
    return [q for q in EXERCISES if notebook is None or q.split(".")[0] == notebook]


@functools.cache
def solution(qid: str):
    """The instructor answer of ``qid``, computed from the lab. The one place the answers live."""
    return _exercise(qid).solve()


def _pr_number(answer) -> int | None:
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int):
        return answer
    if isinstance(answer, str):
        digits = answer.strip().lower().removeprefix("after").strip().lstrip("#").strip()
        if digits.isdigit():
            return int(digits)
    return None


def _as_number(answer, kind: str):
    if isinstance(answer, bool):
        return None
    if kind == "int":
        if isinstance(answer, int):
            return answer
        if isinstance(answer, float) and answer.is_integer():
            return int(answer)
        if hasattr(answer, "item") and hasattr(answer, "dtype"):  # a numpy scalar
            return _as_number(answer.item(), kind)
        return None
    if isinstance(answer, (int, float)):
        return float(answer)
    if hasattr(answer, "item") and hasattr(answer, "dtype"):
        return _as_number(answer.item(), kind)
    return None


def _same(a, b, ex: Exercise) -> bool:
    if ex.kind == "float":
        return math.isclose(float(a), float(b), rel_tol=max(ex.rel_tol, 1e-12))
    return a == b


def check(qid: str, answer) -> Verdict:
    """Is ``answer`` right? Says why not, without giving the answer away."""
    ex = _exercise(qid)
    if answer is None or answer is Ellipsis:
        return Verdict(False, f"{qid}: no answer yet: replace the None with yours")
    right = solution(qid)

    if ex.kind == "names":
        if isinstance(answer, str):
            answer = [answer]
        try:
            given = {str(a).strip() for a in answer}
        except TypeError:
            return Verdict(False, f"{qid}: expected a list of backend names, got {answer!r}")
        want = set(right)
        if given == want:
            return Verdict(True, f"{qid}: right.")
        moved = set(_backends_moved_cuda())
        parts = []
        if given & moved:
            parts.append(f"{len(given & moved)} of yours can have their work changed by max_seq_len")
        unknown = given - want - moved
        if unknown:
            parts.append(f"not a CUDA backend of the registry: {', '.join(sorted(unknown))}")
        if want - given:
            parts.append(f"{len(want - given)} missing")
        return Verdict(False, f"{qid}: not yet: " + "; ".join(parts) + ". Hint: " + ex.hint)

    if ex.kind == "pr":
        value = _pr_number(answer)
        if value is None:
            return Verdict(False, f"{qid}: expected a PR number such as 12345 or '#12345', got {answer!r}")
    else:
        value = _as_number(answer, ex.kind)
        if value is None:
            what = "a whole number" if ex.kind == "int" else "a number"
            return Verdict(False, f"{qid}: expected {what}, got {answer!r}")

    if _same(value, right, ex):
        return Verdict(True, f"{qid}: right.")
    for trap in ex.traps:
        wrong = trap.value()
        if not _same(wrong, right, ex) and _same(value, wrong, ex):
            return Verdict(False, f"{qid}: not quite: {trap.message}.")
    if ex.kind == "pr":
        return Verdict(False, f"{qid}: not that PR. Hint: {ex.hint}")
    direction = "too high" if value > right else "too low"
    return Verdict(False, f"{qid}: {direction}. Hint: {ex.hint}")


def main() -> None:
    """``python -m lab.exercises``: every question with its instructor answer."""
    for qid in EXERCISES:
        print(f"{ask(qid)}\n    answer: {solution(qid)!r}")


if __name__ == "__main__":
    main()
