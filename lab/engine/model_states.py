"""Model states and their ``prepare_attn`` (R2, R3).

Mirrors vllm/v1/worker/gpu/model_states/default.py ``DefaultModelState.prepare_attn`` and
model_states/mamba_hybrid.py ``MambaHybridModelState.prepare_attn``. Each is asked for the
attention metadata under a *mode*: ``fixed`` is vLLM after PR #43991, ``baseline`` is vLLM before
PR #40654, when every path passed ``max_model_len``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.engine.cudagraph import FULL
from lab.engine.input_batch import InputBatch

MODES = ("baseline", "fixed")


@dataclass(frozen=True)
class AttnMetadata:
    """The fields of vLLM's attention metadata this lab follows."""

    num_reqs: int
    num_tokens: int
    max_query_len: int
    max_seq_len: int
    for_capture: bool


class DefaultModelState:
    name = "default"
    # Its attention walks the KV cache through the block table (R6/R7).
    reads_block_table = True

    def __init__(self, max_model_len: int, max_num_reqs: int):
        self.max_model_len = max_model_len
        self.max_num_reqs = max_num_reqs

    def add_request(self, req_index: int) -> None:
        pass

    def remove_request(self, req_index: int) -> None:
        pass

    def postprocess(self, idx_mapping: np.ndarray, num_accepted: np.ndarray) -> None:
        pass

    def state_slot(self, req_index: int) -> int:
        """The request's mamba state slot (-1: this model keeps none)."""
        return -1

    def prepare_attn(self, input_batch: InputBatch, cg_mode: str, mode: str, for_capture: bool = False) -> AttnMetadata:
        """R2/R3: the attention metadata of this batch under CUDA-graph mode ``cg_mode`` (the
        dispatched ``BatchExecutionDescriptor.cg_mode``), in ``mode`` baseline or fixed."""
        if cg_mode == FULL:
            # Padded sizes under a FULL graph; padded rows have upper bound 0.
            num_reqs = input_batch.num_reqs_after_padding
            num_tokens = input_batch.num_tokens_after_padding
        else:
            num_reqs = input_batch.num_reqs
            num_tokens = input_batch.num_tokens
        max_query_len = input_batch.max_query_len
        if max_query_len is None:
            max_query_len = int(input_batch.num_scheduled_tokens.max())
        return AttnMetadata(
            num_reqs,
            num_tokens,
            max_query_len,
            self.max_seq_len(input_batch.seq_lens_cpu_upper_bound, num_reqs, mode, for_capture),
            for_capture,
        )

    def max_seq_len(self, seq_lens_cpu_upper_bound: np.ndarray, num_reqs: int, mode: str, for_capture: bool) -> int:
        # R2/R3, vllm model_states/default.py DefaultModelState.prepare_attn: "Capture with worst-case
        # max_seq_len so the graph is valid at any replay"; a real step gets the batch maximum of the
        # CPU upper bound (#40654; #43991 for the mamba-hybrid state). The baseline is the old value.
        if mode == "baseline" or for_capture:
            return self.max_model_len
        return int(seq_lens_cpu_upper_bound[:num_reqs].max())


class MambaHybridModelState(DefaultModelState):
    """Attention + mamba/conv layers: also keeps per-request state that the mamba builders read.

    Mirrors vllm model_states/mamba_hybrid.py: ``num_accepted_tokens`` per request slot (reset to 1
    on add, read by the Mamba2/GDN/ShortConv builders under spec decode) and the request's mamba
    state slot. Its ``prepare_attn`` computes ``max_seq_len`` exactly as the default one since PR
    #43991 (before it: ``max_model_len`` always); PR #46759 then also forwarded
    ``seq_lens_cpu_upper_bound`` here.
    """

    name = "mamba_hybrid"

    def __init__(self, max_model_len: int, max_num_reqs: int):
        super().__init__(max_model_len, max_num_reqs)
        self.num_accepted_tokens = np.ones(max_num_reqs, dtype=np.int32)
        self.mamba_state_idx = np.full(max_num_reqs, -1, dtype=np.int32)
        self._free_state_slots = list(range(max_num_reqs - 1, -1, -1))

    def add_request(self, req_index: int) -> None:
        self.num_accepted_tokens[req_index] = 1
        self.mamba_state_idx[req_index] = self._free_state_slots.pop()

    def remove_request(self, req_index: int) -> None:
        self._free_state_slots.append(int(self.mamba_state_idx[req_index]))
        self.mamba_state_idx[req_index] = -1

    def postprocess(self, idx_mapping: np.ndarray, num_accepted: np.ndarray) -> None:
        self.num_accepted_tokens[idx_mapping] = num_accepted

    def state_slot(self, req_index: int) -> int:
        return int(self.mamba_state_idx[req_index])


class EncoderDecoderModelState(DefaultModelState):
    """Cross-attention encoder-decoder models, e.g. Whisper (vllm model_states/encoder_decoder.py
    ``EncoderDecoderModelState``, picked by ``resolve_model_state_cls`` when the model has a
    ``CrossAttention`` layer). Its ``prepare_attn`` computes ``max_seq_len`` as the default state does
    (batch maximum of the CPU upper bound; ``max_model_len`` for capture) and hands it to every group;
    the cross-attention groups also get the requests' encoder lengths (``_get_encoder_seq_lens``: the
    encoder's embeddings, ``max_encoder_len`` for capture), which the lab does not follow."""

    name = "encoder_decoder"


class EncoderOnlyModelState(DefaultModelState):
    """Encoder-only (BERT/RoBERTa) pooling models (vllm model_states/encoder_only.py
    ``EncoderOnlyModelState``, from 0.27.0): bidirectional self-attention over each request's tokens in a
    single forward, with no KV cache. ``_build_encoder_attn_metadata`` sets ``max_seq_len`` as the default
    state does (batch maximum of the upper bound; ``max_model_len`` for capture) but hands the builder a
    dummy block table: "Encoder attention reads neither the block table nor the slot mapping", so no
    walk reads a block-table entry in either mode."""

    name = "encoder_only"
    reads_block_table = False


def make_model_state(name: str, max_model_len: int, max_num_reqs: int) -> DefaultModelState:
    cls = {
        "default": DefaultModelState,
        "mamba_hybrid": MambaHybridModelState,
        "encoder_decoder": EncoderDecoderModelState,
        "encoder_only": EncoderOnlyModelState,
    }[name]
    return cls(max_model_len, max_num_reqs)
