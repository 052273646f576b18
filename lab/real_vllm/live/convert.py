"""What the live runs recorded (lab/real_vllm/live/tap.py), turned into the lab's ``StepRecord``s and fed to the
engine's own ``Recorder``: a live trace is built exactly as the embedded engine's is, so every view,
notebook and CLI command reads it unchanged, and it passes the same schema checks on save and load.

The two modes come from two runs (``fixed``: vLLM as it is; ``baseline``: the same run with the call
sites passing ``max_model_len``). They must have scheduled identically; ``merge`` checks every field
that does not depend on the mode and names the first difference.
"""

from __future__ import annotations

import re

import numpy as np

from lab.engine.block_pool import FREE, NULL_OWNER
from lab.engine.cudagraph import BatchExecutionDescriptor, kernel_visible_max_seq_len
from lab.engine.input_batch import InputBatch
from lab.engine.model_states import MODES, AttnMetadata
from lab.engine.oor import StaleRegion
from lab.engine.scheduler import SchedulerOutput
from lab.engine.speculator import DraftPassMetadata, draft_step_upper_bound
from lab.engine.step_record import EngineEnd, RequestAdded, RequestRemoved, StepRecord
from lab.speculators import ONCE_AT_1, draft_pass_step, num_draft_passes, speculator
from lab.trace.recorder import Recorder

_REQ = re.compile(r"^req-(\d+)")
_SAME = (
    "req_ids",
    "idx_mapping",
    "num_computed_tokens",
    "num_scheduled_tokens",
    "num_draft_tokens",
    "seq_lens",
    "seq_lens_cpu_upper_bound",
    "num_reqs",
    "num_reqs_padded",
    "num_tokens",
    "num_tokens_padded",
    "cg_mode",
    "block_table",
    "num_blocks",
    "num_accepted",
    "removed",
    "added",
    "preempted",
    "scheduler_step",
)


class ModesDiffer(RuntimeError):
    pass


def req_num(req_id: str) -> int:
    m = _REQ.match(req_id)
    if not m:
        raise ValueError(f"unexpected request id {req_id!r} (the driver names them req-N)")
    return int(m.group(1))


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.array_equal(a, b)
    if isinstance(a, list) and a and isinstance(a[0], tuple):
        return len(a) == len(b) and all(
            len(x) == len(y) and all(_same(u, v) for u, v in zip(x, y)) for x, y in zip(a, b)
        )
    return a == b


def check_modes_agree(taps: dict) -> None:
    """Both runs must have scheduled, allocated and gathered the same: only max_seq_len may differ."""
    modes = list(taps)
    ref = taps[modes[0]].steps
    for mode in modes[1:]:
        other = taps[mode].steps
        if len(other) != len(ref):
            raise ModesDiffer(f"the {mode} run recorded {len(other)} steps, the {modes[0]} run {len(ref)}")
        for i, (a, b) in enumerate(zip(ref, other)):
            for name in _SAME:
                if not _same(getattr(a, name), getattr(b, name)):
                    raise ModesDiffer(
                        f"step {i}: {name} differs between the {modes[0]} run "
                        f"({getattr(a, name)!r}) and the {mode} run ({getattr(b, name)!r})"
                    )


def _row_hwm(table: np.ndarray) -> np.ndarray:
    """Per row: columns from here on are all zero."""
    nz = table != 0
    any_nz = nz.any(axis=1)
    last = table.shape[1] - np.argmax(nz[:, ::-1], axis=1)
    return np.where(any_nz, last, 0).astype(np.int32)


def to_step_records(scenario, taps: dict) -> tuple[list[StepRecord], EngineEnd, dict]:
    """One StepRecord per recorded step, both modes merged; how the run ended; and the checks made on
    what only the live run shows (vLLM's own draft windows against R5)."""
    check_modes_agree(taps)
    s = scenario
    ref = taps["fixed"].steps if "fixed" in taps else next(iter(taps.values())).steps
    by_mode = {m: taps[m].steps for m in taps}
    requests = _LiveRequests()
    num_preemptions = 0
    records = []
    checks = {"draft_windows": 0, "draft_window_mismatches": []}
    for i, st in enumerate(ref):
        removed = requests.remove(st)
        added = requests.add(i, st)
        num_preemptions += len(st.preempted)
        out = _scheduler_output(st)
        if st.idle:
            records.append(StepRecord(out, removed, added, None))
            continue
        records.append(_step_record(s, i, st, by_mode, requests.active, out, removed, added, checks))
    still = requests.still_running(ref[-1].live_blocks) if ref else []
    truncated = any(t.truncated for t in taps.values())
    return records, EngineEnd(num_preemptions, truncated, still), checks


class _LiveRequests:
    """The lab's instances of the live run's requests: a request id added again (a preemption's
    resumption) is a new instance, as in the engine."""

    def __init__(self):
        self.active: dict[str, int] = {}  # req_id -> instance
        self.slot_of: dict[int, int] = {}  # instance -> request-state slot
        self.next_inst = 0

    def remove(self, st) -> list[RequestRemoved]:
        removed = []
        for rid, idx, blocks in st.removed:
            inst = self.active.pop(rid)
            removed.append(RequestRemoved(inst, idx, np.asarray(blocks, dtype=np.int32)))
        return removed

    def add(self, i: int, st) -> list[RequestAdded]:
        added = []
        for rid, idx in st.added:
            if rid in self.active:
                raise ValueError(f"step {i}: {rid} added twice")
            self.active[rid] = self.next_inst
            self.slot_of[self.next_inst] = idx
            added.append(RequestAdded(self.next_inst, req_num(rid), idx, -1))
            self.next_inst += 1
        return added

    def still_running(self, last_blocks: dict) -> list[RequestRemoved]:
        """Requests live at the end, with the blocks the last step saw them hold."""
        return [
            RequestRemoved(inst, self.slot_of[inst], np.asarray(last_blocks.get(rid, []), dtype=np.int32))
            for rid, inst in sorted(self.active.items(), key=lambda kv: kv[1])
        ]


def _scheduler_output(st) -> SchedulerOutput:
    """The step's SchedulerOutput: only its scheduler step is read from a live one (the batch is in
    the InputBatch)."""
    return SchedulerOutput(
        req_nums=np.zeros(0, np.int64),
        inst=np.zeros(0, np.int64),
        num_scheduled_tokens=np.zeros(0, np.int64),
        num_computed_tokens=np.zeros(0, np.int64),
        num_draft_tokens=np.zeros(0, np.int64),
        is_prefilling=np.zeros(0, bool),
        new_block_counts=np.zeros(0, np.int64),
        new_block_ids=np.zeros(0, np.int32),
        scheduler_step=st.scheduler_step,
    )


def _input_batch(st) -> InputBatch:
    """The recorded batch as vLLM's prepare_inputs built it (R1)."""
    n = st.num_reqs
    return InputBatch(
        req_nums=np.array([req_num(r) for r in st.req_ids], dtype=np.int64),
        idx_mapping_np=st.idx_mapping,
        num_reqs=n,
        num_reqs_after_padding=st.num_reqs_padded,
        num_scheduled_tokens=st.num_scheduled_tokens.astype(np.int64),
        num_tokens=st.num_tokens,
        num_tokens_after_padding=st.num_tokens_padded,
        num_computed_tokens_np=st.num_computed_tokens.astype(np.int64),
        seq_lens_cpu_upper_bound=st.seq_lens_cpu_upper_bound.astype(np.int32),
        seq_lens=st.seq_lens.astype(np.int32),
        num_draft_tokens_per_req=st.num_draft_tokens,
        is_prefilling_np=np.zeros(n, bool),
        max_query_len=int(st.num_scheduled_tokens.max()),
    )


def _step_record(s, i: int, st, by_mode: dict, active: dict, out, removed, added, checks: dict) -> StepRecord:
    """A scheduled step: the target's metadata in both modes, the draft passes, and what each walk
    reads out of range (counted the engine's way, lab/engine/oor.py)."""
    mml, n_pad = s.max_model_len, st.num_reqs_padded
    batch_inst = np.array([active[r] for r in st.req_ids], dtype=np.int64)
    batch = _input_batch(st)
    if set(by_mode) != set(MODES):
        raise ValueError(f"a live trace needs a run in each mode {MODES}, got {sorted(by_mode)}")
    msl = {m: by_mode[m][i].max_seq_len for m in MODES}
    if any(v is None for v in msl.values()):  # nothing is filled in: a missing value is an error
        raise ValueError(f"step {i}: the target build_attn_metadata call was not recorded ({msl})")
    attn = {
        m: AttnMetadata(st.attn_num_reqs or st.num_reqs, st.num_tokens, batch.max_query_len, msl[m], False)
        for m in MODES
    }
    kms = {m: kernel_visible_max_seq_len(st.cg_mode, msl[m], mml) for m in MODES}
    walk_msl = [kms[m] for m in MODES]
    walk_rows = [n_pad] * len(MODES)
    drafts = _draft_passes(s, i, st, by_mode, msl, checks)
    for d in drafts:
        walk_msl += [d.kernel_max_seq_len[m] for m in MODES]
        walk_rows += [d.num_reqs_padded] * len(MODES)
    owner = _kv_owner(s, st, active)
    table = st.block_table
    region = StaleRegion(table, st.num_blocks.astype(np.int32), _row_hwm(table), owner)
    oor = region.walks(walk_msl, walk_rows, s.block_size)
    if st.num_accepted is None:
        raise ValueError(f"step {i}: sample was not recorded (no acceptance imposed)")
    return StepRecord(
        out,
        removed,
        added,
        None,
        batch_inst=batch_inst,
        batch_desc=BatchExecutionDescriptor(st.cg_mode, st.num_tokens_padded, n_pad),
        batch=batch,
        attn_metadata=attn,
        kernel_max_seq_len=kms,
        gathered=table,
        num_blocks=st.num_blocks.astype(np.int32),
        drafts=drafts,
        num_accepted=st.num_accepted.astype(np.int32),
        walk_max_seq_len=walk_msl,
        walk_num_rows=walk_rows,
        oor=oor,
        kv_owner=owner,
    )


def _kv_owner(s, st, active: dict) -> np.ndarray:
    """The owner instance of every block id at this step (FREE, NULL_OWNER for block 0)."""
    owner = np.full(s.total_num_gpu_blocks, FREE, dtype=np.int32)
    owner[0] = NULL_OWNER
    for rid, blocks in st.live_blocks.items():
        owner[np.asarray(blocks, dtype=np.int64)] = active[rid]
    return owner


def _draft_passes(s, i: int, st, by_mode: dict, msl: dict, checks: dict) -> list:
    """The step's draft passes (R4, R5), by how the scenario's speculator builds their metadata."""
    if not s.num_speculative_tokens:
        return []
    # The vLLM class whose propose ran (its record's, lab/speculators.py) says what the hooks recorded.
    spec = speculator(s.speculative_method)
    if spec.propose == "StandaloneARSpeculator":
        return _standalone_ar_passes(s, i, st, by_mode, checks)
    if not spec.has_draft_attention:
        _no_draft_attention(s, i, by_mode)
        return []
    if spec.one_pass or spec.propose == "MultiModuleMTPSpeculator":
        return _one_metadata_passes(s, i, st, by_mode, checks)
    return _target_dependent_ar_passes(s, i, st, by_mode, msl, checks)


def _target_dependent_ar_passes(s, i: int, st, by_mode: dict, msl: dict, checks: dict) -> list:
    """EAGLE, MTP and the like (TargetDependentARSpeculator): the prefill pass reuses the target's
    metadata, then each decode pass builds its own (Gemma4 MTP: one for all)."""
    mml, n, n_pad = s.max_model_len, st.num_reqs, st.num_reqs_padded
    drafts = []
    prefill_mode = st.draft_descs[0][0] if st.draft_descs else st.cg_mode
    drafts.append(
        DraftPassMetadata(
            0,
            prefill_mode,
            n_pad,
            dict(msl),
            {m: kernel_visible_max_seq_len(prefill_mode, msl[m], mml) for m in MODES},
        )
    )
    decode_mode = st.draft_descs[1][0] if len(st.draft_descs) > 1 else "NONE"
    # Gemma4 MTP (advance_draft_positions False) builds the decode metadata once, at step 1, and
    # every decode pass reuses it (TargetDependentARSpeculator._multi_step_decode): one recorded call.
    once = speculator(s.speculative_method).draft_steps == ONCE_AT_1
    calls = min(1, s.num_speculative_tokens - 1) if once else s.num_speculative_tokens - 1
    _check_draft_decode_windows(s, i, st, checks)
    for m in MODES:
        got = len(by_mode[m][i].draft_passes)
        if got != calls:
            raise ValueError(f"step {i}: the {m} run recorded {got} draft decode metadata builds, {calls} expected")
    for j in range(1, s.num_speculative_tokens):
        dm = {}
        nrp = n
        for m in MODES:
            dm[m], nrp = by_mode[m][i].draft_passes[0 if once else j - 1][:2]
        drafts.append(
            DraftPassMetadata(
                j, decode_mode, nrp, dm, {m: kernel_visible_max_seq_len(decode_mode, dm[m], mml) for m in MODES}
            )
        )
    return drafts


def _check_draft_decode_windows(s, i: int, st, checks: dict) -> None:
    """vLLM's own per-pass windows (what _build_attn_metadata gave build_attn_metadata) against R5."""
    for j, (_, nr, ub) in enumerate(st.draft_passes, start=1):
        if ub is not None:
            step = draft_pass_step(s.speculative_method, j)
            want = draft_step_upper_bound(st.seq_lens_cpu_upper_bound, st.num_reqs, step, s.max_model_len, nr)
            checks["draft_windows"] += 1
            if not np.array_equal(np.asarray(ub)[:nr], want):
                checks["draft_window_mismatches"].append(
                    f"step {i} draft pass {j}: vLLM {np.asarray(ub)[:nr].tolist()}, R5 {want.tolist()}"
                )


def _standalone_ar_passes(s, i: int, st, by_mode: dict, checks: dict) -> list:
    """``method="draft_model"``: every one of the K passes builds its own metadata, eagerly (vLLM's
    StandaloneARSpeculator: pass 0 with step 0, pass k with step k + 1), so each is one recorded call."""
    mml, n = s.max_model_len, st.num_reqs
    drafts = []
    for m in MODES:
        if len(by_mode[m][i].draft_passes) != s.num_speculative_tokens:
            raise ValueError(
                f"step {i}: the {m} run recorded {len(by_mode[m][i].draft_passes)} draft passes, "
                f"K = {s.num_speculative_tokens} expected (draft_model builds every pass's metadata)"
            )
    for j in range(s.num_speculative_tokens):
        msl, nr, ub = by_mode["fixed"][i].draft_passes[j]
        if ub is not None:
            want = draft_step_upper_bound(
                st.seq_lens_cpu_upper_bound,
                n,
                draft_pass_step(s.speculative_method, j, s.draft_decode_fused, s.num_speculative_tokens),
                mml,
                nr,
            )
            checks["draft_windows"] += 1
            if not np.array_equal(np.asarray(ub)[:nr], want):
                checks["draft_window_mismatches"].append(
                    f"step {i} draft pass {j}: vLLM {np.asarray(ub)[:nr].tolist()}, engine {want.tolist()}"
                )
        dm = {m: by_mode[m][i].draft_passes[j][0] for m in MODES}
        drafts.append(DraftPassMetadata(j, "NONE", nr, dm, dict(dm)))
    return drafts


def _one_metadata_passes(s, i: int, st, by_mode: dict, checks: dict) -> list:
    """The speculators that build one draft metadata a step: the DFlash family (DFlashSpeculator.propose:
    one pass of ``num_query_per_req`` queries a request, ``step=num_query_per_req``) and multi-module MTP
    (MultiModuleMTPSpeculator.propose: ``step=0`` over the target-shaped batch, serving all K modules).
    One recorded dispatch and one metadata, checked, then the engine's passes built from them."""
    mml, n, method = s.max_model_len, st.num_reqs, s.speculative_method
    for m in MODES:
        got = by_mode[m][i]
        if len(got.draft_passes) != 1 or len(got.draft_descs) != 1:
            raise ValueError(
                f"step {i}: the {m} run recorded {len(got.draft_passes)} draft build_attn_metadata calls and "
                f"{len(got.draft_descs)} draft dispatches; {method} makes one of each"
            )
    mode = st.draft_descs[0][0]
    _, nr, ub = by_mode["fixed"][i].draft_passes[0]
    if ub is not None:
        step = draft_pass_step(method, 0, False, s.num_speculative_tokens)
        want = draft_step_upper_bound(st.seq_lens_cpu_upper_bound, n, step, mml, nr)
        checks["draft_windows"] += 1
        if not np.array_equal(np.asarray(ub)[:nr], want):
            checks["draft_window_mismatches"].append(
                f"step {i} (one metadata): vLLM {np.asarray(ub)[:nr].tolist()}, engine {want.tolist()}"
            )
    dm = {m: by_mode[m][i].draft_passes[0][0] for m in MODES}
    kernel = {m: kernel_visible_max_seq_len(mode, dm[m], mml) for m in MODES}
    num_passes = num_draft_passes(method, s.num_speculative_tokens)
    return [DraftPassMetadata(j, mode, nr, dict(dm), dict(kernel)) for j in range(num_passes)]


def _no_draft_attention(s, i: int, by_mode: dict) -> None:
    """n-gram (vLLM's NgramGPUSpeculator.propose: two Triton kernels over the token history, no model):
    no draft pass may have built attention metadata or dispatched a graph, in either run."""
    for m in MODES:
        st = by_mode[m][i]
        if st.draft_passes or st.draft_descs:
            raise ValueError(
                f"step {i}: the {m} run recorded {len(st.draft_passes)} draft build_attn_metadata calls and "
                f"{len(st.draft_descs)} draft dispatches; {s.speculative_method} runs no draft attention"
            )


def to_trace(scenario, taps: dict, meta: dict):
    """The Trace of a live recording: StepRecords through the engine's Recorder, plus ``meta``."""
    records, end, checks = to_step_records(scenario, taps)
    rec = Recorder(scenario)
    for r in records:
        rec.on_step(r)
    rec.on_finish(end)
    trace = rec.trace
    trace.meta.update(meta)
    live = trace.meta.setdefault("live", {})
    live["draft_windows_checked"] = checks["draft_windows"]
    live["draft_window_mismatches"] = checks["draft_window_mismatches"][:5]
    return trace
