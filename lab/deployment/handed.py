"""What the chosen backend's kernel is handed on each step of a trace, from the observation table
(lab/gpu_model/observed.py: vLLM 0.33.0's own builders and forwards run in .venv-vllm), never an assumed launch
scalar.

The chosen backend is the one vLLM's CUDA selector puts first for a dense model on the scenario's GPU
(lab/deployment/backend_rules.py ``backend_priorities``: vllm/platforms/cuda.py ``_get_backend_priorities``), with
FlashAttention's version for that GPU (``fa_version``) and, for FA3, AOT scheduling off where the scenario has a
sliding-window group beside the full one (W1). Each observed step kind gives, per argument that derives from
max_seq_len, where the value the launch received came from: the step's told value (``TOLD``), the value capture
was told, max_model_len (``CAPTURE``), or neither (a value of its own, shown as observed). A scenario whose chosen
backend has no observation (an encoder-only model, whose FA path is not observed; a launch with no length argument)
is ``None``: the views say "not observed", never a value. FLASHINFER is observed per path (lab/real_vllm/observe/
flashinfer.py): TRTLLM-gen on SM100, XQA decode on SM90/SM12x, native FlashInfer elsewhere (``flashinfer_path``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import SimpleNamespace

from lab.deployment.backend_rules import backend_priorities, fa_version
from lab.gpu_model import observed
from lab.gpu_model.gpus import GPUS

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
    # FA3 only (None for any other backend): FA3's scheduler metadata as observed (``Scheduler``); for an FA3 case
    # whose builder made no get_scheduler_metadata call on any step (AOT scheduling off, W1), a Scheduler with no
    # observed step kind.
    scheduler: Scheduler | None = None

    @property
    def label(self) -> str:
        return f"{self.backend} ({self.case}): launch {self.key}"

    def value(self, kind: str, told: int, max_model_len: int) -> int | None:
        """What the launch is handed on a step of ``kind`` told ``told``; None where that kind was not observed."""
        return _value(self.origin, kind, told, max_model_len)


def _value(origin: dict, kind: str, told: int, max_model_len: int) -> int | None:
    o = origin.get(kind)
    if o is None:
        return None
    return told if o == TOLD else max_model_len if o == CAPTURE else int(o)


# The claims behind what the scheduler line says of vLLM's code (lab/gpu_model/backend_claims.py; each is checked in
# vLLM 0.33.0's installed source by tests/conformance/test_claims_vllm.py and test_fa3_scheduler_vllm.py): the call
# is made only with AOT scheduling on, from the step's max_seq_len, stored where a FULL graph reads it; more than one
# sliding-window config turns it off; num_splits is pinned on steps a FULL graph can take.
AOT_OFF = "AOT scheduling off: more than one sliding-window config (observed)"  # the short form, for a table cell
SCHEDULER_CLAIMS = (
    "fa3.scheduler",
    "fa3.scheduler_told",
    "fa3.store",
    "fa3.aot_off",
    "fa3.window_configs",
    "fa3.pin",
    "fa3.pin_count",
    "fa3.default_32",
)


@dataclass(frozen=True)
class Scheduler:
    """FA3's scheduler metadata, as observed: the ahead-of-time ``get_scheduler_metadata`` call
    ``FlashAttentionMetadataBuilder.build`` makes (vllm/v1/attention/backends/flash_attn.py
    ``_get_scheduler_metadata``: ``max_seqlen_k=max_seq_len``, the step's metadata value; under FULL graphs
    ``_store_scheduler_metadata`` copies it into the persistent buffer the graph reads), which ``build`` turns off
    where the model's layers have more than one sliding-window config (``len(sliding_window_configs) > 1``).
    Per observed step kind: where the call's ``max_seqlen_k`` came from (``TOLD`` / ``CAPTURE`` / a value) and the
    ``num_splits`` it was handed (vLLM's pin, or 0: FA3's own heuristic). Empty: no call observed (AOT off)."""

    origin: dict[str, str | int]
    num_splits: dict[str, int]

    @property
    def aot(self) -> bool:
        return bool(self.origin)

    def value(self, kind: str, told: int, max_model_len: int) -> int | None:
        """The call's max_seqlen_k on a step of ``kind`` told ``told``; None where no call was observed there."""
        return _value(self.origin, kind, told, max_model_len)


def chosen_backend(scenario) -> tuple[str, int | None]:
    """vLLM's first-priority backend for a dense model on the scenario's GPU and, for FLASH_ATTN, its FA version."""
    name = backend_priorities(scenario.device_capability, use_mla=False)[0]
    return name, fa_version(scenario.device_capability) if name == "FLASH_ATTN" else None


def flashinfer_path(device_capability: int) -> str:
    """The decode kernel vLLM's FlashInfer builder picks on a GPU (vllm/v1/attention/backends/flashinfer.py
    ``FlashInferMetadataBuilder._get_flashinfer_trtllm_api_decode_kernel``: XQA on SM90 and the SM12x family,
    TRTLLM-gen on the SM100 family; ``supports_trtllm_attention`` is False elsewhere: native FlashInfer)."""
    if device_capability == 90 or device_capability // 10 == 12:
        return "xqa"
    return "trtllm-gen" if device_capability // 10 == 10 else "native"


def _case_for(scenario) -> tuple[str, str | None]:
    name, version = chosen_backend(scenario)
    if name == "FLASHINFER" and scenario.model_state != "encoder_only":
        want = flashinfer_path(scenario.device_capability)
        for _record, case in observed.cases():
            r = observed.rows(case=case)[0]
            if r["backend"] == name and flashinfer_path(GPUS[r["gpu"]].sm) == want:
                return name, case
        return name, None
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


def _origin(row: dict, capture_told: int, value: int) -> str | int:
    """Where an observed value of a step came from. Inside a FULL graph capture's value wins a tie: a draft pass
    captured in the graph is re-planned at capture, told max_model_len (lab/gpu_model/observed.py, the fused draft
    pass)."""
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
    key = next((k for k in LENGTH_KEYS if k in capture["launch"]), None)
    if key is None:  # no length argument reaches the launch (native FlashInfer): nothing to draw
        return None
    # each step's own length argument (TRTLLM-gen's prefill rows: the context kernel's max_kv_len)
    origin = {
        r["step"]: _origin(r, capture["told"], r["launch"][k])
        for r in rs
        if (k := next((k for k in LENGTH_KEYS if k in r["launch"]), None))
    }
    scheduler = None
    if capture.get("fa_version") == 3:  # FA3's builder is the one with the AOT scheduler call (aot_schedule)
        sched = [r for r in rs if r.get("scheduler")]
        scheduler = Scheduler(
            {r["step"]: _origin(r, capture["told"], r["scheduler"]["max_seqlen_k"]) for r in sched},
            {r["step"]: int(r["scheduler"]["num_splits"]) for r in sched},
        )
    return Handed(name, case, key, origin, scheduler)


def deployment_handed(scenario, sm: int, vllm_name: str, lab_backend: str | None) -> Handed | None:
    """``handed_for`` a deployment's scenario on its GPU (SM ``sm``), where that observation is of the deployment's
    chosen backend (``vllm_name``; for FLASHINFER, the decode path ``lab_backend`` names): None, not observed,
    where the deployment runs another one (an MLA backend, say, which ``chosen_backend`` never picks)."""
    h = _handed(sm, scenario.model_state, bool(scenario.sliding_window))
    if h is None or h.backend != vllm_name:
        return None
    if vllm_name == "FLASHINFER" and not (lab_backend or "").endswith(flashinfer_path(sm)):
        return None
    return h


def step_handed(handed: Handed | None, kind: str, told: int | None, max_model_len: int) -> int | None:
    """What a pass of ``kind`` (a trace's cudagraph mode, "FULL" / "PIECEWISE" / "NONE"; ``draft:`` before it for
    a draft pass) told ``told`` hands its launch: None where not observed (or the era had no such pass)."""
    if handed is None or told is None:
        return None
    draft, _, mode = kind.rpartition(":")
    return handed.value((DRAFT_KIND if draft else STEP_KIND)[mode], told, max_model_len)


def step_scheduler(handed: Handed | None, kind: str, told: int | None, max_model_len: int) -> int | None:
    """FA3's scheduler metadata's max_seqlen_k on a pass of ``kind`` (as ``step_handed``) told ``told``: None where
    the backend is not FA3, no call was observed (AOT scheduling off) or the pass did not run."""
    if handed is None or handed.scheduler is None or told is None:
        return None
    draft, _, mode = kind.rpartition(":")
    return handed.scheduler.value((DRAFT_KIND if draft else STEP_KIND)[mode], told, max_model_len)


def scheduler_text(handed: Handed | None, values: tuple[int, ...] = (), kind: str = "") -> str:
    """FA3's scheduler metadata in words, for a line of its own ("" where the backend is not FA3): what it was
    observed to be handed on each step kind, or, given ``values`` (its max_seqlen_k on a target pass of ``kind``,
    per mode), those values."""
    if handed is None or handed.scheduler is None:
        return ""
    sched = handed.scheduler
    if not sched.aot:
        return (
            "no FA3 scheduler metadata: FlashAttentionMetadataBuilder.build turns AOT scheduling off for more than "
            "one sliding-window config (observed: no get_scheduler_metadata call)"
        )
    if not values:
        capture = [k for k, o in sched.origin.items() if o == CAPTURE]
        return (
            "FA3 scheduler metadata: the step's value, FULL replays too"
            + (f"; capture's on {' / '.join(capture)}" if capture else "")
            + " (observed)"
        )
    pin = sched.num_splits.get(STEP_KIND.get(kind, ""), 0)
    return (
        f"FA3 scheduler metadata (get_scheduler_metadata in FlashAttentionMetadataBuilder.build) is handed "
        f"max_seqlen_k {' / '.join(f'{v:,}' for v in values)} (observed)"
        + (f", num_splits {pin} (vLLM's pin under FULL graphs)" if pin and kind == "FULL" else "")
    )


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
