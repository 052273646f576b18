"""One home for each fact: what each speculator is lives in lab/speculators.py and vLLM's history in
lab/history.py; no other module tests a method's name or writes a release down, and docs' tables are
written from those two (lab/commands/doc_tables.py). Against vLLM's code: tests/conformance/test_speculator_table.py."""

from __future__ import annotations

import ast
import pathlib
import re

import numpy as np
import pytest

from lab import history
from lab import speculators as S
from lab.commands import doc_tables

LAB = pathlib.Path(__file__).resolve().parent.parent / "lab"
TABLE = LAB / "speculators.py"
HISTORY = LAB / "history.py"


def _strings(node) -> bool:
    """A string literal, or a tuple/list/set of them (``*`` parts included)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_strings(e.value if isinstance(e, ast.Starred) else e) for e in node.elts)
    return False


def _is_method(node) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "method" or name.endswith("_method")


def method_tests(source: str) -> list[int]:
    """Lines that compare a method (``method``, ``s.speculative_method``, ...) with a name written out."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops
        ):
            operands = [node.left, *node.comparators]
            if any(_is_method(o) for o in operands) and any(_strings(o) for o in operands):
                lines.append(node.lineno)
    return lines


def test_no_method_test_outside_the_table():
    found = {
        f"{p.relative_to(LAB.parent)}:{line}"
        for p in LAB.rglob("*.py")
        if p != TABLE
        for line in method_tests(p.read_text())
    }
    assert not found, "ask the speculator's record (lab/speculators.py) instead:\n" + "\n".join(sorted(found))


def test_the_method_check_can_fail():
    assert method_tests('if s.speculative_method in ("dflash", "dspark"):\n    pass') == [1]
    assert method_tests('x = method == "draft_model"') == [1]
    assert method_tests('x = method not in (*ONE_PASS, "mtp_multi_module")') == [1]
    assert method_tests("x = speculator(method).one_pass") == []


# A release ("0.19", "0.22.1") or an era ("after #43991") written as a value in code, not in a docstring or
# an f-string's text.
RELEASE = re.compile(r"^(0\.[123]\d(\.\d+)?|(before|after) #\d+|#40654|#43991)$")


def era_literals(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    text = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in docs | text
        and RELEASE.match(n.value)
    ]


# The notebooks' worked answers are written the way a learner types them (``history()["after #40654"]``).
EXERCISES = LAB / "exercises"


def test_vllms_history_is_written_in_one_module():
    """Every release and era the code names as a value is in lab/history.py (the speculators' first
    releases are their records')."""
    found = {
        f"{p.relative_to(LAB.parent)}:{line} {value!r}"
        for p in LAB.rglob("*.py")
        if p not in (HISTORY, TABLE) and EXERCISES not in p.parents
        for line, value in era_literals(p.read_text())
    }
    assert not found, "read it from lab/history.py instead:\n" + "\n".join(sorted(found))


def test_the_history_check_can_fail():
    assert era_literals('if series == "0.19":\n    pass\nx = {"after #43991": 1}') == [(1, "0.19"), (3, "after #43991")]
    assert era_literals('def f():\n    """0.19.1 did this."""\n    return f"vLLM {v} 0.22.1"') == []


def test_each_release_is_in_the_era_its_first_release_opened():
    for r in history.RELEASES.values():
        assert history.era_of_release(r.version) == r.era
    assert [history.era_of_release(v) for v in ("0.12.0", "0.19.1", "0.20.0", "0.22.1", "0.23.0", "0.33.0")] == [
        history.ERAS[0],
        history.ERAS[0],
        history.ERAS[1],
        history.ERAS[1],
        history.ERAS[2],
        history.ERAS[2],
    ]


@pytest.mark.parametrize("series", history.VLLM_VERSIONS)
def test_the_trace_rebuilds_the_table_each_release_gathered(series):
    """A regression: the trace rebuilt 0.19 and 0.22's input tables with 0.33.0's zeroing of dirty rows,
    while the engine (and vLLM before 0.33.0) zero only the padded rows; both now read the release's rule."""
    from lab.engine.model_runner import run_engine
    from lab.real_vllm.conform.suite import random_scenario
    from lab.trace.recorder import simulate

    class Gathered:
        def __init__(self):
            self.tables = []

        def on_step(self, record):
            if not record.is_idle:
                self.tables.append(record.gathered().copy())

        def on_finish(self, end):
            pass

    for seed in (1, 4, 15):  # each has a batch that shrinks below an earlier one
        scenario = random_scenario(seed).replace(vllm_version=series)
        seen = Gathered()
        run_engine(scenario, [seen])
        trace = simulate(scenario)
        for i, table in enumerate(seen.tables):
            assert np.array_equal(trace.block_table(i, num_rows=table.shape[0]), table), (seed, i)


def test_the_table_answers_by_lab_name_and_by_vllms_aliases():
    assert S.speculator("ngram_gpu") is S.speculator("[ngram]") is S.SPECULATORS["ngram"]
    assert S.canonical_method("deepseek_mtp") == "mtp" and S.canonical_method("ngram_gpu") == "ngram"
    with pytest.raises(ValueError, match="must be one of"):
        S.speculator("medusa")
    assert set(S.SPECULATIVE_METHODS).isdisjoint(S.UNMODELLED_METHODS)


def test_docs_tables_are_the_tables():
    stale = [str(p) for p in doc_tables.pages() if doc_tables.render(p.read_text()) != p.read_text()]
    assert doc_tables.pages() and not stale, f"run python -m lab.commands.doc_tables: {stale}"


def test_a_hand_edited_table_is_caught():
    page = doc_tables.pages()[0]
    text = page.read_text()
    edited = re.sub(r"(<!-- generated: [a-z_]+ -->\n)\|", r"\1| hand-edited", text, count=1)
    assert edited != text and doc_tables.render(edited) == text
    with pytest.raises(ValueError, match="unknown generated table"):
        doc_tables.render("<!-- generated: nope -->\nx\n<!-- end generated -->")


@pytest.mark.parametrize(
    "spec,method",
    [
        ('{"model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 3}', "dflash"),
        (
            '{"method": "draft_model", "model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 3}',
            "eagle",
        ),
        ('{"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}', "draft_model"),
        ('{"method": "ngram_gpu", "num_speculative_tokens": 3, "prompt_lookup_max": 4}', "ngram"),
    ],
)
def test_the_deployment_resolver_infers_the_method_as_vllm_does(spec, method):
    """A regression: the resolver read a DFlash draft's name as a draft model, and an explicit draft_model
    with an EAGLE head's name as a draft model; vLLM's SpeculativeConfig.__post_init__ detects both
    (lab/speculators.py infer_method, held to vLLM's source by tests/conformance/test_speculator_table.py)."""
    from lab.deployment import resolve

    dep = resolve(f"vllm serve Qwen/Qwen3-8B --speculative-config '{spec}'")
    assert (dep.method, dep.k) == (method, 3)
