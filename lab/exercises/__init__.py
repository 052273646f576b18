"""The walkthrough notebooks' exercises, as a learner calls them: the questions, the checker and the
instructor answers.

A learner answers a question at the end of a notebook and checks it::

    from lab.exercises import ask, check
    ask("02.3")                 # the question, with the scenario to open
    check("02.3", 12345)        # right, or why not (never the answer)

From the second wrong try on the same exercise, ``check`` adds the exercise's nudge: which lab function,
field or view the answer is read off. The tries are counted per kernel (``reset_tries`` forgets them); a
right answer resets its exercise's count; "no answer yet" (None) is not a try.

Every instructor answer is *computed* from the lab (a trace, a trace's history, the kernel registry),
never typed in: ``solution(qid)`` is the one place the answers live, and the tests use it
(tests/test_exercises.py checks that each right answer is accepted and that the typical wrong ones
get their message). Instructors can print them all with ``python -m lab.exercises``.

The package: checker.py is the machinery (Exercise, Trap, the traces, how an answer is judged);
nb01_tour.py … nb08_fix_draft_model.py hold each notebook's exercises and the scenarios they name; this module
gathers them into ``EXERCISES``.
"""

from __future__ import annotations

import functools

from lab.exercises import (
    nb01_tour,
    nb02_upper_bound,
    nb03_eagle_drafts,
    nb04_mamba_history,
    nb05_kernels,
    nb06_live,
    nb07_every_path,
    nb08_fix_draft_model,
)
from lab.exercises.checker import Exercise, NotObserved, Trap, Verdict, judge, nudged

# The scenarios the notebooks open by name (notebook 06 imports LIVE_SPEC; the notebook tests read
# KERNEL_SPEC and LIVE_SPEC from here).
from lab.exercises.nb02_upper_bound import GRAPHS_SPEC
from lab.exercises.nb03_eagle_drafts import NEAR_LIMIT_SPEC
from lab.exercises.nb05_kernels import KERNEL_SPEC
from lab.exercises.nb06_live import LIVE_SPEC
from lab.exercises.nb07_every_path import ENCODER_DECODER_SPEC

NOTEBOOK_MODULES = (
    nb01_tour,
    nb02_upper_bound,
    nb03_eagle_drafts,
    nb04_mamba_history,
    nb05_kernels,
    nb06_live,
    nb07_every_path,
    nb08_fix_draft_model,
)
EXERCISES: dict[str, Exercise] = {e.id: e for notebook in NOTEBOOK_MODULES for e in notebook.EXERCISES}


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


# Wrong tries per exercise id, in this kernel (a notebook's session): the second one gets the nudge.
_WRONG_TRIES: dict[str, int] = {}


def reset_tries(qid: str | None = None) -> None:
    """Forget the wrong tries counted, of one exercise or all."""
    if qid is None:
        _WRONG_TRIES.clear()
    else:
        _WRONG_TRIES.pop(qid, None)


def check(qid: str, answer) -> Verdict:
    """Is ``answer`` right? Says why not, without giving the answer away; from the second wrong try on
    the same exercise, also where to look."""
    ex = _exercise(qid)
    if answer is None or answer is Ellipsis:
        return Verdict(False, f"{qid}: no answer yet: replace the None with yours")
    try:
        right = solution(qid)
    except NotObserved as e:  # what the launch is handed is not observed for this trace's backend: no answer
        return Verdict(False, f"{qid}: no answer: {e}")
    verdict = judge(ex, answer, right)
    if verdict.ok:
        _WRONG_TRIES.pop(qid, None)
        return verdict
    _WRONG_TRIES[qid] = _WRONG_TRIES.get(qid, 0) + 1
    return nudged(verdict, ex) if _WRONG_TRIES[qid] >= 2 else verdict


def main() -> None:
    """``python -m lab.exercises``: every question with its instructor answer."""
    for qid in EXERCISES:
        try:
            print(f"{ask(qid)}\n    answer: {solution(qid)!r}")
        except NotObserved as e:
            print(f"{ask(qid)}\n    no answer: {e}")


__all__ = [
    "ENCODER_DECODER_SPEC",
    "EXERCISES",
    "GRAPHS_SPEC",
    "KERNEL_SPEC",
    "LIVE_SPEC",
    "NEAR_LIMIT_SPEC",
    "Exercise",
    "Trap",
    "Verdict",
    "ask",
    "check",
    "main",
    "questions",
    "reset_tries",
    "solution",
]
