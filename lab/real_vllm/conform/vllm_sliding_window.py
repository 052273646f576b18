"""R11 against vLLM 0.33.0: a sliding-window KV group's gathered table, from vLLM's own code.

``VllmMRV2`` (lab/real_vllm/conform/vllm_mrv2.py) builds, for a scenario with a window, vLLM's ``BlockTables``
with two KV-cache groups, a full-attention group and a sliding-window one (both given the same block
ids: the lab's representation, lab/engine/sliding_window.py), and gathers them the way
``GPUModelRunner.prepare_attn`` does, with ``num_computed_tokens`` (the GPU's, indexed by request slot).
The sliding group's ``sliding_window_reach`` is not the lab's: it is vLLM's
``SlidingWindowSpec.num_retained_tokens`` for the window, with the ``extra_retained_tokens`` vLLM's
``VllmConfig.num_prefill_lookahead_tokens`` gives the scenario's speculator.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from lab.speculators import speculator


def vllm_sliding_window_reach(scenario) -> int:
    """vLLM's ``sliding_window_reach`` of the scenario's sliding group (vllm model_runner.py: the group's
    ``layer_spec.num_retained_tokens``), from vLLM's own classes."""
    import torch
    from vllm.config.speculative import SpeculativeConfig
    from vllm.config.vllm import VllmConfig
    from vllm.v1.kv_cache_interface import SlidingWindowSpec

    s = scenario
    k = s.num_speculative_tokens
    spec_config = None
    if k:
        # vLLM's speculative_config.method for the lab's method, and the MTP layers its draft has
        # (vllm/config/speculative.py use_multi_module_mtp: method "mtp" with min(layers, K) > 1).
        record = speculator(s.speculative_method)
        spec_config = SimpleNamespace(
            method=record.vllm_method,
            num_speculative_tokens=k,
            draft_model_config=SimpleNamespace(
                hf_config=SimpleNamespace(num_nextn_predict_layers=record.num_mtp_layers(k))
            ),
        )
        spec_config.use_eagle = lambda: SpeculativeConfig.use_eagle(spec_config)
        spec_config.use_multi_module_mtp = lambda: SpeculativeConfig.use_multi_module_mtp(spec_config)
    config = SimpleNamespace(speculative_config=spec_config, num_speculative_tokens=k)
    lookahead = VllmConfig.num_prefill_lookahead_tokens.fget(config)
    # vllm/v1/core/kv_cache_planning.py, inline there: "tag every SlidingWindowSpec with how many extra
    # tokens to retain in the window".
    extra = max(0, lookahead - 1)
    spec = SlidingWindowSpec(
        block_size=s.block_size,
        num_kv_heads=1,
        head_size=64,
        dtype=torch.float16,
        sliding_window=s.sliding_window,
        extra_retained_tokens=extra,
    )
    return int(spec.num_retained_tokens)


def num_computed_tokens_by_slot(rec, idx_mapping_np: np.ndarray, max_num_reqs: int, torch):
    """``req_states.num_computed_tokens.gpu``, [max_num_reqs] by request slot: each batch row's exact
    first position (the lab's exact seq_lens less the step's scheduled tokens, GPU-side state)."""
    n = len(idx_mapping_np)
    out = np.zeros(max_num_reqs, dtype=np.int32)
    out[idx_mapping_np] = rec.batch.seq_lens[:n] - rec.batch.num_scheduled_tokens
    return torch.from_numpy(out)
