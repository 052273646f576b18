"""The notebooks' exercises: each instructor answer (computed in lab/exercises/) is accepted, the
typical wrong answers are rejected with their message, and no message gives the answer away."""

from __future__ import annotations

import re

import pytest

from lab.blocks import cdiv
from lab.exercises import EXERCISES, GRAPHS_SPEC, NEAR_LIMIT_SPEC, ask, check, main, questions, solution
from lab.exercises.checker import step_of, trace_of

QIDS = list(EXERCISES)


def _gives_away(qid, message) -> bool:
    """Does the message (past its "qid:" prefix) name the answer?"""
    body = message.removeprefix(f"{qid}:")
    right = solution(qid)
    values = right if isinstance(right, list) else [right]
    return any(re.search(rf"(?<![\w.]){re.escape(str(v))}(?![\w.])", body) for v in values)


def test_every_notebook_has_two_or_three_questions():
    for nb in ("01", "02", "03", "04", "05", "06", "07"):
        assert 2 <= len(questions(nb)) <= 3, nb


@pytest.mark.parametrize("qid", QIDS)
def test_right_answer_is_accepted(qid):
    v = check(qid, solution(qid))
    assert v and v.ok and "right" in v.message
    assert ask(qid).startswith(qid)


@pytest.mark.parametrize("qid", QIDS)
def test_no_answer_and_nonsense_are_rejected_with_a_message(qid):
    assert not check(qid, None)
    assert "no answer yet" in check(qid, None).message
    v = check(qid, object())
    assert not v and v.message.startswith(qid)


def _wrong_numbers(qid):
    right = solution(qid)
    ex = EXERCISES[qid]
    if ex.kind == "float":
        return [right * 1.5, right / 1.5]
    if ex.kind == "pr":
        return [12345]
    return [right + 1, right - 1, right * 2 + 7]


@pytest.mark.parametrize("qid", [q for q in QIDS if EXERCISES[q].kind in ("int", "float", "pr")])
def test_wrong_numbers_are_rejected_without_the_answer(qid):
    right = solution(qid)
    for wrong in _wrong_numbers(qid):
        v = check(qid, wrong)
        assert not v, (qid, wrong)
        assert not _gives_away(qid, v.message), (qid, v.message)
        if EXERCISES[qid].kind != "pr" and not any(t.value() == wrong for t in EXERCISES[qid].traps):
            assert ("too high" in v.message) == (wrong > right), v.message


@pytest.mark.parametrize("qid", QIDS)
def test_traps_give_their_message(qid):
    right = solution(qid)
    traps = EXERCISES[qid].traps
    for trap in traps:
        wrong = trap.value()
        if wrong == right:
            continue
        first = next(t for t in traps if t.value() == wrong)  # traps sharing a value: the first speaks
        v = check(qid, wrong)
        assert not v and first.message in v.message, (qid, wrong, v.message)
        assert not _gives_away(qid, v.message)


def test_the_brief_examples():
    # "too high: that counts the padded rows too"
    st = step_of("full-graph-vs-eager", 60)
    v = check("02.3", st.oor["baseline"]["walked"] - st.oor["baseline"]["in_range"])
    assert not v and "padded rows" in v.message
    # a FULL replay is where the fix does not reach the kernel
    v = check(
        "02.2",
        sum(s.max_seq_len["baseline"] != s.max_seq_len["fixed"] for s in trace_of(GRAPHS_SPEC).steps),
    )
    assert not v and "R9" in v.message


def test_answer_forms():
    assert check("04.2", "#43991") and check("04.2", "after #43991") and check("04.2", 43991)
    assert not check("04.2", "#40654") and "target path" in check("04.2", 40654).message
    assert "changed no max_seq_len" in check("04.2", "46759").message
    assert check("01.1", float(solution("01.1")))
    assert not check("01.1", "532") and "whole number" in check("01.1", "532").message
    assert check("05.2", solution("05.2") * 1.001)
    names = solution("05.3")
    assert check("05.3", list(reversed(names))) and check("05.3", tuple(names))
    v = check("05.3", names[:-1])
    assert not v and "1 missing" in v.message and not _gives_away("05.3", v.message)
    v = check("05.3", names + ["torch-reference"])
    assert not v and "can have their work changed" in v.message
    v = check("05.3", names + ["nonsense-kernel"])
    assert not v and "not a CUDA backend" in v.message
    with pytest.raises(KeyError, match="no exercise"):
        check("99.9", 1)


def test_answers_are_computed_not_typed():
    # Each answer follows from the trace it names: change the trace and the answer moves with it.
    st = step_of("mixed-long-short", 30)
    assert solution("01.1") == max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
    assert solution("01.2") == cdiv(solution("01.1"), trace_of("mixed-long-short").scenario.block_size)
    assert solution("04.3") == (
        trace_of("mamba-hybrid").totals(all_passes=False)["baseline"]["walked"]
        - trace_of("mamba-hybrid").totals(all_passes=False)["fixed"]["walked"]
    )
    k = solution("03.2")
    tr = trace_of(NEAR_LIMIT_SPEC.format(k=k))
    assert max(tr.steps[0].seq_lens_cpu_upper_bound) + k == tr.scenario.max_model_len


def test_cli_prints_every_answer(capsys):
    main()
    out = capsys.readouterr().out
    assert all(q in out for q in QIDS)


# --- the nudge after two wrong tries ----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _fresh_tries():
    """Each test starts with no wrong tries counted (``check`` counts them per kernel)."""
    from lab.exercises import reset_tries

    reset_tries()
    yield
    reset_tries()


def _a_wrong_answer(qid):
    ex = EXERCISES[qid]
    if ex.kind == "names":
        return solution(qid)[:-1]
    return _wrong_numbers(qid)[0]


@pytest.mark.parametrize("qid", QIDS)
def test_every_exercise_has_a_nudge_that_does_not_give_the_answer(qid):
    nudge = EXERCISES[qid].nudge
    assert nudge.strip(), qid
    right = solution(qid)
    if EXERCISES[qid].kind in ("int", "pr"):
        assert str(right) not in nudge, (qid, nudge)
    assert not _gives_away(qid, " " + nudge), (qid, nudge)
    assert nudge != EXERCISES[qid].hint


@pytest.mark.parametrize("qid", QIDS)
def test_the_nudge_comes_on_the_second_wrong_try_not_the_first(qid):
    nudge = EXERCISES[qid].nudge
    first = check(qid, _a_wrong_answer(qid))
    assert not first and nudge not in first.message, first.message
    second = check(qid, _a_wrong_answer(qid))
    assert not second and nudge in second.message, second.message
    assert not _gives_away(qid, second.message)
    third = check(qid, _a_wrong_answer(qid))  # it stays while the answer stays wrong
    assert not third and nudge in third.message


def test_wrong_tries_are_counted_per_exercise():
    check("01.1", solution("01.1") + 1)
    v = check("01.2", solution("01.2") + 1)  # a first wrong try on 01.2: no nudge yet
    assert EXERCISES["01.2"].nudge not in v.message
    v = check("01.1", solution("01.1") + 1)
    assert EXERCISES["01.1"].nudge in v.message


def test_no_answer_yet_is_not_a_wrong_try():
    check("01.1", None)
    check("01.1", None)
    v = check("01.1", solution("01.1") + 1)
    assert EXERCISES["01.1"].nudge not in v.message


@pytest.mark.parametrize("qid", QIDS)
def test_a_right_answer_after_wrong_tries_is_right_and_resets_the_count(qid):
    check(qid, _a_wrong_answer(qid))
    check(qid, _a_wrong_answer(qid))
    v = check(qid, solution(qid))
    assert v and v.ok and v.message == f"{qid}: right."
    v = check(qid, _a_wrong_answer(qid))  # counting starts again: a first wrong try, no nudge
    assert not v and EXERCISES[qid].nudge not in v.message


def test_judge_stays_pure():
    from lab.exercises.checker import judge

    ex = EXERCISES["01.1"]
    messages = {judge(ex, solution("01.1") + 1, solution("01.1")).message for _ in range(3)}
    assert len(messages) == 1 and ex.nudge not in messages.pop()
