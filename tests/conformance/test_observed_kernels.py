"""What each attention kernel is handed, observed: lab/gpu_model/observed.json is what vLLM 0.33.0's own builders
and forwards hand the kernels (lab/real_vllm/observe/, recorded at the compiled entry points) and nothing the lab
wrote by hand. Regenerated here from the installed wheel; a vLLM change in what a kernel receives fails this test.
Runs in ``.venv-vllm``: about 3.5 min on a loaded 2-core machine (vLLM imported twice; the FlashInfer subprocess is
the larger part; the three consumer cases, lab/real_vllm/observe/consumers.py, about 13 s of it)."""

from __future__ import annotations

import json
import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.real_vllm.observe.table import (  # noqa: E402
    FLASHINFER_BACKENDS,
    OUT,
    flashinfer_missing,
    observe_all,
    observe_flashinfer,
    render,
    without_flashinfer,
)

COMMITTED = json.loads(OUT.read_text())


@pytest.fixture(scope="module")
def table():
    return observe_all(flashinfer=False)


def test_the_committed_table_is_what_the_wheel_hands_the_kernels(table):
    assert render(table) == render(without_flashinfer(COMMITTED)), (
        "run .venv-vllm/bin/python -m lab.real_vllm.observe --write"
    )


@pytest.fixture(scope="module")
def flashinfer_rows():
    missing = flashinfer_missing()
    if missing:
        if os.environ.get("LAB_REQUIRE_VLLM") == "1":
            pytest.fail(f"make test needs FlashInfer for the FLASHINFER observation: {missing}")
        pytest.skip(missing)
    return observe_flashinfer()


def test_the_committed_flashinfer_rows_are_what_the_wheel_hands_the_kernels(flashinfer_rows):
    """FlashInfer 0.7.2.post1 from .vllm-flashinfer/ (make vllm-flashinfer), in a subprocess."""
    committed = [r for r in COMMITTED["rows"] if r["backend"] in FLASHINFER_BACKENDS]
    assert json.loads(json.dumps(flashinfer_rows)) == committed


def test_flashinfer_is_not_importable_in_this_process():
    """The observation's subprocess alone puts .vllm-flashinfer on sys.path (vLLM's selection here would change)."""
    import importlib.util

    assert importlib.util.find_spec("flashinfer") is None


def test_flashinfer_paths_as_vllm_picks_them(flashinfer_rows):
    """vLLM's own choice per stand-in GPU, and what each compiled op is handed: TRTLLM-gen gets the told
    max_seq_len (capture's on a FULL replay, the step's when eager; the prefill rows' context kernel the step's);
    XQA's kernel gets the block-table width x page size whatever it is told; native FlashInfer is handed no told
    length (its plan gets the step's own KV lengths)."""
    by = {(r["case"], r["step"], r["mode"]): r for r in flashinfer_rows}
    trt = "FlashInfer TRTLLM-gen (SM100)"
    assert by[trt, "eager", "fixed"]["launch"]["op"] == "trtllm_paged_attention_decode"
    assert by[trt, "eager", "fixed"]["launch"]["max_seq_len"] == by[trt, "eager", "fixed"]["told"] == 2049
    assert by[trt, "FULL replay", "fixed"]["launch"]["max_seq_len"] == 32768
    assert by[trt, "no graph", "fixed"]["launch"]["op"] == "trtllm_paged_attention_context"
    assert by[trt, "no graph", "fixed"]["launch"]["max_kv_len"] == 2048
    xqa = "FlashInfer XQA decode (SM90)"
    for mode in ("baseline", "fixed"):
        launch = by[xqa, "eager", mode]["launch"]
        assert launch["op"] == "xqa" and launch["max_seq_len"] == launch["page_table_width"] * 16 == 32768
    native = [r for r in flashinfer_rows if r["case"] == "FlashInfer native (SM80)"]
    assert native and all("max_seq_len" not in r["launch"] and "op" not in r["launch"] for r in native)
    for step in ("eager", "no graph"):
        base, fixed = by["FlashInfer native (SM80)", step, "baseline"], by["FlashInfer native (SM80)", step, "fixed"]
        assert base["told"] != fixed["told"] and base["launch"] == fixed["launch"]
        assert base["scheduler"]["kv_len_max"] == max(fixed["told"], 2048)
    # FlashInfer MLA at the compiled TRTLLM-gen op (flashinfer/mla/_core.py TrtllmGenMlaDecodeRunner.forward), not
    # at trtllm_batch_decode_with_kv_cache_mla: the "auto" choice, untuned, runs the TRTLLM-gen runner
    mla = "FlashInfer MLA (SM100, TRTLLM-gen)"
    assert {r["launch"]["op"] for r in flashinfer_rows if r["case"] == mla} == {"trtllm_paged_attention_decode"}
    assert by[mla, "eager", "fixed"]["launch"]["max_seq_len"] == 2049
    assert by[mla, "FULL replay", "fixed"]["launch"]["max_seq_len"] == 32768


def test_the_observation_is_not_vacuous(table):
    rows = table["rows"]
    backends = {r["backend"] for r in rows}
    assert {
        "FLASH_ATTN",
        "TRITON_ATTN",
        "FLASH_ATTN_MLA",
        "FLASHMLA",
        "TRITON_MLA",
        "CUTLASS_MLA",
        "FLEX_ATTENTION",
    } <= backends
    # every case recorded a launch on every step kind it has
    assert all(r["launch"] for r in rows)
    # W1 seen in vLLM's own builder: two window configs turn AOT scheduling off, one keeps it
    fa3 = {r["case"]: r for r in rows if r["record"] == "fa3" and r["step"] == "eager"}
    assert sorted(r["aot_schedule"] for r in fa3.values()) == [False, True]
    # the stand-in GPU picks the FlashAttention version as vLLM does: 2 on SM80, 3 on SM90, 4 on SM100
    versions = {r["gpu"]: r["fa_version"] for r in rows if r["backend"] == "FLASH_ATTN"}
    assert versions == {"A100-80GB": 2, "H200": 3, "B200": 4}
    assert json.loads(json.dumps(table)) == table  # plain JSON, no tensors


def test_flex_s_recorder_stands_where_forward_calls_the_compiled_kernel():
    """lab/real_vllm/observe/flex.py replaces ``flex_attention_compiled``: the wheel's module defines it as
    ``torch.compile(flex_attention, ...)`` and ``FlexAttentionImpl.forward`` launches through it, handed the block
    mask ``build`` made."""
    import inspect

    import vllm.v1.attention.backends.flex_attention as m

    from lab.real_vllm.observe.flex import ENTRY

    assert "flex_attention_compiled = torch.compile(flex_attention, fullgraph=True)" in inspect.getsource(m)
    forward = inspect.getsource(m.FlexAttentionImpl.forward)
    assert f"out = {ENTRY}(" in forward and "attn_metadata.block_mask," in forward


def test_each_blocked_consumer_is_stopped_by_the_line_named():
    """What is not observed names the installed wheel's line that stops it (lab/real_vllm/observe/table.py BLOCKED):
    that line, at that number, in that file of vLLM 0.33.0, inside that symbol."""
    import pathlib

    import vllm

    from lab.real_vllm.observe.table import BLOCKED

    root = pathlib.Path(vllm.__file__).resolve().parents[1]
    stops = [stop for entry in BLOCKED.values() for stop in entry.get("stops", [])]
    assert len(stops) >= 3
    for stop in stops:
        path, _, number = stop["at"].rpartition(":")
        lines = (root / path).read_text().splitlines()
        assert lines[int(number) - 1].strip() == stop["line"], stop
        owner, _, name = stop["symbol"].rpartition(".")
        defs = [x for x in lines[: int(number)] if x.lstrip().startswith("def ")]
        assert defs and f"def {name}(" in defs[-1], (stop, defs[-1:])
        if owner:
            classes = [x for x in lines[: int(number)] if x.startswith("class ")]
            assert classes and classes[-1].startswith(f"class {owner}("), (stop, classes[-1:])
