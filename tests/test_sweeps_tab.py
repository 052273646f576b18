"""The Sweeps tab through gradio_client, on a Blocks of its own, and its endpoints in the app."""

from __future__ import annotations

import json

import pytest

from lab.app.sweeps_tab import add_sweeps_tab

SMALL = "4p64o24_mml=4k_cg=piecewise"


def ADD_TAB():  # noqa: N802 (the name conftest's tab_url looks for)
    add_sweeps_tab(SMALL)


@pytest.fixture(scope="module")
def tab_client(tab_url, make_client):
    return make_client(tab_url)


def test_sweep_runs_and_draws(tab_client):
    fig, table, status = tab_client.predict(
        SMALL, "mml", "2k,4k,8k", "(none)", "", 2, "all_walked_ratio", api_name="/run_sweep"
    )
    plot = json.loads(fig["plot"])
    assert plot["data"][-1]["x"] == [2048, 4096, 8192]
    assert table["headers"][:2] == ["mml", "seeds"] and len(table["data"]) == 3
    assert "6 points run" in status and "python -m lab sweep" in status


def test_two_axes_heatmap(tab_client):
    fig, table, _ = tab_client.predict(
        SMALL, "mml", "2k,4k", "cg", "full,piecewise", 1, "all_walked_ratio", api_name="/run_sweep"
    )
    assert json.loads(fig["plot"])["data"][0]["type"] == "heatmap" and len(table["data"]) == 4


def test_too_big_points_to_the_cli(tab_client):
    fig, table, status = tab_client.predict(
        SMALL, "mml", "1k:64k:1k", "bs", "16,32", 10, "all_walked_ratio", api_name="/run_sweep"
    )
    assert fig is None and "Too big for the app" in status and "python -m lab sweep" in status
    est = tab_client.predict(SMALL, "mml", "2k,4k", "(none)", "", 1, api_name="/sweep_estimate")
    assert est.startswith("2 points")


def test_bad_axis_is_said_in_the_status(tab_client):
    """A bad sweep (an unknown axis, a value like `banana`): the reason in the status, nothing raised."""
    _, _, status = tab_client.predict(SMALL, "nope", "1,2", "(none)", "", 1, "all_walked_ratio", api_name="/run_sweep")
    assert status.startswith("**Not run**") and "not a template placeholder" in status
    _, _, status = tab_client.predict(
        SMALL, "mml", "banana", "(none)", "", 1, "all_walked_ratio", api_name="/run_sweep"
    )
    assert status.startswith("**Not run**") and "banana" in status


def test_app_has_the_tab(app_url, make_client):
    api = make_client(app_url).view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/run_sweep", "/sweep_estimate"} <= set(api)


def test_sweep_past_the_deadline_points_to_the_cli(monkeypatch):
    import lab.app.sweeps_tab as tab

    monkeypatch.setattr(tab, "APP_BUDGET_S", 0.0)  # every sweep overruns: stopped after its first point
    monkeypatch.setattr(tab, "SECONDS_PER_POINT", 0.0)  # ... though the estimate lets it start
    fig, table, status = tab.run_sweep_tab(
        SMALL, "mml", "2k,4k,8k", "(none)", "", 1, "all_walked_ratio", progress=lambda *a, **k: None
    )
    assert fig is None and "Stopped after" in status and "python -m lab sweep" in status


def test_table_cells_read_as_numbers_do():
    # Issue 37: the table printed 1490000 and a count rounded to 27300000.
    from lab.app.sweeps_tab import table_cell

    assert table_cell(1490000) == "1,490,000" and table_cell(27312345.0) == "27,312,345"
    assert table_cell(31.87654) == "31.9" and table_cell(0.123456) == "0.123" and table_cell(1234.5) == "1,234"
    assert table_cell("full") == "full" and table_cell(None) == ""


def test_the_empty_table_names_its_columns(tab_url):
    # Issue 37: before the first sweep the table's headers read "1 2 3".
    import urllib.request

    from lab.sweep.table import HEADLINE

    config = json.loads(urllib.request.urlopen(tab_url + "config").read())
    (table,) = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "sweep-table"]
    assert table["props"]["value"]["headers"][:2] == ["axis", "seeds"]
    assert table["props"]["value"]["headers"][2] == HEADLINE[0]
