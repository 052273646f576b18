"""One mamba layer's state, as each hybrid model class of vLLM 0.33.0 declares it, and the page it fills.

vLLM sizes a hybrid's attention block so that one attention page holds one mamba layer's state
(vllm/platforms/interface.py ``Platform._align_hybrid_block_size``). That state comes from the model class's two
classmethods, ``get_mamba_state_shape_from_config`` (through vllm/model_executor/layers/mamba/mamba_utils.py
``MambaStateShapeCalculator``) and ``get_mamba_state_dtype_from_config`` (``MambaStateDtypeCalculator``); the page is
vllm/v1/kv_cache_interface.py ``MambaSpec.page_size_bytes``, the sum of each state's elements times its dtype's size.
Four layouts cover the hybrids modelled here:

- ``gdn``: ``gated_delta_net_state_shape`` (qwen3_next.py, qwen3_5.py; their GDN layer may export prefill checkpoints,
  lab/deployment/hybrid_block.py); ``gdn_plain``: the same state in olmo_hybrid.py, whose layer exports none;
- ``mamba2``: ``mamba2_state_shape`` (nemotron_h.py, granitemoehybrid.py, falcon_h1.py, zamba2.py);
- ``mamba1``: ``mamba1_state_shape`` (jamba.py);
- ``short_conv``: ``short_conv_state_shape`` (lfm2.py, lfm2_moe.py).

A state is a tuple: (layout, dims ..., ssm cache dtype the model's config rule sets, or "auto")."""

from __future__ import annotations

from math import prod

GDN_KEYS = (
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)
# hf_text_config.model_type of the models whose mamba layers are vLLM's QwenGatedDeltaNetAttention
# (qwen3_next.py, qwen3_5.py: the same GDN layer, the same checkpoint rule): layout "gdn"
GDN_MODEL_TYPES = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
# olmo_hybrid.py: OlmoHybridGatedDeltaNetAttention, the same state and no prefill checkpoints: layout "gdn_plain"
GDN_PLAIN_MODEL_TYPES = ("olmo_hybrid",)
# hf_config keys of each Mamba2 hybrid's get_mamba_state_shape_from_config: (num_heads, head_dim, n_groups,
# state_size, conv_kernel). The intermediate size: nemotron_h.py mamba_num_heads * mamba_head_dim;
# granitemoehybrid.py and zamba2.py mamba_expand * hidden_size; falcon_h1.py mamba_d_ssm, or that product where
# it is None
MAMBA2_KEYS = {
    "nemotron_h": ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel"),
    "granitemoehybrid": ("mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv"),
    "falcon_h1": ("mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv"),
    "zamba2": ("n_mamba_heads", "mamba_headdim", "mamba_ngroups", "mamba_d_state", "mamba_d_conv"),
}
# jamba.py: mamba1_state_shape(intermediate_size=mamba_expand * hidden_size, state_size, conv_kernel)
MAMBA1_KEYS = {"jamba": ("mamba_d_state", "mamba_d_conv")}
# lfm2.py: short_conv_state_shape(intermediate_size=conv_dim, conv_kernel=conv_L_cache); lfm2_moe.py: hidden_size
SHORT_CONV_KEYS = {"lfm2": ("conv_dim", "conv_L_cache"), "lfm2_moe": ("hidden_size", "conv_L_cache")}
# Integer keys read above (a config.json's value is type-checked; their class defaults apply, text_config.py).
# Granite's and Falcon-H1's mamba_d_head may be "auto"; Zamba2's mamba_headdim is derived (text_config.py)
STATE_INT_KEYS = tuple(
    sorted(
        (
            {k for table in (MAMBA2_KEYS, MAMBA1_KEYS, SHORT_CONV_KEYS) for keys in table.values() for k in keys}
            | {*GDN_KEYS, "mamba_expand", "mamba_d_ssm"}
        )
        - {"mamba_d_head", "mamba_headdim"}
    )
)

# model_executor/models/config.py NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype: "auto" becomes the
# config's mamba_ssm_cache_dtype, else "float32" ("Only `float32` is known to have no accuracy issues by default")
NEMOTRON_H_SSM_DTYPE = "float32"
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}


def _ssm_dtype(model_type: str, get) -> str:
    """The ssm cache dtype a model's config rule (model_executor/models/config.py MODELS_CONFIG_MAP) sets where
    --mamba-ssm-cache-dtype is "auto"."""
    if model_type == "nemotron_h":  # NemotronHForCausalLMConfig
        return get("mamba_ssm_cache_dtype") or NEMOTRON_H_SSM_DTYPE
    if model_type in ("qwen3_5_text", "qwen3_5_moe_text"):  # Qwen3_5ForConditionalGenerationConfig
        return get("mamba_ssm_dtype") or "auto"
    return "auto"


def mamba_state(model_type: str, get) -> tuple:
    """A hybrid's mamba layer state from its (text) config (``get``: lab/deployment/text_config.py); () where the
    model is not one of the layouts above or its config leaves a needed key out."""
    if model_type in GDN_MODEL_TYPES + GDN_PLAIN_MODEL_TYPES:
        if any(get(k) is None for k in GDN_KEYS):
            return ()
        layout = "gdn" if model_type in GDN_MODEL_TYPES else "gdn_plain"
        return (layout, *(int(get(k)) for k in GDN_KEYS), _ssm_dtype(model_type, get))
    if model_type in MAMBA2_KEYS:
        keys = MAMBA2_KEYS[model_type]
        if any(get(k) is None for k in keys):
            return ()
        heads, head_dim, groups, state, conv = (get(k) for k in keys)
        if model_type == "nemotron_h":
            intermediate = int(heads) * int(head_dim)
        elif model_type == "falcon_h1" and get("mamba_d_ssm") is not None:
            intermediate = int(get("mamba_d_ssm"))
        elif get("mamba_expand") is None or get("hidden_size") is None:
            return ()
        else:
            intermediate = int(get("mamba_expand") * get("hidden_size"))
        if head_dim == "auto":  # GraniteMoeHybridConfig / FalconH1Config: the intermediate size // mamba_n_heads
            head_dim = intermediate // int(heads)
        ssm = _ssm_dtype(model_type, get)
        return ("mamba2", intermediate, int(heads), int(head_dim), int(groups), int(state), int(conv), ssm)
    if model_type in MAMBA1_KEYS:
        state, conv = (get(k) for k in MAMBA1_KEYS[model_type])
        if None in (state, conv, get("mamba_expand"), get("hidden_size")):
            return ()
        return ("mamba1", int(get("mamba_expand") * get("hidden_size")), int(state), int(conv), "auto")
    if model_type in SHORT_CONV_KEYS:
        dim, conv = (get(k) for k in SHORT_CONV_KEYS[model_type])
        return () if None in (dim, conv) else ("short_conv", int(dim), int(conv))
    return ()


def state_shapes(state: tuple, tp: int, k: int) -> list[tuple[tuple[int, ...], str]]:
    """(shape, "conv" | "ssm") of each state tensor of one layer at tensor parallel ``tp`` with ``k`` speculative
    tokens (MambaStateShapeCalculator; the conv state's orientation does not change its size)."""
    layout = state[0]
    if layout in ("gdn", "gdn_plain"):  # gated_delta_net_state_shape (qwen3_next/qwen3_5/olmo_hybrid pass num_spec)
        k_heads, v_heads, k_dim, v_dim, conv_kernel = state[1:6]
        conv_dim = k_dim * k_heads * 2 + v_dim * v_heads
        return [((conv_dim // tp, conv_kernel - 1 + k), "conv"), ((v_heads // tp, v_dim, k_dim), "ssm")]
    if layout == "mamba2":  # mamba2_state_shape, num_spec = vllm_config.num_speculative_tokens
        intermediate, heads, head_dim, groups, state_size, conv_kernel = state[1:7]
        groups += 0 if groups % tp == 0 else tp - groups  # extra_groups_for_head_shards
        conv_dim = intermediate + 2 * groups * state_size
        return [((conv_dim // tp, conv_kernel - 1 + k), "conv"), ((heads // tp, head_dim, state_size), "ssm")]
    if layout == "mamba1":  # mamba1_state_shape: no speculative tokens
        intermediate, state_size, conv_kernel = state[1:4]
        return [((intermediate // tp, conv_kernel - 1), "conv"), ((intermediate // tp, state_size), "ssm")]
    dim, conv_kernel = state[1:3]  # short_conv_state_shape: lfm2.py passes no num_spec
    return [((dim // tp, conv_kernel - 1), "conv")]


def cache_dtypes(state: tuple, model_dtype: str, mamba_cache_dtype: str, mamba_ssm_cache_dtype: str) -> dict:
    """{"conv": dtype, "ssm": dtype} (MambaStateDtypeCalculator._mamba_state_dtype): the conv state in
    --mamba-cache-dtype ("auto": the model's dtype), the temporal state in --mamba-ssm-cache-dtype, where "auto" is
    the model's config rule (``state[-1]``) and then the conv state's dtype."""
    conv = model_dtype if mamba_cache_dtype in ("auto", None) else mamba_cache_dtype
    ssm = mamba_ssm_cache_dtype or "auto"
    if ssm == "auto" and state[0] != "short_conv":
        ssm = state[-1]
    return {"conv": conv, "ssm": conv if ssm == "auto" else ssm}


def page_bytes(state: tuple, tp: int, k: int, model_dtype: str, mamba_cache_dtype="auto", ssm_cache_dtype="auto"):
    """MambaSpec.page_size_bytes of one layer: every state tensor's elements times its dtype's size."""
    dtypes = cache_dtypes(state, model_dtype, mamba_cache_dtype, ssm_cache_dtype)
    return sum(prod(shape) * DTYPE_BYTES[dtypes[role]] for shape, role in state_shapes(state, tp, k))
