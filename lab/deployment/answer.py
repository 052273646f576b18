"""Does #40654/#43991 matter for a deployment? ``answer(deployment, workload)``.

The deployment (lab/deployment/resolve.py) and a workload become one lab Scenario; the engine runs
it (both modes, every era read off them by ``Step.history()``), and the answer says, per path (the
target pass, each draft pass) and era, the ``max_seq_len`` attention was told and what the kernel saw
under the deployment's graphs (R9), then what the chosen backend does with it (rule R10,
lab/gpu_model/backends.py: its verdict and how that is known) and the predicted extra work of the old
value on the workload (lab/gpu_model/predict.py: the target passes, and each draft pass the lab can
count). Plain words come first.
"""

from __future__ import annotations

import numpy as np

from lab.deployment.answer_types import (
    Answer,
    BackendTable,
    DraftWork,
    PathRow,
    Source,
    Values,
    Work,
    WorkloadRun,
)
from lab.deployment.handed import deployment_handed, step_handed
from lab.deployment.kernel_reads import Handed, fa2_split_text, handed_of, kernel_text, observed_headline, values_text
from lab.deployment.replay import deployment_words, replay
from lab.deployment.resolve import Deployment, release_series
from lab.deployment.resolved import describe, resolved_fields
from lab.deployment.workload import Workload
from lab.gpu_model import BY_NAME, GPUS, HeadShape, backends_for, predict, predict_draft_pass
from lab.gpu_model.backends import VLLM_BACKEND_OF, backend_label
from lab.gpu_model.predict import record_for
from lab.gpu_model.records import FROZEN, LAB, NOT_READ, UNKNOWN, Backend
from lab.gpu_model.report import HEADLINE, summary, summary_cells
from lab.history import ERA, ERAS, MODEL_STATE_FIRST_RELEASE, release
from lab.scenario import RequestSpec, Scenario
from lab.speculators import speculator
from lab.trace.recorder import simulate

# The releases each era's MRV2 shipped in (lab/history.py, docs/eras.md).
ERA_RELEASES_TEXT = {e: ERA[e].releases_text for e in ERAS}


def scenario_of(dep: Deployment, workload: Workload) -> Scenario:
    """The lab Scenario that replays ``dep`` on ``workload`` (its requests capped at max_model_len)."""
    mml = dep.settings["max_model_len"]
    reqs = []
    for r in workload.request_specs():
        prompt = min(r.prompt_len, mml - 1)
        reqs.append(RequestSpec(r.arrival_step, prompt, max(1, min(r.output_len, mml - prompt))))
    if dep.model.kind == "encoder_only":  # one forward per request: no tokens generated
        reqs = [RequestSpec(r.arrival_step, r.prompt_len, 1) for r in reqs]
    return Scenario(tuple(reqs), name=f"deployment {dep.model.name}", **dep.settings)


def _values(histories: list[dict], era: str) -> dict:
    """Per path, the told and kernel-visible max_seq_len of every step in ``era`` (None: no such path);
    ``histories``: each step's ``Step.history()``, which holds every era (read once per step, not once per era:
    a third of the app's answer time, issue 47)."""
    target, kernel, drafts, drafts_note = [], [], {}, ""
    for hs in histories:
        h = hs[era]
        if h["max_seq_len"] is None:
            return {"target": None, "drafts": {}, "note": h.get("target_note", "")}
        drafts_note = drafts_note or h.get("drafts_note", "")
        target.append(h["max_seq_len"])
        kernel.append(h["kernel_max_seq_len"])
        for i, d in enumerate(h["drafts"]):
            drafts.setdefault(i, ([], []))
            drafts[i][0].append(d["max_seq_len"])
            drafts[i][1].append(d["kernel_max_seq_len"])
    return {"target": (target, kernel), "drafts": drafts, "note": "", "drafts_note": drafts_note}


def reads_of(dep: Deployment, scenario=None) -> Backend | None:
    """The record of the chosen backend for this deployment's model (R9 and R10 in one place:
    lab/gpu_model/records.py ``at_replay``; lab/gpu_model/predict.py ``record_for``: FA3 without AOT scheduling is
    frozen); None: the lab has none, and the rows answer "unknown"."""
    name = dep.backend.lab_backend or ""
    return record_for(name, scenario) if name in BY_NAME else None


def _path_rows(trace, mml: int, rec: Backend | Handed | None = None) -> tuple[PathRow, ...]:
    """One row per (path, era): the value told and what the chosen backend's work reads of it (R9 per record)."""
    rows, histories = [], [st.history() for st in trace.steps]
    for era in ERAS:
        v = _values(histories, era)
        if v["target"] is None:
            rows.append(_absent("target", era, v["note"]))
            continue
        paths = [("target", v["target"])] + [(f"draft pass {i}", p) for i, p in sorted(v["drafts"].items())]
        if trace.num_draft_passes and not v["drafts"]:  # a speculator MRV2 did not have in this era
            rows.append(_absent("draft passes", era, v["drafts_note"] or "no draft passes in this era"))
        for name, (told, kernel) in paths:
            reads = rec is not None and rec.at_replay != NOT_READ  # no record: unknown, no value shown
            seen = rec.seen(told, kernel) if reads else None
            rows.append(
                PathRow(
                    path=name,
                    era=era,
                    exists=True,
                    told=_spread(told),
                    kernel=_spread(seen) if reads else None,
                    kernel_reads=rec.at_replay if rec else UNKNOWN,
                    told_is_max_model_len=all(v == mml for v in told),
                    full_graph_steps=sum(1 for t, k in zip(told, seen) if k != t) if reads else 0,
                    steps=len(told),
                    told_text=values_text(told, mml),
                    kernel_text=kernel_text(told, kernel, mml, rec, seen),
                    note="",
                    per_step=(tuple(told), tuple(seen) if reads else ()),
                )
            )
    return tuple(rows)


def _absent(path: str, era: str, note: str) -> PathRow:
    """A path the era does not have (a model state or speculator MRV2 did not have then)."""
    return PathRow(
        path=path,
        era=era,
        exists=False,
        told=None,
        kernel=None,
        kernel_reads="",
        told_is_max_model_len=None,
        full_graph_steps=None,
        steps=None,
        told_text="-",
        kernel_text="",
        note=note,
    )


def _spread(values: list[int]) -> Values:
    return Values(min=min(values), median=int(np.median(values)), max=max(values))


def head_shape(dep: Deployment) -> HeadShape:
    """The attention heads one GPU holds (tensor parallelism splits them) and their size."""
    m = dep.model
    tp = dep.line.settings.get("tensor_parallel_size") or 1
    kv = max(1, m.num_kv_heads // tp)
    q = max(kv, (m.num_attention_heads // tp) // kv * kv)
    # An MLA backend counts the latent vector's bytes (lab/gpu_model/formulas.py), not head_dim's.
    return HeadShape(num_q_heads=q, num_kv_heads=kv, head_dim=m.head_size if m.kind != "mla" else 128)


def _decode_sees_fix(trace, handed) -> bool:
    """Is there a step with decode rows (query <= 1 + K, the rows the work formulas count) whose launch is handed
    another max_seq_len in the two modes, as the chosen backend is observed (lab/deployment/handed.py
    ``step_handed``)? Not observed (``handed`` None, or that step kind): True, nothing is said of the launch."""
    k, mml = trace.scenario.num_speculative_tokens, trace.scenario.max_model_len
    for st in trace.steps:
        if not any(q <= 1 + k for q in st.num_scheduled_tokens):
            continue
        got = [step_handed(handed, st.cudagraph_mode, st.max_seq_len[m], mml) for m in ("baseline", "fixed")]
        if None in got or got[0] != got[1]:
            return True
    return False


def _has_decode(trace) -> bool:
    k = trace.scenario.num_speculative_tokens
    return any(q <= 1 + k for st in trace.steps for q in st.num_scheduled_tokens)


def backends_and_work(dep: Deployment, trace) -> tuple[BackendTable, Work | None]:
    """The GPU model on this workload (lab/gpu_model/predict.py): every vLLM backend it knows on the GPU
    for this kind of attention (MLA or not), the chosen one first, as a table; and the chosen one's work on the
    target passes and each draft pass."""
    gpu = GPUS[dep.gpu]
    mla = dep.model.kind == "mla"
    # vLLM's backends only: the lab's own kernels (records known = LAB) are not what a deployment runs.
    names = [n for n in backends_for(gpu) if (BY_NAME[n].attention == "MLA") == mla and BY_NAME[n].known != LAB]
    rows = predict(trace, gpu, head_shape(dep), backends=names, builder_mode=dep.graphs.builder_mode or None)
    rows.sort(key=lambda r: r["backend"] != dep.backend.lab_backend)
    summ = summary(rows)
    table = BackendTable(headers=tuple(summ[0]) if summ else (), data=tuple(map(tuple, summary_cells(summ))))
    name = dep.backend.lab_backend
    if not rows or rows[0]["backend"] != name:
        return table, None
    row, line = rows[0], summ[0]
    key = HEADLINE[name]
    base, fixed = row["predicted"]["baseline"][key], row["predicted"]["fixed"][key]
    drafts = draft_work(dep, trace, key)
    # The verdict's scale: the steps where the target's or any draft pass's work differs between the modes.
    changed = set(row["changed_steps"]).union(*(d.changed_steps for d in drafts))
    # The same-value sentence only where it is observed true: decode steps, and a backend whose
    # prefill rows go to another kernel (FA3 runs one flash_attn_varlen_func for both).
    handed = deployment_handed(trace.scenario, gpu.sm, dep.backend.vllm_name, name)
    says_line = (
        _decode_sees_fix(trace, handed)
        or not _has_decode(trace)
        or not row["separate_prefill_kernel"]
        or row["at_replay"] != FROZEN
    )
    work = Work(
        backend=name,  # the lab's record (its model of the work); label: vLLM's name first, "FLASH_ATTN (fa3)"
        vllm_backend=VLLM_BACKEND_OF.get(name),
        label=backend_label(name),
        verdict=row["max_seq_len_changes_work"],
        how=row["how"],
        known=row["known"],
        quantity=key,
        baseline=base,
        fixed=fixed,
        extra=base - fixed,
        extra_share=(base - fixed) / fixed if fixed else 0.0,
        extra_bytes=row["baseline_extra"]["bytes"],
        on_this_workload=line["on this workload"]
        if says_line
        else (
            f"on its decode steps {handed.backend}'s launch is handed the same {handed.key} in both modes (observed), "
            "and the prefill rows go to a context kernel the lab does not model"
        ),
        sources=tuple(Source(**s) for s in row["sources"]),
        notes=tuple(row["notes"]),
        drafts=drafts,
        steps_changed=len(changed),
        steps=len(trace.steps),
    )
    return table, work


def _path_eras(rows: tuple[PathRow, ...], mml: int) -> dict[str, dict[str, str | None]]:
    """Per path and era: "old" (told max_model_len at every step), "new" (the batch max), None (no path)."""
    out: dict[str, dict[str, str | None]] = {}
    for r in rows:
        told = r.per_step[0] if r.per_step else None
        state = None if told is None else "old" if all(v == mml for v in told) else "new"
        out.setdefault(r.path, dict.fromkeys(ERAS))[r.era] = state
    return out


def _kernel_changed(rows: tuple[PathRow, ...], era_a: str, era_b: str) -> bool:
    """Did the kernel see another max_seq_len in ``era_b`` than in ``era_a`` on any path and step (R9)?"""
    by = {(r.path, r.era): r.per_step for r in rows}
    return any(
        v is not None and by.get((p, era_b)) is not None and v[1] != by[(p, era_b)][1]
        for (p, e), v in by.items()
        if e == era_a
    )


def _paths_phrase(paths: list[str]) -> str:
    """ "the target pass", "draft passes 1-2", "the target pass and draft pass 0" (trace order)."""
    target = ["the target pass"] if "target" in paths else []
    idx = [int(p.rsplit(" ", 1)[1]) for p in paths if p != "target"]
    drafts = []
    if idx:
        drafts = [f"draft pass {idx[0]}" if len(idx) == 1 else f"draft passes {idx[0]}-{idx[-1]}"]
    return " and ".join(target + drafts)


def answer(dep: Deployment, workload: Workload | None = None) -> Answer:
    """The answer for a resolved deployment on a workload: plain words, per-path rows, work, replay."""
    workload = workload or Workload()
    scenario = scenario_of(dep, workload)
    trace = simulate(scenario)
    mml = scenario.max_model_len
    rows = _path_rows(trace, mml, reads_of(dep, scenario) or handed_of(dep))
    table, work = backends_and_work(dep, trace)
    era = release(release_series(dep.vllm)).era  # the release's own era (the replay's series may differ)
    old, new = ERAS[0], (era if era != ERAS[0] else ERAS[-1])
    # FA2 (no record, observed): its split-KV count on this workload's pure decode launches, R10 as FA2 decides it.
    seen = {e: list(r.per_step[1]) for e in (old, new) for r in rows if r.path == "target" and r.era == e and r.exists}
    r10 = fa2_split_text(dep, trace, head_shape(dep), seen) if len(seen) == 2 and all(seen.values()) else ""
    return Answer(
        headline=_headline(dep, rows, work, era, scenario, r10),
        resolved=resolved_fields(dep),
        resolved_text=describe(dep),
        workload=WorkloadRun(spec=scenario.to_spec(), steps=len(trace.steps), requests=len(scenario.requests)),
        era=era,
        compared=(old, new),
        paths=rows,
        work=work,
        replay=replay(scenario, deployment_words(dep)),
        notes=tuple(dep.notes),
        full_graph_steps=sum(1 for st in trace.steps if st.cudagraph_mode == "FULL"),
        backends=table,
    )


def _era_change(era: str) -> str:
    """The release and PR that began ``era``: "0.20.0 (#40654)"."""
    return f"{ERA[era].first_release} ({ERA[era].pr})"


def _told_phrase(dep, paths: dict, era: str) -> tuple[str, str]:
    """(what changed up to the user's release, what a later release changes) in words."""
    mml, backend = dep.settings["max_model_len"], dep.backend.vllm_name
    done, pending = [], []
    for change_era in ERAS[1:]:
        # the paths told max_model_len in the era before change_era and the batch max from it on
        prev = ERAS[ERAS.index(change_era) - 1]
        moved = [p for p, e in paths.items() if e[prev] == "old" and e[change_era] == "new"]
        if moved:
            part = (_paths_phrase(moved), _era_change(change_era))
            (done if ERAS.index(change_era) <= ERAS.index(era) else pending).append(part)
    now = ""
    if done:
        first, *rest = done
        now = f"{first[0]} told {backend} max_model_len ({mml:,}) until {first[1]}"
        now += "".join(f", {p} until {r}" for p, r in rest) + "; since then the batch max"
    later = "; ".join(
        f"{p} still max_model_len ({mml:,}) in vLLM {dep.vllm}, the batch max from {r}" for p, r in pending
    )
    # Paths told max_model_len in every era they exist in (the draft-model speculator: "cap at max").
    never = [p for p, e in paths.items() if e[era] == "old" and "new" not in e.values()]
    if never:
        later = "; ".join(
            x for x in (later, f"{_paths_phrase(never)} told max_model_len in every release that has them") if x
        )
    return now, later


def _headline(
    dep: Deployment, rows: tuple[PathRow, ...], work: Work | None, era: str, scenario=None, r10: str = ""
) -> str:
    """The answer in plain words: yes / in the metadata only / no, and why (``r10``: what an observed backend
    without a record does with the value, where the lab models it: FA2's split count)."""
    mml = dep.settings["max_model_len"]
    if not dep.runs_mrv2:
        return (
            f"not answered: vLLM {dep.vllm} runs this deployment on Model Runner V1 ({dep.runner_why}); the PRs "
            f"changed Model Runner V2 only (the table shows V2's code in each era)"
        )
    paths = _path_eras(rows, mml)
    if all(e[ERAS[0]] is None for e in paths.values()):  # the model state did not exist before the fix
        first = MODEL_STATE_FIRST_RELEASE[dep.settings["model_state"]]
        return (
            f"no: MRV2's {dep.settings['model_state'].replace('_', '-')} model state came in vLLM {first}, after "
            f"#43991; attention has been told the batch max since"
        )
    now, later = _told_phrase(dep, paths, era)
    if not now:
        if later:
            return f"not yet: {later}"
        return f"no: every path is told max_model_len ({mml:,}) in every era"
    last = era if era != ERAS[0] else ERAS[-1]
    head = now + (f"; {later}" if later else "")
    backend, rec = dep.backend.vllm_name, reads_of(dep, scenario)
    if rec is not None and rec.at_replay == NOT_READ:  # R10 from the record, whether or not it has this GPU
        return f"no change in work: {head}, but {backend_label(rec.name)} does not size its work from it ({rec.known})"
    if rec is None:  # W4: no record; its launch observed (R9 observed, R10 not modelled), else never assumed
        return observed_headline(dep, head, _kernel_changed(rows, ERAS[0], last), r10) or (
            f"unknown: {head}; the lab has no record of what {backend} reads of it (R9 and R10 unknown)"
        )
    if not _kernel_changed(rows, ERAS[0], last):
        return (
            f"in the metadata only: {head}, but under {dep.graphs.vllm_mode} graphs the kernel sees "
            f"max_model_len ({mml:,}) in every era (R9, {rec.at_replay})"
        )
    if work is None:
        return f"yes, in what the kernel sees: {head}; the lab has no work model of {backend}"
    drafts = [d for d in work.drafts if d.extra > 0]
    if work.extra <= 0 and not drafts:
        return f"not on this workload: {head}; {work.label} could follow it, but {work.on_this_workload}"
    where = []
    if work.extra > 0:
        where.append(f"{extra_words(work)} in the target passes")
    if drafts:
        extra = sum(d.extra for d in drafts)
        passes = _paths_phrase([d.path for d in drafts])
        where.append(f"{extra:,} more {work.quantity} in {passes}")
    follows = f"{work.label} follows it ({work.verdict})"
    return f"{_graded(work)}: {head}; {follows}: {' and '.join(where)} of this workload ({work.known})"


def _slight(work: Work) -> bool:
    """No extra byte read, or the backend's own verdict is slight (a split bound)."""
    return work.extra_bytes <= 0 or str(work.verdict).startswith("slightly")


def _graded(work: Work) -> str:
    """The verdict with its scale first, never a bare "yes" (issue 37 M4): "slightly" where no extra byte is
    read or the backend's own verdict is slight (a split bound), and on how many of the workload's steps."""
    mib = work.extra_bytes / 2**20
    read = f"{mib:,.1f} MiB more read" if work.extra_bytes > 0 else "no extra bytes read"
    return f"{'slightly' if _slight(work) else 'yes'}, on {work.steps_changed:,} of {work.steps:,} steps ({read})"


def extra_words(work: Work) -> str:
    """The target passes' extra work in words that agree with the verdict: under a slight one, the count on the
    steps it changes and no share ("+1428%" of a split count read as a 15x cost under "slightly", review 5
    minor 5); otherwise the count and its share of the workload's."""
    if work.extra <= 0:
        return f"{work.extra:,} more {work.quantity}"
    if _slight(work):
        n = work.steps_changed
        return f"{work.extra:,} more {work.quantity} on the {n:,} step{'s' if n != 1 else ''} it changes"
    return f"{work.extra:,} more {work.quantity} (+{work.extra_share:.0%})"


def _draft_q_len(method: str, index: int, k: int) -> int | None:
    """The query tokens per request of draft pass ``index`` (None: not predicted on its own). The DFlash
    family's one pass: ``num_query_per_req``; a pass reusing the target metadata does the target's work
    again in the draft's layers; the standalone draft model's and multi-module MTP's pass 0 (their own
    prefill of the verified tokens) is not modelled; every other pass decodes one token per request."""
    if speculator(method).one_pass:
        return speculator(method).num_query_per_req(k)
    if index == 0:
        return None
    return 1


def draft_work(dep: Deployment, trace, quantity: str) -> tuple[DraftWork, ...]:
    """The chosen backend's ``quantity`` per draft pass in both modes (lab/gpu_model predict_draft_pass)."""
    out = []
    s = trace.scenario
    for index in range(trace.num_draft_passes):
        q_len = _draft_q_len(s.speculative_method, index, s.num_speculative_tokens)
        if q_len is None:
            continue
        row = predict_draft_pass(
            trace, GPUS[dep.gpu], index, q_len, head_shape(dep), [dep.backend.lab_backend], dep.graphs.builder_mode
        )[0]
        base, fixed = row["predicted"]["baseline"][quantity], row["predicted"]["fixed"][quantity]
        out.append(
            DraftWork(
                path=f"draft pass {index}",
                q_len=q_len,
                baseline=base,
                fixed=fixed,
                extra=base - fixed,
                changed_steps=tuple(row["changed_steps"]),
            )
        )
    return tuple(out)
