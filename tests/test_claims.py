"""Prose that cannot drift from the pictures, and the GPU sentence the lab teaches.

Each view's note ("What am I looking at?") may name only what the view draws: every plain name it puts
in backticks appears in the figure (a trace's name, a title, an annotation, an axis), and every drawing
word it uses (solid, dashed, dotted lines; bars; a logarithmic or linear axis; "both dashed lines")
matches the traces and axes of the figure on the steps drawn. The Hopper sentence names the backends
vLLM 0.33.0 runs there (docs/fidelity.md, "What we got wrong and how we found it")."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re

import pytest

from lab import Scenario, simulate
from lab.caveats import R9_R10_CAVEAT
from lab.trace import DraftPass, Step
from lab.views import ALL_VIEWS

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The presets and steps the notes are checked on: a dense long context, FULL against eager, Eagle K=3.
SAMPLES = (("short-decode-long-context", (0, 20)), ("full-graph-vs-eager", (5, 30)), ("eagle-k3", (3, 12)))
# Views whose figure needs data a simulated trace does not carry (kernel timings, era recordings):
# their notes describe those data, checked in tests/test_views.py.
NEEDS_MORE_THAN_A_SIMULATION = {"kernels", "recorded"}


@pytest.fixture(scope="module")
def figures():
    out: dict[str, list[dict]] = {name: [] for name in ALL_VIEWS}
    for preset, steps in SAMPLES:
        trace = simulate(Scenario.preset(preset))
        for name, (_, spec, _) in ALL_VIEWS.items():
            if name in NEEDS_MORE_THAN_A_SIMULATION or (name == "drafts" and not trace.scenario.num_speculative_tokens):
                continue
            out[name] += [spec(trace, min(s, len(trace.steps) - 1)) for s in steps]
    return out


def _dashes(fig) -> list[str]:
    traces = [t.get("line", {}).get("dash", "solid") for t in fig["data"] if "lines" in t.get("mode", "")]
    shapes = [
        s.get("line", {}).get("dash", "solid") for s in fig["layout"].get("shapes", []) if s.get("type") == "line"
    ]
    return traces + shapes


def _axis_types(fig) -> set[str]:
    return {v.get("type", "linear") for k, v in fig["layout"].items() if k.startswith(("xaxis", "yaxis"))}


TRACE_NAMES = (
    {n for n in dir(Step) if not n.startswith("_")}
    | {n for n in dir(DraftPass) if not n.startswith("_")}
    | {f.name for f in dataclasses.fields(Scenario)}
    | {"draft_max_seq_len"}
)


# A drawing word in a note, and what at least one figure of the view must show for it.
DRAWING_WORDS = {
    r"\bdashed\b": lambda f: any(d in ("dash", "longdash", "dashdot") for d in _dashes(f)),
    r"\bdotted\b": lambda f: "dot" in _dashes(f),
    r"\bsolid (line|lines)\b": lambda f: "solid" in _dashes(f),
    r"\bboth dashed\b": lambda f: sum(d in ("dash", "longdash") for d in _dashes(f)) >= 2,
    r"\blogarithmic\b": lambda f: "log" in _axis_types(f),
    r"\blinear axis\b": lambda f: "linear" in _axis_types(f) and "log" not in _axis_types(f),
    r"\bbars?\b": lambda f: any(t.get("type") == "bar" for t in f["data"]),
}


@pytest.mark.parametrize("name", [n for n in ALL_VIEWS if n not in NEEDS_MORE_THAN_A_SIMULATION])
def test_view_note_names_only_what_the_view_draws(name, figures):
    note = ALL_VIEWS[name][2]
    figs = figures[name]
    assert figs
    for pattern, drawn in DRAWING_WORDS.items():
        if re.search(pattern, note, re.IGNORECASE):
            assert any(drawn(f) for f in figs), f"{name}: the note says {pattern!r}, no figure draws it"
    # The names of the trace's data (a step's fields, its draft passes', the scenario's) that the note puts
    # in backticks must be on the figure; vLLM's other names it explains with (a flag, a function) need not.
    text = "\n".join(json.dumps(f, default=str) for f in figs)
    for word in set(re.findall(r"`([A-Za-z_]+)`", note)) & TRACE_NAMES:
        assert word in text, f"{name}: the note names `{word}`, which the figure never shows"


def test_a_drifted_note_is_caught(figures, monkeypatch):
    """The check can fail: the lengths note of before (a logarithmic axis, both dashed lines) fails it."""
    title, spec, _ = ALL_VIEWS["lengths"]
    monkeypatch.setitem(ALL_VIEWS, "lengths", (title, spec, "Mind the logarithmic axis: both dashed lines."))
    with pytest.raises(AssertionError, match="the note says"):
        test_view_note_names_only_what_the_view_draws("lengths", figures)


OLD_HOPPER = "moves the metadata but not the kernels"


def test_hopper_caveat_names_what_vllm_runs():
    """vLLM 0.33.0 runs FlashAttention 3 on SM90 for dense models and the MLA backends for MLA models
    (vllm/platforms/cuda.py _get_backend_priorities); both read max_seq_len. The caveat says so, and
    no page of the lab repeats the old sentence that the kernels there do not move."""
    for needed in ("FlashAttention 3", "MLA", "num_splits", "TRTLLM-gen", "R9", "R10"):
        assert needed in R9_R10_CAVEAT
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "notebooks").glob("*.ipynb"))]
    pages += sorted((ROOT / "lab").rglob("*.py"))
    stale = [str(p.relative_to(ROOT)) for p in pages if OLD_HOPPER in p.read_text() and p.name != "test_claims.py"]
    assert not stale, f"the old Hopper sentence is still in {stale}"
