"""What a learner reads: ``Step``, one step of a trace, and ``DraftPass``, one draft forward pass.

Both are light views over a ``Trace``'s arrays (lab/trace/schema.py): every property is computed on
access, with vLLM's names. Where a value is not stored (the upper bounds, the block table, the three
eras), it is recomputed with the same engine function that produced it, named in the docstring.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from lab.blocks import walked_columns
from lab.engine.block_pool import FREE
from lab.engine.block_table import compute_slot_mappings
from lab.engine.cudagraph import CG_MODE_NAMES, kernel_visible_max_seq_len
from lab.engine.input_batch import seq_lens_cpu_upper_bound
from lab.engine.model_states import MODES
from lab.engine.oor import OOR_FIELDS, STALE_CLASSES, classify_owners
from lab.engine.ragged import ragged_ranges
from lab.engine.sliding_window import history_note as sliding_window_history_note
from lab.engine.speculator import draft_step_seq_lens, draft_step_upper_bound
from lab.history import ERAS, MODEL_STATE_FIRST_RELEASE, fixed_in_era, model_state_in_era
from lab.speculators import draft_pass_step, speculator

if TYPE_CHECKING:
    from lab.trace.trace import Trace


def by_mode(v: np.ndarray, fields: tuple[str, ...] | None = None) -> dict:
    """{mode: int} from v[mode], or {mode: {field: int}} from v[mode, field]."""
    if fields is None:
        return {m: int(v[j]) for j, m in enumerate(MODES)}
    return {m: {f: int(v[j, q]) for q, f in enumerate(fields)} for j, m in enumerate(MODES)}


class DraftPass:
    """One draft forward pass of a step: index 0 reuses the target's metadata (draft prefill)."""

    __slots__ = ("_step", "index")

    def __init__(self, step: Step, index: int):
        self._step = step
        self.index = index

    @property
    def cudagraph_mode(self) -> str:
        return CG_MODE_NAMES[int(self._step._t.arrays["draft_cudagraph_mode"][self._step.index, self.index])]

    @property
    def num_reqs_padded(self) -> int:
        return int(self._step._t.arrays["draft_num_reqs_padded"][self._step.index, self.index])

    @property
    def seq_lens_cpu_upper_bound(self) -> list[int]:
        """R5: min(target upper bound + step, max_model_len); padded rows 0, where ``step`` is the one the
        speculator builds this pass with (lab.speculators.draft_pass_step: the pass index for
        Eagle/MTP). Not stored: recomputed with the engine's own draft_step_upper_bound."""
        st = self._step
        s = st._t.scenario
        step = draft_pass_step(s.speculative_method, self.index, s.draft_decode_fused, s.num_speculative_tokens)
        return draft_step_upper_bound(st._ub(), st.num_reqs, step, s.max_model_len, self.num_reqs_padded).tolist()

    @property
    def seq_lens(self) -> list[int]:
        """The exact length of each request (real rows) during this pass: the verified length plus what the
        speculator appended since, the step its metadata adds to the upper bound too (R5). As recorded
        (``draft_seq_lens``); for a trace saved before that array, rebuilt with the engine's own
        draft_step_seq_lens, the same arithmetic."""
        st = self._step
        stored = st._t.arrays.get("draft_seq_lens")
        if stored is not None:
            return stored[st._a : st._b, self.index].tolist()
        s = st._t.scenario
        step = draft_pass_step(s.speculative_method, self.index, s.draft_decode_fused, s.num_speculative_tokens)
        return draft_step_seq_lens(st._col("seq_lens"), st.num_reqs, step, s.max_model_len).tolist()

    @property
    def max_seq_len(self) -> dict[str, int]:
        v = self._step._t.arrays["draft_max_seq_len"][self._step.index, self.index]
        return by_mode(v)

    @property
    def kernel_max_seq_len(self) -> dict[str, int]:
        v = self._step._t.arrays["draft_kernel_max_seq_len"][self._step.index, self.index]
        return by_mode(v)

    @property
    def oor(self) -> dict[str, dict[str, int]]:
        return self._step._t._oor_dict(self._step.index, 1 + self.index)

    def __repr__(self) -> str:
        return (
            f"DraftPass(index={self.index}, cudagraph_mode={self.cudagraph_mode!r}, "
            f"max_seq_len={self.max_seq_len}, kernel_max_seq_len={self.kernel_max_seq_len})"
        )


class Step:
    """A view of one step of a trace; lists are built on access."""

    __slots__ = ("_t", "index", "_a", "_b")

    def __init__(self, trace: Trace, index: int):
        self._t = trace
        self.index = index
        off = trace.arrays["row_offsets"]
        self._a, self._b = int(off[index]), int(off[index + 1])

    def _col(self, name: str) -> np.ndarray:
        return self._t.arrays[name][self._a : self._b]

    def _ub(self) -> np.ndarray:
        """R1 on the real rows, recomputed with the engine's lab.engine.input_batch.seq_lens_cpu_upper_bound."""
        sched = self._col("num_scheduled_tokens")
        return seq_lens_cpu_upper_bound(self._col("num_computed_tokens"), sched, len(sched))

    @property
    def num_reqs(self) -> int:
        return self._b - self._a

    @property
    def scheduler_step(self) -> int:
        return int(self._t.arrays["scheduler_step"][self.index])

    @property
    def req_ids(self) -> list[str]:
        ids = self._t.req_ids
        return [ids[r] for r in self._t.arrays["inst_req"][self._col("row_inst")].tolist()]

    @property
    def req_indices(self) -> list[int]:
        """Persistent block-table row (request slot) of each batch row: InputBatch.idx_mapping."""
        return self._t.arrays["inst_req_index"][self._col("row_inst")].tolist()

    @property
    def mamba_state_idx(self) -> list[int]:
        return self._t.arrays["inst_state_slot"][self._col("row_inst")].tolist()

    @property
    def num_computed_tokens(self) -> list[int]:
        return self._col("num_computed_tokens").tolist()

    @property
    def num_scheduled_tokens(self) -> list[int]:
        return self._col("num_scheduled_tokens").tolist()

    @property
    def num_accepted_tokens(self) -> list[int]:
        """Drafts accepted per row in this step's verification (0 for prefill rows)."""
        return self._col("num_accepted").tolist()

    @property
    def seq_lens_cpu_upper_bound(self) -> list[int]:
        """R1, as vLLM builds it: length num_reqs_padded, padded rows 0. Not stored: recomputed from
        num_computed_tokens + num_scheduled_tokens with lab.engine.input_batch.seq_lens_cpu_upper_bound."""
        return seq_lens_cpu_upper_bound(
            self._col("num_computed_tokens"), self._col("num_scheduled_tokens"), self.num_reqs_padded
        ).tolist()

    @property
    def seq_lens(self) -> list[int]:
        """Exact lengths (what the GPU computes); length num_reqs_padded, padded rows 0."""
        return self._col("seq_lens").tolist() + [0] * (self.num_reqs_padded - self.num_reqs)

    @property
    def num_reqs_padded(self) -> int:
        return int(self._t.arrays["num_reqs_padded"][self.index])

    @property
    def num_tokens(self) -> int:
        return int(self._col("num_scheduled_tokens").sum())

    @property
    def num_tokens_padded(self) -> int:
        return int(self._t.arrays["num_tokens_padded"][self.index])

    @property
    def cudagraph_mode(self) -> str:
        return CG_MODE_NAMES[int(self._t.arrays["cudagraph_mode"][self.index])]

    @property
    def max_seq_len(self) -> dict[str, int]:
        v = self._t.arrays["max_seq_len"][self.index]
        return by_mode(v)

    @property
    def kernel_max_seq_len(self) -> dict[str, int]:
        v = self._t.arrays["kernel_max_seq_len"][self.index]
        return by_mode(v)

    @property
    def num_blocks(self) -> list[int]:
        return self._col("num_blocks").tolist()

    @property
    def block_table(self) -> np.ndarray:
        """The gathered input table [num_reqs_padded, width] (R6), stale columns included."""
        return self._t.block_table(self.index)

    @property
    def sliding_block_table(self) -> np.ndarray:
        """R11: the sliding-window group's gathered table [num_reqs_padded, width]: the full group's ids
        (the lab's groups share them) with the entries below each request's window nulled from vLLM 0.33.0."""
        return self._t.block_table(self.index, group="sliding")

    @property
    def sliding_nulled(self) -> list[int]:
        """R11: entries the sliding-window group's gather nulled in each real row (all 0 without a
        window, or before vLLM 0.33.0): columns [0, n) of the row; rebuilt from the row's first position
        (lab.engine.sliding_window.nulled_entries)."""
        return self._t.sliding_nulled_rows(self.index).tolist()

    @property
    def sliding_nulled_walked(self) -> dict[str, int] | None:
        """R11: nulled entries the target pass's walk reads, per mode (the engine's count; without the
        nulling each would be the row's own block), or None for a trace without a sliding window."""
        v = self._t.arrays.get("sliding_nulled")
        return None if v is None else by_mode(v[self.index, 0])

    @property
    def drafts(self) -> list[DraftPass]:
        return [DraftPass(self, d) for d in range(self._t.num_draft_passes)]

    def history(self) -> dict[str, dict]:
        """The metadata max_seq_len of the target and of each draft pass in vLLM's three eras
        (before #40654, after #40654, after #43991), with what the kernel saw. Eras: which stored
        mode each path had (lab.engine.model_states.fixed_in_era); the kernel value applies R9 with
        lab.engine.cudagraph.kernel_visible_max_seq_len, as the engine does."""
        rec = self._t.meta.get("recording")
        if rec and rec.get("era") != ERAS[-1]:
            raise ValueError(
                f"this trace is {rec.get('vllm')}'s own recording: its 'fixed' run is that release as shipped "
                f"({rec.get('era')}), not PR #43991's rule, so the three eras can't be read off it. Compare it "
                f"with the engine instead (python -m lab eras; the app's 'Recorded eras' view; docs/eras.md)"
            )
        state = self._t.scenario.model_state
        mml = self._t.scenario.max_model_len
        spec = speculator(self._t.scenario.speculative_method)
        out = {}
        for era in ERAS:
            if not model_state_in_era(state, era):
                # A model state MRV2 did not have in this era: no value is invented (lab/history.py model_state_in_era).
                out[era] = {
                    "max_seq_len": None,
                    "kernel_max_seq_len": None,
                    "drafts": [],
                    "target_note": f"no {state.replace('_', '-')} model state in MRV2 before vLLM "
                    f"{MODEL_STATE_FIRST_RELEASE[state]}",
                }
                continue
            target_fixed = fixed_in_era(era, "target", state)
            target = self.max_seq_len["fixed" if target_fixed else "baseline"]
            passes = []
            # A speculator MRV2 did not have in this era: no value is invented (lab/speculators.py).
            for d in self.drafts if spec.in_era(era) else []:
                # Eagle/MTP's pass 0 reuses the target metadata; the other passes follow the draft path's fix.
                reuses = spec.reuses_target_metadata_at(d.index)
                fixed = target_fixed if reuses else fixed_in_era(era, "draft", state)
                v = d.max_seq_len["fixed" if fixed else "baseline"]
                passes.append(
                    {"max_seq_len": v, "kernel_max_seq_len": kernel_visible_max_seq_len(d.cudagraph_mode, v, mml)}
                )
            out[era] = {
                "max_seq_len": target,
                "kernel_max_seq_len": kernel_visible_max_seq_len(self.cudagraph_mode, target, mml),
                "drafts": passes,
            }
            note = spec.history_note_in(era) if self.drafts else ""
            if note:
                out[era]["drafts_note"] = note
            note = sliding_window_history_note(self._t.scenario.sliding_window, era)
            if note:  # R11: the nulling below the window exists from vLLM 0.33.0 only
                out[era]["sliding_window_note"] = note
        return out

    def era_modes(self, era: str) -> list[str]:
        """The stored mode each pass of this step (target first, then each draft pass) had in ``era``:
        the same choice ``history()`` makes (pass 0 of the drafts reuses the target metadata)."""
        state, spec = self._t.scenario.model_state, speculator(self._t.scenario.speculative_method)
        target = "fixed" if fixed_in_era(era, "target", state) else "baseline"
        draft = "fixed" if fixed_in_era(era, "draft", state) else "baseline"
        drafts = self.drafts if spec.in_era(era) else []
        return [target] + [target if spec.reuses_target_metadata_at(d.index) else draft for d in drafts]

    def oor_in_era(self, era: str) -> dict[str, int]:
        """Out-of-range entries of every pass, each pass walked as in ``era`` (OOR fields as keys)."""
        v = self._t.arrays["oor"][self.index]  # [passes, mode, field]
        modes = self.era_modes(era)
        total = sum(v[p, MODES.index(m)] for p, m in enumerate(modes))
        return {f: int(total[q]) for q, f in enumerate(OOR_FIELDS)}

    @property
    def oor(self) -> dict[str, dict[str, int]]:
        """Out-of-range entries of the target pass, by mode and class (plus walked and in_range)."""
        return self._t._oor_dict(self.index, 0)

    @property
    def oor_all_passes(self) -> dict[str, dict[str, int]]:
        """Target pass plus every draft pass."""
        return self._t._oor_dict(self.index, slice(None))

    def oor_entries(
        self, mode: str, pass_index: int = 0, table: np.ndarray | None = None, max_seq_len: int | None = None
    ) -> dict[str, np.ndarray]:
        """Every out-of-range entry one walk of this step reads, as columns: ``row`` (batch row),
        ``col``, ``block`` (the id found there), ``class`` (null/live/free/padded) and ``owner``
        (the req_id holding that block, "" unless live). ``pass_index`` 0 is the target pass,
        1 + d the draft pass d. Rebuilt from the trace alone (block log, instance lifetimes);
        ``table``, this step's ``block_table`` when the caller has it already, saves rebuilding it.
        ``max_seq_len``: the value the walk is sized by where a view draws another than the trace's
        kernel-visible one (what the backend is observed to be handed: lab/deployment/walks.py)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if pass_index == 0:
            msl, rows = self.kernel_max_seq_len[mode], self.num_reqs_padded
        else:
            d = self.drafts[pass_index - 1]
            msl, rows = d.kernel_max_seq_len[mode], d.num_reqs_padded
        msl = msl if max_seq_len is None else max_seq_len
        t = self._t
        w = walked_columns(msl, t.scenario.block_size)
        n = self.num_reqs
        if table is None or table.shape[0] < rows:
            table = t.block_table(self.index, num_rows=rows)
        nb = self._col("num_blocks").astype(np.int64)
        r, c = ragged_ranges(nb, np.maximum(w - nb, 0))
        pr, pc = np.divmod(np.arange((rows - n) * w, dtype=np.int64), max(w, 1))
        row = np.concatenate([r, pr + n])
        col = np.concatenate([c, pc])
        block = table[row, col].astype(np.int64)
        owner = t.block_owners(self.index)
        own = np.where(block < len(owner), owner[np.minimum(block, len(owner) - 1)], FREE)
        own[len(r) :] = FREE
        cls = np.array(STALE_CLASSES + ("padded",), dtype="<U6")[classify_owners(own)]
        cls[len(r) :] = "padded"
        names = np.array(t.req_ids + [""], dtype=object)
        inst_req = np.append(t.arrays["inst_req"], len(t.req_ids))
        owner_ids = names[inst_req[np.where(own >= 0, own, len(inst_req) - 1)]]
        return {"row": row, "col": col, "block": block, "class": cls, "owner": owner_ids}

    def oor_by_request(self, mode: str, pass_index: int = 0) -> dict[str, dict[str, int]]:
        """Out-of-range entries per request (req_id -> counts of null, live, free) for one walk."""
        e = self.oor_entries(mode, pass_index)
        real = e["class"] != "padded"
        per_class = {c: np.bincount(e["row"][real & (e["class"] == c)], minlength=self.num_reqs) for c in STALE_CLASSES}
        return {rid: {c: int(v[i]) for c, v in per_class.items()} for i, rid in enumerate(self.req_ids)}

    @property
    def timing(self) -> dict | None:
        """Kernel timing of this step's target pass (a live run), or None: per mode ``ms``,
        ``iqr_ms``, ``bytes_walked``, ``gbps_real`` (real bytes / time), ``gbps_walked``,
        ``max_abs_err`` and ``trusting_wrong``; and ``bytes_real``. None where not timed."""
        a = self._t.arrays
        if "kernel_ms" not in a or not np.isfinite(a["kernel_ms"][self.index]).all():
            return None
        i = self.index
        real = int(a["kernel_bytes_real"][i])
        out: dict = {"bytes_real": real}
        for j, m in enumerate(MODES):
            ms = float(a["kernel_ms"][i, j])
            walked = int(a["kernel_bytes_walked"][i, j])
            out[m] = {
                "ms": ms,
                "iqr_ms": float(a["kernel_iqr_ms"][i, j]),
                "bytes_walked": walked,
                "gbps_real": real / ms / 1e6 if ms > 0 else float("nan"),
                "gbps_walked": walked / ms / 1e6 if ms > 0 else float("nan"),
                "max_abs_err": float(a["kernel_max_abs_err"][i, j]),
                "trusting_wrong": int(a["kernel_trusting_wrong"][i, j]),
            }
        return out

    def slot_mapping(self) -> list[int]:
        """R7: the slot of each scheduled token (exact positions), -1 for padding tokens."""
        sched = self._col("num_scheduled_tokens").astype(np.int64)
        qsl = np.concatenate([[0], np.cumsum(sched)])
        _, positions = ragged_ranges(self._col("seq_lens").astype(np.int64) - sched, sched)
        table = self.block_table[: self.num_reqs]
        return compute_slot_mappings(
            table, qsl, positions, self._t.scenario.block_size, max(self.num_tokens_padded, int(qsl[-1]))
        ).tolist()

    def __repr__(self) -> str:
        return (
            f"Step(index={self.index}, num_reqs={self.num_reqs}, cudagraph_mode={self.cudagraph_mode!r}, "
            f"max_seq_len={self.max_seq_len}, kernel_max_seq_len={self.kernel_max_seq_len})"
        )


class StepList(Sequence):
    def __init__(self, trace: Trace):
        self._t = trace

    def __len__(self) -> int:
        return len(self._t.arrays["num_reqs_padded"])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [Step(self._t, j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"step index must be an int, got {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"step {i} out of range (trace has {n} steps)")
        return Step(self._t, int(i))
