"""The comparison: agreement counts per rule, and every disagreement with its step, field and values."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

RULES = ("R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R11")
RULE_TITLES = {
    "R1": "seq_lens_cpu_upper_bound (prepare_inputs)",
    "R2": "target max_seq_len, num_reqs, num_tokens (prepare_attn)",
    "R3": "FULL replay: max_seq_len frozen at capture (for_capture)",
    "R4": "draft_max_seq_len (propose)",
    "R5": "draft steps: upper bounds and metadata (_build_attn_metadata)",
    "R6": "gathered block table incl. stale columns (gather_block_tables)",
    "R7": "slot mapping (compute_slot_mappings)",
    "R8": "batch order and CUDA-graph dispatch (CudaGraphManager)",
    "R11": "sliding-window group's table, nulled below the window (gather)",
}


@dataclass
class Disagreement:
    step: int
    rule: str
    field: str
    lab: object
    vllm: object

    def __str__(self) -> str:
        return f"step {self.step} {self.rule} {self.field}: lab {self.lab!r}, vLLM {self.vllm!r}"


class Comparison:
    """Agreement counts per rule: steps compared and entries compared, and every disagreement."""

    def __init__(self):
        self.checks = Counter()  # rule -> comparisons (a table counts one per entry)
        self.steps: dict[str, set] = {r: set() for r in RULES}
        self.disagreements: list[Disagreement] = []

    def _record(self, step, rule, fld, lab, vllm, ok, entries=1):
        self.checks[rule] += entries
        self.steps[rule].add(step)
        if not ok:
            self.disagreements.append(Disagreement(step, rule, fld, lab, vllm))

    def check(self, step, rule, fld, lab, vllm) -> None:
        if isinstance(lab, np.ndarray) or isinstance(vllm, np.ndarray):
            a, b = np.asarray(lab).tolist(), np.asarray(vllm).tolist()
            self._record(step, rule, fld, a, b, a == b, max(len(a), 1))
        else:
            self._record(step, rule, fld, lab, vllm, lab == vllm)

    def check_table(self, step, rule, fld, lab: np.ndarray, vllm: np.ndarray) -> None:
        ok = lab.shape == vllm.shape and bool((lab == vllm).all())
        if ok:
            self._record(step, rule, fld, None, None, True, lab.size)
            return
        if lab.shape != vllm.shape:
            self._record(step, rule, f"{fld} shape", lab.shape, vllm.shape, False, lab.size)
            return
        rows, cols = np.nonzero(lab != vllm)
        i, j = int(rows[0]), int(cols[0])
        self._record(
            step,
            rule,
            f"{fld}[{i}, {j}] ({len(rows)} entries differ)",
            int(lab[i, j]),
            int(vllm[i, j]),
            False,
            lab.size,
        )

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def merge(self, other: Comparison, label: str) -> None:
        """Add another scenario's comparison (its steps counted apart, under ``label``)."""
        self.checks.update(other.checks)
        for r in RULES:
            self.steps[r] |= {(label, x) for x in other.steps[r]}
        self.disagreements += other.disagreements

    def table(self) -> str:
        lines = [f"{'rule':<4} {'what is compared':<62} {'steps':>7} {'entries':>10} {'disagree':>8}"]
        bad = Counter(d.rule for d in self.disagreements)
        for r in RULES:
            lines.append(f"{r:<4} {RULE_TITLES[r]:<62} {len(self.steps[r]):>7,} {self.checks[r]:>10,} {bad[r]:>8}")
        return "\n".join(lines)
