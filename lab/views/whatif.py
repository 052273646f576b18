"""What if K, the CUDA-graph mode or max_model_len were different, on this step? The answer at once, for one
step (issue 49: every "what if" was a server run of 1.7-6 s), before the full re-run lands.

The step's batch is held as it is: the same rows with the same computed tokens; a row that verified drafts
(it scheduled 1 + K tokens) schedules 1 + K' instead, a prefill row its same chunk. Then the rules, each from
the library, for this one batch:

- R1: each row's upper bound is computed + scheduled;
- R8: the graph the batch replays, from vLLM's dispatch (``CudaGraphManager`` over the new scenario's capture
  sizes and 1 + K' decode query length), and the rows it pads to;
- R2 per era: ``max_model_len`` before the era's fix, else the batch max (lab.history ``fixed_in_era``);
- what the kernel is handed: what the chosen backend's launch is observed to be handed on a step of the graph's
  kind (lab/deployment/handed.py ``sized_by``: capture's max_model_len on a FULL replay, as observed in vLLM
  0.33.0's own backend), or, where that backend has no observation, the told value, said "not observed"; and,
  for FA3, its scheduler metadata's ``max_seqlen_k`` (``step_scheduler``; none with AOT scheduling off);
- the walk: ``cdiv(handed, block_size)`` columns of every (padded) row;
- the draft decodes after #43991: the batch's largest upper bound plus the speculator's own offset (read off
  this step: K for Eagle/MTP), with K' for K; max_model_len before.

What the held batch cannot say (how many drafts a new K gets accepted, which requests a new max_model_len
admits, the next steps) is the full re-run's: the answer says so. ``tests/test_whatif.py`` checks that an
unchanged knob gives the trace's own values on every step, and that a CUDA-graph mode or max_model_len changed
gives what a re-simulation gives where the batch does not change.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lab.blocks import walked_columns
from lab.deployment.handed import handed_for, not_observed_text, scheduler_text, sized_by, step_scheduler
from lab.engine.cudagraph import CudaGraphManager, capture_sizes, uniform_decode_token_count
from lab.history import ERAS, fixed_in_era, model_state_in_era
from lab.speculators import speculator
from lab.views.common import check_step


def whatif(trace, index: int, **changes) -> dict:
    """This step's answer under ``changes`` (num_speculative_tokens, cudagraph_mode, max_model_len): the
    graph mode, the padded rows, and per era the target's told max_seq_len, what its launch is handed
    (``kernel``; ``observed`` False: not observed, the told value), FA3's scheduler ``max_seqlen_k`` (``scheduler``,
    None where there is none), the columns and entries walked, and the draft decodes' told value; ``handed``: the
    lines saying whose launch that is, or "not observed". A bad value raises ValueError (the scenario's checks)."""
    st = trace.steps[check_step(trace, index)]
    old = trace.scenario
    unknown = set(changes) - {"num_speculative_tokens", "cudagraph_mode", "max_model_len"}
    if unknown:
        raise ValueError(f"what-if knobs: num_speculative_tokens, cudagraph_mode, max_model_len; got {sorted(unknown)}")
    new = dataclasses.replace(old, **changes)  # validated: a bad K, mode or length is refused here
    if old.num_speculative_tokens == 0 and new.num_speculative_tokens:
        raise ValueError("this trace has no speculator: K > 0 needs a scenario with one (run it)")
    n = st.num_reqs
    k0, k1 = old.num_speculative_tokens, new.num_speculative_tokens
    computed = np.asarray(st.num_computed_tokens[:n], dtype=np.int64)
    scheduled = np.asarray(st.num_scheduled_tokens[:n], dtype=np.int64)
    # A row that verified K drafts scheduled 1 + K tokens over existing context; it schedules 1 + K' now.
    verifying = (scheduled == 1 + k0) & (computed > 0) if k0 else np.zeros(n, bool)
    scheduled = np.where(verifying, 1 + k1, scheduled)
    upper = computed + scheduled  # R1
    longest = int(upper.max(initial=0))
    if longest > new.max_model_len:
        raise ValueError(
            f"max_model_len {new.max_model_len:,} is below this batch's longest request ({longest:,} tokens): "
            "vLLM would not have admitted it; the re-run decides which requests fit"
        )
    mode, rows = _dispatch(new, n, scheduled, computed, verifying)
    eras = {}
    offset = _draft_offset(st, k0, old.max_model_len)
    handed = handed_for(new)
    for era in ERAS:
        if not model_state_in_era(new.model_state, era):
            continue
        told = longest if fixed_in_era(era, "target", new.model_state) else new.max_model_len
        seen, observed = sized_by(handed, mode, told, new.max_model_len)
        cols = walked_columns(seen, new.block_size)
        sched = step_scheduler(handed, mode, told, new.max_model_len)
        row = {"told": told, "kernel": seen, "observed": observed, "scheduler": sched, "columns": cols}
        row["entries"] = cols * rows
        if k1 > 1 and offset is not None:
            fixed = fixed_in_era(era, "draft", new.model_state) and speculator(new.speculative_method).in_era(era)
            row["drafts_told"] = min(longest + offset - k0 + k1, new.max_model_len) if fixed else new.max_model_len
        eras[era] = row
    # What the page says of the hand-over once, under the eras: whose launch, as observed (or "not observed"),
    # and FA3's scheduler metadata in each era.
    scheds = tuple(v["scheduler"] for v in eras.values() if v["scheduler"] is not None)
    said = [not_observed_text(new, why=False)] if handed is None else [f"{handed.label}, observed"]
    said += [t] if (t := scheduler_text(handed, scheds, mode)) else []
    return {
        "step": st.index,
        "graph": mode,
        "rows": rows,
        "num_reqs": n,
        "eras": eras,
        "handed": said,
        "changes": changes,
    }


def _dispatch(s, n: int, scheduled: np.ndarray, computed: np.ndarray, verifying: np.ndarray) -> tuple[str, int]:
    """R8 for the held batch: the graph mode it replays and the rows it pads to (vLLM's dispatch over the new
    scenario's capture sizes; a prefill row counts as a decode only with one new token over context)."""
    query = 1 + s.num_speculative_tokens
    manager = CudaGraphManager(s.cudagraph_mode, capture_sizes(s), s.max_num_seqs, query)
    decodes = verifying | ((scheduled == 1) & (computed > 0))
    tokens = int(scheduled.sum())
    uniform = uniform_decode_token_count(n, tokens, int(scheduled.max(initial=0)), bool(decodes.all()))
    desc = manager.dispatch(n, tokens, uniform)
    return desc.cg_mode, desc.num_reqs if desc.num_reqs is not None else n


def _draft_offset(st, k: int, max_model_len: int) -> int | None:
    """What the draft decodes add to the batch's largest upper bound after #43991, read off this step (K for
    Eagle/MTP; the speculator's own rule otherwise); None where the step has no draft decode to read."""
    hist = st.history()[ERAS[-1]]
    drafts = hist.get("drafts") or []
    if len(drafts) < 2:
        return None
    ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs], default=0)
    value = drafts[1]["max_seq_len"]
    return value - ub if value < max_model_len else k


def whatif_html(answer: dict) -> str:
    """The answer as the page shows it beside the figure: one line per era (told → walked)."""
    import html

    parts = []
    for era, v in answer["eras"].items():
        sees = f", launch handed {v['kernel']:,} (observed)" if v["observed"] and v["kernel"] != v["told"] else ""
        drafts = f"; drafts told {v['drafts_told']:,}" if "drafts_told" in v else ""
        parts.append(
            f"<div class='wi-row'><b class='era-dot-{ERAS.index(era)}'>{html.escape(era)}</b>: told "
            f"{v['told']:,}{sees} → <b>{v['columns']:,} columns</b> ({v['entries']:,} entries){drafts}</div>"
        )
    head = (
        f"<div class='wi-head'>step {answer['step']} held, {answer['num_reqs']} rows → {answer['graph']} graph, "
        f"{answer['rows']} rows walked</div>"
    )
    said = "".join(f"<div class='wi-handed'>{html.escape(t)}</div>" for t in answer["handed"])
    return f"<div class='whatif'>{head}{''.join(parts)}{said}</div>"
