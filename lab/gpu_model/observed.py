"""The observation table (lab/gpu_model/observed.json, written by ``python -m lab.real_vllm.observe --write`` in
.venv-vllm from vLLM 0.33.0's own builders and forwards: lab/real_vllm/observe/) read back, and what follows from it:

- ``at_replay_observed``: R9 per backend case, from what the rows show: a builder call that receives the step's own
  value on a FULL replay is a buffer refreshed at replay; a launch argument that follows the mode on eager steps but
  keeps capture's value on a FULL replay is frozen at capture; a backend none of whose observed arguments follows
  the mode is not read;
- ``fa3_split`` for an FA3 launch handed ``num_splits=0``: the split count FA3's heuristic gives for what the launch
  received (lab/gpu_model/fa3_splits.py: derived from the observation, not observed);
- ``observed_table``: the table docs/kernels.md shows (lab/commands/doc_tables.py).
tests/test_observed.py checks each record (lab/gpu_model/backends.py) against it; tests/conformance/
test_observed_kernels.py regenerates it from the wheel.
"""

from __future__ import annotations

import json
import pathlib
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
    rs = rows(record, case)
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
    blocked = load().get("blocked", {})
    out.append("")
    out += [f"- not observed here: **{name}**: {why}" for name, why in blocked.items()]
    return "\n".join(out) + "\n"
