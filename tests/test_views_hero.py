"""Issue 49: the hero drawing (the claim in one picture) and one colour per era in every view."""

from __future__ import annotations

import re

import pytest

from lab import Scenario, simulate
from lab.blocks import walked_columns
from lab.history import ERAS
from lab.views import ALL_VIEWS, all_specs, headline_html
from lab.views.hero import era_walks, hero_spec
from lab.views.palette import CLASS_COLOR, ERA_COLOR, ERA_DARK, MODE_COLOR
from lab.views.render import WORDS_CSS


@pytest.fixture(scope="module")
def traces():
    return {n: simulate(Scenario.preset(n)) for n in ("eagle-k3", "stale-block-reuse", "mamba-hybrid")}


def _frames(spec):
    return [s for s in spec["layout"]["shapes"] if s["type"] == "rect"]


def test_the_hero_drawing_opens_every_page():
    # The app's radios, the export's buttons and the downloads all follow ALL_VIEWS' order.
    assert next(iter(ALL_VIEWS)) == "hero"
    from lab.app.ui import DEFAULT_VIEW

    assert DEFAULT_VIEW == "hero"


def test_hero_bars_are_each_eras_walk_at_true_scale(traces):
    t = traces["eagle-k3"]
    st = t.steps[20]
    spec = hero_spec(t, 20)
    hist = st.history()
    frames = _frames(spec)
    # One solid frame per era (the target's walk), one dotted per era (the drafts'): in the era's colour.
    solid = [f for f in frames if f["line"]["dash"] == "solid"]
    assert [f["line"]["color"] for f in solid] == [ERA_COLOR[e] for e in ERAS]
    for f, e in zip(solid, ERAS, strict=True):
        assert f["x0"] == 0 and f["x1"] == walked_columns(hist[e]["kernel_max_seq_len"], t.scenario.block_size)
    assert solid[0]["x1"] == 2048 and solid[2]["x1"] == 68  # 32,768 tokens against the batch max, 16-token blocks
    # The segments of a bar fill it exactly, each as long as its share of the walked entries.
    bars = [d for d in spec["data"] if d.get("type") == "bar" and "+K" not in d["name"]]
    assert len(bars) <= 5  # one trace per part (a trace per segment cost the page its redraw)
    by_y: dict = {}
    for b in bars:
        for y, base, x in zip(b["y"], b["base"], b["x"]):
            by_y.setdefault(y, []).append((base, x))
    for y, segs in by_y.items():
        segs.sort()
        assert segs[0][0] == 0
        assert all(abs(segs[i + 1][0] - (segs[i][0] + segs[i][1])) < 1e-9 for i in range(len(segs) - 1)), y
    w = era_walks(t, 20)
    assert sum(w[0]["parts"].values()) == st.oor["baseline"]["walked"]
    assert w[0]["parts"]["valid"] == st.oor["baseline"]["in_range"]
    # The +K of the drafts after #43991: K tokens over the target's largest upper bound, at true width.
    slack = [d for d in spec["data"] if "+K" in d.get("name", "")]
    assert len(slack) == 1 and slack[0]["x"][0] == pytest.approx(3 / t.scenario.block_size)
    assert w[2]["drafts"]["slack"] == 3 and w[0]["drafts"]["slack"] == 0


def test_hero_shows_stale_live_entries_in_the_old_era(traces):
    t = traces["stale-block-reuse"]
    w = era_walks(t, 24)
    assert w[0]["parts"]["live"] > 0 and w[-1]["parts"]["live"] == 0
    spec = hero_spec(t, 24)
    live = [d for d in spec["data"] if d.get("legendgroup") == "live" and d.get("type") == "bar"]
    assert live and all(d["marker"]["color"] == CLASS_COLOR["live"] for d in live)


def test_hero_mamba_hybrid_keeps_the_old_walk_after_40654(traces):
    w = era_walks(traces["mamba-hybrid"], 20)
    assert w[0]["columns"] == w[1]["columns"] > w[2]["columns"]


def test_no_class_colour_is_an_era_colour():
    assert not set(CLASS_COLOR.values()) & set(ERA_COLOR.values())
    assert MODE_COLOR == {"baseline": ERA_COLOR[ERAS[0]], "fixed": ERA_COLOR[ERAS[-1]]}


def _era_named(name: str) -> list[str]:
    name = name.replace("baseline", ERAS[0]).replace("fixed", ERAS[-1])
    return [e for e in ERAS if e in name]


def _colours(tr) -> set[str]:
    out = set()
    for key in ("line", "marker"):
        c = (tr.get(key) or {}).get("color")
        if isinstance(c, str):
            out.add(c)
    return out


@pytest.mark.parametrize("preset", ["eagle-k3", "stale-block-reuse", "mamba-hybrid"])
def test_every_view_draws_an_era_in_its_palette_colour(traces, preset):
    # ux review 5 minor 16: before #40654 was red, black, orange across the views. Every trace named for an
    # era (or a mode: baseline, fixed) is drawn in one of the named eras' colours (a draft line: its dark shade).
    allowed_other = set(CLASS_COLOR.values())  # the hero's parts are classes, named "stale: …"
    seen = 0
    for view, spec in all_specs(traces[preset], 20 if preset != "stale-block-reuse" else 24).items():
        for tr in spec["data"]:
            eras = _era_named(str(tr.get("name") or ""))
            cols = _colours(tr) - allowed_other - {"white", "#ffffff"}
            if not eras or not cols:
                continue
            want = {ERA_COLOR[e] for e in eras} | {ERA_DARK[e] for e in eras}
            assert cols <= want, (view, tr["name"], cols)
            seen += 1
    assert seen >= 4


def test_the_headline_badges_take_the_era_colours(traces):
    html = headline_html(traces["mamba-hybrid"], 20)
    assert "pr-badge pr43991" in html
    for era in ERAS[1:]:
        pr = era.split("#")[1]
        assert re.search(rf"\.pr-badge\.pr{pr} \{{background: {ERA_COLOR[era]}\}}", WORDS_CSS)


def test_lengths_carries_the_claim_in_a_strip_and_shows_the_r1_gap(traces):
    # ux review 5 minor 14: the claim was a red sentence over 32 equal bars; R1's 1-3 tokens were invisible.
    from lab.views import lengths_spec

    t = traces["eagle-k3"]
    st = t.steps[20]
    spec = lengths_spec(t, 20)
    strip = next(d for d in spec["data"] if d.get("yaxis") == "y2")
    hist = st.history()
    assert strip["y"] == list(ERAS) and strip["x"] == [hist[e]["max_seq_len"] for e in ERAS]
    assert strip["marker"]["color"] == [ERA_COLOR[e] for e in ERAS]
    assert spec["layout"]["xaxis2"]["rangemode"] == "tozero"  # true scale: linear from 0
    gap = next(d for d in spec["data"] if d.get("yaxis") == "y3")
    want = [u - e for u, e in zip(st.seq_lens_cpu_upper_bound[: st.num_reqs], st.seq_lens[: st.num_reqs])]
    assert gap["y"] == want and max(want) > 0


@pytest.mark.parametrize("preset, step", [("eagle-k3", 20), ("stale-block-reuse", 24)])
def test_the_animated_walk_sweeps_each_eras_walked_columns(traces, preset, step):
    """Issue 49 item 4: "▶ walk" (LabSteps.walk, lab/export/stepper.js) sweeps a cursor along each bar from the
    figure's layout.meta.walk: each era's cursor ends at the columns that era's kernel walks on this step, on its
    bar, and every cursor runs at one speed, so the widest walk takes the whole WALK_MS and the others their share."""
    from lab.views.hero import WALK_MS

    t = traces[preset]
    bs = t.scenario.block_size
    hist = t.steps[step].history()
    spec = hero_spec(t, step)
    plan = spec["layout"]["meta"]["walk"]
    target = [b for b in plan["bars"] if not b["drafts"]]
    assert [b["columns"] for b in target] == [walked_columns(hist[e]["kernel_max_seq_len"], bs) for e in ERAS]
    assert [b["color"] for b in target] == [ERA_DARK[e] for e in ERAS]
    # each cursor runs along its own bar: the era's frame (solid: the target; dotted: the drafts) at the same y
    for b, f in zip(plan["bars"], [f for f in _frames(spec)], strict=True):
        assert f["x1"] == b["columns"] and (f["y0"] + f["y1"]) / 2 == pytest.approx(b["y"])
        assert f["y1"] - f["y0"] == pytest.approx(2 * b["half"])
    assert plan["ms"] == WALK_MS and plan["widest"] == max(b["columns"] for b in plan["bars"])
    drafts = [b for b in plan["bars"] if b["drafts"]]
    if preset == "eagle-k3":  # the old walk 2,048 columns: 30x the 68 after #43991, in a 30th of the time
        assert [b["columns"] for b in drafts] == [2048, 2048, 68] and target[0]["columns"] == 2048
        assert target[2]["columns"] / plan["widest"] * plan["ms"] == pytest.approx(WALK_MS * 68 / 2048)
    else:
        assert not drafts
