"""lab/deployment/selection.py against vLLM 0.33.0's own selector: ``_get_backend_priorities`` and each
backend's ``validate_configuration`` (vllm/platforms/cuda.py ``CudaPlatform.get_valid_backends``), for
(SM, config) cases. Runs in ``.venv-vllm`` (skipped elsewhere, required under LAB_REQUIRE_VLLM=1).

vLLM's FlashAttention/FlashInfer checks ask ``current_platform`` for the GPU; the test points its
``get_device_capability`` at the case's SM, and marks the kernel packages the CUDA wheel ships as
present (FA2/FA3 flags in vllm_flash_attn, FlashInfer's cubins), as the lab assumes. Backends whose
package is still missing here (flashinfer, _flashmla_C, a CUDA allocation at import) are skipped and
counted."""

from __future__ import annotations

import importlib
import os
import re
import sys
import types

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

# vllm.platforms.cuda imports vllm._C_stable_libtorch, whose .so needs libcuda; that import only registers
# CUDA ops, and the selection code is pure Python, so a placeholder module stands in for it.
sys.modules.setdefault("vllm._C_stable_libtorch", types.ModuleType("vllm._C_stable_libtorch"))

import torch  # noqa: E402

from lab.deployment.selection import backend_priorities, select_backend  # noqa: E402
from lab.gpu_model.gpus import GPUS  # noqa: E402

cuda = pytest.importorskip("vllm.platforms.cuda")
from vllm.platforms import current_platform  # noqa: E402
from vllm.platforms.interface import DeviceCapability  # noqa: E402
from vllm.v1.attention.backends.registry import AttentionBackendEnum  # noqa: E402
from vllm.v1.attention.selector import AttentionSelectorConfig  # noqa: E402

_IMPORT_ONLY = re.compile(
    r"ImportError|ModuleNotFoundError|OSError|AssertionError|not available|unavailable|"
    r"not installed|requires FlashInfer",
    re.I,
)
_DT = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}

# Every compute capability of the GPU table (lab/gpu_model/gpus.py), and SM120 (RTX Blackwell)
SMS = tuple(sorted({g.sm for g in GPUS.values() if g.sm} | {120}))
CASES = [  # (sm, config for select_backend)
    (sm, dict(use_mla=False, head_size=h, num_heads=32, **kw))
    for sm in SMS
    for h, kw in (
        (128, {}),
        (64, dict(has_sink=True, has_sliding_window=True)),
        (256, {}),
        (64, dict(attn_type="encoder_only")),
        (128, dict(kv_cache_dtype="fp8", block_size=32)),
        (128, dict(kv_cache_dtype="fp8")),  # docs/deployments.md's L40S row
        (96, dict(use_non_causal=True)),
        (40, dict(dtype="float32")),
        (128, dict(use_mm_prefix=True, has_sliding_window=True)),  # gemma-3-27b (ModelConfig.is_mm_prefix_lm)
        (256, dict(use_mm_prefix=True, has_sliding_window=True)),  # gemma-3-4b/12b: the Triton composites
        (256, dict(use_mm_prefix=True, block_size=64)),
        (128, dict(use_mm_prefix=True, kv_cache_dtype="fp8")),
    )
] + [
    (sm, dict(use_mla=True, head_size=576, num_heads=n, **kw))
    for sm in SMS
    for n, kw in (
        (128, {}),
        (16, {}),
        (128, dict(kv_cache_dtype="fp8")),
        (128, dict(block_size=16)),
        (128, dict(block_size=64)),
        (128, dict(block_size=128)),
    )
]


@pytest.fixture
def at_sm(monkeypatch):
    import vllm.utils.flashinfer as fi

    try:
        import vllm.vllm_flash_attn.flash_attn_interface as fai
    except ImportError:
        # vllm/vllm_flash_attn/__init__.py refuses to load without its CUDA extensions; its
        # flash_attn_interface.py (the FA-version support checks fa_utils asks) loads under a bare package.
        pkg = types.ModuleType("vllm.vllm_flash_attn")
        pkg.__path__ = [os.path.join(os.path.dirname(cuda.__file__), "..", "vllm_flash_attn")]
        monkeypatch.setitem(sys.modules, "vllm.vllm_flash_attn", pkg)
        fai = importlib.import_module("vllm.vllm_flash_attn.flash_attn_interface")
        monkeypatch.setitem(sys.modules, "vllm.vllm_flash_attn.flash_attn_interface", fai)
    monkeypatch.setattr(fai, "FA2_AVAILABLE", True)  # the CUDA wheel ships FA2 and FA3 (FA4 is Python)
    monkeypatch.setattr(fai, "FA3_AVAILABLE", True)
    monkeypatch.setattr(fi, "has_nvidia_artifactory", lambda: True)
    # the wheel requires tokenspeed-mla on Linux (W3): supports_combination only imports it
    monkeypatch.setitem(sys.modules, "tokenspeed_mla", types.ModuleType("tokenspeed_mla"))
    import vllm.v1.attention.backends.flash_attn as fa

    # fa_utils.is_flash_attn_varlen_func_available: "CUDA and XPU always have flash_attn_varlen_func available";
    # current_platform.is_cuda() is False on this CPU machine
    monkeypatch.setattr(fa, "is_flash_attn_varlen_func_available", lambda: True)
    import vllm.v1.attention.backends.fa_utils as fa_utils

    # flash_attn.py imports flash_attn_supports_sinks only where that check held at import time
    monkeypatch.setattr(fa, "flash_attn_supports_sinks", fa_utils.flash_attn_supports_sinks, raising=False)
    fi.supports_trtllm_attention.cache_clear()

    def point(sm: int) -> DeviceCapability:
        cap = DeviceCapability(sm // 10, sm % 10)
        monkeypatch.setattr(type(current_platform), "get_device_capability", classmethod(lambda cls, device_id=0: cap))
        fi.supports_trtllm_attention.cache_clear()
        return cap

    yield point
    fi.supports_trtllm_attention.cache_clear()


COUNTS = {"compared": 0, "skipped": 0}


@pytest.mark.parametrize("sm, cfg", CASES, ids=[f"sm{sm}-{i}" for i, (sm, _) in enumerate(CASES)])
def test_selection_equals_vllms(sm, cfg, at_sm):
    cap = at_sm(sm)
    sel = AttentionSelectorConfig(
        head_size=cfg["head_size"],
        dtype=_DT[cfg.get("dtype", "bfloat16")],
        kv_cache_dtype=cfg.get("kv_cache_dtype", "auto"),
        block_size=cfg.get("block_size"),
        use_mla=cfg["use_mla"],
        has_sink=cfg.get("has_sink", False),
        attn_type=cfg.get("attn_type", "decoder"),
        has_sliding_window=cfg.get("has_sliding_window", False),
        use_non_causal=cfg.get("use_non_causal", False),
        use_mm_prefix=cfg.get("use_mm_prefix", False),
    )
    vllm_order = cuda._get_backend_priorities(
        use_mla=sel.use_mla,
        device_capability=cap,
        num_heads=cfg["num_heads"],
        kv_cache_dtype=sel.kv_cache_dtype,
        use_non_causal=sel.use_non_causal,
        head_size=sel.head_size,
        use_mm_prefix=sel.use_mm_prefix,
    )
    lab_order = backend_priorities(
        sm,
        use_mla=cfg["use_mla"],
        num_heads=cfg["num_heads"],
        kv_cache_dtype=sel.kv_cache_dtype,
        use_non_causal=sel.use_non_causal,
        head_size=sel.head_size,
        use_mm_prefix=sel.use_mm_prefix,
    )
    assert lab_order == tuple(b.name for b in vllm_order)  # (a) the priority list, exactly
    lab = dict(select_backend(sm, **cfg).candidates)
    vllm_valid, compared = [], 0
    for backend in vllm_order:  # CudaPlatform.get_valid_backends, one backend at a time
        try:
            reasons = (
                AttentionBackendEnum[backend.name]
                .get_class()
                .validate_configuration(device_capability=cap, **sel._asdict())
            )
        except (ImportError, OSError, AssertionError) as e:  # CUTLASS_MLA allocates a CUDA tensor at import
            reasons = [f"{type(e).__name__}: {e}"]
        if reasons and all(_IMPORT_ONLY.search(r) for r in reasons):
            COUNTS["skipped"] += 1
            if not lab[backend.name]:  # (c) import-only failures: the lab's verdict stands (not compared)
                vllm_valid.append(backend.name)
            continue
        compared += 1
        assert (not lab[backend.name]) == (not reasons), (backend.name, lab[backend.name], reasons)  # (b)
        if not reasons:
            vllm_valid.append(backend.name)
    COUNTS["compared"] += compared
    assert compared >= 1
    assert select_backend(sm, **cfg).vllm_name == vllm_valid[0]  # (c)


def test_some_backends_were_truly_compared():
    print(COUNTS)
    assert COUNTS["compared"] >= 3 * len(CASES) // 2, COUNTS


def test_cudagraph_support_equals_vllms_builders(at_sm):
    from lab.deployment.selection import cudagraph_support

    checked = 0
    for sm in (90, 100):
        at_sm(sm)
        for name in (
            "TRITON_ATTN",
            "FLEX_ATTENTION",
            "TRITON_MLA",
            "FLASH_ATTN_MLA",
            "FLASHMLA",
            "CUTLASS_MLA",
            "FLASHINFER_MLA",
            "TURBOQUANT",
        ):
            try:
                builder = AttentionBackendEnum[name].get_class().get_builder_cls()
            except (ImportError, OSError, AssertionError):
                continue
            assert cudagraph_support(name, sm) == builder._cudagraph_support.name, name
            checked += 1
    assert checked >= 4
