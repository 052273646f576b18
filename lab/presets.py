"""Named scenarios, each built to show one thing: their spec text and what each shows.

Pure data: ``Scenario.preset(name)`` (or ``lab.scenario.get_preset``) turns one into a Scenario, so
this module imports nothing of the lab's.
"""

from __future__ import annotations

# name -> (spec, what it shows)
PRESETS: dict[str, tuple[str, str]] = {
    "short-decode-long-context": (
        "32p512o192_mml=128k_cg=piecewise",
        "32 short requests decoding under a 128k max_model_len. The baseline tells the kernel 131072 "
        "tokens every step; the fixed metadata says about 700. Piecewise graphs, so the kernel sees it.",
    ),
    "mixed-long-short": (
        "2p20ko48_24p300o160a0+3_mml=32k_tokens=4k_cg=piecewise",
        "Two 20k-token prompts, chunked by a 4k token budget, beside short requests arriving every 3 "
        "steps. The fixed max_seq_len follows the longest request; the short rows walk its width.",
    ),
    "eagle-k3": (
        "16p1ko128_k=3_accept=0.7_mml=32k_cg=piecewise",
        "Eagle/MTP with K=3 drafts per step. The draft decodes (eager: PIECEWISE is never used for "
        "drafts) get draft_max_seq_len = min(max upper bound + K, max_model_len) after the fix.",
    ),
    "mamba-hybrid": (
        "24p2ko200_state=mamba_mml=64k_cg=piecewise",
        "A mamba/attention hybrid: MambaHybridModelState.prepare_attn passed max_model_len until PR "
        "#43991. It also keeps a mamba state slot per request.",
    ),
    "full-graph-vs-eager": (
        "6p512o160_6p512o48a2_capture=1/2/4/8",
        "Capture sizes up to 8: twelve decodes run eagerly (NONE) and see the batch max; once six "
        "finish, the batch replays a FULL graph padded to 8 rows and the kernel sees the captured "
        "max_model_len in both modes (R9), whatever the metadata says.",
    ),
    "stale-block-reuse": (
        "8p400o24_8p96o300a20+2_mml=8k_blocks=96_seqs=12_cg=piecewise",
        "A small KV cache (96 blocks) and short requests that finish and hand their blocks back. "
        "Later rows keep stale ids past num_blocks: freed blocks, and blocks that now belong to "
        "another live request. A kernel walking max_model_len reads them.",
    ),
    "draft-model-k3": (
        "8p1ko96_k=3_method=draft-model_mml=8k_cg=piecewise",
        "Speculation with a separate small draft model (method='draft_model', vLLM's "
        "StandaloneARSpeculator). Not changed by #43991: its draft passes still get max_model_len in vLLM "
        "0.33.0 ('doesn't do per-batch adjustment; cap at max'), and they run eagerly, so the kernel sees it.",
    ),
    "mtp-multi-module-k3": (
        "8p1ko96_k=3_method=mtp-multi-module_mml=8k",
        "Multi-module MTP, one module per draft token (MultiModuleMTPSpeculator, PR #48892): one metadata "
        "for all K modules with max(upper bound), no +K, replayed in FULL_DECODE_ONLY graphs of 1 + K "
        "tokens per request, where the kernel sees the captured max_model_len (R9).",
    ),
    "dflash-k7": (
        "8p1ko96_k=7_method=dflash_mml=8k_cg=piecewise",
        "DFlash block drafting (DFlashSpeculator; DFlash2, XPress and LiLiCorr share its metadata): all 7 "
        "drafts in one parallel query pass of 1 + K = 8 tokens per request, told max(upper bound) + 8. Its "
        "graphs are FULL_DECODE_ONLY or none ('PIECEWISE cudagraphs are not supported for dflash'), so here "
        "it runs eagerly and the kernel sees that value.",
    ),
    "ngram-k4": (
        "8p1ko96_k=4_method=ngram_mml=8k_cg=piecewise",
        "n-gram speculation (NgramGPUSpeculator): 4 drafts a step matched in each request's own tokens, with "
        "no draft attention pass, so only the target pass (which verifies 1 + K tokens a request) reads the "
        "block table with a max_seq_len.",
    ),
    "sliding-window": (
        "6p2ko64_4p512o96a12+6_window=128_mml=8k_tokens=2k_cg=piecewise",
        "A gpt-oss-like hybrid: full-attention layers plus a 128-token sliding-window KV group. From vLLM "
        "0.33.0 the sliding group's gathered table holds the null block over every entry wholly below a "
        "request's window (R11): freed blocks a kernel's KV tile could still load. With vllm=0.32 nothing "
        "is nulled.",
    ),
}


def list_presets() -> list[str]:
    return list(PRESETS)
