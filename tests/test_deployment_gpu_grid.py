"""Every GPU ``--gpu`` lists answers every kind of line (issue 47): dense, MoE, MLA, mamba hybrid, sliding window,
multimodal, pooling (an encoder-only model and ``--runner pooling`` on a decoder) and encoder-decoder. Before,
every line on the A10G (SM86) ended in an internal error: the Scenario took no capability 86."""

from __future__ import annotations

import pytest

from lab.deployment import resolve
from lab.deployment.grid import LINE_KINDS, Cell, grid_cells, grid_table
from lab.deployment.resolve import DEPLOYMENT_GPUS
from lab.gpu_model.gpus import GPUS
from lab.scenario import Scenario
from lab.spec_grammar import DEVICE_CAPABILITIES

LINES = LINE_KINDS


def test_every_listed_gpu_is_a_capability_the_scenario_takes():
    assert {GPUS[g].sm for g in DEPLOYMENT_GPUS} <= set(DEVICE_CAPABILITIES)
    assert Scenario.from_spec("p100o8_sm=86").device_capability == 86  # the A10G's; refused before


@pytest.fixture(scope="module")
def cells():
    return grid_cells()


def test_every_gpu_answers_every_line_kind(cells):
    assert {(c.gpu, c.kind) for c in cells} == {(g, k) for g in DEPLOYMENT_GPUS for k in LINE_KINDS}
    for c in cells:
        assert c.deployment is not None, (c.gpu, c.kind, c.verdict)  # every cell is answered, none refused
        dep = c.deployment
        assert dep.settings["device_capability"] == GPUS[c.gpu].sm, (c.gpu, c.kind)
        assert c.verdict and c.answer.resolved_text["gpu"].startswith(GPUS[c.gpu].name), (c.gpu, c.kind)
        assert c.text().startswith(dep.backend.vllm_name), (c.gpu, c.kind)


def test_the_grid_command_prints_every_cell(cells, capsys):
    table = grid_table(cells)
    rows = [r for r in table.splitlines() if r.startswith("| ") and r.split(" | ")[0][2:] in DEPLOYMENT_GPUS]
    assert len(rows) == len(DEPLOYMENT_GPUS) and all(r.count(" | ") == len(LINE_KINDS) for r in rows)
    a10g = next(r for r in rows if r.startswith("| A10G |"))
    assert "FLASH_ATTN, " in a10g and "TRITON_ATTN, " in a10g  # dense on FA2, gpt-oss's sinks on Triton (below)
    refused = grid_table([Cell("L4", "dense", LINES["dense"], None, None, "refused: why")])
    assert "| L4 | refused: why |" in refused


def test_a10g_dense_by_hand():
    """A10G: 23,028 MiB < 70 GiB, so get_batch_defaults' smallest column (256 seqs, 2,048 tokens); SM86 runs
    FlashAttention 2 (fa_utils.py get_flash_attn_version: FA3 needs 9.x); gpt-oss's sinks need SM90 in
    FlashAttention (FlashAttentionBackend.supports_combination), so TRITON_ATTN takes it."""
    dep = resolve(LINES["dense"], "A10G")
    assert (dep.settings["max_num_seqs"], dep.settings["max_num_batched_tokens"]) == (256, 2048)
    assert dep.backend.vllm_name == "FLASH_ATTN"
    assert any("FlashAttention 2" in n for n in dep.notes)
    assert resolve(LINES["sliding window"], "A10G").backend.vllm_name == "TRITON_ATTN"


def test_a_chosen_kernel_the_lab_models_has_its_work_on_every_gpu(cells):
    """Where the lab has a work record of the kernel a cell runs, that record runs on the cell's GPU (vLLM's
    gates: tests/conformance/test_backend_records_vllm.py). Before, TRTLLM-gen and FlashInfer MLA ran on SM100
    only and Triton on SM90/SM100 only: B300 answered "the lab has no work model of FLASHINFER" where B200 gave
    the work, and the SM8x GPUs the same for Triton and Triton MLA."""
    from lab.gpu_model import BY_NAME

    for c in cells:
        record = c.deployment.backend.lab_backend
        if record in BY_NAME:
            assert c.answer.work is not None, (c.gpu, c.kind, record, c.verdict)
    b200, b300 = ({c.kind: c.verdict for c in cells if c.gpu == g} for g in ("B200", "B300"))
    assert b300 == b200  # one kernel, one SM count (B300's 148 SMs assumed as on B200): one verdict


@pytest.mark.parametrize(("gpu", "batch"), [("RTX-5090", (256, 2048)), ("RTX-PRO-6000", (1024, 8192))])
def test_sm120_rows_by_hand(gpu, batch):
    """Consumer and workstation Blackwell (GB202, SM120; issue 47: many public 0.2x logs run on them). The batch
    defaults follow memory (get_batch_defaults: the RTX 5090's 32,607 MiB < 70 GiB, the RTX PRO 6000's 97,887 MiB
    >= 70 GiB); FLASH_ATTN runs FA2 (get_flash_attn_version: FA3 needs 9.x, FA4 the SM100 family); gpt-oss's sinks
    go to FLASHINFER, whose decode on SM12x is XQA (supports_trtllm_attention) and whose work the lab models (before
    the XQA record ran on SM90 only: no work); MLA's 12.x priorities put TRITON_MLA first."""
    dense = resolve(LINES["dense"], gpu)
    assert GPUS[gpu].sm == 120 and dense.settings["device_capability"] == 120
    assert (dense.settings["max_num_seqs"], dense.settings["max_num_batched_tokens"]) == batch
    assert dense.backend.vllm_name == "FLASH_ATTN" and any("FlashAttention 2" in n for n in dense.notes)
    sinks = resolve(LINES["sliding window"], gpu)
    assert (sinks.backend.vllm_name, sinks.backend.lab_backend) == ("FLASHINFER", "flashinfer-xqa")
    assert resolve(LINES["mla"], gpu).backend.vllm_name == "TRITON_MLA"


@pytest.mark.parametrize("release", ["0.19.1", "0.22.1"])
def test_sm120_older_releases_run_gpt_oss_on_triton(release):
    """In 0.19.1 / 0.22.1 FlashInfer serves sinks only where supports_trtllm_attention holds, the SM100 family (no
    XQA decode on SM90/SM12x yet): gpt-oss on an RTX 5090 runs TRITON_ATTN there (FA2 has no sinks either), and a
    FlashInfer line decodes with the native wrapper. Before, the lab answered FLASHINFER with XQA decode, 0.33.0's
    rule (tests/conformance/test_release_sinks_source.py runs the releases' own functions)."""
    assert resolve(LINES["sliding window"], "RTX-5090", release).backend.vllm_name == "TRITON_ATTN"
    assert resolve(LINES["sliding window"], "B200", release).backend.vllm_name == "FLASHINFER"
    forced = resolve(LINES["dense"] + " --attention-backend FLASHINFER", "RTX-5090", release)
    assert forced.backend.lab_backend == "flashinfer-native"
