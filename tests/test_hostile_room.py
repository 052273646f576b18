"""The hostile probe of 2026-12-07 against a live server (``python app.py`` with a password, as a room runs it):
each attack of lab/commands/bench/room_hostile_cost.py refused within seconds, never in Gradio's error state, the
server's RSS bounded meanwhile. Before issue 50 it refused 0 of them cleanly: a capture grid and a wide table took
the server past 6 GiB, a million requests ran 25 s, a log 380 s, a pasted path was opened."""

from __future__ import annotations

import os

import pytest

from lab.commands.bench.app_process import app_process
from lab.commands.bench.room_hostile_cost import refusals, report

# Each attack's answer: within this many seconds on the shared 2-core CI machine (a refusal takes 0.1-3 s alone),
# and the server's RSS at most this many MiB over where it was before it.
MAX_SECONDS = 20.0
MAX_RSS_GROWTH_MIB = 300.0


@pytest.fixture(scope="module")
def served():
    os.environ["LAB_PASSWORD"] = "test-password"
    pids: list[int] = []
    try:
        with app_process("eagle-k3", timeout=240, pids=pids) as (url, _):
            yield url, pids[0]
    finally:
        os.environ.pop("LAB_PASSWORD", None)


def test_every_attack_is_refused_within_seconds_and_bounded_memory(served, tmp_path, capsys):
    url, pid = served
    rows = refusals(url, pid, str(tmp_path), settle_s=0.5, auth=("attendee", "test-password"))
    with capsys.disabled():
        report(rows, lambda text: print(text, end=""))
    assert len(rows) == 14
    for r in rows:
        assert r["refused"], r
        assert r["seconds"] < MAX_SECONDS, r
        assert r["rss_peak"] - r["rss_before"] < MAX_RSS_GROWTH_MIB, r
