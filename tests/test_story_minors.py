"""Issue 49: ux review 5's minors, each with a test that failed before its fix."""

from __future__ import annotations

import re

from lab import Scenario, simulate


def test_exercise_03_2_nudge_runs_in_notebook_03_from_its_first_k():
    # Minor 4: the nudge named NEAR_LIMIT_SPEC (not imported in notebook 03) and "from the smallest" K = 1,
    # where steps[0].drafts[1] raised IndexError.
    from lab.exercises.nb03_eagle_drafts import EXERCISES

    nudge = next(e for e in EXERCISES if e.id == "03.2").nudge
    assert "NEAR_LIMIT_SPEC" not in nudge and "drafts[1:]" in nudge
    expr = re.search(r"simulate\(Scenario\.from_spec\((f\".*?\")\)\)", nudge).group(0)
    first_k = int(re.search(r"K = (\d+)", nudge).group(1))
    trace = eval(expr, {"Scenario": Scenario, "simulate": simulate, "K": first_k})  # noqa: S307 - the lab's own text
    assert trace.steps[0].drafts[1:], "the first K the nudge names has a decode pass"


def test_a_run_shows_its_progress_on_the_headline_only():
    # Minor 1: the kernel runner's progress text was printed over every output (preset, slider, radios, plot).
    from lab.app import build_demo

    demo = build_demo()
    headline = next(b._id for b in demo.blocks.values() if getattr(b, "elem_id", None) == "headline")
    deps = {d.get("api_name"): d for d in demo.config["dependencies"]}
    for name in ("run", "time_again", "pick_preset"):
        assert deps[name]["show_progress_on"] == [headline], name


def test_the_headline_says_1_request_and_colours_each_era_column():
    from lab.history import ERAS
    from lab.views import headline_html
    from lab.views.palette import ERA_COLOR
    from lab.views.render import WORDS_CSS

    trace = simulate(Scenario.from_spec("1p100o20_mml=2k_cg=piecewise"))
    html = headline_html(trace, 3)
    assert "1 request ·" in html and "1 requests" not in html
    for k, era in enumerate(ERAS):
        assert f"<th class='era-{k}'>" in html
        assert f".era-{k} {{border-top: 3px solid {ERA_COLOR[era]}" in WORDS_CSS


def test_notebook_figures_offer_no_share_to_plotly_cloud(recwarn):
    # Minor 9: the notebooks' (and the exported file's) toolbar offered "Share chart…", an upload to Plotly Cloud.
    import pathlib

    import plotly.io as pio

    from lab.views import hero_figure

    trace = simulate(Scenario.from_spec("4p100o20_mml=2k_cg=piecewise"))
    pio.renderers.default = "plotly_mimetype"
    bundle = hero_figure(trace, 3)._repr_mimebundle_()
    config = bundle["application/vnd.plotly.v1+json"]["config"]
    assert "sendChartToCloud" in config["modeBarButtonsToRemove"]
    assert not [w for w in recwarn if "config" in str(w.message)]  # a notebook cell shows no warning
    stepper = (pathlib.Path(__file__).resolve().parent.parent / "lab" / "export" / "stepper.js").read_text()
    assert "showSendToCloud: false" in stepper and 'modeBarButtonsToRemove: ["sendChartToCloud"]' in stepper


def test_the_cli_imports_without_plotly():
    # vLLM's live environment has no plotly: `python -m lab record` there failed once the cheat sheet imported the
    # palette (lab.views imports plotly) at module level.
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parent.parent
    code = "import sys; sys.modules['plotly'] = None; import lab.commands.main"
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_deployment_tab_refuses_an_unknown_model_without_the_servers_path(tmp_path, monkeypatch):
    # Minor 8: the tab told an attendee to `huggingface-cli download` into the server's cache, printed as an
    # absolute path they cannot act on; the paste route comes first now, and no server path is printed.
    import pytest

    from lab.app.deployment_tab import CONFIG_HINT
    from lab.deployment.resolve import ServeLineError, resolve

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ServeLineError) as e:
        resolve("vllm serve acme/nowhere-7b", "H200", config_hint=CONFIG_HINT, local_paths=False)  # as the tab calls it
    text = str(e.value)
    assert str(tmp_path) not in text and "huggingface-cli" not in text and text.index(CONFIG_HINT) >= 0


def test_the_kernel_summary_gives_no_totals_that_spikes_decide():
    # Minor 13: "median time saved 59%" then "all timed steps together: baseline 1,500 ms, fixed 1,686 ms".
    from lab.views.summary import _time_line

    tm = {
        "baseline": 1500.0,
        "fixed": 1686.0,
        "steps_timed": 40,
        "median": {"baseline": 0.77, "fixed": 0.31},
        "iqr": {"baseline": 0.01, "fixed": 0.01},
        "p95": {"baseline": 1.0, "fixed": 0.5},
        "spikes": 3,
    }
    info = {"kernel": "k", "backend": "b", "device": "cpu"}
    line = _time_line(info, tm)
    assert "1500.000" not in line and "1686.000" not in line and "no totals" in line
    # no spikes: the totals where they agree with the medians (s3b: not where noise turns them round)
    assert "all timed steps together" in _time_line(info, {**tm, "spikes": 0, "baseline": 1686.0, "fixed": 1500.0})
