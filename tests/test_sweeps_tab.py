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
    # what the walks are sized by (lab/sweep/table.py handed_lines): H200's FA3, observed
    assert "walks sized by what FLASH_ATTN's launch is handed (max_seqlen_k, observed)" in status


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
    monkeypatch.setattr(tab, "points_cost", lambda spec: (0.0, None))  # ... though the estimate lets it start
    fig, table, status = tab.run_sweep_tab(
        SMALL, "mml", "2k,4k,8k", "(none)", "", 1, "all_walked_ratio", progress=lambda *a, **k: None
    )
    assert fig is None and "Stopped after" in status and "python -m lab sweep" in status


def test_table_cells_read_as_numbers_do():
    # Issue 37: the table printed 1490000 and a count rounded to 27300000.
    from lab.app.sweeps_tab import table_cell

    assert table_cell("all_baseline_oor", 1490000) == "1,490,000"
    assert table_cell("all_baseline_oor", 27312345.0) == "27,312,345"
    assert table_cell("mml", 8192) == "8,192" and table_cell("num_steps", 1234.5) == "1,234"
    assert table_cell("x", 31.87654) == "31.9" and table_cell("x", 0.123456789) == "0.123"
    assert table_cell("x", 999.7) == "1,000"  # never ".3g"'s 1e+03
    assert table_cell("cg", "full") == "full" and table_cell("x", None) == ""


def test_table_cells_carry_their_columns_unit():
    """The workshop path: ratios read 7.39x, shares as percentages (a share of 1 read as a count of 1), kernel
    times in ms; a metric no seed had (NaN: a draft metric without drafts) is a dash, never "nan"."""
    from lab.app.sweeps_tab import table_cell

    assert table_cell("all_walked_ratio", 7.391234) == "7.39×" and table_cell("kernel_ratio", 1.0) == "1×"
    assert table_cell("fix_reaches_kernel_share", 1.0) == "100%"
    assert table_cell("full_graph_share", 0.123456789) == "12.3%"
    assert table_cell("kernel_fixed_ms", 0.123456789) == "0.123 ms"
    assert table_cell("target_walked_ratio", float("nan")) == "–" and table_cell("x", float("inf")) == "∞"
    with pytest.raises(TypeError, match="kernel_fixed_ms"):
        table_cell("kernel_fixed_ms", [1])


def test_the_estimate_reads_its_counts_with_separators():
    from lab.app.sweeps_tab import sweep_estimate

    _, fits, msg = sweep_estimate(SMALL, "mml", "1k:1500k:1k", "(none)", "", 1)
    assert not fits and msg.startswith("1,500 points (1,500 x 1 seeds), about ") and "1500" not in msg.split("`")[0]
    _, fits, msg = sweep_estimate(SMALL, "mml", "2k", "(none)", "", 1)
    assert fits and msg.startswith("1 points (1 x 1 seeds), under 1 s here.")


def test_the_empty_table_names_its_columns(tab_url, tab_client):
    """Issue 37: before the first sweep the table's headers read "1 2 3"; then "axis", in another order than
    the default sweep's. Now they are the columns the default sweep (axis 1 mml, plot all_walked_ratio) fills."""
    import urllib.request

    config = json.loads(urllib.request.urlopen(tab_url + "config").read())
    (table,) = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "sweep-table"]
    _, ran, _ = tab_client.predict(SMALL, "mml", "2k,4k", "(none)", "", 1, "all_walked_ratio", api_name="/run_sweep")
    assert table["props"]["value"]["headers"] == ran["headers"]
    assert ran["headers"][:3] == ["mml", "seeds", "all_walked_ratio"]


def test_too_big_a_sweep_leaves_an_empty_table_with_its_columns(tab_client):
    _, table, status = tab_client.predict(
        SMALL, "bs", "16,32", "mml", "1k:64k:1k", 10, "num_steps", api_name="/run_sweep"
    )
    assert "Too big" in status and table["data"] == [] and table["headers"][:4] == ["bs", "mml", "seeds", "num_steps"]
