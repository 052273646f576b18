"""Stand-ins that let vLLM 0.33.0's own configuration code run on this CPU machine, for
lab/real_vllm/deployment/check.py: a CUDA platform answering as one GPU of lab/gpu_model/gpus.py
(``standin_cuda``), the kernel packages the CUDA wheel ships (``kernel_packages``: FA2/FA3 flags, FlashInfer's
cubins, ``flash_attn_varlen_func``, as tests/conformance/test_backend_selection_vllm.py marks them), and
``SpeculativeConfig.__post_init__`` run on a draft whose config is written from the lab's model facts
(``vllm_speculative``). Each patch is undone on exit."""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import types
from contextlib import ExitStack, contextmanager
from types import SimpleNamespace
from unittest import mock

from lab.gpu_model.gpus import GPUS


@contextmanager
def standin_cuda(gpu: str):
    """The CPU platform answering as ``gpu`` would (its row of lab/gpu_model/gpus.py): memory, name,
    capability; not a CPU or a TPU (get_batch_defaults has CPU and TPU columns)."""
    from vllm.platforms import current_platform
    from vllm.platforms.interface import DeviceCapability

    g = GPUS[gpu]
    cap = DeviceCapability(g.sm // 10, g.sm % 10)
    cls = type(current_platform)
    answers = {
        "get_device_total_memory": classmethod(lambda _c, device_id=0: g.memory_bytes),
        "get_device_name": classmethod(lambda _c, device_id=0: g.device_name),
        # Platform.is_device_capability / is_device_capability_family / has_device_capability (interface.py) read
        # this, each in both its forms ((9, 0) and 90): no stand-in of theirs (factcheck wave 4, I8)
        "get_device_capability": classmethod(lambda _c, device_id=0: cap),
        "is_cpu": lambda _self: False,
        "is_tpu": lambda _self: False,
    }
    saved = {name: cls.__dict__.get(name) for name in answers}
    for name, value in answers.items():
        setattr(cls, name, value)
    try:
        yield cap
    finally:
        for name, value in saved.items():
            if value is None:
                delattr(cls, name)
            else:
                setattr(cls, name, value)


def _flash_attn_interface(stack: ExitStack):
    try:
        return importlib.import_module("vllm.vllm_flash_attn.flash_attn_interface")
    except ImportError:
        # vllm/vllm_flash_attn/__init__.py refuses to load without its CUDA extensions; its
        # flash_attn_interface.py (the FA-version checks fa_utils asks) loads under a bare package.
        import vllm.platforms.cuda as cuda

        pkg = types.ModuleType("vllm.vllm_flash_attn")
        pkg.__path__ = [os.path.join(os.path.dirname(cuda.__file__), "..", "vllm_flash_attn")]
        stack.enter_context(mock.patch.dict(sys.modules, {"vllm.vllm_flash_attn": pkg}))
        module = importlib.import_module("vllm.vllm_flash_attn.flash_attn_interface")
        stack.enter_context(mock.patch.dict(sys.modules, {"vllm.vllm_flash_attn.flash_attn_interface": module}))
        return module


@contextmanager
def kernel_packages():
    """The kernel packages as vLLM's CUDA wheel installs them (what the lab assumes, docs/deployments.md)."""
    # vllm.platforms.cuda imports vllm._C_stable_libtorch, whose .so needs libcuda; that import only registers
    # CUDA ops, and the selection code is pure Python.
    sys.modules.setdefault("vllm._C_stable_libtorch", types.ModuleType("vllm._C_stable_libtorch"))
    import vllm.utils.flashinfer as fi

    with ExitStack() as stack:
        fai = _flash_attn_interface(stack)
        stack.enter_context(mock.patch.object(fai, "FA2_AVAILABLE", True))  # the CUDA wheel ships FA2 and FA3
        stack.enter_context(mock.patch.object(fai, "FA3_AVAILABLE", True))
        stack.enter_context(mock.patch.object(fi, "has_nvidia_artifactory", lambda: True))
        import vllm.v1.attention.backends.fa_utils as fa_utils
        import vllm.v1.attention.backends.flash_attn as fa

        # fa_utils.is_flash_attn_varlen_func_available: "CUDA and XPU always have flash_attn_varlen_func"
        stack.enter_context(mock.patch.object(fa, "is_flash_attn_varlen_func_available", lambda: True))
        # flash_attn.py imports flash_attn_supports_sinks only where that check held at import time
        stack.enter_context(
            mock.patch.object(fa, "flash_attn_supports_sinks", fa_utils.flash_attn_supports_sinks, create=True)
        )
        # vLLM 0.33.0's wheel requires tokenspeed-mla on Linux; TokenspeedMLABackend.supports_combination only
        # imports it (its kernels are not run here)
        stack.enter_context(mock.patch.dict(sys.modules, {"tokenspeed_mla": types.ModuleType("tokenspeed_mla")}))
        fi.supports_trtllm_attention.cache_clear()
        try:
            yield
        finally:
            fi.supports_trtllm_attention.cache_clear()


class _HFConfig(SimpleNamespace):
    """A model's config.json as the lab's facts give it (PretrainedConfig's ``update`` included)."""

    def update(self, values: dict) -> None:
        self.__dict__.update(values)


class _Given(SimpleNamespace):
    """A stand-in config: the attributes given, None for the rest (what the target's ModelConfig passes on
    to the draft's, which the stand-in draft ignores)."""

    def __getattr__(self, name: str):
        return None


class _Reached(Exception):
    """SpeculativeConfig.__post_init__ got past the method and K (its draft-TP check is next)."""


def target_hf_config(facts) -> _HFConfig:
    """The keys of the target's config.json that SpeculativeConfig reads (``hf_config_override``)."""
    config = _HFConfig(model_type=facts.model_type, architectures=[facts.architecture])
    if facts.num_mtp_layers:
        config.num_nextn_predict_layers = facts.num_mtp_layers
        config.mtp_num_hidden_layers = facts.num_mtp_layers
    return config


def vllm_speculative(spec: dict, target_name: str, facts, max_model_len: int) -> tuple[str, int | None]:
    """(method, num_speculative_tokens) after vLLM 0.33.0's own ``SpeculativeConfig.__post_init__``
    (vllm/config/speculative.py): the method inferred from the draft's name and type, "*_mtp" -> "mtp", K from
    the draft's ``n_predict`` (``SpeculativeConfig.hf_config_override`` on the target's config for an MTP draft
    of the target itself). The draft ``ModelConfig`` is a stand-in whose config is the target's (the model
    named on the line) or, for another draft, a plain Llama config (the lab knows only its name); EAGLE's
    config wrapper is a pass-through. Raises vLLM's ValueError where it refuses."""
    from pydantic.fields import FieldInfo
    from vllm.config import speculative as sp

    cfg = object.__new__(sp.SpeculativeConfig)  # the fields, unvalidated: the target config is a stand-in
    for f in dataclasses.fields(sp.SpeculativeConfig):
        value = f.default if f.default is not dataclasses.MISSING else None
        if f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        if isinstance(value, FieldInfo):
            value = value.get_default(call_default_factory=True)
        object.__setattr__(cfg, f.name, value)
    for key, value in spec.items():
        object.__setattr__(cfg, key, value)
    hf = target_hf_config(facts)
    target = _Given(
        model=target_name,
        model_weights=None,
        quantization=None,
        hf_config=hf,
        hf_text_config=hf,
        using_transformers_backend=lambda: False,
        hf_overrides=None,
        max_model_len=max_model_len,
        tokenizer=target_name,
        is_moe=facts.is_moe,
    )
    object.__setattr__(cfg, "target_model_config", target)
    object.__setattr__(cfg, "target_parallel_config", SimpleNamespace(tensor_parallel_size=1))

    def draft_model_config(model, **_kw):
        if model == target_name:  # ModelConfig(runner="draft") applies hf_config_override to the checkpoint
            config = sp.SpeculativeConfig.hf_config_override(target_hf_config(facts))
        else:
            config = _HFConfig(model_type="llama", architectures=["LlamaForCausalLM"])
        return SimpleNamespace(
            model=model, hf_config=config, architectures=list(config.architectures), max_model_len=max_model_len
        )

    class _Eagle(_HFConfig):
        def __init__(self, config, method=None, model_type=None):
            super().__init__(**vars(config))
            self.model_type = model_type

    def reached(*_a, **_k):
        raise _Reached

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(sp, "ModelConfig", draft_model_config))
        stack.enter_context(mock.patch("vllm.transformers_utils.configs.eagle.EAGLEConfig", _Eagle))
        stack.enter_context(mock.patch.object(sp.SpeculativeConfig, "_verify_and_get_draft_tp", reached))
        stack.enter_context(mock.patch.object(sp.SpeculativeConfig, "update_arch_", lambda self: None))
        try:
            cfg.__post_init__()
        except _Reached:
            pass
        except TypeError as e:  # vLLM's own crash on a None K (an MTP draft without num_speculative_tokens)
            raise ValueError(f"TypeError: {e}") from None
    if cfg.num_speculative_tokens is None:  # SpeculativeConfig._verify_args, next in line
        sp.SpeculativeConfig._verify_args(cfg)
    return cfg.method, cfg.num_speculative_tokens
