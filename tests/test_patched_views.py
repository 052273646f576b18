"""A patched trace (``python -m lab patch``: its ``fixed`` mode is vLLM 0.33.0 with the patch) is named by
its patch wherever a view names that mode: every figure of every step, the headline, the summary, the
one-file export. The file is the real command's output (tests/data/patched_draft_model_fix.json; the
conformance test test_patched_trace_data.py regenerates it and compares)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.trace import Trace
from lab.trace.names import era_label, mode_names, patch_label
from lab.views import ALL_VIEWS, all_specs, headline_html, spec_json, summary_markdown, tour

DATA = Path(__file__).resolve().parent / "data" / "patched_draft_model_fix.json"
LABEL = "vLLM 0.33.0 + patch 7368942"


@pytest.fixture(scope="module")
def patched():
    return Trace.load(DATA)


def _texts(spec) -> str:
    """Every string a figure shows (titles, legend names, annotations, hover text), one blob."""
    return json.dumps(json.loads(spec_json(spec)), ensure_ascii=False)


def test_the_names_of_a_patched_traces_modes(patched):
    assert patch_label(patched) == LABEL
    assert mode_names(patched) == {"baseline": "before #40654", "fixed": LABEL}
    assert era_label(patched, "after #43991") == LABEL and era_label(patched, "after #40654") == "after #40654"
    plain = Trace.load(DATA)
    del plain.meta["patch"]
    assert mode_names(plain) == {"baseline": "before #40654", "fixed": "after #43991"}


# A mode named plainly: "after #43991" anywhere, or "fixed" used as the mode's name (a legend "fixed", "fixed
# walk", "fixed (", "fixed:", "fixed 123"); "fixed by #40654" (the badge on the PR) is not a mode's name.
PLAIN = re.compile(r"after #43991|\bfixed\b(?! by #)")


@pytest.mark.parametrize("view", list(ALL_VIEWS))
def test_every_figure_of_a_patched_trace_names_the_patch_never_plain_fixed(patched, view):
    for index in range(len(patched.steps)):
        text = _texts(all_specs(patched, index)[view])
        assert LABEL in text, f"{view}, step {index}: the patch is not named"
        plain = PLAIN.search(text)
        assert plain is None, (
            f"{view}, step {index}: the patched mode named plainly: …{text[plain.start() - 80 : plain.end() + 40]}…"
        )


def test_the_headline_and_the_summary_name_the_patch(patched):
    for index in range(len(patched.steps)):
        for html in (headline_html(patched, index), summary_markdown(patched, index)):
            assert LABEL in html
            assert PLAIN.search(html) is None, html


def test_the_tour_names_the_patch(patched):
    stops = tour(patched)
    text = " ".join(t["text"] for t in stops)
    assert LABEL in text and PLAIN.search(text) is None, text
    drafts = next(t["text"] for t in stops if t["view"] == "drafts")
    assert (
        drafts.startswith("the draft-model passes are told 11 in " + LABEL)
        and "as shipped: max_model_len = 64" in drafts
    )


def test_a_trace_whose_patch_label_is_not_the_labs_is_refused():
    doc = json.loads(DATA.read_text())
    doc["meta"]["patch"]["label"] = "<b onmouseover=alert(1)>x</b>"
    with pytest.raises(ValueError, match="meta.patch must be an object whose label reads"):
        Trace.from_json_dict(doc)


def test_lab_show_names_the_patch_and_drops_the_as_shipped_note(capsys):
    from lab.commands.main import main

    assert main(["show", str(DATA)]) == 0
    out = capsys.readouterr().out
    assert f"f: patched ({LABEL})" in out and "baseline/patched" in out
    assert "still max_model_len" not in out  # vLLM as shipped's note, beside the patch's values
