"""The command line: python -m lab …"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from lab import Trace
from lab.commands.main import main
from lab.presets import PRESETS

ROOT = str(pathlib.Path(__file__).parent.parent)


def run(*args):
    return subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True, timeout=300)


def test_simulate_preset_prints_steps_and_totals(tmp_path):
    out = tmp_path / "t.json"
    r = run("simulate", "--preset", "short-decode-long-context", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "max_seq_len b/f" in r.stdout and "131072/" in r.stdout
    assert "totals over all steps" in r.stdout and "out of range" in r.stdout
    trace = Trace.load(out)
    assert trace.scenario.name == "short-decode-long-context"
    r = run("show", str(out), "--quiet")
    assert r.returncode == 0 and "out of range" in r.stdout and "step reqs" not in r.stdout


def test_simulate_spec_and_every(capsys):
    assert main(["simulate", "--spec", "4p100o20_k=2_cg=none", "--every", "5"]) == 0
    text = capsys.readouterr().out
    assert "drafts: 2 passes" in text and "totals over target passes" in text


def test_presets_lists_every_preset(capsys):
    assert main(["presets"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in PRESETS)


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    assert main(["simulate", "--spec", "8q1s1k"]) == 2
    assert "invalid scenario segment '8q1s1k'" in capsys.readouterr().err
    assert main(["simulate", "--spec", "p40000o1_mml=32k"]) == 2
    assert "requests[0].prompt_len" in capsys.readouterr().err
    assert main(["simulate", "--preset", "nope"]) == 2
    assert "unknown preset" in capsys.readouterr().err
    assert main(["simulate"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "x"}')
    assert main(["show", str(bad)]) == 2
    assert "not a max_seq_len lab trace" in capsys.readouterr().err
    assert main(["show", str(tmp_path / "missing.json")]) == 2
    assert main(["show", str(tmp_path)]) == 2  # a folder
    assert "cannot read" in capsys.readouterr().err
    assert main(["simulate", "--preset", "eagle-k3", "--quiet", "--out", str(tmp_path / "no" / "t.json")]) == 2
    assert "error:" in capsys.readouterr().err
    assert main(["simulate", "--preset", "eagle-k3", "--every", "0"]) == 2


def test_every_scenario_command_takes_one_source(capsys):
    """--preset/--spec come from lab/commands/scenario_args.py: one error for both or neither, exit code 2."""
    for cmd in ("simulate", "record"):
        assert main([cmd, "--preset", "eagle-k3", "--spec", "2p10o2"]) == 2
        assert "error: give --preset or --spec, not both" in capsys.readouterr().err
        assert main([cmd]) == 2
        assert "error: give --preset NAME or --spec TEXT" in capsys.readouterr().err
    assert main(["gpu-model", "--spec", "8q1s1k"]) == 2
    assert "invalid scenario segment '8q1s1k'" in capsys.readouterr().err


def test_help_imports_no_heavy_package():
    """`python -m lab --help` stays fast: building every command's parser imports no torch, gradio, vllm."""
    code = (
        "import sys; from lab.commands.main import build_parser; build_parser(); "
        "print(sorted(m for m in ('torch', 'gradio', 'vllm', 'ray', 'plotly', 'playwright') if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_bench_engine_small(capsys):
    assert main(["bench", "engine", "--steps", "200", "--reqs", "16", "--repeat", "1", "--no-churn"]) == 0
    text = capsys.readouterr().out
    assert "steps/s" in text and "linearity" in text
    assert "churn/steady" not in text
    assert main(["bench", "engine", "--steps", "200", "--reqs", "16", "--repeat", "1"]) == 0
    assert "churn/steady: " in capsys.readouterr().out


def test_app_entry_point_launches_the_app(tmp_path, wait_served):
    """`make demo` runs app.py: the Gradio app, on 127.0.0.1 and GRADIO_SERVER_PORT when no flag says
    otherwise; a bad flag is a clear error."""
    import os
    import socket

    r = subprocess.run(
        [sys.executable, "app.py", "--preset", "nope"], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert r.returncode == 2 and "unknown preset" in r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_SERVER_NAME": ""}
    log = tmp_path / "app.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "app.py", "--preset", "eagle-k3"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        page = wait_served(proc, port, log)
        assert "max_seq_len lab" in page
        assert f"http://127.0.0.1:{port}" in log.read_text()  # bound to 127.0.0.1 by default
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_simulate_piped_into_head_exits_0():
    """`python -m lab simulate … | head` is fine: BrokenPipeError is caught before OSError, its parent."""
    import subprocess

    cmd = f"set -o pipefail; {sys.executable} -m lab simulate --preset stale-block-reuse | head -n 1"
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("scenario: stale-block-reuse")
    assert "Error" not in r.stderr and "error" not in r.stderr


def test_bench_app_takes_a_room(monkeypatch):
    # Issue 37's timing (▶ next -> painted with a room of 30 on the same server): --room reaches run_bench_app.
    import lab.commands.bench.app

    got = {}
    monkeypatch.setattr(lab.commands.bench.app, "run_bench_app", lambda **kw: got.update(kw))
    assert main(["bench", "app", "--room", "30"]) == 0
    assert got["room"] == 30 and len(got["sizes"]) == 4 and got["clicks"] == 40
    # Issue 49: the two widths it names, and fewer clicks; a bad window is refused with its reason.
    assert main(["bench", "app", "--room", "30", "--sizes", "1366x768,683X768", "--clicks", "20"]) == 0
    assert got == {"room": 30, "sizes": ((1366, 768), (683, 768)), "clicks": 20, "plain_too": False}
    # Issue 49: the page's drawing and the plain one, click by click under the same load.
    assert main(["bench", "app", "--plain-too"]) == 0 and got["plain_too"] is True
    with pytest.raises(SystemExit, match="not WIDTHxHEIGHT"):
        main(["bench", "app", "--sizes", "1366x768,99999x2"])


def test_a_command_named_as_its_module_builds_the_same_parser_alone():
    """`python -m lab deployment …` builds deployment's parser alone (lab/commands/main.py OWN_MODULE_COMMANDS, for
    speed): each such command parses exactly as in the whole parser, and imports no other command module."""
    from lab.commands.main import OWN_MODULE_COMMANDS, build_parser

    whole = build_parser()._subparsers._group_actions[0].choices
    for command in OWN_MODULE_COMMANDS:
        alone = build_parser(command)._subparsers._group_actions[0].choices
        assert command in alone, command
        assert [(a.option_strings, a.dest, a.default) for a in alone[command]._actions] == [
            (a.option_strings, a.dest, a.default) for a in whole[command]._actions
        ], command
    code = (
        "import sys; from lab.commands.main import build_parser; build_parser('deployment'); "
        "print(sorted(m for m in sys.modules if m.startswith('lab.commands.') and m != 'lab.commands.main'))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.stdout.strip() == "['lab.commands.deployment']", r.stdout + r.stderr
