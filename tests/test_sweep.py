"""Sweeps: expansion, points equal to point-by-point simulate, local processes, Ray, resume, tables."""

from __future__ import annotations

import json
import math
import os

import pytest

from lab import Scenario, simulate
from lab.deployment.walks import class_totals, pass_walk
from lab.sweep import SweepSpec, deterministic, parse_values, run_sweep, trace_row
from lab.sweep.point import evaluate

BASE = "4p64o24_mml=4k_cg=piecewise"  # small: a point simulates in milliseconds


def _expected(spec: str) -> dict:
    """What a point must hold: simulate(spec)'s totals and steps, each walk sized by what the chosen backend's
    launch is observed to be handed (lab/deployment/walks.py; tests/test_handed_consumers.py rewrites the
    observation)."""
    trace = simulate(Scenario.from_spec(spec))
    tot = class_totals(trace, True)
    tgt = class_totals(trace, False)
    reach = sum(pass_walk(trace, st, "fixed").value != pass_walk(trace, st, "baseline").value for st in trace.steps)
    return {
        "num_steps": len(trace.steps),
        "all_baseline_walked": tot["baseline"]["walked"],
        "all_fixed_walked": tot["fixed"]["walked"],
        "target_baseline_free": tgt["baseline"]["free"],
        "all_baseline_oor": sum(tot["baseline"][c] for c in ("null", "live", "free", "padded")),
        "fix_reaches_kernel_share": reach / len(trace.steps),
    }


def _check_rows(rows):
    for r in rows:
        exp = _expected(r["spec"])
        for k, v in exp.items():
            assert r[k] == pytest.approx(v), (r["spec"], k)


def test_values_grammar():
    assert parse_values("8k,32k") == [8192, 32768]
    assert parse_values("8:32:8") == [8, 16, 24, 32]
    assert parse_values("4k:32k:*2") == [4096, 8192, 16384, 32768]
    assert parse_values("full,piecewise") == ["full", "piecewise"]
    assert parse_values("0.5,1") == [0.5, 1]
    assert parse_values("0.1:0.9:0.2") == [0.1, 0.3, 0.5, 0.7, 0.9]
    for bad in ("", "1:2", "4:1:1", "1:8:*1", "a b"):
        with pytest.raises(ValueError):
            parse_values(bad)


def test_expansion_specs_reproduce_each_point():
    spec = SweepSpec.make("{n}p64o24_mml=4k", ["n=1,3", "cg=full,piecewise", "max_model_len=4k,8k"], seeds=2)
    pts = spec.points()
    assert len(pts) == spec.num_points == 16
    p = pts[-1]
    assert p.values == {"n": 3, "cg": "piecewise", "max_model_len": 8192} and p.seed == 1
    s = Scenario.from_spec(p.spec)
    assert (len(s.requests), s.cudagraph_mode, s.max_model_len, s.seed) == (3, "PIECEWISE", 8192, 1)
    with pytest.raises(ValueError, match="placeholders without an axis"):
        SweepSpec.make("{n}p64o24", ["mml=4k"])
    with pytest.raises(ValueError, match="not a template placeholder"):
        SweepSpec.make(BASE, ["bogus=1,2"])
    with pytest.raises(ValueError, match="max_model_len"):  # a point that is not a valid scenario
        SweepSpec.make(BASE, ["mml=32"]).points()


def test_evaluate_is_the_public_api():
    row = evaluate(BASE)
    trace = simulate(Scenario.from_spec(BASE))
    assert deterministic(row) == {"spec": BASE, **trace_row(trace)}
    _check_rows([row])


def test_local_processes_equal_point_by_point(tmp_path):
    spec = SweepSpec.make(BASE, ["mml=2k,4k,8k"], seeds=2)
    res = run_sweep(spec, out_dir=str(tmp_path), workers=2)
    assert res.computed == 6 and res.reused == 0 and not res.interrupted and res.executor.startswith("local (2")
    assert [(r["point"], r["seed"], r["mml"]) for r in res.rows] == [
        (0, 0, 2048),
        (0, 1, 2048),
        (1, 0, 4096),
        (1, 1, 4096),
        (2, 0, 8192),
        (2, 1, 8192),
    ]
    _check_rows(res.rows)
    inline = run_sweep(spec, workers=1)
    assert [deterministic(r) for r in inline.rows] == [deterministic(r) for r in res.rows]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["columns"][:3] == ["point", "seed", "mml"] and len(doc["rows"]) == 6
    header = (tmp_path / "results.csv").read_text().splitlines()[0].split(",")
    assert "spec" in header and "all_walked_ratio" in header
    assert (tmp_path / "figure.html").exists()


def test_resume_after_interruption(tmp_path):
    spec = SweepSpec.make(BASE, ["mml=2k,4k,8k,16k"], seeds=1)
    first = run_sweep(spec, out_dir=str(tmp_path), workers=1, stop_after=2)
    assert first.interrupted and first.computed == 2 and len(first.rows) == 2
    assert not (tmp_path / "results.csv").exists()
    with open(tmp_path / "results.jsonl", "a") as f:  # a line cut short by the interruption
        f.write('{"key": "abc", "row": {"spe')
    second = run_sweep(spec, out_dir=str(tmp_path), workers=1)
    assert second.reused == 2 and second.computed == 2 and not second.interrupted
    fresh = run_sweep(spec, workers=1)
    assert [deterministic(r) for r in second.rows] == [deterministic(r) for r in fresh.rows]
    third = run_sweep(spec, out_dir=str(tmp_path), workers=1)
    assert third.computed == 0 and third.reused == 4
    assert all(json.loads(line)["key"] for line in (tmp_path / "results.jsonl").read_text().splitlines()[-2:])


def test_duplicate_specs_run_once():
    spec = SweepSpec.make(BASE, ["mml=4k,4096"])  # two axis values, one scenario
    res = run_sweep(spec, workers=1)
    assert res.computed == 1 and len(res.rows) == 2 and res.rows[0]["spec"] == res.rows[1]["spec"]


def test_kernel_columns():
    spec = SweepSpec.make("2p40o4_mml=2k_cg=piecewise", ["mml=1k,2k"])
    res = run_sweep(
        spec, workers=1, kernels={"backend": "torch-reference", "device": "cpu", "budget": 20_000, "repeats": 1}
    )
    for r in res.rows:
        assert r["kernel_steps"] >= 1 and r["kernel_baseline_ms"] > 0 and r["kernel_fixed_ms"] > 0
        assert math.isfinite(r["kernel_ratio"]) and r["kernel_baseline_iqr_ms"] >= 0


def test_cli_sweep(tmp_path, capsys):
    from lab.commands.main import main

    out = tmp_path / "sw"
    rc = main(
        ["sweep", "--spec", BASE, "--axis", "mml=2k,4k", "--seeds", "2", "--out", str(out), "--workers", "1", "--quiet"]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "4 points run, 0 reused" in text and "results.csv" in text
    assert "walks sized by what FLASH_ATTN's launch is handed (max_seqlen_k, observed)" in text  # handed_lines
    assert main(["sweep", "--spec", BASE, "--axis", "mml=2k,4k", "--seeds", "2", "--out", str(out), "--quiet"]) == 0
    assert "0 points run, 4 reused" in capsys.readouterr().out
    assert main(["sweep", "--spec", BASE, "--axis", "nope=1"]) == 2


def _ray_or_skip():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    return ray


@pytest.mark.slow
def test_ray_local_instance_equals_local_run(tmp_path):
    ray = _ray_or_skip()
    from lab.sweep.executors import ray_init

    try:
        started = ray_init(None, num_cpus=2)
    except Exception as e:  # pragma: no cover - depends on the machine
        pytest.skip(f"Ray cannot start a local instance here: {type(e).__name__}: {e}")
    try:
        spec = SweepSpec.make(BASE, ["mml=2k,4k"], seeds=2)
        on_ray = run_sweep(spec, out_dir=str(tmp_path), ray="local")
        assert on_ray.executor.startswith("ray") and on_ray.computed == 4
        local = run_sweep(spec, workers=1)
        assert [deterministic(r) for r in on_ray.rows] == [deterministic(r) for r in local.rows]
        _check_rows(on_ray.rows)
    finally:
        if started:
            ray.shutdown()
    assert os.path.exists(tmp_path / "results.csv")


def test_one_sweep_per_folder(tmp_path):
    from lab.sweep.store import ResultStore

    first = ResultStore(tmp_path / "results.jsonl")
    with pytest.raises(ValueError, match="another sweep is writing"):
        ResultStore(tmp_path / "results.jsonl")
    first.close()
    ResultStore(tmp_path / "results.jsonl").close()


def test_gpu_model_columns():
    from lab.gpu_model import GPUS, predict

    spec = SweepSpec.make("{n}p64o8_mml=4k_cg=piecewise", ["n=1,16"])
    res = run_sweep(spec, workers=1, gpus=("b200",))
    for r in res.rows:
        want = {x["backend"]: x for x in predict(simulate(Scenario.from_spec(r["spec"])), GPUS["B200"])}
        assert (
            r["model_B200_trtllm-gen_ctas_launched_baseline"]
            == want["trtllm-gen"]["predicted"]["baseline"]["ctas_launched"]
        )
        assert r["model_B200_triton-unified_extra_bytes"] == 0
    with pytest.raises(ValueError, match="unknown GPU"):
        run_sweep(spec, gpus=("TPU",))


def test_metric_picks_the_figure(tmp_path, capsys):
    from lab.commands.main import main
    from lab.sweep.point import numeric_columns

    assert set(numeric_columns()) <= set(evaluate(BASE))
    assert (
        main(
            [
                "sweep",
                "--spec",
                BASE,
                "--axis",
                "mml=2k,4k",
                "--out",
                str(tmp_path),
                "--workers",
                "1",
                "--quiet",
                "--metric",
                "all_baseline_oor",
            ]
        )
        == 0
    )
    assert "out-of-range entries, baseline" in (tmp_path / "figure.html").read_text()
    assert main(["sweep", "--spec", BASE, "--axis", "mml=2k", "--metric", "nope"]) == 2
    assert "not a numeric column" in capsys.readouterr().err


def test_a_log_swept_axis_is_ticked_at_the_swept_values():
    """Issue 37: plotly's own log ticks labelled the minor ticks "2 3 4" between 10k and 100k; the swept values
    are the ticks now, written out."""
    from lab.sweep.figures import curves

    values = (8192, 16384, 32768, 65536, 131072)
    rows = [{"point": i, "mml": v, "seed": 0, "all_walked_ratio": v / 1024} for i, v in enumerate(values)]
    fig = curves(rows, "mml", ["all_walked_ratio"]).to_dict()
    assert fig["layout"]["xaxis"]["type"] == "log"
    assert list(fig["layout"]["xaxis"]["ticktext"]) == ["8,192", "16,384", "32,768", "65,536", "131,072"]
