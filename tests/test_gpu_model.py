"""The "does it matter on my GPU?" model reproduces its formulas on hand-computed cases."""

from __future__ import annotations

import pytest

from lab import Scenario, simulate
from lab.gpu_model import GPUS, HeadShape, backends_for, format_model, predict, summary, trtllm_gen_decode


def test_trtllm_gen_one_long_context_row():
    # B200: 148 SMs; one decode row of 700 tokens, 8 KV heads (numCtasY = 8), query length 1.
    # baseline max_seq_len 131072: maxNumCtasPerSeqKv = (131072 + 255) // 256 = 512,
    #   numCtasPerSeqKv = min(512, 148 // 8 = 18) = 18 -> 18 * 8 = 144 CTAs launched;
    #   in the kernel numCtasKv = min(cdiv(700, 128) = 6, 18) = 6 per head: 48 active, 96 exit at once;
    #   each active CTA runs cdiv(700, 6 * 128) = 1 step: 6 steps per head, 48 in all.
    b = trtllm_gen_decode(131072, [700], 1, num_kv_heads=8, num_sms=148)
    assert (b["max_ctas_per_seq_kv"], b["ctas_per_seq_kv"], b["ctas_launched"]) == (512, 18, 144)
    assert (b["ctas_active"], b["ctas_early_exit"], b["mainloop_steps"]) == (48, 96, 48)
    # fixed max_seq_len 700: (700 + 255) // 256 = 3 -> 3 * 8 = 24 CTAs, all active, cdiv(700, 384) = 2 steps each.
    f = trtllm_gen_decode(700, [700], 1, num_kv_heads=8, num_sms=148)
    assert (f["max_ctas_per_seq_kv"], f["ctas_per_seq_kv"], f["ctas_launched"]) == (3, 3, 24)
    assert (f["ctas_active"], f["ctas_early_exit"], f["mainloop_steps"]) == (24, 0, 48)
    # pages loaded follow the real length: cdiv(700, 16) = 44 per head, in both modes.
    assert b["pages"] == f["pages"] == 44 * 8


def test_trtllm_gen_full_gpu_has_no_split():
    # 32 rows x 8 KV heads = 256 CTAs >= 148 SMs: one CTA per sequence whatever max_seq_len says.
    for msl in (1024, 131072):
        r = trtllm_gen_decode(msl, [600] * 32, 1, num_kv_heads=8, num_sms=148)
        assert r["ctas_per_seq_kv"] == 1 and r["ctas_launched"] == 256 and not r["split_kv"]


def test_trtllm_gen_spec_decode_and_padded_rows():
    # q_len 4 (K=3): numCtasPerSeqQ = 4; rows [100, 0 (padded)], 1 KV head, 148 SMs:
    # numCtasPerSeqKv = min((4096 + 255) // 256 = 16, 148 // (4 * 1 * 2) = 18) = 16 -> 4 * 16 * 2 = 128 launched.
    r = trtllm_gen_decode(4096, [100, 0], 4, num_kv_heads=1, num_sms=148)
    assert (r["ctas_per_seq_kv"], r["ctas_launched"]) == (16, 128)
    # real row: valid lengths 97, 98, 99, 100 -> one CTA each (cdiv(.., 128) = 1); the padded row none.
    assert r["ctas_active"] == 4 and r["ctas_early_exit"] == 124 and r["pages"] == 4 * 7


def test_predict_on_a_trace():
    trace = simulate(Scenario.from_spec("2p100o8_mml=4k_cg=piecewise"))
    shape = HeadShape(8, 2, 64, 2)
    rows = {r["backend"]: r for r in predict(trace, GPUS["B200"], shape)}
    assert set(rows) == set(backends_for(GPUS["B200"]))
    # the lab's reference walk: rows_padded * cdiv(kernel_max_seq_len, bs) pages, per mode, from the trace
    for m in ("baseline", "fixed"):
        want = sum(st.num_reqs_padded * -(-st.kernel_max_seq_len[m] // 16) for st in trace.steps)
        assert rows["lab-torch-reference"]["predicted"][m]["pages"] == want
        assert rows["lab-torch-reference"]["predicted"][m]["bytes"] == want * 16 * 2 * 64 * 2 * 2
    # the kernels that do not size work from max_seq_len: the same work in both modes
    for b in ("flashinfer-native", "triton-unified"):
        assert rows[b]["baseline_extra"] == {"pages": 0, "bytes": 0}
        assert rows[b]["max_seq_len_changes_work"] == "no"
    t = rows["trtllm-gen"]
    assert t["baseline_extra"]["pages"] == 0 and t["baseline_extra"]["ctas_launched"] > 0
    assert all(s["status"] in ("verified", "read in a copy", "assumption", "not verified") for s in t["sources"])
    assert all(s["file"] and s["function"] for r in rows.values() for s in r["sources"])
    assert rows["trtllm-gen"]["measured"] is None  # no GPU measurement is invented


def test_hopper_runs_no_kernel_that_walks_max_seq_len():
    trace = simulate(Scenario.from_spec("2p100o8_mml=4k_cg=piecewise"))
    for r in predict(trace, GPUS["H200"]):
        if not r["backend"].startswith("lab-"):
            assert r["baseline_extra"]["pages"] == 0 and r["baseline_extra"]["bytes"] == 0


def test_full_graph_steps_see_max_model_len_in_both_modes():
    trace = simulate(Scenario.from_spec("2p100o8_mml=4k_capture=1/2"))  # FULL replays (R9)
    assert all(st.cudagraph_mode == "FULL" for st in trace.steps[1:])
    r = {x["backend"]: x for x in predict(trace, GPUS["B200"], backends=["lab-torch-reference", "trtllm-gen"])}
    full_extra = sum(
        st.num_reqs_padded * (-(-st.kernel_max_seq_len["baseline"] // 16) - -(-st.kernel_max_seq_len["fixed"] // 16))
        for st in trace.steps
    )
    assert r["lab-torch-reference"]["baseline_extra"]["pages"] == full_extra


def test_measurement_shown_beside_prediction():
    import lab

    s = Scenario.from_spec("2p40o4_mml=1k_cg=piecewise")
    trace = lab.run(s, backend="torch-reference", device="cpu", steps=[0, 2], repeats=1, threads=1)
    rows = {r["backend"]: r for r in predict(trace, GPUS["CPU"])}
    me = rows["lab-torch-reference"]["measured"]
    assert me["steps_timed"] == 2 and me["baseline_ms"] > 0
    assert rows["lab-torch-reference"]["predicted"]["baseline"]["pages"] > 0  # beside, not instead
    assert rows["vllm-cpu"]["measured"] is None
    text = format_model(trace, list(rows.values()), HeadShape())
    assert "measured here" in text and "source [verified]" in text
    assert summary(list(rows.values()))[0]["backend"] == "vllm-cpu"
    # A CUDA timing names its device by the hardware ("NVIDIA H200"), its kind as "cuda": it is a GPU
    # measurement, shown on a GPU's rows and never on the CPU's (regression: the name was read).
    trace.meta["kernels"] = dict(trace.timings, device="NVIDIA H200", device_kind="cuda")
    assert {r["backend"]: r for r in predict(trace, GPUS["CPU"])}["lab-torch-reference"]["measured"] is None
    on_h200 = {r["backend"]: r for r in predict(trace, GPUS["H200"], backends=["lab-torch-reference"])}
    assert on_h200["lab-torch-reference"]["measured"]["device"] == "NVIDIA H200"


def test_cli_gpu_model(capsys):
    from lab.commands.main import main

    assert main(["gpu-model", "--spec", "2p100o8_mml=4k_cg=piecewise", "--gpu", "H100", "--gpu", "B200"]) == 0
    out = capsys.readouterr().out
    assert "trtllm-gen" in out and "fmhaKernels.cuh" in out and "H100" in out
    assert main(["gpu-model", "--spec", "2p100o8", "--gpu", "Z80"]) == 2
    with pytest.raises(ValueError):
        HeadShape(6, 4, 64, 2)


def test_predict_draft_pass_counts_each_pass_of_every_step():
    """predict_draft_pass: one draft pass of every step as a decode launch. The lab's reference walk reads
    rows_padded x cdiv(kernel max_seq_len, block_size) pages: 1 x cdiv(4096, 16) = 256 a step in the
    baseline under eager (every launch sees the metadata), fewer with the batch max."""
    from lab.gpu_model import predict_draft_pass

    trace = simulate(Scenario.from_spec("p100o8_k=3_mml=4k_cg=none"))
    row = predict_draft_pass(trace, GPUS["H200"], 1, 1, backends=["lab-torch-reference"])[0]
    steps = sum(1 for st in trace.steps for d in st.drafts if d.index == 1)
    assert steps == len(trace.steps)
    assert row["predicted"]["baseline"]["pages"] == 256 * steps
    assert row["predicted"]["fixed"]["pages"] < row["predicted"]["baseline"]["pages"]
    assert row["measured"] is None  # no kernel timed a draft pass
