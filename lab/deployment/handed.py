"""What the chosen backend's kernel is handed on each step of a trace, from the observation table
(lab/gpu_model/observed.py: vLLM 0.33.0's own builders and forwards run in .venv-vllm), never an assumed launch
scalar.

The chosen backend is the one vLLM's CUDA selector puts first for a dense model on the scenario's GPU
(lab/deployment/backend_rules.py ``backend_priorities``: vllm/platforms/cuda.py ``_get_backend_priorities``), with
FlashAttention's version for that GPU (``fa_version``) and, for FA3, AOT scheduling off where the scenario has a
sliding-window group beside the full one (W1). Each observed step kind gives, per argument that derives from
max_seq_len, where the value the launch received came from: the step's told value (``TOLD``), the value capture
was told, max_model_len (``CAPTURE``), or neither (a value of its own, shown as observed). A scenario whose chosen
backend has no observation (FLASHINFER on SM100: flashinfer is not installed where the observations run; an
encoder-only model, whose FA path is not observed) is ``None``: the views say "not observed", never a value.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import SimpleNamespace

from lab.deployment.backend_rules import backend_priorities, fa_version
from lab.gpu_model import observed

TOLD = "the step's told value"
CAPTURE = "capture's value (max_model_len)"
# The trace's step kind (its CUDA-graph mode, or a draft pass's) -> the observed step of the same kind. PIECEWISE
# runs attention outside the graph, built and launched each step: the observed "no graph" step.
STEP_KIND = {"FULL": "FULL replay", "PIECEWISE": "no graph", "NONE": "eager"}
DRAFT_KIND = {"FULL": "draft pass, FULL graph", "PIECEWISE": "draft pass, eager", "NONE": "draft pass, eager"}
LENGTH_KEYS = ("max_seqlen_k", "max_seq_len", "max_kv_len")  # the launch argument drawn, first present


@dataclass(frozen=True)
class Handed:
    """The observed case standing for a scenario's chosen backend, and per observed step kind where the drawn launch
    argument's value came from (``TOLD``, ``CAPTURE``, or the observed value itself)."""

    backend: str  # vLLM's AttentionBackendEnum name
    case: str  # the observed case (observed.json "case")
    key: str  # the launch argument drawn ("max_seqlen_k", ...)
    origin: dict[str, str | int]  # observed step kind -> TOLD / CAPTURE / the value observed

    @property
    def label(self) -> str:
        return f"{self.backend} ({self.case}): launch {self.key}"

    def value(self, kind: str, told: int, max_model_len: int) -> int | None:
        """What the launch is handed on a step of ``kind`` told ``told``; None where that kind was not observed."""
        o = self.origin.get(kind)
        if o is None:
            return None
        return told if o == TOLD else max_model_len if o == CAPTURE else int(o)


def chosen_backend(scenario) -> tuple[str, int | None]:
    """vLLM's first-priority backend for a dense model on the scenario's GPU and, for FLASH_ATTN, its FA version."""
    name = backend_priorities(scenario.device_capability, use_mla=False)[0]
    return name, fa_version(scenario.device_capability) if name == "FLASH_ATTN" else None


def _case_for(scenario) -> tuple[str, str | None]:
    name, version = chosen_backend(scenario)
    if name != "FLASH_ATTN" or scenario.model_state == "encoder_only":
        return name, None
    for record, case in observed.cases():
        r = observed.rows(record, case)[0]
        if r["backend"] != "FLASH_ATTN" or r["fa_version"] != version or r["heads"][2] == 256:  # hd256: its own
            continue
        if version == 3 and r.get("aot_schedule") != (not scenario.sliding_window):
            continue
        return name, case
    return name, None


def _origin(row: dict, capture_told: int, key: str) -> str | int:
    """Where a launch's value came from. Inside a FULL graph capture's value wins a tie: a draft pass captured in
    the graph is re-planned at capture, told max_model_len (lab/gpu_model/observed.py, the fused draft pass)."""
    value = row["launch"][key]
    if value == capture_told and "FULL" in row["step"]:
        return CAPTURE
    if value == row["told"]:
        return TOLD
    return value


def handed_for(scenario) -> Handed | None:
    """The observed hand-over for the scenario's chosen backend (module docstring); None: not observed."""
    return _handed(scenario.device_capability, scenario.model_state, bool(scenario.sliding_window))


@cache
def _handed(device_capability: int, model_state: str, sliding: bool) -> Handed | None:
    scenario = SimpleNamespace(device_capability=device_capability, model_state=model_state, sliding_window=sliding)
    name, case = _case_for(scenario)
    if case is None:
        return None
    rs = [r for r in observed.rows(case=case) if r["mode"] == "fixed"]  # told the batch max: TOLD and CAPTURE differ
    capture = next(r for r in rs if r["step"] == "capture")
    key = next(k for k in LENGTH_KEYS if k in capture["launch"])
    return Handed(name, case, key, {r["step"]: _origin(r, capture["told"], key) for r in rs if r["launch"]})


def step_handed(handed: Handed | None, kind: str, told: int | None, max_model_len: int) -> int | None:
    """What a pass of ``kind`` (a trace's cudagraph mode, "FULL" / "PIECEWISE" / "NONE"; ``draft:`` before it for
    a draft pass) told ``told`` hands its launch: None where not observed (or the era had no such pass)."""
    if handed is None or told is None:
        return None
    draft, _, mode = kind.rpartition(":")
    return handed.value((DRAFT_KIND if draft else STEP_KIND)[mode], told, max_model_len)


def sized_by(handed: Handed | None, kind: str, told: int, max_model_len: int) -> tuple[int, bool]:
    """The max_seq_len a view sizes a pass's walk by (hero, block table, summary, the headline's walk ratio): what
    the launch is observed to be handed (``step_handed``), and True; where that is not observed, the metadata's
    told value, and False (the view says "not observed" beside it). Never the trace's modelled launch scalar."""
    v = step_handed(handed, kind, told, max_model_len)
    return (told, False) if v is None else (v, True)


def not_observed_text(scenario, why: bool = True) -> str:
    """What the views say where the chosen backend has no observation (``why``: where to read why, if room)."""
    name, version = chosen_backend(scenario)
    which = f"{name} (FA{version})" if version else name
    return f"what {which} is handed: not observed" + (" (docs/kernels.md says why)" if why else "")
