"""What the chosen backend's work reads of ``max_seq_len`` on a deployment's path, in words (``kernel_text``): R9 as
its record says (lab/gpu_model/records.py ``at_replay``), or, for a backend the lab has no record of but whose launch
was observed (FA2 on Ampere/Ada, FA4 on Blackwell, FA4's head-256 kernel, TOKENSPEED_MLA), what the kernel is handed
per step kind and R9 from the observation table (lab/gpu_model/observed.py: vLLM 0.33.0's own builder and forward
run with the kernel entry points recorded); R10 (what that kernel does with it) is not modelled, and the answer says
so (``observed_headline``). A backend with neither a record nor an observation stays "unknown"
(lab/deployment/answer.py)."""

from __future__ import annotations

import numpy as np

from lab.deployment.resolve import Deployment
from lab.gpu_model.backends import VLLM_BACKEND_OF, backend_label
from lab.gpu_model.fa2_splits import Fa2Launch, fa2_num_splits
from lab.gpu_model.gpus import GPUS, HeadShape
from lab.gpu_model.observed import Handed, handed
from lab.gpu_model.records import NOT_READ, REFRESHED, Backend

__all__ = ["Handed", "fa2_split_text", "handed_of", "kernel_text", "observed_headline", "values_text"]


def values_text(told: list[int], mml: int) -> str:
    """Values of max_seq_len in words: "max_model_len (40,960)", "batch max 2,048-2,303 (median 2,183)"."""
    if all(v == mml for v in told):
        return f"max_model_len ({mml:,})"
    lo, hi = min(told), max(told)
    return f"batch max {lo:,}" if lo == hi else f"batch max {lo:,}-{hi:,} (median {int(np.median(told)):,})"


def kernel_text(told: list[int], kernel: list[int], mml: int, rec: Backend | Handed | None, seen) -> str:
    """What the chosen backend's work reads of ``max_seq_len`` on a path, in words (R9 for its record)."""
    full = sum(1 for t, k in zip(told, kernel) if k != t)
    if isinstance(rec, Handed):  # no record, but observed: what the launch is handed, R9 observed
        return _observed_text(told, seen, mml, rec)
    if rec is None:  # no record: what the kernel reads is unknown, never an assumed launch scalar (W4)
        return "unknown: the lab has no record of what this backend reads" + (
            f" ({full} of {len(told)} steps replay FULL graphs)" if full else ""
        )
    if rec.at_replay == NOT_READ:
        return f"not read by {backend_label(rec.name)}, R10"
    text = values_text(seen, mml)
    if rec.at_replay == REFRESHED:
        # vLLM's backend name: the lab's record name (fa3, ...) is its model, not what a user runs (issue 37).
        builder = VLLM_BACKEND_OF.get(rec.name, rec.name)
        text += f" (refreshed at replay by the {builder} builder, FULL steps too)" if full else ""
        if full and rec.frozen_scalar:
            text += (
                f"; its launch scalar {rec.frozen_scalar} keeps max_model_len on {full} FULL steps (deciding no work)"
            )
        return text
    pinned = f" (its {rec.frozen_scalar}, pinned there: deciding no work)" if rec.frozen_scalar else ""
    return split_text(told, seen, mml, pinned) if full else text


def split_text(told: list[int], seen: list[int], mml: int, why: str = "") -> str:
    """What a launch sees where FULL replays keep max_model_len on some steps, split by step kind (review 5
    minor 5: one range of 2,048-131,072 called "batch max" hid that most steps see max_model_len):
    "max_model_len (131,072) on 124 FULL steps; batch max 2,048-2,307 (median 2,200) on 3"."""
    full = [k for t, k in zip(told, seen) if k != t]
    rest = [k for t, k in zip(told, seen) if k == t]
    on_full = f"{values_text(full, mml)} on {'all ' if not rest else ''}{len(full):,} FULL steps{why}"
    return on_full + (f"; {values_text(rest, mml)} on {len(rest):,}" if rest else "")


def handed_of(dep: Deployment) -> Handed | None:
    """The observed case of the chosen backend where the lab has no record of it (None: a record, or no
    observation)."""
    b = dep.backend
    return handed("", b.observed_case) if b.observed_case and b.lab_backend is None else None


def _short(h: Handed) -> str:
    """The observed kernel in a word: "FA2", "FA4's head-256 kernel", "TokenSpeed MLA" (from the case's name)."""
    name = h.case.split(" (")[0]
    return name.replace(", head ", "'s head-") + " kernel" if ", head " in name else name


def _kernel(h: Handed) -> str:
    """ "FLASH_ATTN (FA2)": vLLM's backend name and the kernel it runs."""
    return f"{h.backend} ({_short(h)})"


def _args(h: Handed) -> str:
    return ", ".join(h.follows) or "no argument derived from max_seq_len"


def _where(h: Handed) -> str:
    return f"observed on the {h.gpu} stand-in: docs/kernels.md"


def _observed_text(told: list[int], seen: list[int] | None, mml: int, h: Handed) -> str:
    """A path row's "what the backend's work reads" for an observed backend: the value its launch is handed (R9
    observed) and that what the kernel does with it is not modelled."""
    if h.at_replay == NOT_READ:
        return f"no launch argument {_kernel(h)} hands the kernel follows it (observed)"
    full = sum(1 for t, k in zip(told, seen) if k != t)
    text = split_text(told, seen, mml, f" ({h.at_replay})") if full else values_text(seen, mml)
    return text + f" (handed to the launch as {_args(h)}, observed; what the kernel does with it is not modelled)"


def fa2_split_text(dep: Deployment, trace, heads: HeadShape, seen: dict[str, list[int]]) -> str:
    """What FA2 does with max_seqlen_k on this workload (R10 for FA2; "" where FA2 is not the kernel): its split-KV
    count (lab/gpu_model/fa2_splits.py) on the target's pure decode launches, before #40654 against the user's era
    (``seen``: per era, what each step's launch is handed). A FULL replay keeps capture's count (FA2 decides it on
    the host, at capture); a sliding layer, a prefill or a speculative decode (more than one query token a row)
    never splits."""
    h = handed_of(dep)
    if h is None or not h.case.startswith("FA2"):
        return ""
    eras = list(seen)
    gpu, counts, full = GPUS[dep.gpu], [], 0
    for st, a, b in zip(trace.steps, seen[eras[0]], seen[eras[-1]], strict=True):
        if max(st.num_scheduled_tokens, default=0) != 1:
            continue
        if st.cudagraph_mode == "FULL":
            full += 1
            continue
        q, kv, d = heads.num_q_heads, heads.num_kv_heads, heads.head_dim
        counts.append(tuple(fa2_num_splits(Fa2Launch(1, v, q, kv, d, gpu.num_sms, st.num_reqs)) for v in (a, b)))
    where = "FA2's split-KV count (flash_api.cpp num_splits_heuristic, lab/gpu_model/fa2_splits.py)"
    if not counts:
        return (
            f"{where} is capture's in every era: each of its {full} pure-decode launches replays a FULL graph"
            if full
            else f"{where} does not apply: no pure-decode launch on this workload (no other launch splits)"
        )
    changed = [c for c in counts if c[0] != c[1]]
    if not changed:
        return f"{where} is the same with either value on its {len(counts)} eager pure-decode launches"
    old, new = (sorted({c[k] for c in changed}) for k in (0, 1))
    return (
        f"{where} differs on {len(changed)} of its {len(counts)} eager pure-decode launches "
        f"({'/'.join(map(str, old))} splits before #40654, {'/'.join(map(str, new))} in {eras[-1]})"
    )


def observed_headline(dep: Deployment, head: str, kernel_changed: bool, r10: str = "") -> str | None:
    """The plain words for an observed backend without a record, in the answer's verdicts (docs/deployments.md;
    ``kernel_changed``: a launch is handed another value in the user's era than before #40654; ``r10``: what the
    kernel does with it where the lab models that, FA2's split count). None: the backend was not observed."""
    h = handed_of(dep)
    if h is None:
        return None
    name, graph_mode, mml = _kernel(h), dep.graphs.vllm_mode, dep.settings["max_model_len"]
    if h.at_replay == NOT_READ:
        return (
            f"no change in what the kernel is handed (observed): {head}, but no argument {name} hands the kernel's "
            f"launch follows it ({_where(h)}); what the kernel does is not modelled"
        )
    if not kernel_changed:
        return (
            f"in the metadata only: {head}, but under {graph_mode} graphs {name} hands the kernel max_model_len "
            f"({mml:,}) in every era (R9, {h.at_replay}, {_where(h)})"
        )
    return (
        f"yes, in what the kernel is handed (observed): {head}; {name} hands it to the kernel's launch as {_args(h)} "
        f"({h.steps_text()}: R9 {h.at_replay}, {_where(h)}); "
        + (r10 or f"what {_short(h)} does with it is not modelled (R10 unknown)")
    )
