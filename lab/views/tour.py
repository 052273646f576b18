"""A guided tour of a trace: a story of 6–8 chapters, each a step, the view to open and one sentence.

Found in the trace, not written per preset: the first step, the step where the old metadata costs
most, the first step whose walk reads another request's live blocks (and whose), freed blocks, a
FULL-graph step, the draft windows at the first step that has draft passes (``first_draft_step``; it
may be the opening step, then both are stops, each in its own view), the mamba path #40654 left
behind, the kernel timings; and in every trace R1's largest gap (speculative decoding), the step with the most
out-of-range entries, the step where the fix matters least, the largest batch, and every step at once.
"""

from __future__ import annotations

import numpy as np

from lab.deployment.handed import CAPTURE, handed_for, not_observed_text
from lab.deployment.walks import class_series, handed_series
from lab.history import ERAS, MODEL_STATE_FIRST_RELEASE, model_state_in_era
from lab.speculators import speculator
from lab.trace.names import era_phrase, patch_label
from lab.views.common import series
from lab.views.eras import era_series, target_path
from lab.views.tour_marks import stop_mark

MAX_STOPS = 8  # a story of 6-8 chapters (issue 49), each continued with ▶


def first_draft_step(trace) -> int | None:
    """The first step with draft passes that build their own metadata (Eagle/MTP: passes 1..K-1; a draft
    model: every pass), read from the draft path's value after #43991; None for a trace without any."""
    drafts = era_series(trace)["drafts"][:, -1]
    steps = np.nonzero(np.isfinite(drafts))[0]
    return int(steps[0]) if len(steps) else None


class _Stops(list):
    """The tour's stops so far, in the order they were found."""

    def first(self, mask) -> int | None:
        """The first step where mask holds that is not a stop yet (so each stop shows something new)."""
        taken = {t["step"] for t in self}
        idx = [int(i) for i in np.nonzero(mask)[0] if int(i) not in taken]
        return idx[0] if idx else None

    def add(self, step, view, text, shared=False):
        """A stop; ``shared``: it may share its step with another stop (in another view)."""
        if step is not None and all(t["step"] != step or (shared and t["view"] != view) for t in self):
            self.append({"step": int(step), "view": view, "text": text})


def tour(trace) -> list[dict]:
    """[{"step", "view", "text", "mark"}]: the claim in one picture first, then in step order; at most
    MAX_STOPS, at least the opening step. ``mark``: the sentence drawn on the figure (tour_marks.py)."""
    n = len(trace.steps)
    if n == 0:
        return []
    # walks sized by what the launch is handed, each out-of-range class too (the out-of-range stop's counts)
    s = {**series(trace), **class_series(trace)}
    e = era_series(trace)
    stops = _Stops()
    _hero_stop(trace, stops)
    _opening_stop(trace, stops)
    # The mamba target path: #40654 changed nothing there, #43991 did.
    if trace.scenario.model_state == "mamba_hybrid" and n:
        k = stops.first(e["target"][:, 1] != e["target"][:, 2])
        if k is not None:
            stops.add(
                k,
                "timeline",
                f"the {target_path(trace)} still gets {int(e['target'][k, 1]):,} after #40654; "
                f"#43991 gives it the batch max, {int(e['target'][k, 2]):,}.",
            )
    _draft_stops(trace, e, stops)
    _stale_block_stops(trace, s, stops)
    k = stops.first(s["graph"] == "FULL")
    if k is not None:
        stops.add(k, "lengths", _full_graph_text(trace))
    if not any(t["view"] == "hero" for t in stops):  # the hero's chapter tells the costliest step already
        _costliest_step_stop(s, stops, era_phrase(trace, ERAS[-1]))
    timed = trace.timed_steps().tolist()
    if timed:
        stops.add(timed[len(timed) // 2], "kernels", f"a timed step ({len(timed)} of {n} steps were timed).")
    # Chapters every trace has (issue 49: a story of 6-8 chapters; 3-6 found on the presets), each read off it.
    after = era_phrase(trace, ERAS[-1])
    _r1_gap_stop(trace, stops)
    _oor_peak_stop(s, stops, after)
    _least_stop(trace, s, stops, after)
    _largest_batch_stop(s, stops, after)
    stops.add(n - 1, "timeline", "every step at once: the cumulative entries each era's walk reads.")
    first, rest = stops[:1], stops[1:]
    keep = first + rest[: MAX_STOPS - 2] + ([rest[-1]] if len(rest) > MAX_STOPS - 2 else [])
    keep = first + sorted(keep[1:], key=lambda t: t["step"])  # the story opens on the claim, then in step order
    for t in keep:  # the narration drawn on the figure (lab/views/tour_marks.py)
        t["mark"] = stop_mark(trace, t)
        t.pop("at", None)
    return keep


def _ratio_words(r: float) -> str:
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def _best(order, stops: _Stops, view: str) -> int | None:
    """The first step of ``order`` (the most of something first), unless it is a stop in ``view`` already: a
    chapter says "the most" only of the step that has it (it may share its step with another view's chapter)."""
    k = int(order[0]) if len(order) else None
    return None if k is None or any(t["step"] == k and t["view"] == view for t in stops) else k


def _r1_gap_stop(trace, stops: _Stops) -> None:
    """R1 in the lengths view: the request whose CPU upper bound runs furthest past its exact length (the
    drafts it still counts); only where some request has a gap (speculative decoding)."""
    best = (0, None, None)
    for st in trace.steps:
        n = st.num_reqs
        gap = np.asarray(st.seq_lens_cpu_upper_bound[:n]) - np.asarray(st.seq_lens[:n])
        if n and gap.max() > best[0]:
            best = (int(gap.max()), st.index, int(gap.argmax()))
    g, k, row = best
    if k is not None:
        who = trace.steps[k].req_ids[row]
        stops.add(
            k,
            "lengths",
            f"R1: {who}'s upper bound is {g} token{'s' if g > 1 else ''} above its exact length, the most in the "
            "trace: the CPU still counts drafts the GPU may have rejected; the upper bound is what attention is told.",
            shared=True,
        )
        if stops and stops[-1]["step"] == k:
            n = trace.steps[k].num_reqs  # the box on the side with room: an axis that autoranges grows to hold it
            stops[-1]["at"] = (row, g, "x", "y3", 1 if row < n / 2 else -1)  # its bar in the R1 gap panel


def _oor_peak_stop(s: dict, stops: _Stops, after: str) -> None:
    """The out-of-range view at the step whose old walk reads the most entries past the rows' own blocks."""
    classes = ("null", "live", "free", "padded")
    total = sum(s[f"all_baseline_{c}"] for c in classes)
    k = _best(np.argsort(-total, kind="stable"), stops, "oor")
    if k is None or total[k] <= 0:
        return
    parts = ", ".join(f"{c} {int(s[f'all_baseline_{c}'][k]):,}" for c in classes if s[f"all_baseline_{c}"][k])
    fixed = int(sum(s[f"all_fixed_{c}"][k] for c in classes))
    stops.add(
        k,
        "oor",
        f"the old walk's most out-of-range entries in one step: {int(total[k]):,} ({parts}); {after}: {fixed:,}.",
        shared=True,
    )
    if stops and stops[-1]["step"] == k:
        side = 1 if k < len(total) / 2 else -1  # the box on the side with room (the x axis autoranges to hold it)
        stops[-1]["at"] = (k, int(total[k]), "x", "y", side)  # the top of its stack in the per-step panel


def _least_stop(trace, s: dict, stops: _Stops, after: str) -> None:
    """The claim in one picture where the fix matters least: the step whose old walk is the fewest times the
    new (the batch's longest request nearest max_model_len)."""
    ratio = s["all_baseline_walked"] / np.maximum(s["all_fixed_walked"], 1)
    walks = np.nonzero(s["all_fixed_walked"] > 0)[0]
    k = _best(walks[np.argsort(ratio[walks], kind="stable")], stops, "hero")
    if k is None:
        return
    st = trace.steps[k]
    stops.add(
        k,
        "hero",
        f"where the fix matters least: the batch max is {int(st.max_seq_len['fixed']):,} tokens of max_model_len "
        f"{trace.scenario.max_model_len:,}, and the old walk is {_ratio_words(ratio[k])} the entries {after}.",
        shared=True,
    )


def _largest_batch_stop(s: dict, stops: _Stops, after: str) -> None:
    """The block table at the largest batch: every row walks to max_model_len before #40654."""
    k = _best(np.argsort(-s["num_reqs"], kind="stable"), stops, "block_table")
    if k is None:
        return
    n, b, f = int(s["num_reqs"][k]), int(s["all_baseline_walked"][k]), int(s["all_fixed_walked"][k])
    stops.add(
        k,
        "block_table",
        f"the largest batch, {n} request{'s' if n > 1 else ''}: before #40654 the walk covers {b:,} block-table "
        f"entries, {after} {f:,}.",
        shared=True,
    )


def _full_graph_text(trace) -> str:
    """The FULL-graph stop: what the chosen backend's launch is handed there, as observed, or "not observed"."""
    h = handed_for(trace.scenario)
    if h is None:
        return f"a FULL CUDA graph: {not_observed_text(trace.scenario)}; the fix moves the metadata."
    return (
        f"a FULL CUDA graph: {h.backend}'s launch is handed {h.key} = capture's max_model_len in every era "
        "(R9, observed in vLLM 0.33.0's own backend); the fix moves the metadata only."
        if h.origin.get("FULL replay") == CAPTURE
        else f"a FULL CUDA graph: {h.backend}'s launch is handed {h.key} = the step's value (observed)."
    )


def _hero_stop(trace, stops: _Stops) -> None:
    """Chapter 1: the claim in one picture, at the step where the old walk costs most against the fix."""
    s = {**series(trace), **handed_series(trace)}  # walks sized by what the launch is handed
    ratio = s["all_baseline_walked"] / np.maximum(s["all_fixed_walked"], 1)
    k = int(np.argmax(ratio))
    if ratio[k] <= 1:
        return
    stops.append(
        {
            "step": k,
            "view": "hero",
            "text": f"the claim: before #40654 the kernel walks {ratio[k]:,.0f}× the block-table entries it walks "
            f"{era_phrase(trace, ERAS[-1])} on this step; the red bar is that walk, at true scale.",
        }
    )


def _opening_stop(trace, stops: _Stops) -> None:
    """Step 0 in the lengths view: what attention is told before #40654 against the batch's longest request."""
    mml = trace.scenario.max_model_len
    st0 = trace.steps[0]
    state = trace.scenario.model_state
    if model_state_in_era(state, ERAS[0]):
        opening = (
            f"before #40654 attention is told max_model_len = {mml:,}; the batch's longest request "
            f"is {st0.max_seq_len['fixed']:,} tokens."
        )
    else:  # a model state that came later (encoder-only): no old value to show
        opening = (
            f"the {target_path(trace)} came with vLLM {MODEL_STATE_FIRST_RELEASE[state]} and is told the batch "
            f"max from the start: {st0.max_seq_len['fixed']:,} tokens."
        )
    stops.add(0, "lengths", opening, shared=True)


def _draft_stops(trace, e: dict, stops: _Stops) -> None:
    """The draft passes, at the first step that has them (the opening step too: then a stop of its own
    in the drafts view)."""
    mml = trace.scenario.max_model_len
    # Eagle/MTP: max(upper bound) + K after #43991, clamped at max_model_len.
    k = first_draft_step(trace)
    spec = speculator(trace.scenario.speculative_method)
    # The speculators whose drafts are told max(upper bound) + K (Eagle's rule, R4); the others have their own.
    eagle_rule = spec.draft_bound == "K"
    if k is not None and eagle_rule:
        st = trace.steps[k]
        ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
        after, before = int(e["drafts"][k, 2]), e["drafts"][k, 1]  # before: NaN where MRV2 had no such speculator
        K = trace.scenario.num_speculative_tokens
        if np.isnan(before):
            then = f"; no {spec.display_name} speculator in MRV2 before #43991"
        else:
            then = f", {int(before):,} before" if after < before else ": clamped, as before"
        stops.add(
            k,
            "drafts",
            f"draft decodes get max(upper bound) + K = {ub:,} + {K} = {after:,} {era_phrase(trace, ERAS[-1])}{then}."
            if after < mml
            else f"draft decodes get min(max(upper bound) + K, max_model_len) = min({ub:,} + {K}, {mml:,}) "
            f"= {after:,} {era_phrase(trace, ERAS[-1])}{then}.",
            shared=True,
        )
    # Speculators with their own rule (docs/rules.md, "The speculators"): said at their first draft step.
    if not eagle_rule and k is not None:
        st = trace.steps[k]
        ub = max(st.seq_lens_cpu_upper_bound[: st.num_reqs])
        K = trace.scenario.num_speculative_tokens
        if spec.draft_bound is None and patch_label(trace):  # a patch changed what they are told
            text = (
                f"the draft-model passes are told {int(e['drafts'][k, 2]):,} {era_phrase(trace, ERAS[-1])} "
                f"(vLLM 0.33.0 as shipped: max_model_len = {mml:,}), while the batch's longest upper bound is {ub:,}."
            )
        elif spec.draft_bound is None:  # the standalone draft model: max_model_len always
            text = (
                f"the draft-model passes are still told max_model_len = {int(e['drafts'][k, 2]):,} after "
                f"#43991 (StandaloneARSpeculator), while the batch's longest upper bound is {ub:,}."
            )
        elif spec.draft_bound == "0":  # multi-module MTP: max(upper bound), no +K
            text = (
                f"one metadata for all {K} MTP modules: max(upper bound) = {int(e['drafts'][k, 2]):,}, "
                f"no +K (MultiModuleMTPSpeculator)."
            )
        else:
            q = spec.num_query_per_req(K)
            text = (
                f"{spec.display_name} drafts all {K} tokens in one query pass of {q} tokens a request, "
                f"told max(upper bound) + {q} = {int(e['drafts'][k, 2]):,}."
            )
        stops.add(k, "drafts", text, shared=True)


def _stale_block_stops(trace, s: dict, stops: _Stops) -> None:
    """The first step whose old walk reads live blocks (and whose), and the first that reads freed ones."""
    # Another request's live blocks read by the old walk (target pass).
    k = stops.first(s["oor_baseline_live"] > 0)
    if k is not None:
        ent = trace.steps[k].oor_entries("baseline")
        live = np.nonzero(ent["class"] == "live")[0]
        row = int(ent["row"][live[0]])
        reader = trace.steps[k].req_ids[row]
        owners = [o for o in ent["owner"][live][ent["row"][live] == row].tolist() if o and o != reader]
        nlive = int(s["oor_baseline_live"][k])
        what = f"{owners[0]}'s live blocks" if owners else "its own blocks, recycled through the free queue,"
        stops.add(
            k,
            "block_table",
            f"{reader} reads {what} past its valid ones (the walk to max_model_len reads "
            f"{nlive:,} live {'entry' if nlive == 1 else 'entries'} here).",
        )
        if stops and stops[-1]["step"] == k:  # what the mark frames: the row and its live columns
            stops[-1]["row"] = row
            stops[-1]["cols"] = sorted({int(c) for c in ent["col"][live][ent["row"][live] == row].tolist()})
    k = stops.first(s["oor_baseline_free"] > 0)
    if k is not None:
        nfree = int(s["oor_baseline_free"][k])
        stops.add(
            k,
            "block_table",
            f"the walk to max_model_len reads {nfree:,} freed block "
            f"{'entry' if nfree == 1 else 'entries'} (a finished request's KV).",
        )


def _costliest_step_stop(s: dict, stops: _Stops, after: str) -> None:
    """The costliest step for the old walk: the most entries walked before #40654 per entry after #43991."""
    ratio = s["all_baseline_walked"] / np.maximum(s["all_fixed_walked"], 1)
    order = [int(i) for i in np.argsort(-ratio, kind="stable") if int(i) not in {t["step"] for t in stops}]
    k = order[0] if order and ratio[order[0]] > 1 else None
    if k is not None:
        stops.add(
            k,
            "block_table",
            f"before #40654 the kernel walks {ratio[k]:,.0f}× the block-table entries it walks {after}."
            if ratio[k] >= 10
            else f"before #40654 the kernel walks {ratio[k]:.1f}× the block-table entries it walks {after}.",
        )
