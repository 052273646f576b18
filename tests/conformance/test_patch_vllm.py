"""``python -m lab patch`` on vLLM 0.33.0's own code: the worked draft_model fix judged clean with its lines
proven to have run, the generated vLLM-style test failing as shipped and passing patched, wrong patches
named (a correctness bug first), a patch that raises failing with vLLM's traceback, and a second patch on
another MRV2 file (spec_decode/speculator.py) run. Each patched run is one ``.venv-vllm`` process (the
overlay must be in place before vLLM is imported); they run side by side. Skipped without vLLM unless
LAB_REQUIRE_VLLM=1."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm")

from lab.exercises import nb08_fix_draft_model as ex  # noqa: E402
from lab.real_vllm.patch import runner, upstream  # noqa: E402
from lab.real_vllm.patch.diff import apply_patch  # noqa: E402
from lab.real_vllm.patch.judge import judge  # noqa: E402
from lab.real_vllm.patch.patched_trace import draft_walked, patched_trace  # noqa: E402
from lab.scenario import parse_spec  # noqa: E402
from lab.trace.recorder import simulate  # noqa: E402

PATCHES = Path(__file__).resolve().parents[2] / "lab" / "exercises" / "patches"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("patch")
    vllm_dir = runner.vllm_dir()
    original = (vllm_dir / ex.TARGET[len("vllm/") :]).read_text()
    fix = apply_patch((PATCHES / "draft_model_fix.diff").read_text(), vllm_dir, tmp / "fix")
    test = tmp / Path(upstream.TEST_PATH).name
    test.write_text(upstream.test_text(fix.label))
    forgotten_and_capture = (
        ex.fix_diff(original, ex.WRONG_FIXES["step forgotten"]) + (PATCHES / "wrong_capture.diff").read_text()
    )
    raising = ex.fix_diff(original, "raise RuntimeError('my fix is not done')\n")
    jobs = {
        "base": (ex.SPEC, None, test),
        "fix": (ex.SPEC, fix, test),
        "forgotten+capture": (ex.SPEC, apply_patch(forgotten_and_capture, vllm_dir, tmp / "w1"), None),
        "per pass": (ex.SPEC, apply_patch((PATCHES / "per_pass_bound.diff").read_text(), vllm_dir, tmp / "w2"), None),
        "raises": (ex.SPEC, apply_patch(raising, vllm_dir, tmp / "w3"), None),
    }

    def one(job):
        spec, applied, pytest_file = job
        try:
            return runner.run_harness(spec, applied, pytest_file=pytest_file)
        except runner.PatchRunError as e:
            return {"user_error": str(e)}

    with ThreadPoolExecutor(3) as pool:
        results = dict(zip(jobs, pool.map(one, jobs.values())))
    return results, fix


def test_unpatched_harness_agrees_with_the_lab_and_tells_every_pass_max_model_len(runs):
    base = runs[0]["base"]
    assert base["disagreements"] == [] and base["speculator"] == "StandaloneARSpeculator"
    mml, k = parse_spec(ex.SPEC).max_model_len, parse_spec(ex.SPEC).num_speculative_tokens
    assert {p["told"] for p in base["passes"]} == {mml} and len(base["passes"]) == k * base["steps"]
    # The draft prefill's correction slot: pass 0's lengths are one past the target's, and past the upper
    # bound vLLM builds that pass with (step=0) wherever the exact length is the upper bound.
    prefills = [p for p in base["passes"] if p["pass"] == 0]
    assert all(p["seq_lens"] == [t + 1 for t in p["target_seq_lens"]] for p in prefills)
    assert any(max(p["seq_lens"]) == max(p["upper_bound"]) + 1 for p in prefills)


def test_the_worked_fix_is_judged_clean_ran_and_walks_fewer_entries(runs):
    results, fix = runs
    scenario = parse_spec(ex.SPEC)
    verdict = judge(results["base"], results["fix"], scenario)
    assert verdict.ok, [f.text for f in verdict.sorted()]
    proof = results["fix"]["proof"][ex.TARGET]
    assert proof["ran"] and {line for line, _ in proof["ran"]} <= set(proof["added"])
    # Every pass told the batch max + K, clamped (the rule), and never less than it needs.
    for p in verdict.passes:
        assert p.need <= p.told == p.rule <= p.before
    assert any(p.told < p.before for p in verdict.passes) and any(p.rule == p.before for p in verdict.passes)
    trace = patched_trace(scenario, results["fix"], {"label": fix.label})
    assert trace.meta["source"].startswith("vLLM 0.33.0 + patch ")
    assert draft_walked(trace).sum() < draft_walked(simulate(scenario)).sum()


def test_the_generated_test_fails_as_shipped_and_passes_patched(runs):
    results = runs[0]
    assert not results["base"]["pytest"]["passed"], results["base"]["pytest"]["output"]
    assert "draft pass 0 told" in results["base"]["pytest"]["output"]
    assert results["fix"]["pytest"]["passed"], results["fix"]["pytest"]["output"]


def test_wrong_patches_are_named_the_correctness_bug_first(runs):
    results = runs[0]
    verdict = judge(results["base"], results["forgotten+capture"], parse_spec(ex.SPEC))
    texts = [f.text for f in verdict.sorted()]
    assert texts[0].startswith("CORRECTNESS BUG") and texts[1].startswith("capture changed (R3)")
    assert any(t.startswith("the + step forgotten") for t in texts)


def test_a_second_file_patched_runs_and_its_per_pass_bound_is_a_bug_for_the_draft_model(runs):
    results = runs[0]
    patched = results["per pass"]
    assert patched["proof"]["vllm/v1/worker/gpu/spec_decode/speculator.py"]["ran"]
    verdict = judge(results["base"], patched, parse_spec(ex.SPEC))
    # Its upper bound for the draft prefill is one below the lengths (the correction slot): told too little.
    assert verdict.sorted()[0].text.startswith("CORRECTNESS BUG")
    assert not any(f.kind == "collateral" for f in verdict.findings)


def test_a_patch_that_raises_fails_with_vllms_traceback(runs):
    shown = runs[0]["raises"]["user_error"]
    assert f'File "{ex.TARGET}", line' in shown and "in propose" in shown
    assert shown.rstrip().endswith("RuntimeError: my fix is not done")
