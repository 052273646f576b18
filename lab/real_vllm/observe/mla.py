"""The MLA backends observed on a decode step: vLLM 0.33.0's own metadata builder (``MLACommonMetadataBuilder`` and
its subclasses, vllm/model_executor/layers/attention/mla_attention.py) and the impl's ``forward_mqa`` (the decode
kernel's call; the prefill path is not observed), on the stand-in CUDA platform, with only the compiled entry points
replaced by a recorder (``BACKENDS``). MLA models are DeepSeek-V3's dimensions (kv_lora_rank 512, rope 64, nope
128, v 128; 16 query heads a GPU: tensor parallel 8).

Stubbed besides: the model's layer is a bare ``MLAAttention`` holding vLLM's own impl and the dimensions the
builder reads; its MLA prefill backend is a stand-in whose ``clone`` returns itself (the builder only clones it in
``__init__`` and uses it for prefill rows, which a decode step has none of); ``num_compute_units`` answers the
GPU's SM count (lab/gpu_model/gpus.py; the stand-in platform does not patch it); ``kv_b_proj`` is None (forward_mqa
does not read it). Where a backend cannot be built here, ``BLOCKED`` names the line that stops it.
"""

from __future__ import annotations

import importlib
from contextlib import ExitStack
from types import SimpleNamespace
from unittest import mock

from lab.gpu_model.gpus import GPUS
from lab.real_vllm.observe.dense import _config
from lab.real_vllm.observe.record import Recorder, common_metadata, launch_fields

_M = "vllm.v1.attention.backends.mla."
KV_LORA_RANK, ROPE, NOPE, V_DIM = 512, 64, 128, 128

# vLLM backend -> (module, builder class, impl class, entry points: name -> "scheduler" | "launch")
BACKENDS = {
    "TRITON_MLA": (_M + "triton_mla", "TritonMLAMetadataBuilder", "TritonMLAImpl", {"decode_attention_fwd": "launch"}),
    "FLASHMLA": (
        _M + "flashmla",
        "FlashMLAMetadataBuilder",
        "FlashMLAImpl",
        {"get_mla_metadata": "scheduler", "flash_mla_with_kvcache": "launch"},
    ),
    "FLASH_ATTN_MLA": (
        _M + "flashattn_mla",
        "FlashAttnMLAMetadataBuilder",
        "FlashAttnMLAImpl",
        {"get_scheduler_metadata": "scheduler", "flash_attn_varlen_func": "launch"},
    ),
    # a "module:name" entry point lives in another module (vllm._custom_ops: the compiled CUTLASS ops)
    "CUTLASS_MLA": (
        _M + "cutlass_mla",
        "CutlassMLAMetadataBuilder",
        "CutlassMLAImpl",
        {
            "vllm._custom_ops:sm100_cutlass_mla_get_workspace_size": "scheduler",
            "vllm._custom_ops:sm100_cutlass_mla_decode": "launch",
        },
    ),
    # the tokenspeed_mla package (a Linux dependency of the wheel, not installed here): its decode kernel is the
    # entry point; get_num_sm answers the GPU's SMs and warmup_compile_prefill (a JIT warm-up) does nothing
    "TOKENSPEED_MLA": (
        _M + "tokenspeed_mla",
        "TokenspeedMLAMetadataBuilder",
        "TokenspeedMLAImpl",
        {"tokenspeed_mla:tokenspeed_mla_decode": "launch"},
    ),
    # FlashInfer's TRTLLM-gen MLA decode (observed in the FLASHINFER subprocess, lab/real_vllm/observe/table.py,
    # with .vllm-flashinfer on its path): no module-level entry point here; ``_flashinfer_mla`` puts the recorder at
    # the compiled op behind FlashInfer's ``trtllm_batch_decode_with_kv_cache_mla``, and answers its "cuda" buffers
    "FLASHINFER_MLA": (_M + "flashinfer_mla", "FlashInferMLAMetadataBuilder", "FlashInferMLAImpl", {}),
}


def _import_backend(module: str):
    """Import a backend module; cutlass_mla.py allocates its global workspace on "cuda" at import
    (``g_sm100_workspace = SM100Workspace(128 * 1024 * 1024)``), which stops it on this CPU: that one allocation
    goes to torch's meta device (no memory; nothing reads it here)."""
    import sys

    import torch

    if module in sys.modules or not module.endswith("cutlass_mla"):
        return importlib.import_module(module)
    empty = torch.empty

    def meta_for_cuda(*a, device=None, **kw):
        return empty(*a, device="meta" if str(device).startswith("cuda") else device, **kw)

    with mock.patch.object(torch, "empty", meta_for_cuda):
        return importlib.import_module(module)


class _PrefillStandIn:
    """The MLA prefill backend the builder clones in __init__; a decode step never reaches it."""

    def clone(self):
        return self

    def get_name(self) -> str:
        return "not observed"


def _layer(impl, case):
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention

    layer = object.__new__(MLAAttention)  # its __init__ builds projections and registers the layer
    layer.impl = impl
    layer.num_heads = case.num_heads
    layer.q_lora_rank, layer.kv_lora_rank = 1536, KV_LORA_RANK
    layer.qk_nope_head_dim, layer.qk_rope_head_dim, layer.v_head_dim = NOPE, ROPE, V_DIM
    layer.prefill_backend = _PrefillStandIn()
    layer._q_scale = layer._k_scale = layer._v_scale = _one()
    layer._q_scale_float = layer._k_scale_float = layer._v_scale_float = 1.0
    return layer


def _one():
    import torch

    return torch.ones(1, dtype=torch.float32)


def _impl(cls, case, kv_cache_dtype: str):
    return cls(
        case.num_heads,
        KV_LORA_RANK + ROPE,
        (NOPE + ROPE) ** -0.5,
        1,
        None,
        None,
        kv_cache_dtype,
        None,
        "decoder",
        None,
        q_lora_rank=1536,
        kv_lora_rank=KV_LORA_RANK,
        qk_nope_head_dim=NOPE,
        qk_rope_head_dim=ROPE,
        qk_head_dim=NOPE + ROPE,
        v_head_dim=V_DIM,
        kv_b_proj=None,
    )


def _tokenspeed(stack, vllm_config, sms: int) -> None:
    """TOKENSPEED_MLA's setting: an fp8 cache (its impl refuses others), the package's helpers, and a workspace
    manager on the CPU (gpu_worker.py init_workspace_manager does this on a GPU runner), for this call only."""
    import sys

    import torch
    import vllm.v1.worker.workspace as ws

    vllm_config.cache_config.cache_dtype = "fp8"
    # With an fp8 cache the builder asks the MLA prefill selector whether prefill queries may be fp8
    # (MLACommonMetadataBuilder.determine_prefill_query_data_type): a prefill-path choice, not observed here, whose
    # selector needs the prefill kernels' packages; answered "no"
    import vllm.model_executor.layers.attention.mla_attention as mla_attention

    stack.enter_context(mock.patch.object(mla_attention, "backend_supports_prefill_query_quantization", lambda: False))
    pkg = sys.modules["tokenspeed_mla"]  # kernel_packages() put the wheel's dependency there
    stack.enter_context(mock.patch.object(pkg, "get_num_sm", lambda device=None: sms, create=True))
    stack.enter_context(mock.patch.object(pkg, "warmup_compile_prefill", lambda **kw: None, create=True))
    stack.enter_context(mock.patch.object(ws, "_manager", ws.WorkspaceManager(torch.device("cpu"))))
    # growing the workspace empties the accelerator's allocator cache first: there is none on this CPU
    stack.enter_context(mock.patch.object(torch.accelerator, "empty_cache", lambda: None))


def _flashinfer_mla(stack, m, sms: int, vllm_config, rec: Recorder, cap: int) -> None:
    """FLASHINFER_MLA: the recorder stands at the compiled TRTLLM-gen op, ``get_trtllm_gen_fmha_module()``'s
    ``trtllm_paged_attention_decode`` as flashinfer/mla/_core.py calls it (``TrtllmGenMlaDecodeRunner.forward``:
    ``self._run(...)``, the same positional ``run_args`` as dense TRTLLM-gen: lab/real_vllm/observe/flashinfer.py
    ``TRTLLM_ARGS``); FlashInfer's ``trtllm_batch_decode_with_kv_cache_mla``, its backend choice ("auto": the
    autotuner's fallback, runners[0] = trtllm-gen, untuned) and its runner run as shipped. Stubbed, as this CPU has
    no CUDA device: the device's answers in vLLM's flashinfer_mla.py and flashinfer.mla._core (SM count, PDL,
    compute capability: the stand-in GPU's); vLLM's decode workspace (``_get_workspace_buffer``, on "cuda") is its
    size on the meta device, its multi-CTA counter (``_get_multi_ctas_kv_counter_buffer``) on this CPU;
    FlashInferMLAImpl.__init__ sizes that counter from the scheduler's ``max_num_batched_tokens`` (vLLM's default
    for a GPU runner, 8,192 here: it sizes nothing observed)."""
    import torch

    from lab.real_vllm.observe.flashinfer import TRTLLM_ARGS, CompiledOp

    vllm_config.scheduler_config.max_num_batched_tokens = 8192
    core = importlib.import_module("flashinfer.mla._core")
    op = CompiledOp(rec, {"trtllm_paged_attention_decode": TRTLLM_ARGS})
    stack.enter_context(mock.patch.object(core, "get_trtllm_gen_fmha_module", lambda: op))
    answers = {
        "get_device_sm_count": lambda *_a, **_k: sms,
        "device_support_pdl": lambda *_a, **_k: cap >= 90,  # flashinfer/utils.py: major >= 9
        "get_compute_capability": lambda *_a, **_k: (cap // 10, cap % 10),
    }
    for name, answer in answers.items():
        stack.enter_context(mock.patch.object(core, name, answer))

    def workspace(return_lse: bool):
        size = m.FLASHINFER_MLA_LSE_WORKSPACE_BUFFER_SIZE if return_lse else m.FLASHINFER_MLA_WORKSPACE_BUFFER_SIZE
        return torch.empty(size, dtype=torch.int8, device="meta")

    stack.enter_context(mock.patch.object(m, "_get_workspace_buffer", workspace))
    stack.enter_context(
        mock.patch.object(m, "_get_multi_ctas_kv_counter_buffer", lambda n, _d: torch.zeros(n, dtype=torch.uint8))
    )
    stack.enter_context(mock.patch.object(m, "get_device_sm_count", lambda *_a, **_k: sms, create=True))


def observe(case, cudagraph_mode: str, step, told: int, capture_told: int) -> dict:
    """As lab/real_vllm/observe/dense.py ``observe``, for an MLA decode step and ``forward_mqa``."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.platforms import current_platform
    from vllm.v1.kv_cache_interface import MLAAttentionSpec

    module, builder_name, impl_name, entries = BACKENDS[case.backend]
    rec = Recorder()

    def scheduler(*args, **kw):
        kw = _bound(sched_name, args, kw)
        rec.add("scheduler", _scalars(kw))
        if case.backend == "FLASH_ATTN_MLA":  # FA3's planner: its int32 tile metadata
            return torch.zeros(1 + 4 * ((kw["batch_size"] + 3) // 4) * 4, dtype=torch.int32)
        if case.backend == "CUTLASS_MLA":  # the workspace size in bytes: 0 keeps the buffer as it is
            return 0
        return SimpleNamespace(), None  # FlashMLA's get_mla_metadata: (scheduler metadata, num_splits)

    def kernel(*args, **kw):
        kw = _bound(launch_name, args, kw)
        rec.add("launch", {**launch_fields(kw), **_scalars(kw), **_workspace(kw)})
        q = next((v for k, v in kw.items() if k in ("q", "query")), None)
        if case.backend == "FLASH_ATTN_MLA":
            return torch.zeros(q.shape[0], q.shape[1], KV_LORA_RANK), torch.zeros(q.shape[1], q.shape[0])
        if case.backend == "FLASHMLA":
            return torch.zeros(*q.shape[:-1], KV_LORA_RANK), torch.zeros(q.shape[0], q.shape[2], q.shape[1])
        if case.backend == "TOKENSPEED_MLA":  # (o, lse) when it returns the LSE, else o
            o = torch.zeros(*q.shape[:-1], KV_LORA_RANK)
            return (o, torch.zeros(*q.shape[:-1])) if kw.get("return_lse") else o
        return None

    sms = GPUS[case.gpu].num_sms
    out = {}
    with ExitStack() as stack:
        stack.enter_context(
            mock.patch.object(type(current_platform), "num_compute_units", classmethod(lambda c, d=0: sms), create=True)
        )
        # MLACommonMetadataBuilder.__init__: ``self.aot_schedule = current_platform.is_cuda()`` (FlashMLA's and
        # FlashAttention MLA's planners run only then), and fa_utils.flash_attn_supports_mla asks it too: the
        # stand-in patches the CPU platform's answers, not its class, so it says so here
        stack.enter_context(mock.patch.object(type(current_platform), "is_cuda", lambda self: True))
        if case.backend == "FLASH_ATTN_MLA":
            # flashattn_mla.py imports flash_attn_varlen_func and get_scheduler_metadata from fa_utils, which
            # defines them only where vllm_flash_attn's CUDA extension loads: the recorders stand in at import
            fa_utils = importlib.import_module("vllm.v1.attention.backends.fa_utils")
            for name, kind in entries.items():
                stack.enter_context(
                    mock.patch.object(fa_utils, name, scheduler if kind == "scheduler" else kernel, create=True)
                )
        m = _import_backend(module)
        if case.backend == "FLASHMLA":
            # FlashMLAImpl.__init__ asserts vllm._flashmla_C loads (ops/flashmla.py is_flashmla_dense_supported):
            # the CUDA wheel ships it; its SM90 check is the platform's
            stack.enter_context(mock.patch.object(m, "is_flashmla_dense_supported", lambda: (True, None)))
        sched_name = next((n.rpartition(":")[2] for n, k in entries.items() if k == "scheduler"), "")
        launch_name = next((n.rpartition(":")[2] for n, k in entries.items() if k == "launch"), "")
        for entry, kind in entries.items():
            where, _, name = entry.rpartition(":")
            owner = importlib.import_module(where) if where else m
            if hasattr(owner, name):
                _ORIGINALS[name] = getattr(owner, name)
            stack.enter_context(
                mock.patch.object(owner, name, scheduler if kind == "scheduler" else kernel, create=True)
            )
        layers = {}
        vllm_config = _config(case, cudagraph_mode, layers)
        vllm_config.model_config.dtype = torch.bfloat16
        # the MLA prefill selector reads the model's MLA dimensions (DeepSeek-V3's)
        vllm_config.model_config.hf_text_config = SimpleNamespace(
            model_type=case.model_type, qk_nope_head_dim=NOPE, qk_rope_head_dim=ROPE, v_head_dim=V_DIM,
            kv_lora_rank=KV_LORA_RANK,
        )  # fmt: skip
        if case.backend == "TOKENSPEED_MLA":
            _tokenspeed(stack, vllm_config, sms)
        if case.backend == "FLASHINFER_MLA":
            _flashinfer_mla(stack, m, sms, vllm_config, rec, GPUS[case.gpu].sm)
        stack.enter_context(set_current_vllm_config(vllm_config))
        impl = _impl(getattr(m, impl_name), case, "fp8" if case.backend == "TOKENSPEED_MLA" else "auto")
        layers["model.layers.0.self_attn.attn"] = layer = _layer(impl, case)
        spec = MLAAttentionSpec(block_size=case.block_size, num_kv_heads=1, head_size=KV_LORA_RANK + ROPE,
                                dtype=torch.bfloat16)  # fmt: skip
        builder = getattr(m, builder_name)(spec, list(layers), vllm_config, "cpu")
        for phase, value, build in (
            ("capture", capture_told, lambda cm: builder.build_for_cudagraph_capture(cm)),
            ("step", told, lambda cm: builder.build(common_prefix_len=0, common_attn_metadata=cm)),
        ):
            rec.phase = phase
            meta = build(common_metadata(step, value, case.block_size, case.max_model_len))
            tokens = sum(step.query_lens)
            dtype = torch.float8_e4m3fn if case.backend == "TOKENSPEED_MLA" else torch.bfloat16
            q = torch.zeros(tokens, case.num_heads, KV_LORA_RANK + ROPE, dtype=dtype)
            cache = torch.zeros(int(step.block_table.max()) + 1, case.block_size, KV_LORA_RANK + ROPE, dtype=dtype)
            impl.forward_mqa(q, cache, meta, layer)
        out["aot_schedule"] = getattr(builder, "aot_schedule", None)
    out["fa_version"] = None
    out["calls"] = rec.calls
    return out


def _bound(name: str, args, kw) -> dict:
    """A call's arguments by parameter name: the replaced entry point's own signature binds the positional ones."""
    import inspect

    original = _ORIGINALS.get(name)
    if original is None:
        return dict(kw)
    sig = inspect.signature(original)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        # a CPU placeholder (ops/flashmla.py _raise_flashmla_unavailable): the keywords, and the positional ints
        ints = [int(a) for a in args if isinstance(a, int) and not isinstance(a, bool)]
        return {**kw, **({"positional_ints": ints} if ints else {})}
    return dict(sig.bind_partial(*args, **kw).arguments)


_ORIGINALS: dict = {}  # name -> the entry point before it was replaced (filled by ``observe``)


def _scalars(kw: dict) -> dict:
    """The split counts and length bounds a call received."""
    keep = ("max_seqlen_q", "max_seqlen_k", "num_splits", "num_kv_splits", "max_seq_len", "batch_size",
            "num_batches", "sm_count")  # fmt: skip
    out = {k: int(v) for k, v in kw.items() if k in keep and isinstance(v, int) and not isinstance(v, bool)}
    return {**out, **({"positional_ints": kw["positional_ints"]} if "positional_ints" in kw else {})}


def _workspace(kw: dict) -> dict:
    """Triton MLA's partials buffer (attn_logits: [B, H, splits, kv_lora_rank + 1] fp32): its split dimension."""
    logits = kw.get("attn_logits")
    return {"attn_logits_shape": list(logits.shape)} if logits is not None else {}
