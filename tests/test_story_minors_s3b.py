"""Issue 49 (helper s3b): ux review 5's jargon on hover and minors 13, 18, 19, 22, each with a test that failed
before its change."""

from __future__ import annotations

import html
import re

from lab import Scenario, simulate


def _titles(markup: str) -> dict[str, str]:
    """{the words shown: the hover} of every glossary hover in ``markup``."""
    found = re.findall(r"<abbr class='gloss' title='([^']*)'>(.*?)</abbr>", markup)
    return {re.sub(r"<[^>]+>|`", "", words): html.unescape(title) for title, words in found}


def test_the_glossary_is_read_from_docs_and_names_each_term_of_the_issue():
    # Item 5: "jargon (upper bound, num_blocks, null block, FULL graph, R9) explained on hover", one home each.
    from lab.views.glossary import GLOSSARY_DOC, glossary

    names = [t.name for t in glossary()]
    assert names == ["upper bound", "num_blocks", "null block", "FULL graph", "R9"]
    doc = GLOSSARY_DOC.read_text()
    for t in glossary():
        assert t.meaning and t.meaning.replace("`", "") in doc.replace("`", "")


def test_the_notes_explain_their_jargon_on_hover_in_the_app_and_the_export():
    from lab.views import ALL_VIEWS
    from lab.views.glossary import glossary
    from lab.views.render import note_html, note_markdown

    meaning = {t.name: t.meaning for t in glossary()}
    label, _, note = ALL_VIEWS["block_table"]
    for rendered in (note_markdown(label, note), note_html(label, note)):
        got = _titles(rendered)
        assert got["num_blocks"] == meaning["num_blocks"]
        assert got["null block"] == meaning["null block"]
        assert got["FULL-graph"] == meaning["FULL graph"]
    # each term once a note, the first use; a longer code span is left whole (a tag in it would print as text)
    label, _, note = ALL_VIEWS["hero"]
    md = note_markdown(label, note)
    assert md.count("class='gloss'") == len(_titles(md)) and "`max(upper bound) + K`" in md
    assert "`<abbr" not in md
    assert set(_titles(md)) >= {"null block", "FULL CUDA graph", "R9"}
    assert "upper bound" in _titles(note_markdown(*ALL_VIEWS["drafts"][::2]))


def test_the_headline_explains_a_full_graph_and_r9_on_hover_but_leaves_links_and_attributes_alone():
    from lab.views import headline_html
    from lab.views.glossary import gloss_html, glossary

    trace = simulate(Scenario.from_spec("4p100o20_mml=2k_cg=full"))
    st = next(s for s in trace.steps if s.cudagraph_mode == "FULL")
    got = _titles(headline_html(trace, st.index))
    meaning = {t.name: t.meaning for t in glossary()}
    assert got["FULL graph"] == meaning["FULL graph"]
    # a link's words and an attribute's value are never wrapped
    out = gloss_html("<a href='x' title='the R9 rule'>R9</a> <span title='a FULL graph'>null block</span> R9")
    assert out.startswith("<a href='x' title='the R9 rule'>R9</a> <span title='a FULL graph'><abbr")
    assert out.endswith("R9</abbr>")
    assert gloss_html("seq_lens_cpu_upper_bound and fa3_num_blocks") == "seq_lens_cpu_upper_bound and fa3_num_blocks"


def test_the_exported_page_carries_the_same_hovers():
    from lab.export.payload import step_payload
    from lab.views.glossary import glossary

    meaning = {t.name: t.meaning for t in glossary()}
    payload = step_payload(simulate(Scenario.from_spec("4p100o20_mml=2k_cg=full")))
    note = next(v for v in payload["views"] if v["name"] == "block_table")["note"]
    assert _titles(note)["null block"] == meaning["null block"]


def test_docs_app_points_at_the_glossary():
    import pathlib

    app = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "app.md").read_text()
    assert "[glossary.md](glossary.md)" in app and "Jargon on hover" in app


def test_the_back_button_is_an_icon_that_names_its_preset_in_a_class():
    # Minor 18: "↩ full-graph-vs-eager" wrapped the top bar at 1366; the name is now the hover (page.js reads it).
    from lab.app.loading import back_class

    assert back_class("full-graph-vs-eager") == "back-to-full-graph-vs-eager"
    assert back_class("a b<'>") == "back-to-ab"


def test_notebook_figures_break_their_words_and_follow_the_output_area():
    # Minor 19: the notebook's figure keeps the lab's toolbar, follows the output area, and its subtitle is broken.
    import plotly.io as pio

    from lab.presets import PRESETS
    from lab.views import ALL_VIEWS, as_figure
    from lab.views.notebook_fit import NOTEBOOK_TEXT_PX, fit_text

    pio.renderers.default = "plotly_mimetype"
    spec = ALL_VIEWS["block_table"][1](simulate(Scenario.from_spec(PRESETS["eagle-k3"][0])), 20)
    bundle = as_figure(spec)._repr_mimebundle_()["application/vnd.plotly.v1+json"]
    # no "responsive": JupyterLab's renderer follows the output area, and explore()'s figure drew 0 px high with it
    assert bundle["config"]["displaylogo"] is False and "responsive" not in bundle["config"]
    title = bundle["layout"]["title"]["text"]
    assert title.count("<br>") > spec["layout"]["title"]["text"].count("<br>")
    assert bundle["layout"]["margin"]["t"] > spec["layout"]["margin"]["t"]
    assert "<sup>" not in spec["layout"]["title"]["text"].split("<br>")[0]
    # the words are the figure's own, only broken at spaces
    strip = lambda t: t.replace("<br>", " ").replace("<sup>", "").replace("</sup>", "")  # noqa: E731
    assert strip(title).split() == strip(spec["layout"]["title"]["text"]).split()
    assert fit_text("a b c", NOTEBOOK_TEXT_PX, 12) == ("a b c", 0)


def test_the_timelines_step_0_line_stands_off_the_y_axis():
    # Minor 22: at steps 0-1 the timeline's current-step line hid on the y axis (a long trace: 0.5 of 160 steps).
    from lab.views import timeline_spec

    for spec in ("4p100o20_mml=2k_cg=piecewise", "12p500o150_mml=32k"):
        trace = simulate(Scenario.from_spec(spec))
        lo, hi = timeline_spec(trace, 0)["layout"]["xaxis"]["range"]
        assert (0 - lo) / (hi - lo) >= 0.014, (spec, lo, hi, len(trace.steps))


def _tm(**kw):
    tm = {
        "baseline": 1500.0,
        "fixed": 1686.0,
        "steps_timed": 40,
        "median": {"baseline": 0.77, "fixed": 0.31},
        "iqr": {"baseline": 0.0, "fixed": 0.0},
        "p95": {"baseline": 1.0, "fixed": 0.5},
        "spikes": 0,
    }
    return {**tm, **kw}


def test_the_kernel_totals_never_show_the_fix_slower_than_the_medians_say():
    # Minor 13: "median time saved 0.457 ms (59%)", then "all timed steps together: baseline 1500.097 ms, fixed
    # 1685.666 ms" on a run where no step was 10x its median: the sums of a noisy run turned the order round.
    from lab.views.summary import _time_line

    info = {"kernel": "k", "backend": "b", "device": "cpu", "repeats": 3}
    line = _time_line(info, _tm())
    assert "1500.000" not in line and "1686.000" not in line
    assert "no totals" in line and "noise" in line and "fixed is faster" in line
    agree = _time_line(info, _tm(baseline=1686.0, fixed=1500.0))
    assert "all timed steps together: baseline 1686.000 ms, fixed 1500.000 ms" in agree


def test_one_repeat_a_step_says_so_instead_of_a_zero_spread():
    # Minor 13: "a step's repeats vary by 0.000 / 0.000 ms IQR" on a run of one repeat a step.
    from lab.views.summary import _time_line

    one = _time_line({"kernel": "k", "backend": "b", "device": "cpu", "repeats": 1}, _tm())
    assert "0.000 / 0.000 ms IQR" not in one and "one launch a step" in one
    three = _time_line({"kernel": "k", "backend": "b", "device": "cpu", "repeats": 3}, _tm())
    assert "a step's 3 repeats vary by 0.000 / 0.000 ms IQR" in three


def test_the_kernel_view_tells_its_series_apart_and_suggests_this_traces_own_count():
    # Minor 13: "ms per launch" and "GB/s on real bytes" had the same legend glyph; 571 joined points read as a
    # thicket; the no-timings note of stale-block-reuse suggested counting eagle-k3.
    import numpy as np

    from lab.presets import PRESETS
    from lab.scenario import get_preset
    from lab.views.kernels import MAX_JOINED, _mode_traces, how_to_time

    n = MAX_JOINED + 1
    s = {f"{f}_baseline": np.linspace(1, 2, n) for f in ("ms", "iqr_ms", "gbps_real", "gbps_walked")}
    traces = {t.get("name"): t for t in _mode_traces(np.arange(n), s, "baseline")}
    ms, real = traces["baseline ms per launch"], traces["baseline GB/s on real bytes"]
    assert ms["marker"].get("symbol", "circle") != real["marker"].get("symbol", "circle")
    assert ms["mode"] == real["mode"] == "markers"
    few = {k: v[:10] for k, v in s.items()}
    assert {t["mode"] for t in _mode_traces(np.arange(10), few, "baseline") if t["type"] == "scatter"} == {
        "lines+markers"
    }
    stale = simulate(get_preset("stale-block-reuse"))
    assert "stale-block-reuse" in PRESETS
    note = how_to_time(stale)
    assert "vllm-kernels count --preset stale-block-reuse" in note and "eagle-k3" not in note


def test_every_presets_story_has_6_to_8_chapters_each_drawn_and_read_off_the_trace():
    # Item 3: "a linear story of 6-8 chapters"; the presets had 3-6. Each chapter's sentence is computed from the
    # trace (checked here against the trace's own series) and draws its mark on its view.
    import numpy as np

    from lab.presets import PRESETS
    from lab.views import ALL_VIEWS, tour
    from lab.views.common import series

    for name, (spec, _) in PRESETS.items():
        trace = simulate(Scenario.from_spec(spec))
        story = tour(trace)
        assert 6 <= len(story) <= 8, (name, [(t["step"], t["view"]) for t in story])
        assert story[0]["view"] == "hero" and [t["step"] for t in story[1:]] == sorted(t["step"] for t in story[1:])
        assert len({(t["step"], t["view"]) for t in story}) == len(story)
        for t in story:
            assert t["view"] in ALL_VIEWS and "at" not in t
            assert [a["name"] for a in t["mark"]["annotations"]] == ["tour"], (name, t)
        s = series(trace)
        classes = ("null", "live", "free", "padded")
        total = sum(s[f"all_baseline_{c}"] for c in classes)
        for t in story:
            if t["view"] == "oor":
                assert t["step"] == int(np.argmax(total)) and f"{int(total.max()):,} (" in t["text"]
                assert t["mark"]["annotations"][0]["x"] == t["step"]
            if t["text"].startswith("R1:"):
                gaps = [
                    max(np.asarray(st.seq_lens_cpu_upper_bound[: st.num_reqs]) - np.asarray(st.seq_lens[: st.num_reqs]))
                    for st in trace.steps
                ]
                assert f" {max(gaps)} token" in t["text"] and gaps[t["step"]] == max(gaps)
            if t["text"].startswith("the largest batch"):
                assert f"{int(s['num_reqs'].max())} request" in t["text"]
                assert s["num_reqs"][t["step"]] == s["num_reqs"].max()
            if t["text"].startswith("where the fix matters least"):
                ratio = s["all_baseline_walked"] / np.maximum(s["all_fixed_walked"], 1)
                walks = s["all_fixed_walked"] > 0
                assert ratio[t["step"]] == ratio[walks].min()


def test_a_chapter_is_drawn_in_the_notebook_as_in_the_app():
    # Item 3 ("in the app, the export and the notebooks"): the notebooks had no marks; chapter_figure draws one.
    import json
    import pathlib

    import pytest

    from lab.views import chapter_figure, tour

    trace = simulate(Scenario.from_spec("4p100o20_mml=2k_cg=piecewise"))
    story = tour(trace)
    for n, t in enumerate(story):
        fig = chapter_figure(trace, n)
        notes = [a.text for a in fig.layout.annotations if a.name == "tour"]
        assert notes == [a["text"] for a in t["mark"]["annotations"]]
        assert len([s for s in fig.layout.shapes if s.name == "tour"]) == len(t["mark"]["shapes"])
    with pytest.raises(ValueError, match="chapter"):
        chapter_figure(trace, len(story))
    nb = json.loads((pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "01_tour.ipynb").read_text())
    assert any("chapter_figure(stale" in "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_the_summarys_caveat_explains_its_jargon_on_hover():
    from lab.views.render import summary_html

    got = _titles(summary_html(simulate(Scenario.from_spec("4p100o20_mml=2k_cg=full")), 3))
    assert "R9" in got and any(k.startswith("FULL") for k in got), got
