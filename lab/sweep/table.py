"""The sweep's tidy table (one row per point and seed, with the spec that reproduces it) as CSV and
JSON, a summary over seeds, and a short text view."""

from __future__ import annotations

import csv
import json
import math
import os

# The columns a summary shows by default (engine columns; kernel ones when present).
HEADLINE = ("all_baseline_oor", "all_fixed_oor", "all_walked_ratio", "fix_reaches_kernel_share")
KERNEL_HEADLINE = ("kernel_baseline_ms", "kernel_fixed_ms", "kernel_ratio")


def handed_lines(rows: list[dict]) -> list[str]:
    """What the rows' walks are sized by (lab/sweep/point.py ``trace_row``'s ``handed``), each once, in row order:
    the chosen backend's observed launch argument, or "not observed" (a row stored before the column: none)."""
    return list(dict.fromkeys(r["handed"] for r in rows if r.get("handed")))


def columns(rows: list[dict]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def write_tables(result, out_dir: str) -> dict:
    rows = result.rows
    cols = columns(rows)
    csv_path = os.path.join(out_dir, "results.csv")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    json_path = os.path.join(out_dir, "results.json")
    doc = {
        "format": "maxseqlen-lab/sweep",
        "version": 1,
        "sweep": result.spec.to_dict(),
        "command": result.spec.command(),
        "columns": cols,
        "rows": [{k: _json_value(r.get(k)) for k in cols} for r in rows],
    }
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
    return {"csv": csv_path, "json": json_path, "jsonl": os.path.join(out_dir, "results.jsonl")}


def summarize(rows: list[dict], axes: list[str], metrics: list[str]) -> list[dict]:
    """Mean, min and max of each metric over the seeds of each point (rows in point order)."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(r["point"], []).append(r)
    out = []
    for _, rs in sorted(groups.items()):
        s = {a: rs[0].get(a) for a in axes}
        s["seeds"] = len(rs)
        for m in metrics:
            vals = [float(r[m]) for r in rs if m in r and r[m] is not None and math.isfinite(float(r[m]))]
            s[m] = sum(vals) / len(vals) if vals else float("nan")
            s[f"{m}_min"] = min(vals) if vals else float("nan")
            s[f"{m}_max"] = max(vals) if vals else float("nan")
        out.append(s)
    return out


def _cell(v) -> str:
    if isinstance(v, float):
        if not math.isfinite(v):
            return "-" if math.isnan(v) else "inf"
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def format_table(rows: list[dict], cols: list[str], limit: int | None = 40) -> str:
    shown = rows if limit is None else rows[:limit]
    cells = [[_cell(r.get(c, "")) for c in cols] for r in shown]
    widths = [max([len(c)] + [len(x[i]) for x in cells]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(x.rjust(w) for x, w in zip(r, widths)) for r in cells]
    if limit is not None and len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more rows (see the CSV/JSON)")
    return "\n".join(lines)
