"""The deployment answer (lab/deployment) for five deployments, against values derived by hand from vLLM
0.33.0's source (each in the comment beside it), on one request: a 1,000-token prompt generating 8 tokens
(``p1000o8``), so step 0 is its prefill (one chunk: 1,000 <= max_num_batched_tokens) and every later step
a decode of that one request."""

from __future__ import annotations

import re

import pytest

from lab.deployment import ServeLineError, Workload, answer, resolve
from lab.deployment.report import DEPLOYMENTS, deployments_table, format_markdown, format_text, models_table
from lab.history import ERAS

ONE = Workload(spec="p1000o8")
B40654, A40654, A43991 = ERAS


def _rows(a, era):
    return {r.path: r for r in a.paths if r.era == era}


def test_llama_eagle3_on_h200():
    a = answer(
        resolve(
            "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32k --speculative-config "
            '\'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}\'',
            "H200",
        ),
        ONE,
    )
    d = a.resolved_text
    # vllm/platforms/cuda.py _get_backend_priorities, SM 9.x non-MLA: [FLASH_ATTN, FLASHINFER, ...]; FA3 takes
    # head size 128 in bf16 (flash_attn.py FlashAttentionBackend.validate_configuration): FLASH_ATTN first.
    assert d["attention backend"].startswith("FLASH_ATTN (lab model: fa3)")
    # vllm/engine/arg_utils.py get_batch_defaults: >= 70 GiB and not an A100 -> 1024 seqs, 8192 tokens (serve)
    assert "max_num_seqs 1024, max_num_batched_tokens 8,192" in d["scheduler"]
    # human_readable_int: "32k" = 32,000. Before #40654 every path is told max_model_len.
    assert {r.told_text for r in _rows(a, B40654).values()} == {"max_model_len (32,000)"}
    after = _rows(a, A43991)
    # Step 0 (the prefill): the target is told the batch's seq_lens_cpu_upper_bound max, 1,000
    # (model_states/default.py prepare_attn, #40654); a prefill is a mixed batch, so PIECEWISE graphs. The decode
    # steps replay FULL graphs captured with max_model_len, but FA3's split plan is the scheduler metadata build()
    # refreshes each step (R9, refreshed at replay): its launch scalar max_seqlen_k alone keeps max_model_len.
    assert after["target"].told_text.startswith("batch max 1,000-")
    assert after["target"].kernel_text.startswith(
        after["target"].told_text + " (refreshed at replay by the FLASH_ATTN builder"
    )
    assert after["target"].kernel_text.endswith("FULL steps (deciding no work)")
    # Draft pass 0 reuses the target metadata; passes 1-2 are told min(max(ub) + K, max_model_len) = 1,003 at
    # step 0 (spec_decode/speculator.py, #43991); before #43991 (0.22.1's eagle/speculator.py) max_model_len.
    assert after["draft pass 0"].told_text == after["target"].told_text
    assert after["draft pass 1"].told_text.startswith("batch max 1,003")
    assert _rows(a, A40654)["draft pass 1"].told_text == "max_model_len (32,000)"
    # W2: FA3's own num_splits_heuristic gives the same split count in both modes on the one unpinned step
    # (the 1,000-token prefill's m-blocks fill the SMs: 1 split), so nothing changes on this workload.
    assert a.headline.startswith(
        "not on this workload: the target pass and draft pass 0 told FLASH_ATTN "
        "max_model_len (32,000) until 0.20.0 (#40654), draft passes 1-2 until 0.23.0 (#43991); since then the "
        "batch max; FLASH_ATTN (fa3) could follow it, but FA3's split heuristic gives the same split count"
    )


def test_deepseek_mtp_mla_on_h200_and_b200():
    line = "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --spec-method mtp --spec-tokens 1"
    h200, b200 = resolve(line, "H200"), resolve(line, "B200")
    # cuda.py _get_backend_priorities, MLA: SM 9.x [FLASH_ATTN_MLA, FLASHMLA, FLASHINFER_MLA, TRITON_MLA]; SM 10.x
    # [FLASHINFER_MLA, TOKENSPEED_MLA, CUTLASS_MLA, ...]; head size 576 = kv_lora_rank 512 + qk_rope_head_dim 64.
    assert (h200.backend.vllm_name, b200.backend.vllm_name) == ("FLASH_ATTN_MLA", "FLASHINFER_MLA")
    # config.json max_position_embeddings 163,840 (model.py _get_and_verify_max_len); MTP with
    # num_nextn_predict_layers 1 and K=1: MTPSpeculator (init_speculator; use_multi_module_mtp needs min(., K) > 1)
    assert (h200.settings["max_model_len"], h200.method, h200.k) == (163840, "mtp", 1)
    a = answer(h200, ONE)
    # K=1: the only draft pass reuses the target metadata, fixed with it by #40654
    assert set(_rows(a, A40654)) == {"target", "draft pass 0"}
    assert a.headline.startswith(
        "not on this workload: the target pass and draft pass 0 told FLASH_ATTN_MLA max_model_len (163,840) until "
        "0.20.0 (#40654)"
    )
    # Step 0 (the prompt) has no decode row: FlashAttention MLA launches no decode kernel there (issue 35 audit,
    # item 3; it used to count the split heuristic's KV blocks); every decode step is pinned at 32 splits.
    assert a.headline.endswith("on every step of this workload with a decode launch: max_seqlen_k decides no split")


def test_qwen3_next_hybrid_mtp():
    dep = resolve(
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
        '\'{"method": "qwen3_next_mtp", "num_speculative_tokens": 2}\'',
        "H200",
    )
    # speculative.py: "method `qwen3_next_mtp` is deprecated and replaced with mtp"; one MTP layer -> MTPSpeculator
    assert (dep.method, dep.settings["model_state"]) == ("mtp", "mamba_hybrid")
    a = answer(dep, ONE)
    # MambaHybridModelState.prepare_attn passed max_model_len until #43991 (0.19.1's and 0.22.1's MRV2 refuse
    # hybrids, the lab shows their era's code path): the target changed with the drafts, in 0.23.0.
    assert _rows(a, A40654)["target"].told_text == "max_model_len (262,144)"
    assert _rows(a, A43991)["target"].told_text.startswith("batch max 1,000")
    # On 0.22.1 MRV2 runs no hybrid (_get_v2_model_runner_unsupported_features: "hybrid/mamba models"): V1, said so;
    # the era is still the release's own (after #40654), the replay uses 0.32's bookkeeping.
    old = resolve(dep.line, "H200", "0.22.1")
    a22 = answer(old, ONE)
    assert a22.headline.startswith(
        "not answered: vLLM 0.22.1 runs this deployment on Model Runner V1 (MRV2 runs no hybrid/mamba model"
    )
    assert (a22.era, old.series) == (A40654, "0.32")
    assert "the target pass and draft passes 0-1 told FLASH_ATTN max_model_len (262,144) until 0.23.0" in a.headline


def test_gpt_oss_on_b200_sliding_windows_and_sinks():
    dep = resolve("vllm serve openai/gpt-oss-120b", "B200")
    # SM 10.x non-MLA priorities start with FLASHINFER, which takes sinks there; decode kernel TRTLLM-gen
    # (flashinfer.py FlashInferMetadataBuilder: can_use_trtllm_attention on 10.x)
    assert (dep.backend.vllm_name, dep.backend.lab_backend) == ("FLASHINFER", "trtllm-gen")
    # get_batch_defaults: >= 160 GiB (B200) -> 16384 tokens; the 128-token sliding layers (R11)
    assert (dep.settings["max_num_batched_tokens"], dep.settings["sliding_window"]) == (16384, 128)
    a = answer(dep, ONE)
    # One request: its decode steps are uniform batches, FULL graphs captured with max_model_len (R9); its prefill
    # goes to TRTLLM-gen's context kernel (not modelled), so no predicted extra on this workload.
    assert a.headline.startswith("not on this workload: the target pass told FLASHINFER max_model_len (131,072) until")
    assert a.headline.endswith(
        "on its decode steps FLASHINFER's launch is handed the same max_seq_len in both modes (observed), and "
        "the prefill rows go to a context kernel the lab does not model"
    )


def test_encoder_only_embedding_and_v1_fallbacks():
    dep = resolve("vllm serve BAAI/bge-large-en-v1.5", "H200")
    # BertModel: encoder-only; max_position_embeddings 512; VllmConfig: async scheduling off for pooling models
    assert (dep.settings["model_state"], dep.settings["max_model_len"], dep.settings["async_scheduling"]) == (
        "encoder_only",
        512,
        False,
    )
    a = answer(dep, ONE)
    assert a.headline == (
        "no: MRV2's encoder-only model state came in vLLM 0.27.0, after #43991; attention has been told the batch "
        "max since"
    )
    # vllm/config/vllm.py _get_v2_model_runner_unsupported_features: suffix decoding runs Model Runner V1
    v1 = resolve('vllm serve Qwen/Qwen3-8B --speculative-config \'{"method": "suffix"}\'', "H200")
    assert answer(v1, ONE).headline.startswith("not answered: vLLM 0.33.0 runs this deployment on Model Runner V1")


def test_eager_shows_the_metadata_to_the_kernel_at_every_step():
    a = answer(resolve("vllm serve Qwen/Qwen3-8B --enforce-eager", "H200"), ONE)
    # enforce_eager: CUDAGraphMode.NONE (vllm.py __post_init__): no FULL replay hides the fix (R9)
    target = _rows(a, A43991)["target"]
    assert target.kernel_text == target.told_text


@pytest.mark.parametrize(
    "line, gpu, message",
    [
        ("vllm serve Qwen/Qwen3-8B --max-model-len 64k", "H200", "longer than Qwen/Qwen3-8B's 40,960"),
        ("vllm serve Qwen/Qwen3-8B", "A100", "--gpu A100: not a GPU the lab knows; one of A100-40GB, A100-80GB"),
        ("vllm serve BAAI/bge-large-en-v1.5 --spec-method ngram --spec-tokens 2", "H200", "no decode to speculate"),
        ("vllm serve Qwen/Qwen3-8B --speculative-config.method eagle3", "H200", "tokens must be provided"),
        ("vllm serve Qwen/Qwen3-8B --attention-backend FLASHMLA", "H200", "not valid for this configuration"),
    ],
)  # fmt: skip
def test_deployments_vllm_refuses_are_refused(line, gpu, message):
    with pytest.raises((ServeLineError, ValueError), match=message):
        resolve(line, gpu)


def test_text_and_markdown_carry_the_replay():
    a = answer(resolve(DEPLOYMENTS[0][1], DEPLOYMENTS[0][2]), ONE)
    assert 'python -m lab simulate --spec "p1000o8_mml=32000_k=3' in format_text(a)
    assert format_markdown(a).startswith("### Not on this workload\n\n**the target pass")


def test_docs_deployments_md_is_the_labs_table():
    """docs/deployments.md's table is computed: regenerate it with python -m lab deployment --table."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "deployments.md").read_text()
    table = deployments_table()
    assert len(table.splitlines()) >= 12
    assert table in doc, "docs/deployments.md differs from `python -m lab deployment --table`: regenerate it"
    assert models_table() in doc


def test_a_model_from_its_config_json(tmp_path):
    """A model outside the table: its config.json (--config), here a Mixtral-like MoE with a 32k context."""
    import json

    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["MixtralForCausalLM"],
                "model_type": "mixtral",
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "max_position_embeddings": 32768,
                "num_local_experts": 8,
                "torch_dtype": "bfloat16",
            }
        )
    )
    dep = resolve("vllm serve my-org/my-mixtral --enforce-eager", "H100", config_path=str(tmp_path))
    # head size 4096 / 32 = 128; FLASH_ATTN on SM90; --enforce-eager: no graphs, no capture sizes
    assert (dep.model.kind, dep.model.head_size, dep.settings["max_model_len"]) == ("dense", 128, 32768)
    a = answer(dep, ONE)
    assert a.resolved_text["capture sizes"] == "none (no CUDA graphs)"
    assert re.match(
        r"slightly, on \d+ of \d+ steps \(no extra bytes read\): the target pass told FLASH_ATTN "
        r"max_model_len \(32,768\) until 0\.20\.0",
        a.headline,
    ), a.headline


def test_draft_pass_work():
    """The draft passes' predicted work (lab/gpu_model predict_draft_pass): which passes, their query."""
    eager = answer(
        resolve(
            "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32k --enforce-eager --speculative-config "
            '\'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}\'',
            "H200",
        ),
        ONE,
    )
    drafts = eager.work.drafts
    # Pass 0 reuses the target metadata (its work is the target's again); passes 1-2 decode one token a request.
    assert [(d.path, d.q_len) for d in drafts] == [("draft pass 1", 1), ("draft pass 2", 1)]
    # FA3's split count (hopper/flash_api.cpp get_num_splits -> heuristics.h num_splits_heuristic, restated in
    # lab/gpu_model/fa3_splits.py): eager, every draft decode launch is unpinned; one row, 8 KV heads x 1 m-block.
    # With max_model_len's 250 KV blocks of 128 15 splits (the fewest within 85 % of the best: 120 of 132 SMs);
    # with the batch max's 8 blocks 7 (56 of 132 SMs, within 85 % of 8 splits' 64).
    steps = eager.workload.steps
    assert eager.work.quantity == "num_splits"
    assert all(d.baseline == 15 * steps and d.fixed == 7 * steps for d in drafts)
    assert "more num_splits in draft passes 1-2" in eager.headline
    # DFlash's one pass: 1 + K query tokens a request (DFlashSpeculator.__init__: "bonus + N mask")
    dflash = answer(
        resolve(
            "vllm serve Qwen/Qwen3-8B --speculative-config "
            '\'{"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 7}\'',
            "H200",
        ),
        ONE,
    )
    assert [(d.path, d.q_len) for d in dflash.work.drafts] == [("draft pass 0", 8)]


def test_the_verdict_says_its_scale_first_never_a_bare_yes():
    # Issue 37 M4: a bold "Yes" where the kernel saw the change on 5 of 260 steps and no byte more was read.
    # (FA3 on H200 no longer serves: its split heuristic gives the same count in both modes here, W2.)
    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 --enforce-eager"
    a = answer(resolve(line, "B200"))
    w = a.work
    assert 0 < w.steps_changed < w.steps == a.workload.steps and w.extra_bytes == 0
    assert a.headline.startswith(f"slightly, on {w.steps_changed} of {w.steps} steps (no extra bytes read)")
    for dep_line, gpu in [(ln, g) for _, ln, g in DEPLOYMENTS]:
        head = answer(resolve(dep_line, gpu)).headline
        assert not head.startswith("yes:"), head
        if head.startswith(("yes", "slightly")):
            assert re.match(r"(yes|slightly), on [\d,]+ of [\d,]+ steps \(", head), head
