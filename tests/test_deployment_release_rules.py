"""An older release resolved with its own rules (issue 47): vLLM 0.19.1 and 0.22.1's EngineArgs.get_batch_defaults has
no >= 160 GiB tier (a B200 gets 8,192 tokens, not 16,384) and their VllmConfig._set_cudagraph_sizes caps every GPU at
512 and appends no uniform-decode size (0.19.1 not even an off-stride max_num_batched_tokens); their graph mode
(lab/deployment/graph_rules.py), kernel block sizes and MLA order are theirs too.
tests/conformance/test_release_rules_source.py runs those releases' own functions from their source."""

from __future__ import annotations

import pytest

from lab.deployment.answer import Workload, answer
from lab.deployment.answer_json import answer_json
from lab.deployment.resolve import resolve
from lab.deployment.scheduling import VllmRefusal, rules_release

QWEN = "vllm serve Qwen/Qwen3-8B --max-model-len 8192"


@pytest.mark.parametrize(
    "vllm, seqs, tokens, top",
    [
        ("0.33.0", 1024, 16384, 1024),
        ("0.22.1", 1024, 8192, 512),
        ("0.20.2", 1024, 8192, 512),
        ("0.19.1", 1024, 8192, 512),
    ],
)
def test_a_b200_takes_its_releases_defaults_and_ceiling(vllm, seqs, tokens, top):
    dep = resolve(QWEN, "B200", vllm=vllm)
    assert (dep.settings["max_num_seqs"], dep.settings["max_num_batched_tokens"]) == (seqs, tokens)
    assert dep.graphs.resolved_capture_sizes[-1] == top
    resolved = answer_json(answer(dep, Workload(2, 64, 4)))["resolved"]
    assert resolved["cudagraph_capture_sizes"][-1] == top


def test_the_decode_size_and_the_off_stride_budget_follow_the_release():
    seqs100 = QWEN + " --max-num-seqs 100"
    assert 100 in resolve(seqs100, "H100").graphs.resolved_capture_sizes  # 0.33.0 appends the decode size
    assert 100 not in resolve(seqs100, "H100", vllm="0.22.1").graphs.resolved_capture_sizes
    budget = QWEN + " --max-num-batched-tokens 300 --enable-chunked-prefill"
    assert 300 in resolve(budget, "H100", vllm="0.22.1").graphs.resolved_capture_sizes
    assert 300 not in resolve(budget, "H100", vllm="0.19.1").graphs.resolved_capture_sizes


def test_the_answer_says_which_releases_rules_it_follows():
    assert [rules_release(v) for v in ("0.19.1", "0.21.0", "0.22.1", "0.23.0", "0.33.0")] == [
        "0.19.1", "0.22.1", "0.22.1", "0.33.0", "0.33.0"
    ]  # fmt: skip
    notes = resolve(QWEN, "B200", vllm="0.22.1").notes
    said = next(n for n in notes if "as vLLM 0.22.1 wrote them" in n)
    assert "the graph mode's steps" in said and "kernel block sizes" in said  # the release's own, no longer 0.33.0's
    assert "get_cudagraph_support" in said
    assert "a hybrid's block alignment" in said and "Platform._align_hybrid_block_size" in said
    assert "backend priorities and checks" in said and "validate_configuration" in said
    assert said.endswith("the lab's model of vLLM 0.33.0's wheel (its vllm_flash_attn is not in the source read)")
    assert "HybridAttentionMambaModelConfig" in next(
        n for n in resolve(QWEN, "B200", vllm="0.19.1").notes if "wrote" in n
    )
    assert not any("wrote them" in n for n in resolve(QWEN, "B200").notes)


@pytest.mark.parametrize(
    "gpu, vllm, backend",
    [
        # 0.33.0 on SM100: FLASHINFER has no mm prefix, FLASH_ATTN's FA4 does (TRITON_FLASHINFER is refused with
        # gemma-3's unclamped sliding window); 0.19.1 / 0.22.1: only TRITON_ATTN and FLEX_ATTENTION declare it
        ("B200", "0.33.0", "FLASH_ATTN"),
        ("B200", "0.19.1", "TRITON_ATTN"),
        ("B200", "0.22.1", "TRITON_ATTN"),
        ("H100", "0.22.1", "TRITON_ATTN"),
        ("A100-80GB", "0.22.1", "TRITON_ATTN"),
    ],
)
def test_an_mm_prefix_lm_takes_its_releases_backend(gpu, vllm, backend):
    dep = resolve("vllm serve google/gemma-3-27b-it --max-model-len 8192", gpu, vllm=vllm)
    assert dep.backend.vllm_name == backend


def test_a_plain_model_keeps_its_backend_in_every_release():
    for vllm in ("0.19.1", "0.22.1", "0.33.0"):
        assert resolve(QWEN, "H100", vllm=vllm).backend.vllm_name == "FLASH_ATTN"
        assert resolve(QWEN, "B200", vllm=vllm).backend.vllm_name == "FLASHINFER"


LLAMA = "vllm serve meta-llama/Llama-3.1-8B-Instruct "
EAGLE3 = (
    """--speculative-config '{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","""
    """"num_speculative_tokens":3}'"""
)


def test_spec_decode_rounds_the_capture_sizes_in_the_older_releases():
    """adjust_cudagraph_sizes_for_spec_decode: 0.22.1 (both runners) and 0.19.1's and 0.33.0's V1 runners round
    every size up to a multiple of 1 + K under FULL decode graphs; 0.33.0's MRV2 and 0.19.1's MRV2 do not."""
    assert resolve(LLAMA + EAGLE3, "H100").graphs.resolved_capture_sizes[:3] == (1, 2, 4)
    for vllm in ("0.22.1", "0.19.1"):
        dep = resolve(LLAMA + EAGLE3, "H100", vllm=vllm)
        sizes = dep.graphs.resolved_capture_sizes
        assert sizes[:4] == (4, 8, 16, 24) and sizes[-1] == 512 and all(s % 4 == 0 for s in sizes)
        assert dep.settings["cudagraph_capture_sizes"] == sizes  # the replay captures what vLLM captures
        assert any("rounds the capture sizes up to multiples of 4" in n for n in dep.notes)
    mrv2 = resolve("VLLM_USE_V2_MODEL_RUNNER=1 " + LLAMA + EAGLE3, "H100", vllm="0.19.1")
    assert mrv2.runs_mrv2 and mrv2.graphs.resolved_capture_sizes[:3] == (1, 2, 4)
    v1 = resolve("VLLM_USE_V2_MODEL_RUNNER=0 " + LLAMA + EAGLE3, "H100")  # 0.33.0's V1 runner ("MRV1 adjusts")
    assert not v1.runs_mrv2 and v1.graphs.resolved_capture_sizes[:3] == (4, 8, 16)


def test_a_piecewise_mode_without_compilation_is_none_in_the_older_releases():
    line = LLAMA + """-cc '{"mode":0}'"""
    assert resolve(line, "H100").graphs.vllm_mode == "FULL_DECODE_ONLY"  # 0.33.0: without_piecewise
    for vllm in ("0.22.1", "0.19.1"):
        graphs = resolve(line, "H100", vllm=vllm).graphs
        assert (graphs.vllm_mode, graphs.resolved_capture_sizes) == ("NONE", ())


def test_a_pooling_override_left_piecewise_without_compilation_is_refused_by_the_older_releases():
    line = """vllm serve Qwen/Qwen3-8B --runner pooling -cc '{"mode":0,"cudagraph_mode":"FULL"}'"""
    assert resolve(line, "H100").graphs.vllm_mode == "NONE"  # 0.33.0 normalises the PIECEWISE override again
    for vllm in ("0.22.1", "0.19.1"):
        with pytest.raises(VllmRefusal, match=f"vLLM {vllm} would not start this: AssertionError: Compilation mode"):
            resolve(line, "H100", vllm=vllm)


def test_the_019_mrv2_captures_the_configured_mode():
    """0.19.1's MRV2 GPUModelRunner checks no builder's CUDA-graph support; its V1 runner and 0.33.0 downgrade
    FULL on FLASHINFER (UNIFORM_BATCH) to FULL_AND_PIECEWISE."""
    line = """vllm serve Qwen/Qwen3-8B -cc '{"cudagraph_mode":"FULL"}'"""
    assert resolve(line, "B200").graphs.vllm_mode == "FULL_AND_PIECEWISE"
    assert resolve(line, "B200", vllm="0.19.1").graphs.vllm_mode == "FULL_AND_PIECEWISE"  # V1 runs
    dep = resolve("VLLM_USE_V2_MODEL_RUNNER=1 " + line, "B200", vllm="0.19.1")
    assert dep.runs_mrv2 and dep.graphs.vllm_mode == "FULL"
    assert any("captures cudagraph_mode FULL as configured" in n for n in dep.notes)


def test_the_older_kernel_block_sizes_and_mla_order():
    from lab.deployment.backend_rules import backend_priorities
    from lab.deployment.selection import select_backend

    def block(rule):  # FlashAttention 4's head-256 page size is 0.33.0's only
        return select_backend(100, use_mla=False, head_size=256, num_heads=16, requested="FLASH_ATTN", rule=rule)

    assert [block(r).block_size for r in ("0.33.0", "0.22.1", "0.19.1")] == [128, 16, 16]
    v3 = "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --kv-cache-dtype fp8"
    names = {v: [c[0] for c in resolve(v3, "B200", vllm=v).backend.candidates] for v in ("0.33.0", "0.22.1", "0.19.1")}
    assert "TOKENSPEED_MLA" in names["0.22.1"] and "TOKENSPEED_MLA" not in names["0.19.1"]
    assert names["0.19.1"][0] == "FLASHINFER_MLA"
    assert backend_priorities(120, use_mla=True, rule="0.22.1")[0] == "FLASH_ATTN_MLA"  # 0.33.0: TRITON_MLA first
    assert backend_priorities(120, use_mla=True)[0] == "TRITON_MLA"


def test_the_older_builders_cudagraph_support_downgrades_the_mode():
    """0.19.1's TritonMLA builder (MLACommonMetadataBuilder) sets no support (NEVER): DeepSeek-V3 on A100 runs
    PIECEWISE there; 0.19.1 / 0.22.1's FlashInfer builder is UNIFORM_BATCH only on SM 10.x (TRTLLM), so EAGLE-3 on
    an H100 with FLASHINFER cannot graph its 4-token decodes; their FlashAttention builder is ALWAYS with FA3 only."""
    v3 = "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8"
    modes = {v: resolve(v3, "A100-80GB", vllm=v).graphs.vllm_mode for v in ("0.33.0", "0.22.1", "0.19.1")}
    assert modes == {"0.33.0": "FULL_AND_PIECEWISE", "0.22.1": "FULL_AND_PIECEWISE", "0.19.1": "PIECEWISE"}
    fi = LLAMA + EAGLE3 + " --attention-backend FLASHINFER"
    assert [resolve(fi, "H100", vllm=v).graphs.vllm_mode for v in ("0.33.0", "0.22.1")] == [
        "FULL_AND_PIECEWISE",
        "PIECEWISE",
    ]
    fa = LLAMA + """-cc '{"cudagraph_mode":"FULL"}' --attention-backend FLASH_ATTN"""
    assert [resolve(fa, "B200", vllm=v).graphs.vllm_mode for v in ("0.33.0", "0.22.1")] == [
        "FULL",
        "FULL_AND_PIECEWISE",
    ]


NEXT = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4"
JAMBA = "vllm serve ai21labs/AI21-Jamba-1.5-Mini --max-model-len 32k"


@pytest.mark.parametrize(
    "line, blocks",
    [
        # 0.33.0 turns prefix caching on for a hybrid (mode "align": FlashInfer GDN checkpoints on 64 tokens on SM90);
        # 0.22.1 and 0.19.1 leave it off ("still experimental") and have no checkpoint grid: 16 x cdiv(274,432, 16,384)
        (NEXT, (320, 272, 272)),
        (NEXT + " --enable-prefix-caching", (320, 272, 272)),  # mode "align" in all three; the grid is 0.33.0's
        # --block-size 64: 0.22.1 aligns on max(kernel block, 64); 0.19.1 on its fixed 16 (272 > 64)
        (NEXT + " --block-size 64", (320, 320, 272)),
        # Jamba supports mamba prefix caching in 0.19.1 / 0.22.1: mode "all" aligns to its chunk, 2,048 for Mamba1
        (JAMBA + " --enable-prefix-caching", (80, 2048, 2048)),
        (JAMBA + " --enable-prefix-caching --mamba-block-size 512", (80, 512, 512)),  # the user's chunk
        (JAMBA, (80, 80, 80)),
    ],
)
def test_a_hybrids_block_alignment_is_its_releases(line, blocks):
    deps = [resolve(line, "H200", vllm=v) for v in ("0.33.0", "0.22.1", "0.19.1")]
    assert tuple(d.vllm_block_size for d in deps) == blocks
    for dep, block in zip(deps, blocks):
        said = [n for n in dep.notes if "aligns the attention block size" in n]
        assert bool(said) is (block != dep.settings["block_size"])
        if said and dep.vllm != "0.33.0":
            assert f"vLLM {dep.vllm}'s, mamba cache mode" in said[0]


GPT_OSS = "vllm serve openai/gpt-oss-20b"


@pytest.mark.parametrize(
    "line, gpu, refused",
    [
        # FlashInfer's sinks need TRTLLM attention, SM 10.x only before 0.33.0 (0.33.0: 9.0 and 12.x too)
        (GPT_OSS + " --attention-backend FLASHINFER", "H100", (False, True, True)),
        # FLASH_ATTN's fp8 cache needs FA3 on SM 9.x before 0.33.0 (0.33.0: FA4 on SM 10.x too)
        (LLAMA + " --kv-cache-dtype fp8 --attention-backend FLASH_ATTN", "B200", (False, True, True)),
        # FLASH_ATTN's sinks: FA3 only in 0.19.1 (B200 runs FA4); FA3 or FA4 in 0.22.1
        (GPT_OSS + " --attention-backend FLASH_ATTN", "B200", (False, False, True)),
    ],
)
def test_each_backends_other_checks_are_the_releases(line, gpu, refused):
    for vllm, expected in zip(("0.33.0", "0.22.1", "0.19.1"), refused):
        if not expected:
            assert resolve(line, gpu, vllm=vllm).backend.vllm_name == line.split()[-1]
            continue
        with pytest.raises(VllmRefusal, match=f"vLLM {vllm} would not start this: Selected backend") as e:
            resolve(line, gpu, vllm=vllm)
        assert "not supported" in str(e.value)


def test_a_hybrid_under_full_graphs_says_what_its_release_does_with_the_mamba_blocks():
    """0.19.1 caps the capture sizes at the mamba cache's blocks, 0.22.1 and 0.33.0 refuse max_num_seqs above them;
    the block count is not modelled, so the answer says so (no capture size or limit changes)."""
    said = {}
    for vllm in ("0.33.0", "0.22.1", "0.19.1"):
        dep = resolve(NEXT, "H200", vllm=vllm)
        said[vllm] = [n for n in dep.notes if "mamba cache's block count" in n]
    assert len(said["0.19.1"]) == 1 and "caps the capture sizes" in said["0.19.1"][0]
    assert all(len(said[v]) == 1 and "refuses a max_num_seqs" in said[v][0] for v in ("0.33.0", "0.22.1"))
    eager = resolve(NEXT + " --enforce-eager", "H200", vllm="0.19.1")
    assert not any("mamba cache's block count" in n for n in eager.notes)


def test_a_backend_the_release_has_not_yet_is_unknown_there():
    """registry.py AttentionBackendEnum: TOKENSPEED_MLA came in 0.22.1 (older_checks.py NOT_YET)."""
    line = "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --kv-cache-dtype fp8 --attention-backend TOKENSPEED_MLA"
    assert [resolve(line, "B200", vllm=v).backend.vllm_name for v in ("0.33.0", "0.22.1")] == ["TOKENSPEED_MLA"] * 2
    with pytest.raises(
        VllmRefusal, match="vLLM 0.19.1 would not start this: Unknown attention backend: 'TOKENSPEED_MLA'"
    ):
        resolve(line, "B200", vllm="0.19.1")


@pytest.mark.parametrize("size", ["0", "-16"])
def test_a_mamba_block_size_vllm_refuses_is_refused(size):
    """vllm/config/cache.py: ``mamba_block_size: int | None = Field(default=None, gt=0)``; the lab fell back to the
    model's chunk instead."""
    from lab.deployment.serve_line import ServeLineError

    with pytest.raises(ServeLineError, match="mamba_block_size must be greater than 0"):
        resolve(JAMBA + f" --enable-prefix-caching --mamba-block-size={size}", "H200", vllm="0.22.1")
