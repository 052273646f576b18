"""The observation table (lab/gpu_model/observed.json, written by ``python -m lab.real_vllm.observe --write`` in
.venv-vllm from vLLM 0.33.0's own builders and forwards: lab/real_vllm/observe/) read back, and what follows from it:

- ``at_replay_observed``: R9 per backend case, from what the rows show: a builder call that receives the step's own
  value on a FULL replay is a buffer refreshed at replay; a launch argument that follows the mode on eager steps but
  keeps capture's value on a FULL replay is frozen at capture; a backend none of whose observed arguments follows
  the mode is not read;
- ``fa3_split`` for an FA3 launch handed ``num_splits=0``: the split count FA3's heuristic gives for what the launch
  received (lab/gpu_model/fa3_splits.py: derived from the observation, not observed);
- ``observed_table``: the table docs/kernels.md shows (lab/commands/doc_tables.py);
- ``case_for`` / ``handed``: for a backend the lab has no record of (FA2, FA4, TOKENSPEED_MLA), the observed case
  a deployment runs and what its launch is handed per step kind (R9 observed; what the kernel does with it, R10,
  is not modelled: lab/deployment/observed_answer.py says so).
- ``consumer_rows`` / ``consumer_observed`` / ``blocked_text``: docs/rules.md's other consumers as observed (their
  own rows, a backend case, or the wheel's line that stops them; "unknown: not observed" otherwise).
tests/test_observed.py checks each record (lab/gpu_model/backends.py) against it; tests/conformance/
test_observed_kernels.py regenerates it from the wheel.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass
from functools import cache

from lab.gpu_model.fa3_splits import Fa3Launch, fa3_num_splits
from lab.gpu_model.gpus import GPUS
from lab.gpu_model.records import FROZEN, NOT_READ, REFRESHED

PATH = pathlib.Path(__file__).with_name("observed.json")
STEPS = ("capture", "FULL replay", "no graph", "eager", "draft pass, FULL graph", "draft pass, eager")


@cache
def load() -> dict:
    return json.loads(PATH.read_text())


def rows(record: str | None = None, case: str | None = None) -> list[dict]:
    return [r for r in load()["rows"] if record in (None, r["record"]) and case in (None, r["case"])]


def cases() -> list[tuple[str, str]]:
    """(record, case) pairs in the table's order."""
    out = []
    for r in load()["rows"]:
        if (r["record"], r["case"]) not in out:
            out.append((r["record"], r["case"]))
    return out


def _row(rs: list[dict], step: str, mode: str) -> dict | None:
    return next((r for r in rs if (r["step"], r["mode"]) == (step, mode)), None)


def _differs(a: dict | None, b: dict | None) -> bool:
    return (a or {}) != (b or {})


def at_replay_observed(record: str, case: str) -> str:
    """R9 for one observed case (module docstring)."""
    return _at_replay(rows(record, case))


def _at_replay(rs: list[dict]) -> str:
    eager = (_row(rs, "eager", "baseline"), _row(rs, "eager", "fixed"))
    follows = any(_differs(eager[0][k], eager[1][k]) for k in ("scheduler", "launch"))
    if not follows:
        return NOT_READ
    full = (_row(rs, "FULL replay", "baseline"), _row(rs, "FULL replay", "fixed"))
    if _differs(full[0]["scheduler"], full[1]["scheduler"]):
        return REFRESHED
    return FROZEN


def launch_follows_on_full_replay(record: str, case: str) -> bool:
    """Does the launch itself receive another value in the two modes on a FULL replay? (Never: a FULL graph replays
    capture's launch arguments, R9.)"""
    rs = rows(record, case)
    return _differs(_row(rs, "FULL replay", "baseline")["launch"], _row(rs, "FULL replay", "fixed")["launch"])


def fa3_split(row: dict) -> int | None:
    """The split count FA3 runs for an observed FLASH_ATTN launch: vLLM's pin where the launch got num_splits > 0,
    else FA3's heuristic on the launch's max_seqlen_q and max_seqlen_k (derived: FA3's C++ is not run here)."""
    launch = row.get("launch") or {}
    fa3 = row["backend"] == "FLASH_ATTN_MLA" or (row["backend"] == "FLASH_ATTN" and row["fa_version"] == 3)
    if not fa3 or "max_seqlen_k" not in launch:
        return None
    h, hk, d = row["heads"]
    dv = 512 if row["backend"] == "FLASH_ATTN_MLA" else 0
    sms, rows_ = GPUS[row["gpu"]].num_sms, 4  # the observed steps have 4 requests
    x = Fa3Launch(
        launch["max_seqlen_q"], launch["max_seqlen_k"], h, hk, d, sms, row["block_size"], rows_, head_dim_v=dv
    )
    return fa3_num_splits(x, launch.get("num_splits", 0))


def _handed(row: dict) -> str:
    """What a row's calls received that derives from max_seq_len, in one cell."""
    parts = []
    for what in ("scheduler", "launch"):
        call = row.get(what)
        if call is None:
            continue
        keep = {k: v for k, v in call.items() if k not in ("batch_size", "num_batches", "sm_count")}
        parts.append(f"{what}: " + ", ".join(f"{k}={v}" for k, v in sorted(keep.items())) if keep else f"{what}: -")
    split = fa3_split(row)
    if split is not None:
        parts.append(f"FA3 split {split} (derived)")
    return "; ".join(parts) or "-"


def observed_table() -> str:
    """docs/kernels.md's generated table: per backend case and step kind, what the kernel received in each mode,
    and R9 as the observations give it."""
    out = [
        "| backend (lab record) | case | step | told: baseline → fixed | received, baseline (max_model_len) | "
        "received, fixed (batch max) | R9 observed |",
        "|---|---|---|---|---|---|---|",
    ]
    for record, case in cases():
        rs = rows(record, case)
        r9 = at_replay_observed(record, case)
        for step in STEPS:
            base, fixed = _row(rs, step, "baseline"), _row(rs, step, "fixed")
            if base is None:
                continue
            out.append(
                f"| {base['backend']} ({record or 'no record'}) | {case} | {step} | "
                f"{base['told']:,} → {fixed['told']:,} | {_handed(base)} | {_handed(fixed)} | {r9} |"
            )
    out += ["", *consumers_table()]
    out += ["", *[f"- not observed here: **{name}**: {blocked_text(name)}" for name in load().get("blocked", {})]]
    return "\n".join(out) + "\n"


def consumer_rows(consumer: str) -> list[dict]:
    """The rows of one other consumer of max_seq_len (lab/real_vllm/observe/consumers.py), by its name there."""
    return [r for r in load().get("consumers", []) if r["consumer"] == consumer]


def consumers_table() -> list[str]:
    """The other consumers' rows, as the backends' table shows them."""
    out = [
        "| consumer | case | step | told: baseline → fixed | received, baseline (max_model_len) | "
        "received, fixed (batch max) | R9 observed |",
        "|---|---|---|---|---|---|---|",
    ]
    names = list(dict.fromkeys(r["consumer"] for r in load().get("consumers", [])))
    for name in names:
        rs = consumer_rows(name)
        r9 = _at_replay(rs)
        for step in STEPS:
            base, fixed = _row(rs, step, "baseline"), _row(rs, step, "fixed")
            if base is not None:
                out.append(
                    f"| {name} | {base['case']} | {step} | {base['told']:,} → {fixed['told']:,} | "
                    f"{_handed(base)} | {_handed(fixed)} | {r9} |"
                )
    return out


def blocked_text(name: str) -> str:
    """Why ``name`` is not observed: the reason, each line of the installed wheel that stops it, what observing it
    would stub (tests/conformance/test_observed_kernels.py checks each line is in the wheel)."""
    entry = load()["blocked"][name]
    text = ("**ROCm only.** " if entry.get("rocm_only") else "") + entry["why"]
    for stop in entry.get("stops", []):
        text += f"; stopped at `{stop['at']}` `{stop['symbol']}`: `{stop['line']}`"
    if entry.get("would_stub"):
        text += f"; observing it would stub {entry['would_stub']}"
    return text


def consumer_observed(key: str) -> str:
    """docs/rules.md's consumers table, "observed" column: for an observed consumer (a consumer's name, or a
    backend case label), what its launch received that follows the mode per step kind and R9; for a blocked one,
    "not observed" and its stopping line; "unknown: not observed" for any other key."""
    rs = consumer_rows(key) or [r for r in load()["rows"] if r["case"] == key]
    if rs:
        parts = []
        for step in ("FULL replay", "no graph", "eager"):
            base, fixed = _row(rs, step, "baseline"), _row(rs, step, "fixed")
            if base is None:
                continue
            diff = [
                f"{k} {base['launch'].get(k)} → {fixed['launch'].get(k)}"
                for k in _follows(base["launch"], fixed["launch"])
            ]
            parts.append(f"{step}: " + (", ".join(diff) if diff else "the same launch"))
        return f"observed ({rs[0]['gpu']}): " + "; ".join(parts) + f"; R9 {_at_replay(rs)}"
    entry = load().get("blocked", {}).get(key)
    if entry is None:
        return "unknown: not observed"
    stop = (entry.get("stops") or [{}])[0]
    where = f": stopped at `{stop['at']}`" if stop else ""
    return ("ROCm only, " if entry.get("rocm_only") else "") + "not observed" + where


# The step kinds a FULL graph replays (the launch keeps capture's arguments there, R9).
FULL_STEPS = ("FULL replay", "draft pass, FULL graph")
_NOT_DERIVED = ("batch_size", "num_batches", "sm_count", "max_seqlen_q", "scheduler_metadata")


@dataclass(frozen=True)
class Handed:
    """What one observed backend case's launch is handed of ``max_seq_len``: ``follows``, the launch arguments
    that take the step's own value on an eager step; ``per_step``, per step kind observed, whether the launch got
    the step's value ("step") or capture's ("capture"); ``at_replay``, R9 as the observation gives it."""

    backend: str  # vLLM's name
    case: str
    gpu: str  # the stand-in GPU it was observed on
    at_replay: str
    follows: tuple[str, ...]
    per_step: tuple[tuple[str, str], ...]

    def seen(self, told, kernel):
        """R9 observed, as ``Backend.seen``: the step's own value where a builder refreshes it at replay, the
        launch's (capture's under a FULL replay) otherwise."""
        return told if self.at_replay == REFRESHED else kernel

    def steps_text(self) -> str:
        """ "the step's own value on no graph / eager / draft pass, eager; capture's on FULL replay / ..." """
        by = {w: [s for s, v in self.per_step if v == w] for w in ("step", "capture")}
        says = {"step": "the step's own value", "capture": "capture's"}
        parts = [f"{says[w]} on {' / '.join(s)}" for w, s in by.items() if s]
        return "; ".join(parts)


def _follows(base: dict | None, fixed: dict | None) -> tuple[str, ...]:
    base, fixed = base or {}, fixed or {}
    keys = sorted(set(base) | set(fixed))
    return tuple(k for k in keys if k not in _NOT_DERIVED and base.get(k) != fixed.get(k))


def handed(record: str, case: str) -> Handed:
    """``Handed`` for one observed case (the eager step decides which launch arguments derive from max_seq_len)."""
    rs = rows(record, case)
    follows = _follows(_row(rs, "eager", "baseline")["launch"], _row(rs, "eager", "fixed")["launch"])
    per_step = []
    for step in STEPS:
        base, fixed = _row(rs, step, "baseline"), _row(rs, step, "fixed")
        if base is None or step == "capture":  # capture: both modes are told max_model_len
            continue
        per_step.append((step, "step" if _follows(base["launch"], fixed["launch"]) else "capture"))
    return Handed(rs[0]["backend"], case, rs[0]["gpu"], at_replay_observed(record, case), follows, tuple(per_step))


def case_for(backend: str, fa_version: int | None = None, head: int | None = None) -> str:
    """The observed case (with no lab record) a deployment of vLLM's ``backend`` runs: FLASH_ATTN by its FA version
    (vllm/v1/attention/backends/fa_utils.py get_flash_attn_version; the builder's and forward's Python path follows
    the version, not the GPU); FA4's head-256 kernel (uses_fa4_hd256_kernel) only for head 256. "" where none."""
    found = []
    for record, case in cases():
        r = rows(record, case)[0]
        if not record and r["backend"] == backend and r.get("fa_version") == fa_version:
            found.append((r["heads"][2], case))
    exact = [c for h, c in found if h == head]
    rest = [c for h, c in found if h != 256]  # the head-256 kernel is its own case
    return (exact or rest or [""])[0]
