"""The lines of a vLLM start-up log, past its start-up line, where vLLM reports a value it resolved (issue 47,
"the whole log"), and the same values as the lab's resolution would make vLLM print them.

vLLM 0.33.0's wording (each line's source beside its pattern):

- ``Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)`` (v1/worker/gpu_model_runner.py
  ``_profile_cudagraph_memory``: one group per mode of ``CudagraphDispatcher.get_capture_descs``, PIECEWISE first,
  then FULL; an ``ENCODER=`` group after them). Only the V1 runner logs it (Model Runner V2's captures live in
  v1/worker/gpu/cudagraph_utils.py, which has no such line), so it also says which runner ran;
- ``GPU KV cache size: 46,368 tokens, Maximum concurrency for 16,384 tokens per request`` (v1/core/kv_cache_utils.py
  ``update_kv_cache_capacity``; older releases log the two halves on two lines): the KV cache the engine sized and
  the ``max_model_len`` it sized it for;
- ``Using max model len 40960`` (config/model.py);
- ``Chunked prefill is enabled with max_num_batched_tokens=8192.`` (config/scheduler.py);
- ``Async scheduling is disabled because …`` / ``Async scheduling will be disabled because …`` (config/vllm.py
  ``VllmConfig.__post_init__``: vLLM says async scheduling only where it turns it off) and older releases'
  ``Asynchronous scheduling is enabled.`` / ``… is disabled.``;
- ``Using FlashAttention version 3`` (v1/attention/backends/flash_attn.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PROFILE = re.compile(r"Profiling CUDA graph memory: ((?:[A-Z_]{4,20}=\d{1,6} \(largest=\d{1,7}\)(?:, )?){1,4})")
_GROUP = re.compile(r"([A-Z_]{4,20})=(\d{1,6}) \(largest=(\d{1,7})\)")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]{1,20}) tokens per request")
_MAX_MODEL_LEN = re.compile(r"Using max model len (\d{1,10})\b")
_BATCHED = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d{1,10})")
_ASYNC_OFF = re.compile(r"Async(?:hronous)? scheduling (?:is|will be) disabled")
_ASYNC_ON = re.compile(r"Asynchronous scheduling is enabled")
_FA_VERSION = re.compile(r"Using FlashAttention version (\d)\b")
# the modes a Profiling line names for the decoder (CUDAGraphMode's runtime modes); ENCODER is the encoder's graphs
DECODER_GROUPS = ("PIECEWISE", "FULL")


@dataclass(frozen=True)
class ResolvedLines:
    """What the log's later lines say vLLM resolved (None: no such line)."""

    graph_groups: tuple[tuple[str, int, int], ...] | None = None  # (mode, graphs, largest) of the Profiling line
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    async_scheduling: bool | None = None
    fa_version: int | None = None

    @property
    def cudagraph_profile(self) -> str | None:
        """The Profiling line's decoder groups as vLLM prints them (the encoder's group left out)."""
        if self.graph_groups is None:
            return None
        return profile_text([g for g in self.graph_groups if g[0] in DECODER_GROUPS])

    @property
    def cudagraph_mode(self) -> str | None:
        """The graph mode the Profiling line implies where only one mode has it: both groups are
        FULL_AND_PIECEWISE's, PIECEWISE alone is PIECEWISE; FULL alone is FULL or FULL_DECODE_ONLY (not told)."""
        modes = {g[0] for g in self.graph_groups or () if g[0] in DECODER_GROUPS}
        if modes == {"PIECEWISE", "FULL"}:
            return "FULL_AND_PIECEWISE"
        return "PIECEWISE" if modes == {"PIECEWISE"} else None


def profile_text(groups) -> str:
    """``PIECEWISE=51 (largest=512), FULL=35 (largest=256)``; "" for no graphs."""
    return ", ".join(f"{mode}={count} (largest={largest})" for mode, count, largest in groups)


def read_resolved_lines(records) -> ResolvedLines:
    """The resolved values of a log's records (the first Profiling line and the last of each other kind)."""
    found: dict = {}
    for rec in records:
        if "graph_groups" not in found and (m := _PROFILE.search(rec)):
            found["graph_groups"] = tuple((g[0], int(g[1]), int(g[2])) for g in _GROUP.findall(m.group(1)))
        if m := (_CONCURRENCY.search(rec) or _MAX_MODEL_LEN.search(rec)):
            found["max_model_len"] = int(m.group(1).replace(",", ""))
        if m := _BATCHED.search(rec):
            found["max_num_batched_tokens"] = int(m.group(1))
        if _ASYNC_OFF.search(rec):
            found["async_scheduling"] = False
        elif _ASYNC_ON.search(rec):
            found["async_scheduling"] = True
        if m := _FA_VERSION.search(rec):
            found["fa_version"] = int(m.group(1))
    return ResolvedLines(**found)


def lab_graph_groups(mode: str, sizes, max_num_seqs: int, uniform_decode_query_len: int) -> list[tuple[str, int, int]]:
    """The Profiling line's groups for a resolution: vllm/v1/cudagraph_dispatcher.py ``initialize_cudagraph_keys``
    keys every capture size under the mode's mixed mode (PIECEWISE or FULL), and where the decode mode is FULL
    and the routines are separate (FULL_AND_PIECEWISE, FULL_DECODE_ONLY) the sizes from the decode query length
    to ``max_num_seqs`` times it under FULL; ``get_capture_descs`` lists PIECEWISE first (LoRA's extra cases
    not modelled: the lab reads no --enable-lora)."""
    if mode == "NONE" or not sizes:
        return []
    mixed = {"FULL_AND_PIECEWISE": "PIECEWISE", "PIECEWISE": "PIECEWISE", "FULL": "FULL"}.get(mode)
    groups = {}
    if mixed:
        groups[mixed] = list(sizes)
    if mode in ("FULL_AND_PIECEWISE", "FULL_DECODE_ONLY"):
        q = uniform_decode_query_len
        decode = [s for s in sizes if q <= s <= q * max_num_seqs]
        if decode:
            groups["FULL"] = decode
    return [(m, len(groups[m]), max(groups[m])) for m in DECODER_GROUPS if m in groups]
