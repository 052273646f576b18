"""Which attention kernels the lab can run, which of them run on this machine, and which backend's
work each one does: its record in lab/gpu_model/backends.py, the one table of rule R10 (whether
``max_seq_len`` can change the work, how, and the sources that say so).

    from lab.kernels.registry import backends, get_kernel
    for b in backends():        # one dict per (kernel, device)
        b["name"], b["device"], b["kernel"], b["runs_here"], b["why_not"],
        b["max_seq_len_changes_work"], b["r10_reason"], b["r10_record"]
    fn = get_kernel("torch-reference", "cpu")   # fn(batch, kv_cache, max_seq_len, cfg) -> output
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import torch

from lab.gpu_model.backends import BY_NAME as R10
from lab.gpu_model.backends import KERNEL_RECORDS
from lab.gpu_model.backends import Backend as R10Record
from lab.kernels import adapters, compiled, vllm_cpu_attn
from lab.kernels.reference import paged_attention, paged_attention_trusting
from lab.kernels.split_kv import paged_attention_split_kv


def _compiled(batch, kv_cache, max_seq_len, cfg):
    return compiled.paged_attention_compiled(batch, kv_cache, max_seq_len, cfg)


def _compiled_trusting(batch, kv_cache, max_seq_len, cfg):
    return compiled.paged_attention_compiled(batch, kv_cache, max_seq_len, cfg, trusting=True)


def _vllm_cpu(batch, kv_cache, max_seq_len, cfg):
    return vllm_cpu_attn.paged_attention_vllm_cpu(batch, kv_cache, max_seq_len, cfg)


def _triton_split_kv(batch, kv_cache, max_seq_len, cfg):
    from lab.kernels.triton_split_kv import paged_attention_split_kv_triton  # triton: optional, imported on use

    return paged_attention_split_kv_triton(batch, kv_cache, max_seq_len, cfg)


@dataclass(frozen=True)
class Kernel:
    name: str
    device: str  # "cpu" | "cuda"
    kernel: str  # what runs
    fn: Callable | None  # fn(batch, kv_cache, max_seq_len, cfg) -> [tokens, q_heads, D]
    needs: tuple[str, ...] = ()  # Python modules it imports
    min_sm: int = 0  # compute capability major it needs (0: any)
    max_sm: int = 99
    needs_compiler: bool = False  # built with the machine's C++ compiler on first use (compiled.py)
    trusting: Callable | None = None  # its trusting variant (lab.run's out-of-range check); None: the
    # torch reference's
    needs_vllm_cpu: bool = False  # vLLM's compiled CPU attention ops (a CPU build of vLLM, vllm_cpu_attn.py)

    @property
    def record(self) -> R10Record:
        """The backend whose work it does: R10, its formula and sources. lab/gpu_model/backends.py
        KERNEL_RECORDS says which, so that the GPU model finds it without importing the kernels."""
        return R10[KERNEL_RECORDS[(self.name, self.device)]]


KERNELS: tuple[Kernel, ...] = (
    Kernel(
        "torch-reference",
        "cpu",
        "torch paged attention, chunked online softmax (lab/kernels/reference.py)",
        paged_attention,
    ),
    Kernel(
        "torch-reference",
        "cuda",
        "torch paged attention, chunked online softmax (lab/kernels/reference.py)",
        paged_attention,
    ),
    Kernel(
        "cpp-fused-gather",
        "cpu",
        "C++ paged attention, page gather fused into the dot products, float32 "
        "(lab/kernels/paged_decode.cpp via compiled.py)",
        _compiled,
        needs_compiler=True,
        trusting=_compiled_trusting,
    ),
    Kernel(
        "vllm-cpu",
        "cpu",
        "vLLM's CPU paged attention, torch.ops._C.cpu_attention_with_kv_cache "
        "(vllm/v1/attention/backends/cpu_attn.py, via lab/kernels/vllm_cpu_attn.py)",
        _vllm_cpu,
        needs_vllm_cpu=True,
    ),
    Kernel(
        "torch-split-kv",
        "cpu",
        "torch model of TRTLLM-gen's multi-CTA split (lab/kernels/split_kv.py)",
        paged_attention_split_kv,
    ),
    Kernel(
        "torch-split-kv",
        "cuda",
        "torch model of TRTLLM-gen's multi-CTA split (lab/kernels/split_kv.py)",
        paged_attention_split_kv,
    ),
    Kernel(
        "triton-split-kv",
        "cpu",
        "Triton split-KV kernel in the interpreter (lab/kernels/triton_split_kv.py)",
        _triton_split_kv,
        needs=("triton",),
    ),
    Kernel(
        "triton-split-kv",
        "cuda",
        "Triton split-KV kernel (lab/kernels/triton_split_kv.py)",
        _triton_split_kv,
        needs=("triton",),
    ),
    Kernel(
        "flashinfer-trtllm-gen",
        "cuda",
        "flashinfer.decode.trtllm_batch_decode_with_kv_cache (SM100)",
        adapters.flashinfer_trtllm_gen,
        needs=("flashinfer",),
        min_sm=10,
        max_sm=10,
    ),
    Kernel(
        "flashinfer-native",
        "cuda",
        "flashinfer.BatchDecodeWithPagedKVCacheWrapper",
        adapters.flashinfer_native,
        needs=("flashinfer",),
    ),
    Kernel(
        "flashinfer-xqa",
        "cuda",
        "FlashInfer XQA decode (SM90), no adapter in the lab yet",
        None,
        needs=("flashinfer",),
        min_sm=9,
        max_sm=9,
    ),
    Kernel(
        "vllm-triton-unified",
        "cuda",
        "vllm.v1.attention.ops.triton_unified_attention.unified_attention",
        adapters.vllm_triton_unified,
        needs=("vllm",),
    ),
    Kernel(
        "vllm-flash-attn",
        "cuda",
        "FlashAttention 3 through vLLM, no adapter in the lab yet",
        None,
        needs=("vllm",),
        min_sm=9,
        max_sm=9,
    ),
)


def _cuda_status(cuda=None) -> tuple[bool, int, str]:
    cuda = cuda if cuda is not None else torch.cuda
    if not cuda.is_available():
        return False, 0, "no CUDA device (torch.cuda.is_available() is False)"
    major, _ = cuda.get_device_capability()
    return True, int(major), ""


def status(b: Kernel, cuda=None, env=None) -> tuple[bool, str]:
    """(runs here, why not) for one backend on this machine."""
    env = os.environ if env is None else env
    for mod in b.needs:
        if not adapters.installed(mod):
            return False, f"{mod} is not installed"
    if b.device == "cuda":
        ok, major, why = _cuda_status(cuda)
        if not ok:
            return False, why
        if not b.min_sm <= major <= b.max_sm:
            want = f"SM{b.min_sm}0" if b.min_sm == b.max_sm else f"SM{b.min_sm}0-SM{b.max_sm}0"
            return False, f"needs {want}, this GPU is SM{major}0"
    elif "triton" in b.needs and env.get("TRITON_INTERPRET") != "1":
        return False, "on the CPU Triton runs only in its interpreter: set TRITON_INTERPRET=1 before starting"
    if b.needs_compiler:
        ok, why = compiled.status(env)
        if not ok:
            return False, why
    if b.needs_vllm_cpu:
        ok, why = vllm_cpu_attn.status()
        if not ok:
            return False, why
    if b.fn is None:
        return False, "no adapter in the lab yet"
    return True, ""


def backends(cuda=None, env=None) -> list[dict]:
    """Every known kernel on every device: what it is, whether it runs here (and why not), and
    whether max_seq_len can change its work (R10, with the reason, from its record)."""
    out = []
    for b in KERNELS:
        ok, why = status(b, cuda, env)
        out.append(
            {
                "name": b.name,
                "device": b.device,
                "kernel": b.kernel,
                "runs_here": ok,
                "why_not": why,
                "max_seq_len_changes_work": b.record.changes_work,
                "r10_reason": b.record.how,
                "r10_known": b.record.known,
                "r10_record": b.record.name,  # its backend in lab/gpu_model/backends.py (python -m lab gpu-model)
            }
        )
    return out


def find(name: str, device: str) -> Kernel:
    for b in KERNELS:
        if b.name == name and b.device == device:
            return b
    known = sorted({f"{b.name} ({b.device})" for b in KERNELS})
    raise ValueError(f"unknown backend {name!r} on device {device!r}; known: {', '.join(known)}")


def get_kernel(name: str, device: str) -> Callable:
    """The kernel function of a backend that runs here; ValueError saying why otherwise."""
    dev = "cuda" if str(device).startswith("cuda") else str(device)
    b = find(name, dev)
    ok, why = status(b)
    if ok and b.needs_compiler:
        try:
            compiled.load()  # builds on first use; a failure is reported, and remembered
        except compiled.CompiledKernelUnavailable as e:
            ok, why = False, str(e)
    if ok and b.needs_vllm_cpu:
        try:
            vllm_cpu_attn.load()  # imports vLLM (after lab/vllm_env.py install); a failure is reported, and remembered
        except vllm_cpu_attn.VllmCpuUnavailable as e:
            ok, why = False, str(e)
    if not ok:
        raise ValueError(f"backend {name!r} does not run on {device}: {why}")
    return b.fn


def get_trusting_kernel(name: str, device: str) -> Callable:
    """The trusting variant that goes with a backend: its own where it has one (same speed as the
    timed kernel), else the torch reference's."""
    dev = "cuda" if str(device).startswith("cuda") else str(device)
    b = find(name, dev)
    return b.trusting or paged_attention_trusting
