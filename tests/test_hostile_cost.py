"""The hostile probe of 2026-12-07 (issue 50; the room's limits are in docs/app.md), the defects that one short
input caused: each refused on its declared sizes (lab/cost.py) before anything is built, under a memory and time
bound that the old code broke; files never written through a symlink; trace text escaped in the exported page;
no path read from a pasted line in the app; every deployment input answered under its box."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from lab.cost import Budget, Cost, scenario_cost, spec_floor

_PEAK = """
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print("RSS", int(line.split()[1]) / 1024)
"""


def _child(code: str, timeout: float = 60) -> tuple[float, float, str]:
    """Run ``code`` in a fresh interpreter: (its own peak RSS in MiB, the seconds ``code`` took, its stdout)."""
    wrapped = "import time\n_t0 = time.perf_counter()\n" + textwrap.dedent(code)
    wrapped += "\nprint('SECS', time.perf_counter() - _t0)\n" + _PEAK
    out = subprocess.run(
        [sys.executable, "-c", wrapped], capture_output=True, text=True, timeout=timeout, check=True
    ).stdout
    return float(out.rsplit("RSS", 1)[1]), float(out.rsplit("SECS", 1)[1].split()[0]), out


# ---- C1: capture sizes -----------------------------------------------------------------------------------------

_LINE = "vllm serve meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize(
    "flags",
    [
        "--max-cudagraph-capture-size 100000000000 --max-num-batched-tokens 100000000000",  # 98 characters: 6 GB
        "-cc.max_cudagraph_capture_size 100000000 --max-num-batched-tokens 100000000",
        """-cc '{"max_cudagraph_capture_size": 100000000000}' --max-num-batched-tokens 100000000000""",
    ],
)
def test_c1_a_capture_grid_is_refused_before_it_is_built(flags):
    # Old code: set(range(256, top + 1, 16)) with top = 1e11: 6 GB in 21 s and still growing (CLI and app alike).
    code = f"""
    from lab.deployment import resolve
    try:
        resolve({_LINE + " " + flags!r})
    except ValueError as e:
        print("ERR", e)
    """
    rss, secs, out = _child(code)
    assert "the lab models capture sizes up to 65,536" in out, out
    assert rss < 400 and secs < 5, (rss, secs)


def test_c1_capture_sizes_past_the_lab_limit_are_refused_by_the_scenario():
    # The engine's dispatch table holds one entry per token count up to the largest size (CudaGraphManager).
    from lab.scenario import parse_spec

    with pytest.raises(ValueError, match="cudagraph_capture_sizes: must be integers from 1 to 65,536"):
        parse_spec("p1o1_capture=8/100000000_tokens=200000000")
    assert parse_spec("p1o1_capture=8/65536_tokens=65536").cudagraph_capture_sizes == (8, 65536)


# ---- C2: the block table's width ---------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["2p1o8_mml=16384k_bs=1_seqs=2", "2p1o1990_mml=16384k_bs=16_seqs=2"])
def test_c2_a_wide_block_table_is_over_the_app_budget(spec):
    # Old code counted steps and rows only: 8 steps of a 16M-column table cost 3 GB a run; 1,991 steps of 1M
    # columns took 507 s to build their step data.
    from lab.app.room.budget import OverBudget, check_scenario
    from lab.scenario import parse_spec

    with pytest.raises(OverBudget, match="block-table entries"):
        check_scenario(parse_spec(spec), spec)


def test_the_presets_fit_the_app_budget():
    from lab.app.room.budget import APP
    from lab.presets import PRESETS
    from lab.scenario import get_preset

    for name in PRESETS:
        assert APP.over(scenario_cost(get_preset(name))) == [], name


def test_every_deployment_example_is_answered_at_the_default_workload():
    # the budget's block-table entries once refused the Qwen3-Next + MTP example (67.4M entries) in the room bench
    from lab.app.deployment_tab import EXAMPLES, SIZES, deployment_tab

    for name, (line, gpu) in EXAMPLES.items():
        out = deployment_tab(line, gpu, "0.33.0", *(default for *_, default in SIZES))
        assert not out[0] and not out[5], (name, out[0] or out[5])


def test_c2_an_upload_declaring_a_wider_table_than_its_scenario_is_refused():
    # Old code checked only 1 <= meta.width <= 16M: a 10 KB upload claiming 16M columns cost 2.6 GB.
    code = """
    import json
    from lab.trace import Trace
    doc = json.load(open("data/eras/0.32/eagle-k3.json"))
    doc["meta"]["width"] = 16 * 1024 * 1024
    try:
        Trace.from_json_bytes(json.dumps(doc).encode(), source="wide.json")
    except ValueError as e:
        print("ERR", e)
    """
    rss, secs, out = _child(code)
    assert "meta.width 16,777,216 is not the scenario's block-table width 1,024" in out, out
    assert rss < 300 and secs < 10, (rss, secs)


# ---- C4: one group of a million requests ---------------------------------------------------------------------------


def test_c4_a_million_requests_are_refused_before_one_is_made():
    # Old code built 1M requests, their key (asdict + json.dumps) and only then counted: 25-30 s, 350 MB.
    code = """
    from lab.app.controls import parse_app_spec  # gradio and the lab: about 130 MiB before the call
    t0 = time.perf_counter()
    try:
        parse_app_spec("1000000p1o1")
    except ValueError as e:
        print("ERR", e)
    print("CALL", time.perf_counter() - t0)
    """
    rss, _, out = _child(code)
    secs = float(out.split("CALL")[1].split()[0])
    assert "at least 1,000,000 batch rows" in out and "python -m lab simulate --spec 1000000p1o1" in out, out
    assert secs < 0.5 and rss < 400, (rss, secs)


def test_the_spec_floor_is_a_lower_bound_of_the_cost():
    from lab.presets import PRESETS
    from lab.scenario import get_preset, parse_spec

    for name, (text, _) in PRESETS.items():
        assert spec_floor(text).rows <= scenario_cost(get_preset(name)).rows, name
    assert spec_floor("p1o16000k_steps=10").rows == 10 * 4096  # a run stopped after steps= holds fewer
    assert scenario_cost(parse_spec("p1o16000k_steps=10_seqs=1")).rows == 10


def test_a_budget_names_what_is_over():
    said = Budget(steps=10, rows=10, cells=100).over(Cost(steps=11, rows=5, width=30))
    assert said == [
        "about 11 engine steps, over the 10 engine steps the budget allows",
        "about 150 block-table entries (5 rows x 30 columns), over the 100 block-table entries the budget allows",
    ]


# ---- C3: a sweep's estimate from the same cost model ---------------------------------------------------------------


def test_c3_a_sweep_point_over_the_budget_is_refused_by_the_estimate():
    # Old code: "2 points, under 1 s here", then 262 s holding the heavy line.
    from lab.app.sweeps_tab import sweep_estimate

    t0 = time.perf_counter()
    spec, fits, msg = sweep_estimate("1p1o16000k_mml=16384k_seqs=1_steps=1000000", "accept", "0.5,0.6", "", "", 1)
    assert time.perf_counter() - t0 < 1
    assert not fits and "Too big for the app" in msg and "point `1p1o16000k" in msg and "under 1 s" not in msg
    spec, fits, msg = sweep_estimate("4p100o20", "mml", "8k:32k:*2", "", "", 2)
    assert fits and "6 points" in msg
    # 400 points of 30,000 requests: counted from their texts, none parsed (12M requests would take minutes)
    t0 = time.perf_counter()
    spec, fits, msg = sweep_estimate("30000p1o1", "mml", "1k:400k:1k", "", "", 1)
    assert time.perf_counter() - t0 < 1 and not fits and "over the 400,000 a sweep may here" in msg


# ---- M8: files -------------------------------------------------------------------------------------------------------


def test_m8_out_through_a_symlink_is_refused_and_the_link_kept(tmp_path):
    from lab.files import write_text_atomically

    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "page.html"
    link.symlink_to(victim)  # /dev/stdout is such a link (to /proc/self/fd/1) when stdout is a file
    with pytest.raises(ValueError, match="is a symlink"):
        write_text_atomically(link, "page")
    assert link.is_symlink() and victim.read_text() == "keep"


def test_m8_a_planted_tmp_symlink_or_fifo_is_never_followed(tmp_path):
    from lab.files import write_text_atomically

    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "page.html"
    (tmp_path / "page.html.tmp").symlink_to(victim)  # old code: open(out + ".tmp", "w") wrote through it
    os.mkfifo(tmp_path / "other.html.tmp")  # old code hung on it
    assert write_text_atomically(out, "page") == 4
    assert write_text_atomically(tmp_path / "other.html", "other") == 5
    assert victim.read_text() == "keep" and out.read_text() == "page" and not out.is_symlink()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["other.html", "other.html.tmp", "page.html", "page.html.tmp", "victim.txt"], left


def test_m8_the_cli_refuses_out_through_a_symlink(tmp_path):
    from lab.commands.main import main

    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / "page.html").symlink_to(victim)
    assert main(["cheatsheet", "--out", str(tmp_path / "page.html")]) == 2
    assert victim.read_text() == "keep"


# ---- m3: trace text in the exported page's data -----------------------------------------------------------------


def test_m3_trace_text_cannot_end_or_change_the_data_script():
    import dataclasses

    from lab.export.page import page_html
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    name = "<!--<script></script><b>&"
    trace = simulate(dataclasses.replace(get_preset("eagle-k3"), name=name))
    page = page_html(trace)
    data = page.split("<script id='lab-data' type='application/json'>", 1)[1].split("</script>", 1)[0]
    assert not set("<>&") & set(data), "markup characters left in the data block"
    assert json.loads(data)["title"].startswith(name) or name in json.dumps(json.loads(data))
    assert page.count("<script") == 3 and "&lt;!--&lt;script&gt;" in page


# ---- M2: no path from a pasted line -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model", ["/etc/hostname", "/proc/self/environ", "pyproject.toml", "./pyproject.toml", "../x", "~/.bashrc"]
)
def test_m2_the_app_never_opens_a_model_named_as_a_path(model, monkeypatch):
    from pathlib import Path

    from lab.app.deployment_tab import deployment_tab

    opened = []
    real_open, real_is_file = open, Path.is_file
    monkeypatch.setattr("builtins.open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))
    monkeypatch.setattr(Path, "is_file", lambda self: opened.append(str(self)) or real_is_file(self))
    msg = deployment_tab(f"vllm serve {model}", "H200", "0.33.0", 16, 2048, 256)[0]
    # only the lab's table and the Hugging Face cache, by id (huggingface_hub's models--<org>--<name> folders)
    read = [p for p in opened if "/models--" not in p]
    assert not [p for p in read if "hostname" in p or "environ" in p or "pyproject" in p or "bashrc" in p], read
    assert "config.json" in msg and "invalid JSON" not in msg and "bytes" not in msg
    # the same words whether or not the path exists on the server: no oracle
    missing = deployment_tab(f"vllm serve {model}-no-such", "H200", "0.33.0", 16, 2048, 256)[0]
    assert ("looked up here by its Hugging Face id" in msg) == ("looked up here by its Hugging Face id" in missing)


def test_m2_the_cli_keeps_local_configs(tmp_path):
    from lab.deployment.models import lookup

    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    assert lookup(str(tmp_path), local_paths=False) is None
    assert lookup("openai/GPT-OSS-20B", local_paths=False) is not None


# ---- m1: every deployment input ends in a message under its box ---------------------------------------------------


@pytest.mark.parametrize(
    "line, config, said",
    [
        (f"{_LINE} --max-num-seqs {'1' * 300}0.5t", "", "max-num-seqs"),
        (f"{_LINE} --compilation-config.cudagraph_capture_sizes{'.a' * 5000} 1", "", ""),
        (f"{_LINE} --cudagraph-capture-sizes 8 100000000 --max-num-batched-tokens 1000000000", "", "65,536"),
        ("vllm serve my/model", "HIDDEN0", "head_dim=0"),
    ],
)
def test_m1_deployment_inputs_are_said_under_the_box(line, config, said):
    from lab.app.deployment_tab import deployment_tab

    if config == "HIDDEN0":
        cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 0}
        cfg.update(num_attention_heads=32, num_key_value_heads=8, num_hidden_layers=32, max_position_embeddings=8192)
        config = json.dumps(cfg)
    out = deployment_tab(line, "H200", "0.33.0", 16, 2048, 256, "", config)  # old code raised: Gradio's error state
    msg = out[0] or out[5]
    assert "inline-error" in msg and said in msg, msg


def test_m1_the_cli_says_a_dotted_key_nested_too_deeply(capsys):
    """The 5,000-deep dotted -cc key: the CLI printed a RecursionError traceback (json.dumps of the merged key)."""
    from lab.commands.main import main

    line = f"{_LINE} -cc{'.a' * 5000} 1".split()
    assert main(["deployment", "--gpu", "H100", "--", *line]) == 2
    assert "nested too deeply" in capsys.readouterr().err


# ---- M1: start-up logs in linear time -------------------------------------------------------------------------------


def _plain_records(text: str) -> list[str]:
    """The plain statement of lab.deployment.startup_log._records: join a line to the open record (``_is_open`` of
    the whole record so far) when it starts no record of its own."""
    from lab.deployment.startup_log import _RECORD, _is_open

    out: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if out and line.strip() and not _RECORD.match(line.lstrip()) and _is_open(out[-1]):
            out[-1] += line
        else:
            out.append(line)
    return out


def test_m1_records_are_joined_as_the_plain_rule_says():
    import glob

    from lab.deployment.startup_log import _records

    logs = [open(p).read() for p in sorted(glob.glob("tests/data/startup_logs/*.log"))]
    head = "INFO 01-01 00:00:00 [u.py:1] "
    logs += [
        head + "non-default args: {'model': 'x',\n'a': 1,\n'b': [1,\n2]}\n" + head + "next\nloose line\n",
        head + "Initializing a V1 LLM engine (v0.33.0) with config: model='x', c={\n'a': 1}\nmore\n" + head + "x",
        head + "Initializing a V1 LLM engine (v0.33.0) with config: model='x'\ncontinued, d=(1\n)\n\n" + head + "y",
    ]
    assert len(logs) >= 6
    for text in logs:
        assert _records(text) == _plain_records(text)


@pytest.mark.parametrize(
    "log",
    [
        "INFO 01-01 00:00:00 [u.py:1] non-default args: {'model': 'x',\n" + "'a': 1,\n" * 160_000,  # 380 s before
        "INFO 01-01 00:00:00 [u.py:1] Initializing a V1 LLM engine (v0.33.0) with config: a={\n" + "x\n" * 160_000,
        "INFO 01-01 00:00:00 [u.py:1] " + "non-default args: {" * 80_000,  # 77 s of regex backtracking before
    ],
)
def test_m1_a_long_open_record_is_read_in_linear_time(log):
    from lab.deployment.startup_log import StartupLogError, read_startup_log

    t0 = time.perf_counter()
    try:
        read_startup_log(log)
    except (StartupLogError, ValueError):
        pass
    assert time.perf_counter() - t0 < 5


# ---- M7: an upload's lists and numbers counted before it is parsed ------------------------------------------------


@pytest.mark.parametrize("junk", [b"[]", b"{}", b"1"])  # each repeated: junk,junk,...
def test_m7_an_upload_of_lists_or_numbers_is_refused_before_parsing(junk):
    # Old code: json.loads of 60 MiB of [[],[],...] took +1.5 GB, then said "top level must be a JSON object".
    code = f"""
    from lab.trace import Trace
    data = b'{{"a": [' + {junk!r} + b"," * 8_000_000 + {junk!r} + b"]}}"  # 16-24 MB, as the probe's 60 MiB
    try:
        Trace.from_json_bytes(data, source="junk.json", max_requests=40_000)
    except ValueError as e:
        print("ERR", e)
    """
    rss, secs, out = _child(code)
    assert "is not a JSON trace: more lists or numbers than 40,000 requests" in out, out
    assert rss < 250 and secs < 5, (rss, secs)


# ---- M3, M4: the step-data route never parks a thread; small builds first; one attendee's queue -----------------


def test_m3_step_data_is_answered_at_once_while_it_is_built(monkeypatch):
    import threading

    from lab.app import steps_data
    from lab.app.room.cache import TRACES
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    cache = steps_data.StepDataCache()
    release = threading.Event()
    real_build = cache._build
    monkeypatch.setattr(cache, "_build", lambda key, *lane: (release.wait(30), real_build(key, *lane)))
    TRACES.put("run-hostile-m3", simulate(get_preset("eagle-k3")))
    t0 = time.perf_counter()
    for _ in range(45):  # old code: each waited 120 s on one of the server's 40 threads
        with pytest.raises(steps_data.StepDataPending):
            cache.poll("run-hostile-m3")
    assert time.perf_counter() - t0 < 1 and list(cache._queue) == ["run-hostile-m3"] or cache._done
    release.set()
    assert cache.get("run-hostile-m3", wait_s=60) is not None
    assert cache.poll("run-hostile-m3") is not None and cache.builds["run-hostile-m3"] == 1


def test_m4_small_builds_pass_large_ones_and_one_attendee_queues_two_at_most(monkeypatch):
    import threading

    from lab.app import steps_data
    from lab.app.room.cache import TRACES
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    cache = steps_data.StepDataCache(lanes=("all",))  # one lane: its order and the per-attendee bound
    gate, order = threading.Event(), []
    monkeypatch.setattr(cache, "_build", lambda key, *lane: (gate.wait(30), order.append(key)))
    small, large = simulate(get_preset("draft-model-k3")), simulate(get_preset("short-decode-long-context"))
    for key, trace in (("run-m4-first", small), ("run-m4-large", large), ("run-m4-small", small)):
        TRACES.put(key, trace)
    cache.warm("run-m4-first")  # taken by the worker at once (it waits at the gate)
    time.sleep(0.2)
    cache.warm("run-m4-large", owner="login-a")
    cache.warm("run-m4-small", owner="login-b")
    for key in ("run-m4-third", "run-m4-fourth"):
        TRACES.put(key, small)
    with pytest.raises(steps_data.StepDataPending):
        cache.poll("run-m4-third", owner="login-a")  # login-a's second queued build
    with pytest.raises(steps_data.StepDataBusy, match="your other traces"):
        cache.poll("run-m4-fourth", owner="login-a")  # a third waits until one is built
    gate.set()
    deadline = time.time() + 30
    while len(order) < 4 and time.time() < deadline:  # waited for without asking: asking would put it first
        time.sleep(0.05)
    assert order[1] == "run-m4-third", order  # a page polled it: built before the ones only warmed
    assert order.index("run-m4-small") < order.index("run-m4-large"), order


def test_a_page_waiting_and_a_preset_go_before_an_attendees_warmed_build(monkeypatch):
    """bench room --greedy: a greedy attendee's warmed 1,910-step runs, never fetched, held the builder while the
    room's pages waited for presets and their own runs; now a key a page asked for goes first, a preset (no owner)
    before an attendee's trace, then the smallest."""
    import threading

    from lab.app import steps_data
    from lab.app.room.cache import TRACES
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    cache = steps_data.StepDataCache(lanes=("all",))
    gate, order = threading.Event(), []
    monkeypatch.setattr(cache, "_build", lambda key, *lane: (gate.wait(30), order.append(key)))
    small = simulate(get_preset("draft-model-k3"))
    TRACES.put("run-order-busy", small)
    TRACES.put("run-order-greedy", small, owner="login-greedy")
    TRACES.put("run-order-mine", small, owner="login-honest")
    TRACES.put("run-order-preset", simulate(get_preset("mixed-long-short")))  # no owner, larger
    cache.warm("run-order-busy")
    time.sleep(0.2)  # the lane holds it at the gate
    cache.warm("run-order-greedy", owner="login-greedy")
    cache.warm("run-order-mine", owner="login-honest")
    for key, who in (("run-order-mine", "login-honest"), ("run-order-preset", "login-other")):
        with pytest.raises(steps_data.StepDataPending):
            cache.poll(key, owner=who)  # pages wait for these two
    gate.set()
    deadline = time.time() + 30
    while len(order) < 4 and time.time() < deadline:
        time.sleep(0.05)
    assert order == ["run-order-busy", "run-order-preset", "run-order-mine", "run-order-greedy"], order


def test_a_small_build_does_not_wait_behind_a_large_one(monkeypatch):
    """bench room --greedy: with one lane, the room's small custom runs waited for another attendee's 1,910-step
    build (28 s here); the small lane builds them meanwhile."""
    import threading

    from lab.app import steps_data
    from lab.app.room.cache import TRACES
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    cache = steps_data.StepDataCache()
    gate, order = threading.Event(), []

    def build(key, builds=None):
        if key == "run-lanes-large":
            gate.wait(30)  # a long build holds its lane
        order.append((key, builds is steps_data.SMALL_BUILDS))

    monkeypatch.setattr(cache, "_build", build)
    large, small = simulate(get_preset("short-decode-long-context")), simulate(get_preset("draft-model-k3"))
    assert (
        steps_data._cost(large).step_data_seconds
        > steps_data.SMALL_BUILD_S
        >= steps_data._cost(small).step_data_seconds
    )
    TRACES.put("run-lanes-large", large)
    TRACES.put("run-lanes-small", small)
    cache.warm("run-lanes-large")
    time.sleep(0.3)  # the "all" lane holds the large one
    cache.warm("run-lanes-small")
    deadline = time.time() + 20
    while not order and time.time() < deadline:
        time.sleep(0.05)
    assert order == [("run-lanes-small", True)]  # built by the small lane while the large one still builds
    gate.set()
    cache.get("run-lanes-large", wait_s=30)
    assert order[-1] == ("run-lanes-large", False)


# ---- M5, M6: the attendee is the login; one place in the heavy line each ------------------------------------------


def test_m5_the_attendee_is_the_login_not_the_session():
    from lab.app.room.attendee import attendee

    token = {"access-token-unsecure-abc": "t0k3n"}
    assert attendee(token, "session-1") == attendee(token, "session-2") != "t0k3n"
    assert attendee({}, "session-1") == "session-1"


def test_m6_one_attendee_holds_one_place_in_the_heavy_line():
    import threading

    from lab.app.room.line import Busy, HeavyLine

    line, going, done = HeavyLine(), threading.Event(), threading.Event()

    def hold():
        with line.slot("a run", attendee="login-a"):
            going.set()
            done.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    going.wait(5)
    with pytest.raises(Busy, match="you already have 1 heavy run"):
        with line.slot("timing again", attendee="login-a"):
            pass
    ran = []

    def other():
        with line.slot("b", attendee="login-b"):
            ran.append("login-b")

    waiting = threading.Thread(target=other)
    waiting.start()  # another attendee still gets a place
    time.sleep(0.3)
    assert len(line._waiting) == 1
    done.set()
    t.join(5)
    waiting.join(5)
    assert ran == ["login-b"] and line._places == {} and line.running == 0


# ---- M4: a build Python cannot stop is stopped by the operating system ---------------------------------------------


def test_m4_step_data_is_built_in_a_process_with_a_wall_time_and_a_memory_limit():
    from lab.app.room.build_worker import BuildFailed, BuildProcess, build_in_process
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    trace = simulate(get_preset("draft-model-k3"))
    builds = BuildProcess()
    try:
        assert builds.build(trace) == build_in_process(trace)  # the same bytes (and so the same ETag)
    finally:
        builds.close()
    slow = BuildProcess(wall_s=0.2)  # the process is still importing: killed at the deadline
    with pytest.raises(BuildFailed, match="took over 0.2 s"):
        slow.build(trace)
    assert slow._proc is None and slow.started == 1
    small = BuildProcess(max_bytes=200 * 2**20)  # too little to build anything: refused, the server goes on
    try:
        with pytest.raises((BuildFailed, ValueError)):
            small.build(trace)
    finally:
        small.close()
