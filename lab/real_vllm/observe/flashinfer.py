"""FLASHINFER observed: vLLM 0.33.0's own ``FlashInferMetadataBuilder`` and ``FlashInferImpl.forward``
(vllm/v1/attention/backends/flashinfer.py) on the stand-in CUDA platform, with FlashInfer 0.7.2.post1 (the version
vLLM 0.33.0 pins) imported from ``.vllm-flashinfer/`` (``make vllm-flashinfer``; only this module's subprocess puts
it on ``sys.path``: lab/real_vllm/observe/table.py). Which path runs is vLLM's own choice on the stand-in GPU:
native FlashInfer on SM80, XQA decode on SM90, TRTLLM-gen decode and prefill on SM100.

Replaced by a recorder (``JIT_GETTERS``, ``COMPILED``), nothing more of FlashInfer's own Python:
- native path: ``get_batch_prefill_module`` / ``get_batch_decode_module`` (flashinfer.prefill, flashinfer.decode:
  the JIT-compiled modules the wrappers' ``plan`` and ``run`` call) return a module whose ``plan`` records its
  arguments and returns an empty plan, and whose ``paged_run`` / ``run`` record theirs. FlashInfer's wrappers
  (``BatchPrefillWithPagedKVCacheWrapper.plan``, ``BatchDecodeWithPagedKVCacheWrapper.plan`` via vLLM's
  ``fast_plan_decode``, their ``run``) run as shipped;
- TRTLLM-gen and XQA: the compiled ops behind FlashInfer's API functions (``get_trtllm_gen_fmha_module()``'s
  ``trtllm_paged_attention_decode`` / ``trtllm_paged_attention_context``, ``get_xqa_module(...)``'s ``xqa``) record
  their positional arguments (``COMPILED``); ``trtllm_batch_decode_with_kv_cache``,
  ``trtllm_batch_context_with_kv_cache`` and ``xqa_batch_decode_with_kv_cache`` / ``xqa`` run as shipped, so what
  is recorded is what the kernel receives (XQA: ``max_seq_len = page_table.shape[-1] * page_size``, in xqa.py).

Stubbed besides (each because this CPU has no CUDA device):
- as in dense.py, bare ``Attention`` layers holding vLLM's own ``FlashInferImpl``, and a namespace ``VllmConfig`` of
  vLLM's sub-configs, set as the current config (``force_use_trtllm_attention`` reads it);
- the device's answers, as the stand-in GPU gives them: ``get_device_sm_count`` (in vLLM's flashinfer.py and in
  flashinfer.decode/.prefill/.xqa), ``device_support_pdl`` (major >= 9), ``get_compute_capability``, and
  ``determine_attention_backend`` (FlashInfer's fa2/fa3 choice: fa3 on SM90, fa2 otherwise);
- allocations on "cuda": ``_get_multi_ctas_kv_counter_buffer`` allocates on this CPU; vLLM's TRTLLM workspace
  (``trtllm_workspace_buffer``) is its size on the meta device;
- page-locked host memory: ``PIN_MEMORY`` False (vllm/v1/utils.py, flashinfer.py), vLLM's ``pin_host_range_buf``
  does nothing, ``torch.empty`` drops ``pin_memory=True`` (FlashInfer's host workspaces);
- ``torch.cuda.device(...)`` (entered by FlashInfer's ``fast_decode_plan``) does nothing.
"""

from __future__ import annotations

import importlib
from contextlib import ExitStack, nullcontext
from unittest import mock

import numpy as np

from lab.gpu_model.gpus import GPUS
from lab.real_vllm.observe.dense import _config
from lab.real_vllm.observe.record import Recorder, common_metadata

MODULE = "vllm.v1.attention.backends.flashinfer"
# FlashInfer's JIT module getters the native wrappers call (module -> names)
JIT_GETTERS = {
    "flashinfer.prefill": ("get_batch_prefill_module",),
    "flashinfer.decode": ("get_batch_prefill_module", "get_batch_decode_module"),
}
# The compiled TRTLLM-gen and XQA ops, by the getter FlashInfer's API functions call them through, and the positional
# arguments recorded (flashinfer/decode.py trtllm_batch_decode_with_kv_cache and prefill.py
# trtllm_batch_context_with_kv_cache: ``run_args = [...]``; flashinfer/xqa.py xqa: ``xqa_module.xqa(...)``)
TRTLLM_ARGS = {7: "block_tables", 9: "max_q_len", 10: "max_seq_len", 16: "batch_size"}
XQA_ARGS = {13: "page_table", 14: "max_seq_len", 16: "batch_size"}
COMPILED = {
    ("flashinfer.decode", "get_trtllm_gen_fmha_module"): {
        "trtllm_paged_attention_decode": TRTLLM_ARGS,
        "trtllm_paged_attention_context": TRTLLM_ARGS,
    },
    ("flashinfer.prefill", "get_trtllm_gen_fmha_module"): {
        "trtllm_paged_attention_decode": TRTLLM_ARGS,
        "trtllm_paged_attention_context": {**TRTLLM_ARGS, 10: "max_kv_len"},
    },
    ("flashinfer.xqa", "get_xqa_module"): {"xqa": XQA_ARGS},
}
# FlashInfer's questions to the CUDA device, per module: answered as the stand-in GPU would
DEVICE_QUERIES = ("get_device_sm_count", "device_support_pdl", "get_compute_capability")


class _JitModule:
    """Stands where FlashInfer's compiled batch module was: ``plan`` and the runs record what they receive."""

    def __init__(self, rec: Recorder, kind: str):
        self.rec, self.kind = rec, kind

    def plan(self, *args):
        import torch

        fields = {"module": self.kind}
        if len(args) > 7 and torch.is_tensor(args[5]):
            # (float ws, int ws, pinned ws, qo_indptr, kv_indptr, kv_len_arr, total_num_rows, batch_size, ...)
            fields["kv_len_max"] = int(args[5].max()) if args[5].numel() else 0
            fields["total_num_rows"] = int(args[6])
            fields["batch_size"] = int(args[7])
        self.rec.add("scheduler", fields)  # the plan: the table's "scheduler" column
        return []

    def _run(self, *args, **_kw):

        # every int the run receives, in order (mask mode, layout, window, ..., workspace bytes, heads, page size,
        # the wrapper's own max KV length from the step's KV lengths: no told value among them); the paged KV it
        # reads is (indptr, indices) from the step's own sequence lengths
        ints = [int(a) for a in args if isinstance(a, int) and not isinstance(a, bool)]
        self.rec.add("launch", {"module": self.kind, "int_args": ints})

    paged_run = run = _run


class CompiledOp:
    """Stands where a compiled TRTLLM-gen / XQA op was: records the named positional arguments."""

    def __init__(self, rec: Recorder, ops: dict):
        self.rec, self.ops = rec, ops

    def __getattr__(self, name):
        if name not in self.ops:
            raise AttributeError(name)
        positions = self.ops[name]

        def call(*args, **_kw):
            fields = {"op": name}
            for i, key in positions.items():
                value = args[i]
                if hasattr(value, "shape"):
                    fields[f"{key}_width"] = int(value.shape[-1])
                elif value is not None:
                    fields[key] = int(value)
            self.rec.add("launch", fields)

        return call


def _getter(rec: Recorder, kind: str):
    return lambda *_a, **_k: _JitModule(rec, kind)


def observe(case, cudagraph_mode: str, step, told: int, capture_told: int) -> dict:
    """As dense.observe, for FLASHINFER: capture (``build_for_cudagraph_capture`` at ``capture_told``) and the step
    (``build`` at ``told``), each then forward; returns the plan calls and launches recorded."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    fb = importlib.import_module(MODULE)
    rec = Recorder()

    layers = _layers(case, fb.FlashInferImpl)
    config = _config(case, cudagraph_mode, layers)
    config.num_speculative_tokens = 0
    config.kv_transfer_config = None  # no connector (resolve_kv_cache_layout asks for its layout)
    config.scheduler_config.max_num_batched_tokens = 8192
    config.model_config.dtype = torch.bfloat16
    spec = FullAttentionSpec(
        block_size=case.block_size, num_kv_heads=case.num_kv_heads, head_size=case.head_dim, dtype=torch.bfloat16
    )
    sms = GPUS[case.gpu].num_sms
    cap = GPUS[case.gpu].sm
    out = {"fa_version": None}
    with ExitStack() as stack:
        stack.enter_context(set_current_vllm_config(config))
        for (mod, name), ops in COMPILED.items():
            op = CompiledOp(rec, ops)
            stack.enter_context(mock.patch.object(importlib.import_module(mod), name, lambda *_a, _op=op, **_k: _op))
        answers = {
            "get_device_sm_count": lambda *_a, **_k: sms,
            "device_support_pdl": lambda *_a, **_k: cap >= 90,  # flashinfer/utils.py: major >= 9
            "get_compute_capability": lambda *_a, **_k: (cap // 10, cap % 10),
        }
        for mod in ("flashinfer.decode", "flashinfer.prefill", "flashinfer.xqa"):
            m = importlib.import_module(mod)
            for name in DEVICE_QUERIES:
                if hasattr(m, name):
                    stack.enter_context(mock.patch.object(m, name, answers[name]))
        for mod, names in JIT_GETTERS.items():
            m = importlib.import_module(mod)
            for name in names:
                stack.enter_context(mock.patch.object(m, name, _getter(rec, name.removeprefix("get_batch_"))))
            stack.enter_context(
                mock.patch.object(m, "determine_attention_backend", lambda *_a, **_k: "fa3" if cap == 90 else "fa2")
            )
        stack.enter_context(mock.patch.object(fb, "get_device_sm_count", lambda *_a, **_k: sms, create=True))
        stack.enter_context(
            mock.patch.object(
                fb, "_get_multi_ctas_kv_counter_buffer", lambda n, _dev: torch.zeros(n, dtype=torch.uint8)
            )
        )
        stack.enter_context(mock.patch.object(fb, "pin_host_range_buf", lambda *_a: None))
        # page-locked host copies need a CUDA device (vllm/v1/utils.py CpuGpuBuffer.copy_to_gpu, flashinfer.py)
        stack.enter_context(mock.patch.object(importlib.import_module("vllm.v1.utils"), "PIN_MEMORY", False))
        stack.enter_context(mock.patch.object(fb, "PIN_MEMORY", False))
        empty = torch.empty  # FlashInfer's wrappers ask torch.empty(..., pin_memory=True) for their host workspace
        stack.enter_context(mock.patch.object(torch, "empty", lambda *a, pin_memory=False, **kw: empty(*a, **kw)))
        # fast_decode_plan (flashinfer/decode.py) enters ``torch.cuda.device(self.device)``: the CPU has none
        stack.enter_context(mock.patch.object(torch.cuda, "device", lambda _d: nullcontext()))
        # the TRTLLM-gen/XQA workspace (_get_trtllm_workspace_buffer allocates it on "cuda" on first use): the same
        # size on the meta device (no memory; the recorder does not read it)
        size = fb.envs.VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE
        buf = torch.empty(size, dtype=torch.uint8, device="meta")
        stack.enter_context(mock.patch.object(fb, "trtllm_workspace_buffer", buf))
        for layer in layers.values():
            layer.impl = fb.FlashInferImpl(
                case.num_heads, case.head_dim, case.head_dim**-0.5, case.num_kv_heads, None, None, "auto"
            )
        _resolve_layout(config, spec, fb.FlashInferBackend)
        builder = fb.FlashInferMetadataBuilder(spec, list(layers), config, "cpu")
        out["decode_kernel"] = getattr(builder.flashinfer_trtllm_api_decode_kernel, "value", "flashinfer-native")
        for phase, value, build in (
            ("capture", capture_told, lambda cm: builder.build_for_cudagraph_capture(cm)),
            ("step", told, lambda cm: builder.build(common_prefix_len=0, common_attn_metadata=cm)),
        ):
            rec.phase = phase
            cm = common_metadata(step, value, case.block_size, case.max_model_len)
            meta = build(cm)
            for layer in layers.values():
                _forward(layer, meta, step, case)
            if builder.supports_draft_decode_metadata_update:
                # the fused draft path, as dense.py observes it (TRTLLM-gen only: flashinfer.py sets the flag;
                # its update_draft_decode_metadata leaves the metadata as built), then the draft decode launch
                rec.phase = f"{phase} draft"
                builder.update_draft_decode_metadata(meta)
                for layer in layers.values():
                    _forward(layer, meta, step, case)
        out["aot_schedule"] = None
    out["calls"] = rec.calls
    return out


def _resolve_layout(config, spec, backend) -> None:
    """The KV cache layout as the engine core resolves it (vllm/v1/attention/backends/utils.py
    get_supported_kv_cache_layouts, resolve_kv_cache_layout; the worker records it: worker_base.py
    set_kv_cache_layout): HND-family on SM100 (trtllm-gen), the default preference elsewhere."""
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
    from vllm.v1.worker.worker_base import record_kv_cache_layout

    names = [layout.name for layout in get_supported_kv_cache_layouts([backend])]
    record_kv_cache_layout(config.cache_config, resolve_kv_cache_layout(config, [names], [spec]).name)


def _layers(case, impl_cls):
    from vllm.model_executor.layers.attention import Attention

    out = {}
    for i, _window in enumerate(case.windows):
        layer = object.__new__(Attention)
        layer.impl = None  # set inside the stand-ins (FlashInferImpl.__init__ reads the current config)
        layer._q_scale = layer._k_scale = layer._v_scale = _one()
        layer._q_scale_float = layer._k_scale_float = layer._v_scale_float = 1.0
        layer._o_scale_float = None
        out[f"model.layers.{i}.self_attn.attn"] = layer
    # get_per_layer_parameters reads each layer's impl class: a placeholder of the right class until then
    for layer in out.values():
        layer.impl = object.__new__(impl_cls)
        layer.impl.__dict__.update(sliding_window=(-1, -1), logits_soft_cap=None, scale=case.head_dim**-0.5, sinks=None)
    return out


def _one():
    import torch

    return torch.ones(1, dtype=torch.float32)


def _forward(layer, meta, step, case):
    import torch

    tokens = int(np.sum(step.query_lens))
    q = torch.zeros(tokens, case.num_heads, case.head_dim, dtype=torch.bfloat16)
    blocks = int(np.max(step.block_table)) + 1
    # FlashInferImpl.forward's kv_cache: [num_blocks, num_kv_heads, block_size, 2 * head_size], laid out so that
    # ``kv_cache.permute(*layout.layer_view_order)`` is contiguous (the resolved layout's memory order)
    shape = (blocks, case.num_kv_heads, case.block_size, 2 * case.head_dim)
    order = list(meta.kv_cache_layout.layer_view_order)
    memory = torch.zeros([shape[i] for i in order], dtype=torch.bfloat16)
    cache = memory.permute(*[order.index(i) for i in range(4)])
    layer.impl.forward(layer, q, None, None, cache, meta, torch.zeros_like(q))
