"""python -m lab export: one trace as one self-contained HTML file (lab/export). What the file holds
is checked here by reading it back; tests/test_export_browser.py opens it in Chromium."""

from __future__ import annotations

import base64
import gzip
import json
import re

import pytest

from lab import simulate
from lab.commands.main import main
from lab.export.payload import FORMAT
from lab.scenario import get_preset
from lab.views import ALL_VIEWS, TRACE_WIDE

MAX_BYTES = 10 * 10**6


def payload_of(html: str) -> dict:
    m = re.search(r"<script id='lab-data' type='application/json'>(.*?)</script>", html, re.S)
    return json.loads(m.group(1))


def inflate(b64: str) -> list[str]:
    return gzip.decompress(base64.b64decode(b64)).decode().split("\n")


def test_export_writes_one_self_contained_file(tmp_path, capsys):
    out = tmp_path / "eagle-k3.html"
    assert main(["export", "--preset", "eagle-k3", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    html = out.read_text(encoding="utf-8")
    assert out.stat().st_size <= MAX_BYTES
    # Nothing from the network: no src= or href= to another place but the PRs' links.
    assert not re.search(r"<script[^>]+src=", html) and not re.search(r"<link[^>]+href=", html)
    assert "Plotly" in html and "window.labPage" in html
    data = payload_of(html)
    trace = simulate(get_preset("eagle-k3"))
    n = len(trace.steps)
    assert data["format"] == FORMAT and data["steps"] == n and data["title"] == "eagle-k3"
    assert [v["name"] for v in data["views"]] == list(ALL_VIEWS)
    for v in data["views"]:
        lines = inflate(v["gz"])
        assert len(lines) == (1 if v["name"] in TRACE_WIDE else n), v["name"]
        spec = json.loads(lines[-1])
        assert spec["data"] is not None and "template" not in spec["layout"]  # the template is sent once
        assert "What am I looking at?" in v["note"]
    words = [json.loads(line) for line in inflate(data["words"])]
    assert len(words) == n
    assert "<b>step 5</b> of" in words[5][0] and "fixed by #43991" in words[5][0]  # the headline with the three eras
    assert "<table>" in words[5][1]  # the summary, rendered
    assert data["tour"] and data["template"]["layout"]


def test_export_sources_and_bad_input(tmp_path, capsys):
    trace = simulate(get_preset("stale-block-reuse"))
    saved = tmp_path / "t.json"
    trace.save(saved)
    out = tmp_path / "t.html"
    assert main(["export", str(saved), "--out", str(out)]) == 0
    assert payload_of(out.read_text())["steps"] == len(trace.steps)
    assert main(["export", "--spec", "4p1ko64_k=2", "--out", str(out)]) == 0
    assert payload_of(out.read_text())["spec"] == "4p1ko64_k=2"
    capsys.readouterr()
    for argv, words in (
        (["export", "--preset", "eagle-k3"], "--out"),
        (["export", str(saved), "--preset", "eagle-k3", "--out", str(out)], "one of them"),
        (["export", "--preset", "nope", "--out", str(out)], "unknown preset"),
        (["export", str(tmp_path / "missing.json"), "--out", str(out)], "cannot read"),
        (["export", "--all", str(tmp_path), "--preset", "eagle-k3"], "--all DIR"),
    ):
        assert main(argv) == 2, argv
        assert words in capsys.readouterr().err, argv


def test_export_help_lists_out_as_required(capsys):
    """Issue "the workshop path": `--out` sat under "options" as if optional; it is required (unless --all)."""
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    text = capsys.readouterr().out
    sections = dict(re.findall(r"^(\S[^\n]*):\n((?:  [^\n]*\n?)+)", text, re.M))
    assert "--out FILE.html" in sections["required (unless --all)"]
    assert "--out" not in sections["options"] and "[--out" not in text
    assert "--all DIR" in sections["or instead"]
    assert main(["export", "--preset", "eagle-k3"]) == 2
    assert "error: --out FILE.html is required" in capsys.readouterr().err


# Words that send a reader to the app's controls: an exported file has none of them (no runner, no Run
# button, no upload). "Model Runner V2" is vLLM's name, not a control; "a kernel run" is no button.
APP_ONLY = re.compile(r"(?i:\b(?:click|press|button|runner|upload))|\bRun\b")


def _app_only_words(text: str) -> list[str]:
    return APP_ONLY.findall(text.replace("Model Runner", "ModelRunner"))


def test_the_exported_kernel_view_tells_an_offline_reader_what_to_run(tmp_path):
    """Issue "the workshop path": the kernel view of a trace without timings said "the runner …, then Run" and
    "upload t.json to the app" in a file that has neither. Now the commands come first; the app is one option,
    and a line that names its controls says it is in the lab's app. No other view, headline, summary or tour
    stop of the file sends the reader to the app."""
    out = tmp_path / "eagle-k3.html"
    assert main(["export", "--preset", "eagle-k3", "--out", str(out)]) == 0
    data = payload_of(out.read_text(encoding="utf-8"))
    views = {v["name"]: v for v in data["views"]}
    spec = json.loads(inflate(views["kernels"]["gz"])[0])
    lines = spec["layout"]["annotations"][0]["text"].split("<br>")
    assert "python -m lab simulate --preset eagle-k3 --backend torch-reference" in lines[1]
    assert "python -m lab export t.json --out t.html" in lines[2]
    for line in lines:
        assert not _app_only_words(line) or "in the lab's app" in line, line
    others = [v["note"] + "\n".join(inflate(v["gz"])) for name, v in views.items() if name != "kernels"]
    others += [views["kernels"]["note"], "\n".join(inflate(data["words"])), json.dumps(data["tour"])]
    assert not [w for text in others for w in _app_only_words(text)]
