"""What each walk of a step is sized by, in the views that draw or count walks (the hero, the block table, the step
summary, the headline's walk ratio): the max_seq_len the scenario's chosen backend's launch is observed to be handed
on a pass of that kind (lab/deployment/handed.py ``sized_by``, from lab/gpu_model/observed.json), or, where that
backend is not observed, the metadata's told value, said as "not observed". Never the trace's modelled
``kernel_max_seq_len`` (R9 applied as an assumed launch scalar).

A kernel sized by a max_seq_len walks ``cdiv(max_seq_len, block_size)`` columns of every row (lab.blocks). Where
that width equals the trace's own walk of the pass in that mode, the trace's counts are used as stored; otherwise
the walk is counted again from the trace alone (``Step.oor_entries`` with the width; walked and in-range entries
by arithmetic: every row's ``width`` entries, a real row's first ``num_blocks`` of them in range).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from lab.blocks import walked_columns
from lab.deployment.handed import handed_for, not_observed_text, sized_by
from lab.engine.model_states import MODES
from lab.engine.oor import OOR_CLASSES, OOR_FIELDS


@dataclass(frozen=True)
class Walk:
    """One pass's walk in one mode: the metadata's value, the value the walk is sized by, whether that is what the
    launch is observed to be handed, and the columns walked per row."""

    told: int
    value: int
    observed: bool
    columns: int


def _pass(st, pass_index: int):
    return st if pass_index == 0 else st.drafts[pass_index - 1]


def pass_walk(trace, st, mode: str, pass_index: int = 0) -> Walk:
    """The walk of pass ``pass_index`` (0: the target, 1 + d: draft pass d) of step ``st`` in ``mode``."""
    p = _pass(st, pass_index)
    kind = p.cudagraph_mode if pass_index == 0 else f"draft:{p.cudagraph_mode}"
    told = p.max_seq_len[mode]
    s = trace.scenario
    value, observed = sized_by(handed_for(s), kind, told, s.max_model_len)
    return Walk(told, value, observed, walked_columns(value, s.block_size))


def _stored(trace, st, mode: str, pass_index: int) -> bool:
    """True where the trace's own walk of this pass has the same width (its stored counts hold), or where the
    model state reads no block table (encoder-only: nothing walked in any mode)."""
    if trace.scenario.model_state == "encoder_only":
        return True
    kernel = _pass(st, pass_index).kernel_max_seq_len[mode]
    return walked_columns(kernel, trace.scenario.block_size) == pass_walk(trace, st, mode, pass_index).columns


def _rows(st, pass_index: int) -> int:
    return _pass(st, pass_index).num_reqs_padded


def walk_counts(trace, st, mode: str, pass_index: int = 0) -> dict[str, int]:
    """The walk's entries by OOR_FIELDS (null, live, free, padded, walked, in_range), sized as ``pass_walk``."""
    if _stored(trace, st, mode, pass_index):
        return dict(_pass(st, pass_index).oor[mode])
    return count_walk(trace, st, mode, pass_index, pass_walk(trace, st, mode, pass_index).value)


def count_walk(trace, st, mode: str, pass_index: int, max_seq_len: int) -> dict[str, int]:
    """A walk sized by ``max_seq_len`` of one pass, counted again from the trace alone by OOR_FIELDS: each class
    from ``Step.oor_entries``, every row's columns walked, a real row's first ``num_blocks`` of them in range
    (tests/test_views_walks.py: equal to the engine's stored counts at the trace's own width)."""
    w = walked_columns(max_seq_len, trace.scenario.block_size)
    e = st.oor_entries(mode, pass_index, max_seq_len=max_seq_len)
    out = {c: int(np.count_nonzero(e["class"] == c)) for c in OOR_CLASSES}
    out["walked"] = _rows(st, pass_index) * w
    out["in_range"] = int(np.minimum(np.asarray(st.num_blocks, dtype=np.int64), w).sum())
    return {f: out[f] for f in OOR_FIELDS}


def _walked_oor(trace, st, mode: str, pass_index: int) -> tuple[int, int]:
    """(walked, out of range) of one walk: stored where the width is the trace's, by arithmetic otherwise."""
    if _stored(trace, st, mode, pass_index):
        v = _pass(st, pass_index).oor[mode]
        return v["walked"], sum(v[c] for c in OOR_CLASSES)
    w = pass_walk(trace, st, mode, pass_index).columns
    walked = _rows(st, pass_index) * w
    return walked, walked - int(np.minimum(np.asarray(st.num_blocks, dtype=np.int64), w).sum())


def step_walked(trace, st) -> dict[str, dict[str, int]]:
    """Per mode, the step's walked and out-of-range entries over every pass (target and drafts)."""
    out = {}
    for m in MODES:
        pairs = [_walked_oor(trace, st, m, p) for p in range(1 + trace.num_draft_passes)]
        out[m] = {"walked": sum(a for a, _ in pairs), "oor": sum(b for _, b in pairs)}
    return out


_SERIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def walked_series(trace) -> dict[str, dict[str, np.ndarray]]:
    """Per mode, each step's walked and out-of-range entries over every pass (cached per trace): the tour's and
    the timeline's walk per step, and the summary's whole-trace totals."""
    cached = _SERIES.get(trace)
    if cached is None:
        n = len(trace.steps)
        cached = {m: {"walked": np.zeros(n, np.int64), "oor": np.zeros(n, np.int64)} for m in MODES}
        for st in trace.steps:
            for m, v in step_walked(trace, st).items():
                cached[m]["walked"][st.index] = v["walked"]
                cached[m]["oor"][st.index] = v["oor"]
        _SERIES[trace] = cached
    return cached


def handed_series(trace) -> dict:
    """``lab.views.common.series``'s all-pass walked and out-of-range keys (``all_<mode>_walked``,
    ``all_<mode>_total``), each walk sized as this module says: merged over it by the tour and the timeline."""
    return {
        f"all_{m}_{k2}": v[k]
        for m, v in walked_series(trace).items()
        for k, k2 in (("walked", "walked"), ("oor", "total"))
    }


def trace_walked(trace) -> dict[str, dict[str, int]]:
    """Per mode, walked and out-of-range entries over every step and pass."""
    return {m: {k: int(v.sum()) for k, v in d.items()} for m, d in walked_series(trace).items()}


def sized_text(trace) -> str:
    """What the walks are sized by, in words: the chosen backend's observed launch argument, or "not observed"."""
    h = handed_for(trace.scenario)
    if h is None:
        return f"{not_observed_text(trace.scenario, why=False)}; walks sized by the metadata's max_seq_len"
    return f"walks sized by what {h.backend}'s launch is handed ({h.key}, observed)"


_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def class_series(trace) -> dict[str, np.ndarray]:
    """``lab.views.common.series``'s per-class keys, each walk sized as this module says (cached per trace): per
    mode and class (``OOR_CLASSES``, walked, in_range, and ``_total``: the out-of-range classes summed), the target
    pass's (``oor_<mode>_<class>``) and every pass's (``all_<mode>_<class>``). The out-of-range view's stacks and
    totals, ``python -m lab show`` and ``lab compare`` read them; merged over ``series`` they replace the
    trace's walks at its modelled kernel_max_seq_len."""
    cached = _CLASSES.get(trace)
    if cached is None:
        n = len(trace.steps)
        keys = [f"{pre}_{m}_{c}" for pre in ("oor", "all") for m in MODES for c in OOR_FIELDS]
        cached = {k: np.zeros(n, np.int64) for k in keys}
        for st in trace.steps:
            for m in MODES:
                for p in range(1 + trace.num_draft_passes):
                    counts = walk_counts(trace, st, m, p)
                    for c in OOR_FIELDS:
                        cached[f"all_{m}_{c}"][st.index] += counts[c]
                        if p == 0:
                            cached[f"oor_{m}_{c}"][st.index] = counts[c]
        for pre in ("oor", "all"):
            for m in MODES:
                cached[f"{pre}_{m}_total"] = sum(cached[f"{pre}_{m}_{c}"] for c in OOR_CLASSES)
        _CLASSES[trace] = cached
    return cached


def class_totals(trace, all_passes: bool = True) -> dict[str, dict[str, int]]:
    """``Trace.totals`` with each walk sized as this module says: per mode, walked, in_range and each class over
    the trace (every pass, or the target pass alone)."""
    s, pre = class_series(trace), "all" if all_passes else "oor"
    return {m: {c: int(s[f"{pre}_{m}_{c}"].sum()) for c in OOR_FIELDS} for m in MODES}


def step_classes(trace, st, all_passes: bool = True) -> dict[str, dict[str, int]]:
    """One step's ``Step.oor`` (target pass) or ``Step.oor_all_passes`` (every pass), each walk sized as this
    module says."""
    s, pre = class_series(trace), "all" if all_passes else "oor"
    return {m: {c: int(s[f"{pre}_{m}_{c}"][st.index]) for c in OOR_FIELDS} for m in MODES}


NOT_OBSERVED = "not observed"


def compare_values(trace, st) -> dict:
    """``lab.trace.diff``'s handed fields of one step (``HANDED_FIELDS``): per mode, what each pass's launch is
    handed ("not observed" where the chosen backend has no observation), and every pass's out-of-range entries per
    mode and field (sorted), each walk sized as this module says."""
    out = {}
    for m in MODES:
        walks = [pass_walk(trace, st, m, p) for p in range(1 + len(st.drafts))]
        out[f"handed.{m}"] = [w.value if w.observed else NOT_OBSERVED for w in walks]
    counts = step_classes(trace, st)
    out["handed.oor"] = [[counts[m][c] for c in sorted(counts[m])] for m in MODES]
    return out
