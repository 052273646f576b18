"""A hybrid's KV block size asked of vLLM 0.33.0's own code: the model's config rules, then
``Platform._align_hybrid_block_size`` (vllm/platforms/interface.py), on the stand-in CUDA platform of the deployment's
GPU (lab/real_vllm/conform/vllm_standins.py).

What runs is vLLM's: the configuration object built from the same config.json the lab read (model_config.py
``hf_config``, then ``get_hf_text_config``); ``MODELS_CONFIG_MAP[architecture].verify_and_update_config`` (NemotronH's
and Qwen3.5's ssm cache dtype rules) and ``HybridAttentionMambaModelConfig.verify_and_update_config`` (prefix caching
-> the "align" mamba cache mode), in ``VllmConfig.try_verify_and_update_config``'s order; the model class's own
``get_mamba_state_shape_from_config`` / ``get_mamba_state_dtype_from_config`` where its module imports on this CPU
machine (jamba.py, falcon_h1.py, zamba2.py, lfm2.py, lfm2_moe.py, nemotron_h.py, granitemoehybrid.py), and the
backend class's kernel block sizes and ``customize_spec``.

Stand-ins, each named: qwen3_next.py, qwen3_5.py and olmo_hybrid.py do not import here (compressed_tensors is not
installed), so a GDN model class answers its state as their classmethods do, through vLLM's own
``MambaStateShapeCalculator.gated_delta_net_state_shape`` and ``MambaStateDtypeCalculator.
gated_delta_net_state_dtype`` on the text config; the Qwen GDN layer's checkpoint alignment
(FLASHINFER_GDN_CHECKPOINT_ALIGNMENT where FlashInfer's GDN prefill runs) takes the lab's ``gdn_flashinfer_prefill``
(OLMo-Hybrid's layer exports none); a backend whose package is missing (flashinfer) answers the lab's smallest kernel
block. ``_find_non_ssm_backends`` answers the deployment's backend (the layers are not built)."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

from lab.gpu_model.gpus import GPUS
from lab.real_vllm.conform.vllm_mrv2 import load_vllm
from lab.real_vllm.conform.vllm_standins import kernel_packages, standin_cuda
from lab.real_vllm.deployment.model_config import hf_config

GDN_ARCHITECTURES = ("Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
                     "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                     "OlmoHybridForCausalLM")  # fmt: skip
# QwenGatedDeltaNetAttention's models: their layer exports FlashInfer prefill checkpoints (OLMo-Hybrid's does not)
CHECKPOINTING = GDN_ARCHITECTURES[:-1]


def _gdn_model():
    """qwen3_next.py / qwen3_5.py / olmo_hybrid.py's two classmethods, through vLLM's calculators (those modules
    do not import here); they read the GDN keys of ``hf_text_config`` (olmo_hybrid.py: ``hf_config``, the same
    object for it)."""
    from vllm.model_executor.layers.mamba.mamba_utils import MambaStateDtypeCalculator, MambaStateShapeCalculator

    class _Model:
        @staticmethod
        def get_mamba_state_shape_from_config(c):
            text = c.model_config.hf_text_config
            spec = c.speculative_config.num_speculative_tokens if c.speculative_config else 0
            return MambaStateShapeCalculator.gated_delta_net_state_shape(
                c.parallel_config.tensor_parallel_size,
                text.linear_num_key_heads,
                text.linear_num_value_heads,
                text.linear_key_head_dim,
                text.linear_value_head_dim,
                text.linear_conv_kernel_dim,
                spec,
            )

        @staticmethod
        def get_mamba_state_dtype_from_config(c):
            cache = c.cache_config
            return MambaStateDtypeCalculator.gated_delta_net_state_dtype(
                c.model_config.dtype, cache.mamba_cache_dtype, cache.mamba_ssm_cache_dtype
            )

    return _Model


def _model_class(architecture: str):
    """The class ``ModelRegistry.resolve_model_cls`` gives ``architecture``, or the GDN stand-in."""
    if architecture in GDN_ARCHITECTURES:
        return _gdn_model()
    from vllm.model_executor.models.registry import ModelRegistry

    return ModelRegistry._try_load_model_cls(architecture)


def checkable(architecture: str) -> bool:
    """Whether vLLM's answer can be asked here: a GDN stand-in, or a model module that imports on this machine
    (lfm2_vl.py needs torchvision, nano_nemotron_vl.py more)."""
    load_vllm()
    return architecture in GDN_ARCHITECTURES or _model_class(architecture) is not None


def _vllm_config(dep, hf, text, cache):
    import torch

    m, s = dep.model, dep.line.settings
    tp = s.get("tensor_parallel_size") or 1
    dtype = s.get("dtype") if s.get("dtype") not in (None, "auto") else m.dtype
    model = SimpleNamespace(
        dtype=getattr(torch, dtype),
        use_mla=False,
        architecture=m.architecture,
        hf_config=hf,
        hf_text_config=text,
        is_hybrid=True,
        max_model_len=dep.settings["max_model_len"],
        get_num_kv_heads=lambda p: max(1, m.num_kv_heads // tp),
        get_head_size=lambda: m.head_size,
    )
    return SimpleNamespace(
        model_config=model,
        cache_config=cache,
        additional_config={},
        parallel_config=SimpleNamespace(tensor_parallel_size=tp, data_parallel_size=1),
        scheduler_config=SimpleNamespace(enable_chunked_prefill=True),
        speculative_config=SimpleNamespace(num_speculative_tokens=dep.k) if dep.k else None,
        num_speculative_tokens=dep.k,
        compilation_config=SimpleNamespace(static_forward_context={}),
    )


def vllm_block_size(dep) -> int:
    """The KV block size vLLM 0.33.0 gives the hybrid deployment ``dep`` (a resolved lab Deployment)."""
    from lab.deployment.hybrid_block import gdn_flashinfer_prefill

    load_vllm()
    # imported before kernel_packages(), whose sys.modules patch would drop the model module again on exit (and a
    # second import registers its custom ops twice)
    model_cls = _model_class(dep.model.architecture)
    with kernel_packages(), standin_cuda(dep.gpu):
        from vllm.model_executor.layers.mamba import abstract
        from vllm.model_executor.models import ModelRegistry
        from vllm.model_executor.models.config import MODELS_CONFIG_MAP, HybridAttentionMambaModelConfig
        from vllm.platforms import current_platform
        from vllm.platforms.interface import Platform
        from vllm.transformers_utils.config import get_hf_text_config
        from vllm.v1.attention.backends.gdn_attn import FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
        from vllm.v1.attention.backends.registry import AttentionBackendEnum

        s, m = dep.line.settings, dep.model
        hf = hf_config(m.config)
        text = get_hf_text_config(hf)
        cache = SimpleNamespace(
            cache_dtype=s.get("kv_cache_dtype") or "auto",
            block_size=dep.settings["block_size"],
            enable_prefix_caching=s.get("enable_prefix_caching") is not False,
            mamba_cache_mode="none",
            mamba_block_size=None,
            mamba_page_size_padded=None,
            mamba_cache_dtype=s.get("mamba_cache_dtype") or "auto",
            mamba_ssm_cache_dtype=s.get("mamba_ssm_cache_dtype") or "auto",
            use_replayssm=False,
            kv_cache_dtype_skip_layers=None,
        )
        config = _vllm_config(dep, hf, text, cache)
        if m.architecture in CHECKPOINTING:
            flashinfer = gdn_flashinfer_prefill(GPUS[dep.gpu].sm, text.linear_key_head_dim)

            class _GDNLayer(abstract.MambaBase):  # qwen_gdn_linear_attn.py: get_prefill_checkpoint_alignment
                def get_prefill_checkpoint_alignment(self):
                    return (
                        FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
                        if cache.mamba_cache_mode == "align" and flashinfer
                        else None
                    )

            _GDNLayer.__abstractmethods__ = frozenset()  # nothing else of the layer is asked
            config.compilation_config.static_forward_context["gdn"] = object.__new__(_GDNLayer)
        # VllmConfig.try_verify_and_update_config: the architecture's rule, then the hybrid one
        if m.architecture in MODELS_CONFIG_MAP:
            MODELS_CONFIG_MAP[m.architecture].verify_and_update_config(config)
        HybridAttentionMambaModelConfig.verify_and_update_config(config)
        try:
            backend = AttentionBackendEnum[dep.backend.vllm_name].get_class()
        except (ImportError, OSError, AssertionError):
            backend = SimpleNamespace(
                get_supported_kernel_block_sizes=lambda *a: [dep.backend.kernel_block], customize_spec=lambda spec: spec
            )
        with (
            mock.patch.object(Platform, "_find_non_ssm_backends", classmethod(lambda cls, c: [backend])),
            mock.patch.object(ModelRegistry, "resolve_model_cls", lambda *a, **k: (model_cls, m.architecture)),
        ):
            Platform._align_hybrid_block_size.__func__(type(current_platform), config, backend)
    return int(cache.block_size)
