"""Regression tests for the wave-4 fact-check of issue 46: W1, W3, W4, W5, I1-I5, I15 (what each claim now says:
docs/rules.md and docs/kernels.md).
W2 (FA3's split count) is tests/test_fa3_splits.py. Each test failed on the code the review read."""

from __future__ import annotations

from lab.deployment import answer, resolve
from lab.deployment.selection import select_backend
from lab.gpu_model.backend_claims import FA3, TRTLLM
from lab.gpu_model.backends import BY_NAME, VLLM_BACKEND_OF
from lab.gpu_model.consumers import CONSUMERS
from lab.gpu_model.predict import fa3_aot_schedule, record_for
from lab.gpu_model.records import FROZEN, NOT_READ, REFRESHED, UNKNOWN
from lab.scenario import Scenario


def test_w1_fa3_without_aot_scheduling_is_frozen():
    # FlashAttentionMetadataBuilder.build: more than one sliding-window config -> aot_schedule False, no scheduler
    # metadata; a FULL replay keeps capture's max_seqlen_k. A sliding group beside the full one is two configs.
    gpt_oss = Scenario.from_spec("4p256o8_mml=32k_window=128")
    dense = Scenario.from_spec("4p256o8_mml=32k")
    assert not fa3_aot_schedule(gpt_oss) and fa3_aot_schedule(dense)
    assert record_for("fa3", gpt_oss).at_replay == FROZEN
    assert record_for("fa3", dense).at_replay == REFRESHED
    a = answer(resolve("vllm serve openai/gpt-oss-120b", "H200"))
    target = next(r for r in a.paths if r.path == "target" and r.era == "after #43991")
    assert target.kernel_reads == FROZEN and target.full_graph_steps > 0
    assert "refreshed at replay" not in target.kernel_text


def test_i1_the_scheduler_claim_names_the_aot_gate():
    ids = {c.id: c for c in FA3}
    assert ids["fa3.scheduler"].quote == "if not aot_schedule: return None"
    assert "fa3.aot_off" in ids and "fa3.window_configs" in ids


def test_w3_tokenspeed_mla_is_installed_with_the_wheel():
    # METADATA: Requires-Dist: tokenspeed-mla==2.0.3; platform_system == "Linux"
    c = select_backend(
        100, use_mla=True, head_size=576, num_heads=128, kv_cache_dtype="fp8", requested="TOKENSPEED_MLA"
    )
    assert c.vllm_name == "TOKENSPEED_MLA"
    assert dict(c.candidates)["TOKENSPEED_MLA"] == ()


def test_w4_cutlass_mla_reads_no_max_seq_len_and_no_record_is_unknown():
    rec = BY_NAME["cutlass-mla"]
    assert rec.at_replay == NOT_READ and rec.verdict == "no" and VLLM_BACKEND_OF["cutlass-mla"] == "CUTLASS_MLA"
    line = "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --kv-cache-dtype fp8 --attention-backend "
    cutlass = answer(resolve(line + "CUTLASS_MLA", "B200"))
    assert cutlass.headline.startswith("no change in work"), cutlass.headline
    # neither a record nor an observation: never an assumed launch scalar (an observed backend without a record,
    # TOKENSPEED_MLA, is answered from the observation: tests/test_observed_answers.py)
    neither = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --attention-backend TRITON_FLASH_ATTN"
    unknown = answer(resolve(neither, "H200"))
    assert unknown.headline.startswith("unknown"), unknown.headline
    assert {r.kernel_reads for r in unknown.paths if r.exists} == {UNKNOWN}
    assert all(r.kernel is None for r in unknown.paths)


def test_w5_i2_trtllm_prefill_gets_the_steps_told_value():
    ids = {c.id: c for c in TRTLLM}
    assert "prefill rows' max_seq_len" not in ids["trtllm.prefill"].says
    assert "decode rows included" in ids["trtllm.prefill_told"].says
    fi = next(c for c in CONSUMERS if c.name.startswith("FlashInfer fp8-KV prefill"))
    assert "decode rows included" in fi.does and "prefill rows' told value" not in " ".join(x.says for x in fi.claims)


def test_i3_triton_mla_partials_come_from_a_reserved_workspace():
    assert "workspace reserved at the worst case" in BY_NAME["triton-mla"].how


def test_i4_fa4_head_256_and_rocm_consumers_listed():
    names = [c.name for c in CONSUMERS]
    assert "FA4 head 256" in names
    assert any("ROCm" in n for n in names)


def test_i5_history_table_shows_mrv2_refused_hybrids():
    from lab.commands.doc_tables import eras

    rows = eras().splitlines()
    assert rows[2].count("— (MRV2 refused hybrids)") == 1 and rows[3].count("— (MRV2 refused hybrids)") == 1
    assert "refused" not in rows[4]


def test_i15_encoder_attention_reads_max_query_len():
    a = answer(resolve("vllm serve BAAI/bge-large-en-v1.5", "H200"))
    target = next(r for r in a.paths if r.path == "target" and r.era == "after #43991")
    assert target.kernel_reads == NOT_READ and a.work.verdict == "no"


def test_i9_fa3_pins_with_the_builder_time_mode():
    # GPUModelRunner.initialize_kv_cache builds the attention builders (FlashAttentionMetadataBuilder.__init__ reads
    # cudagraph_mode.has_full_cudagraphs()) before resolve_cudagraph_mode_and_sizes downgrades the mode: a FULL mode
    # downgraded to PIECEWISE (spec decode with a UNIFORM_SINGLE_TOKEN_DECODE builder elsewhere) still pins FA3.
    from lab.deployment.selection import resolve_cudagraph
    from lab.gpu_model.predict import pinned_split_tokens

    g = resolve_cudagraph(
        None,
        enforce_eager=False,
        vllm_backend="FLASH_ATTN",
        uniform_decode_query_len=3,
        sm=90,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        num_speculative_tokens=2,
        other_support="UNIFORM_SINGLE_TOKEN_DECODE",
    )
    assert (g.vllm_mode, g.builder_mode) == ("PIECEWISE", "FULL_AND_PIECEWISE")
    piecewise = Scenario.from_spec("4p256o8_mml=32k_cg=piecewise")
    assert pinned_split_tokens(piecewise) == 0
    assert pinned_split_tokens(piecewise, g.builder_mode) == 512
