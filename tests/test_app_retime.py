"""⟳ time again (lab.app.retime, issue 37 item 5): the trace on screen timed once more under a key of its own,
the kernel view and the status naming the run, and a line that sets the run beside the last one and says
whether the difference holds, is within the noise, or flips between runs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from test_app import named, plot_of
from test_views import _timed

from lab import Scenario, Trace, simulate
from lab.app.retime import again_line

SPEC = "4p200o40_mml=4k_cg=piecewise"
RUN = [SPEC, 4096, 16, 0, "default", "PIECEWISE", 0.7, 0]


@pytest.fixture
def client(app_url, make_client):
    return make_client(app_url)


def _with_ms(trace: Trace, baseline: float, fixed: float, iqr: float, run: int) -> Trace:
    t = _timed(trace)
    ms = t.arrays["kernel_ms"]
    timed = np.isfinite(ms[:, 0])
    ms[timed] = [baseline, fixed]
    t.arrays["kernel_iqr_ms"][timed] = iqr
    t.meta["kernels"]["run"] = run
    return t


def test_the_line_says_whether_two_runs_agree():
    base = simulate(Scenario.from_spec("3p40o12_k=2_mml=4k_seed=5"))
    first = _with_ms(base, 2.0, 1.0, 0.05, 1)
    holds = again_line(first, _with_ms(base, 2.2, 1.1, 0.05, 2))
    assert "Run 2" in holds and "(run 1: 2.000 / 1.000 ms, saved 1.000 ms)" in holds
    assert "The difference holds" in holds
    flips = again_line(first, _with_ms(base, 1.0, 2.0, 0.05, 2))
    assert "disagree on which mode is faster" in flips
    noisy = again_line(first, _with_ms(base, 2.0, 1.9, 0.5, 2))
    assert "Within the noise" in noisy
    untimed = again_line(base, _with_ms(base, 2.0, 1.0, 0.05, 1))
    assert "the first timing of this trace" in untimed


def test_time_again_times_the_trace_on_screen_under_a_key_of_its_own(client):
    first = named(
        client.predict("stale-block-reuse", *RUN, "embedded CPU + kernels", "kernels", False, 0, api_name="/run")
    )
    assert "Timings on a shared CPU vary" in first["again_msg"]
    again = named(client.predict("embedded CPU + kernels", "kernels", 3, False, api_name="/time_again"))
    assert again["data_key"].startswith("again-") and again["data_key"] != first["data_key"]
    assert again["step"]["value"] == 3 and again["spec"] == first["spec"]  # the step shown stays
    assert re.search(r"timed again on embedded CPU \+ kernels \(run 2 of this trace's kernels\)", again["status"])
    assert re.search(r"Run 2, \d+ steps timed: median step baseline [\d.]+ ms", again["again_msg"])
    assert "(run 1: " in again["again_msg"], again["again_msg"]
    title = plot_of(again["plot"])["layout"]["title"]["text"]
    assert "timed again in the app (run 2) on this CPU" in title
    # Once more: run 3, set beside run 2. Then a new preset: the line is back to what the button is for.
    third = named(client.predict("embedded CPU + kernels", "kernels", 3, False, api_name="/time_again"))
    assert "Run 3" in third["again_msg"] and "(run 2: " in third["again_msg"]
    fresh = named(client.predict("eagle-k3", "embedded CPU", "kernels", False, api_name="/pick_preset"))
    assert "Timings on a shared CPU vary" in fresh["again_msg"]


def test_an_engine_trace_is_timed_by_the_cpu_kernel_runner(client):
    """The runner picked times no kernels: the button times them on the CPU kernel runner, run 1."""
    named(client.predict("stale-block-reuse", *RUN, "embedded CPU", "kernels", False, 0, api_name="/run"))
    again = named(client.predict("embedded CPU", "kernels", 0, False, api_name="/time_again"))
    assert "timed again on embedded CPU + kernels (run 1" in again["status"]
    assert "the first timing of this trace" in again["again_msg"]
    assert json.dumps(plot_of(again["plot"])["data"]).count("ms") > 0


def test_time_again_without_a_trace_is_refused(app_url, make_client):
    with pytest.raises(Exception, match="no trace yet"):
        make_client(app_url).predict("embedded CPU", "kernels", 0, False, api_name="/time_again")
