"""``python -m lab presets``, ``simulate`` and ``show``: run a scenario (or load a saved trace) and
print its steps and totals, and its kernel timings when it has them. lab/commands/main.py registers the three
with ``lab.commands.trace.register(sub)``; ``python -m lab record`` prints its trace with ``print_trace``.
``simulate --backend`` (the kernels timed each step) is the kernels' own: lab/commands/kernels.py adds those
flags to ``simulate`` and hands ``cmd_simulate`` its timed run, so this module never imports the kernels.

    python -m lab presets
    python -m lab simulate --preset NAME | --spec TEXT  [--out trace.json] [--every N] [--quiet]
           [--backend torch-reference [--device cpu] [--repeats N] [--threads N] [--steps 0,10,20]]
    python -m lab show trace.json [--every N] [--quiet]
"""

from __future__ import annotations

import sys
import time

from lab.commands.scenario_args import add_scenario_args, scenario_from_args
from lab.deployment.handed import CAPTURE, STEP_KIND, TOLD, handed_for, not_observed_text, scheduler_text
from lab.deployment.walks import class_totals, pass_walk, sized_text, step_walked
from lab.engine.model_states import MODES
from lab.engine.oor import OOR_CLASSES
from lab.history import ERAS
from lab.presets import PRESETS
from lab.trace import Trace
from lab.trace.names import mode_words, patch_label
from lab.trace.recorder import simulate


def register(sub) -> None:
    sp = sub.add_parser("presets", help="list the presets")
    sp.set_defaults(fn=cmd_presets)

    sp = sub.add_parser("simulate", help="run a scenario through the engine")
    add_scenario_args(sp, spec_help="a scenario in the grammar (see lab/spec_grammar.py), e.g. 8p1ko64_k=3")
    sp.add_argument("--every", type=int, default=1, help="print every Nth step")
    sp.add_argument("--quiet", action="store_true", help="print only the totals")
    sp.set_defaults(fn=cmd_simulate)

    sp = sub.add_parser("show", help="print a saved trace")
    sp.add_argument("path")
    sp.add_argument("--every", type=int, default=1)
    sp.add_argument("--quiet", action="store_true")
    sp.set_defaults(fn=cmd_show)


# ---- the commands ------------------------------------------------------------------------------


def cmd_presets(args) -> int:
    for name, (spec, desc) in PRESETS.items():
        print(f"{name}\n  spec: {spec}\n  {desc}\n")
    return 0


def cmd_simulate(args, timed_run=None) -> int:
    """Run the scenario and print it. ``timed_run(scenario) -> Trace``: the run that also times the
    kernels (``--backend``, which lab/commands/kernels.py adds to this command and owns); None: the engine."""
    scenario = scenario_from_args(args)
    t0 = time.perf_counter()
    trace = timed_run(scenario) if timed_run else simulate(scenario)
    dt = time.perf_counter() - t0
    print_trace(trace, every=args.every, show_steps=not args.quiet)
    if timed_run:
        print()
        print_timings(trace, every=args.every, show_steps=not args.quiet)
    print(f"{'engine + kernel' if timed_run else 'engine'} time: {dt:.3f} s for {len(trace.steps)} steps")
    if args.out:
        trace.save(args.out)
        print(f"trace saved to {args.out}")
    return 0


def cmd_show(args) -> int:
    trace = Trace.load(args.path)
    print_trace(trace, every=args.every, show_steps=not args.quiet)
    if trace.timings is not None:
        print()
        print_timings(trace, every=args.every, show_steps=not args.quiet)
    return 0


# ---- printing a trace --------------------------------------------------------------------------


def _fmt(n: int) -> str:
    return f"{n:,}"


def _oor_total(counts: dict) -> int:
    return sum(counts[c] for c in OOR_CLASSES)


def print_trace(trace: Trace, every: int = 1, out=None, show_steps: bool = True) -> None:
    """The scenario, then every ``every``-th step (and the last): max_seq_len, what the chosen backend's launch is
    observed to be handed ("n/o": not observed) and the out-of-range reads of walks sized by it
    (lab/deployment/walks.py) in both modes (b/f: baseline/fixed); then the totals."""

    out = out or sys.stdout
    s = trace.scenario
    w = out.write
    w(f"scenario: {s.name or '(custom)'}  spec: {s.to_spec()}\n")
    if s.description:
        w(f"  {s.description}\n")
    w(
        f"  max_model_len={s.max_model_len} block_size={s.block_size} model_state={s.model_state} "
        f"K={s.num_speculative_tokens} cudagraph_mode={s.cudagraph_mode} "
        f"capture sizes up to {max(trace.meta['cudagraph_capture_sizes'] or [0])}\n"
    )
    w(
        f"  {len(trace.steps)} steps, {len(s.requests)} requests, {trace.meta.get('num_preemptions', 0)} preemptions, "
        f"block-table width {trace.width}; source: {trace.meta.get('source', '?')}\n\n"
    )
    patched = patch_label(trace)
    if show_steps:
        w(f"b: baseline (before #40654), f: {mode_words(trace)['fixed']} ({patched})\n" if patched else "")
        w(f"{sized_text(trace)}\n")
        w(f"  {t}\n" if (t := scheduler_text(handed_for(s))) else "")
        w(
            f"{'step':>5} {'reqs':>4} {'pad':>4} {'tokens':>6} {'graph':<9} "
            f"{'max_seq_len b/f':>17} {'handed b/f':>17} {'out-of-range b/f':>19}\n"
        )
        for st in trace.steps:
            if st.index % every and st.index != len(trace.steps) - 1:
                continue
            msl, oor = st.max_seq_len, step_walked(trace, st)
            hb, hf = (_handed(pass_walk(trace, st, m)) for m in MODES)
            w(
                f"{st.index:>5} {st.num_reqs:>4} {st.num_reqs_padded:>4} {st.num_tokens:>6} {st.cudagraph_mode:<9} "
                f"{msl['baseline']:>8}/{msl['fixed']:<8} {hb:>8}/{hf:<8} "
                f"{_fmt(oor['baseline']['oor']):>9}/{_fmt(oor['fixed']['oor']):<9}\n"
            )
            if st.drafts and st.index % every == 0:
                d = st.drafts[-1]
                db, df = (_handed(pass_walk(trace, st, m, len(st.drafts))) for m in MODES)
                w(
                    f"{'':>5} drafts: {len(st.drafts)} passes, last {d.cudagraph_mode}, draft_max_seq_len "
                    f"{d.max_seq_len['baseline']}/{d.max_seq_len['fixed']}, handed {db}/{df}"
                    # a patched trace's drafts are the patch's, not vLLM's as shipped the note speaks of
                    + (f" ({note})" if (note := st.history()[ERAS[-1]].get("drafts_note")) and not patched else "")
                    + "\n"
                )
        w("\n")
    print_totals(trace, out)


def _handed(walk) -> str:
    """A pass's handed value for a column: what the launch is observed to be handed, "n/o" where not observed."""
    return str(walk.value) if walk.observed else "n/o"


def _full_sentence(trace: Trace) -> str:
    """What a FULL replay's launch is handed, as observed for the chosen backend (lab/deployment/handed.py)."""
    h = handed_for(trace.scenario)
    origin = None if h is None else h.origin.get(STEP_KIND["FULL"])
    # a live recording ran vLLM's CPU platform (CPU_ATTN, no CUDA graph): the sentence is about the scenario's GPU
    where = (
        f"on the scenario's GPU (SM{trace.scenario.device_capability}; this recording ran on vLLM's CPU platform)"
        if isinstance(trace.meta.get("live"), dict)
        else "there"
    )
    if origin is None:
        return f"{where} {not_observed_text(trace.scenario, why=False)}"
    said = {CAPTURE: "the captured max_model_len in both modes", TOLD: "the step's own value"}.get(origin, origin)
    return f"{where} {h.backend}'s launch is handed {said} (observed)"


def print_totals(trace: Trace, out=None) -> None:
    """The block-table entries walked, in range and out of range per class, in both modes, each walk sized by what
    the chosen backend's launch is observed to be handed (lab/deployment/walks.py ``class_totals``)."""

    w = (out or sys.stdout).write
    passes = (
        (("target passes", False), ("all passes (target + drafts)", True))
        if trace.num_draft_passes
        else (("all steps", True),)
    )
    for label, all_passes in passes:
        t = class_totals(trace, all_passes)
        b, f = t["baseline"], t["fixed"]
        w(f"totals over {label}: block-table entries ({sized_text(trace)})\n")
        fixed = mode_words(trace)["fixed"]  # "patched" for a patched trace (lab/trace/names.py)
        w(f"  {'':<12} {'baseline':>16} {fixed:>16} {'baseline/' + fixed:>15}\n")
        for key in ("walked", "in_range") + OOR_CLASSES:
            ratio = f"{b[key] / f[key]:.1f}x" if f[key] else ("-" if not b[key] else "inf")
            w(f"  {key:<12} {_fmt(b[key]):>16} {_fmt(f[key]):>16} {ratio:>15}\n")
        ob, of = _oor_total(b), _oor_total(f)
        ratio = f"{ob / of:.1f}x" if of else ("-" if not ob else "inf")
        w(f"  {'out of range':<12} {_fmt(ob):>16} {_fmt(of):>16} {ratio:>15}\n")
    steps = trace.steps
    n_full = sum(1 for st in steps if st.cudagraph_mode == "FULL")
    w(f"FULL-graph steps: {n_full} of {len(steps)}; {_full_sentence(trace)}.\n")


def print_timings(trace: Trace, every: int = 1, out=None, show_steps: bool = True) -> None:
    """The kernel timings of a live run: per timed step and in total."""
    w = (out or sys.stdout).write
    k = trace.timings
    w(
        f"kernels: backend {k['backend']} on {k['device']} ({k.get('head_config', k['dtype'])}); torch "
        f"{k.get('torch', '?')}, triton {k.get('triton', '?')}; median of {k.get('repeats', '?')} interleaved "
        f"launches per mode\n  reproduce: {k.get('command', '?')}\n"
    )
    rows = [st for st in trace.steps if st.timing is not None]
    if show_steps:
        w(
            f"{'step':>5} {'ms b/f':>19} {'ratio':>7} {'walked MB b/f':>19} {'GB/s b/f':>13} "
            f"{'max err b/f':>19} {'trusting wrong b/f':>18} {'out-of-range b/f':>19}\n"
        )
        for st in rows:
            if st.index % every and st.index != len(trace.steps) - 1:
                continue
            t, oor = st.timing, st.oor
            b, f = t["baseline"], t["fixed"]
            w(
                f"{st.index:>5} {b['ms']:>9.2f}/{f['ms']:<9.2f} {b['ms'] / f['ms']:>6.2f}x "
                f"{b['bytes_walked'] / 1e6:>9.1f}/{f['bytes_walked'] / 1e6:<9.1f} "
                f"{b['gbps_walked']:>6.2f}/{f['gbps_walked']:<6.2f} {b['max_abs_err']:>9.1e}/{f['max_abs_err']:<9.1e} "
                f"{b['trusting_wrong']:>8}/{f['trusting_wrong']:<9} "
                f"{_fmt(_oor_total(oor['baseline'])):>9}/{_fmt(_oor_total(oor['fixed'])):<9}\n"
            )
    if not rows:
        w("no step was timed\n")
        return
    tot = {m: sum(st.timing[m]["ms"] for st in rows) for m in MODES}
    walked = {m: sum(st.timing[m]["bytes_walked"] for st in rows) for m in MODES}
    wrong = {m: sum(st.timing[m]["trusting_wrong"] == 1 for st in rows) for m in MODES}
    with_oor = {m: sum(_oor_total(st.oor[m]) > 0 for st in rows) for m in MODES}
    w(
        f"kernel totals over {len(rows)} timed steps: baseline {tot['baseline']:.1f} ms, fixed {tot['fixed']:.1f} ms "
        f"({tot['baseline'] / tot['fixed']:.2f}x; walked bytes predict "
        f"{walked['baseline'] / max(walked['fixed'], 1):.2f}x)\n"
        f"  trusting kernel wrong on {wrong['baseline']}/{wrong['fixed']} steps (baseline/fixed); steps with "
        f"out-of-range reads: {with_oor['baseline']}/{with_oor['fixed']}\n"
    )
