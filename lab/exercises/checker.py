"""The machinery the notebooks' exercises share: what an exercise is (``Exercise``, ``Trap``), the traces
their answers are computed from (simulated once each), and how an answer is judged (``judge``, a
``Verdict``). The exercises themselves are in nb01_tour.py … nb06_live.py; lab/exercises/__init__.py
gathers them and is what a notebook calls.

A wrong answer gets, in this order: the message of a known mistake it matches (a *trap*: "too high:
that counts the padded rows too"), else "too high" / "too low" and the question's hint. ``judge`` is pure:
the same answer always gets the same verdict. ``check`` (lab/exercises/__init__.py) counts the wrong tries
and, from the second on the same exercise, adds the exercise's *nudge*: where in the lab the answer is
read off (a function, a field, a view), never the answer.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab import Scenario, list_presets, simulate
from lab.deployment.walks import pass_walk

# --- traces the questions are about (cached: a notebook and the tests ask for them repeatedly) -----------


@functools.cache
def trace_of(name: str):
    """The trace of a preset by name, or of a scenario spec."""
    scenario = Scenario.preset(name) if name in list_presets() else Scenario.from_spec(name)
    return simulate(scenario)


def step_of(name: str, index: int):
    return trace_of(name).steps[index]


class NotObserved(ValueError):
    """An exercise about what a launch is handed, on a trace whose chosen backend has no observation: it has no
    answer (``check`` says so)."""


def handed(name: str, index: int, mode: str):
    """What the target launch of step ``index`` is handed in ``mode`` and its walk (lab/deployment/walks.py
    ``pass_walk``: the chosen backend's observed value, the one every view draws), never the trace's modelled
    kernel_max_seq_len. Not observed: ``NotObserved``."""
    from lab.deployment.handed import not_observed_text

    tr = trace_of(name)
    w = pass_walk(tr, tr.steps[index], mode)
    if not w.observed:
        raise NotObserved(not_observed_text(tr.scenario))
    return w


def era_handed(name: str, index: int, era: str):
    """``handed`` for the target launch of step ``index`` as vLLM in ``era`` ran it (``Step.era_modes``: the mode
    that era's metadata had), as the eras view draws it."""
    return handed(name, index, step_of(name, index).era_modes(era)[0])


def walk(name: str, index: int, mode: str) -> dict[str, int]:
    """The target walk of step ``index`` in ``mode`` by class (``Step.oor``'s fields), sized by what the launch is
    handed (``handed``; lab/deployment/walks.py ``walk_counts``: the out-of-range view's counts)."""
    from lab.deployment.walks import walk_counts

    handed(name, index, mode)  # not observed: no answer
    tr = trace_of(name)
    return walk_counts(tr, tr.steps[index], mode)


def outside(oor_mode: dict) -> int:
    """Entries walked past the valid region of the real rows: null + live + free (not padded rows)."""
    return oor_mode["null"] + oor_mode["live"] + oor_mode["free"]


# --- what an exercise is ----------------------------------------------------------------------------------


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
    kind: str = "int"  # "int" | "float" | "names" (of the kernel registry's backends) | "pr"
    hint: str = ""  # said with "too high"/"too low" when no trap matches
    nudge: str = ""  # from the second wrong try on: where to look (lab function, field, view), never the answer
    traps: tuple[Trap, ...] = field(default=())
    rel_tol: float = 0.0  # for "float"
    decoys: Callable[[], Any] = lambda: ()  # for "names": the backends that are wrong here, named as such


# --- judging an answer ------------------------------------------------------------------------------------


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


def nudged(verdict: Verdict, ex: Exercise) -> Verdict:
    """``verdict`` with ``ex``'s nudge added (what ``check`` says from the second wrong try on)."""
    if verdict.ok or not ex.nudge:
        return verdict
    return Verdict(False, f"{verdict.message} Where to look: {ex.nudge}")


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


def _judge_names(ex: Exercise, answer, right) -> Verdict:
    qid = ex.id
    if isinstance(answer, str):
        answer = [answer]
    try:
        given = {str(a).strip() for a in answer}
    except TypeError:
        return Verdict(False, f"{qid}: expected a list of backend names, got {answer!r}")
    want = set(right)
    if given == want:
        return Verdict(True, f"{qid}: right.")
    moved = set(ex.decoys())
    parts = []
    if given & moved:
        parts.append(f"{len(given & moved)} of yours can have their work changed by max_seq_len")
    unknown = given - want - moved
    if unknown:
        parts.append(f"not a CUDA backend of the registry: {', '.join(sorted(unknown))}")
    if want - given:
        parts.append(f"{len(want - given)} missing")
    return Verdict(False, f"{qid}: not yet: " + "; ".join(parts) + ". Hint: " + ex.hint)


def judge(ex: Exercise, answer, right) -> Verdict:
    """Is ``answer`` (not None) the ``right`` one of ``ex``? Says why not, without giving it away."""
    qid = ex.id
    if ex.kind == "names":
        return _judge_names(ex, answer, right)

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
