"""The hostile corpus of issue 36 (docs/app.md, the room's limits): inputs one attendee of a
room could send, each refused with a clear message under a memory or time bound that the old code broke."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from lab.scenario import parse_spec

# The interpreter's own peak RSS: VmHWM belongs to the address space exec made. Not ru_maxrss: Linux carries it
# over fork+exec from the parent (fs/exec.c exec_mmap keeps the old mm's high-water mark in signal->maxrss), so in
# a pytest process that has grown to 1.5 GB every child "peaked" at 1.5 GB (the CI failure of 2026-12-04).
_PRINT_PEAK = """
def _vm_hwm_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")
print("RSS", _vm_hwm_kib() / 1024)
"""


def _peak_rss_mib(code: str, timeout: float = 60) -> tuple[float, str]:
    """Run ``code`` in a fresh interpreter; its own peak RSS in MiB (VmHWM) and its stdout."""
    wrapped = code + "\n" + _PRINT_PEAK
    out = subprocess.run(
        [sys.executable, "-c", wrapped], capture_output=True, text=True, timeout=timeout, check=True
    ).stdout
    rss = float(out.rsplit("RSS", 1)[1])
    return rss, out


def test_c1_many_full_groups_refused_before_building():
    # Old code: 12 groups of 1,000,000 built 12 million tuples (2.2 GB) before the Scenario's total check.
    code = textwrap.dedent(
        """
        from lab.scenario import parse_spec
        try:
            parse_spec("_".join(["1000000p1o1"] * 12))
        except ValueError as e:
            print("ERR", e)
        """
    )
    rss, out = _peak_rss_mib(code)
    assert "more than 1,000,000 requests" in out
    assert rss < 200, rss


@pytest.mark.parametrize("spec", ["p1o1a3000000000", "2p1o1a2147483647+1"])
def test_m1_arrival_past_int32_is_a_clear_error(spec):
    with pytest.raises(ValueError, match="arrival steps must be <= 2,147,483,647"):
        parse_spec(spec)


def test_arrival_bound_in_request_checks():
    s = parse_spec("p1o1a5")
    import dataclasses

    bad = dataclasses.replace(s.requests[0], arrival_step=2**31)
    with pytest.raises(ValueError, match=r"2\*\*31"):
        dataclasses.replace(s, requests=(bad,))


_BOMB = """
import base64, json, zlib
import numpy as np
from lab.trace.schema import SCHEMA
doc, blobs = json.load(open("data/eras/0.32/eagle-k3.json")), {{}}


def zeros(nbytes):
    if nbytes not in blobs:
        z = zlib.compressobj(9)
        blobs[nbytes] = base64.b64encode(
            b"".join(z.compress(bytes(2**22)) for _ in range(nbytes // 2**22)) + z.flush()
        ).decode()
    return blobs[nbytes]


for name in {names}:
    dtype, item = SCHEMA[name][0], np.dtype(SCHEMA[name][0]).itemsize
    doc["arrays"][name] = {{**doc["arrays"][name], "shape": [{nbytes} // item], "data": zeros({nbytes})}}
data = json.dumps(doc).encode()
print("FILE", len(data))
from lab.trace import Trace
try:
    Trace.from_json_bytes(data, "bomb.json")
except ValueError as e:
    print("ERR", e)
"""


@pytest.mark.parametrize(
    "names, nbytes, message",
    [
        # every array declares 64 MiB: old code inflated all 23 (1.4 GiB) before comparing shapes
        ("list(SCHEMA)", 64 * 2**20, "declares shape"),
        # the block log alone, consistent with itself (B is its length): old code inflated 384 MiB
        ("['block_log']", 384 * 2**20, "more than this file may inflate to"),
    ],
)
def test_c2_zip_bomb_refused_before_inflating(names, nbytes, message):
    rss, out = _peak_rss_mib(_BOMB.format(names=names, nbytes=nbytes))
    assert message in out, out
    assert rss < 250, rss


def test_m1_summary_and_headline_escape_trace_text():
    # Old code: MarkdownIt("commonmark") passed scenario.name / meta.source through as raw HTML.
    import json

    from lab.trace import Trace
    from lab.views.eras import headline_html
    from lab.views.render import summary_html

    doc = json.load(open("data/eras/0.32/eagle-k3.json"))
    doc["scenario"]["name"] = doc["meta"]["source"] = '<img src=x onerror="x()"> ![i](http://example.com/i.png)'
    trace = Trace.from_json_dict(doc, "hostile.json")
    shown = summary_html(trace, 0) + headline_html(trace, 0)
    assert "<img" not in shown and "&lt;img" in shown


@pytest.mark.parametrize("name", ["../../../tests/data/x", "../0.32/eagle-k3", "x" * 5000, None])
def test_m2_trace_names_are_never_paths(name):
    # Old code joined scenario.name into data/eras/<series>/<name>.json: a file-existence oracle and a loader.
    from lab.trace.era_recordings import recorded_releases, recording, recording_path

    assert recorded_releases(name) == {}
    assert recording("0.32", name) is None
    with pytest.raises(ValueError, match="presets only"):
        recording_path("0.32", name)


def test_m2_recordings_still_found_by_preset_name():
    from lab.trace.era_recordings import recorded_releases

    assert recorded_releases("eagle-k3")


@pytest.mark.parametrize("recording_meta", ["abc", [1, 2], 3])
def test_m2_meta_recording_not_an_object_is_a_clear_error(recording_meta):
    import json

    from lab.trace import Trace, TraceFormatError

    doc = json.load(open("data/eras/0.32/eagle-k3.json"))
    doc["meta"]["recording"] = recording_meta
    with pytest.raises(TraceFormatError, match="meta.recording an object"):
        Trace.from_json_dict(doc, "x.json")


def test_m9_out_at_a_fifo_is_refused_and_kept(tmp_path):
    import os
    import stat

    from lab.commands.main import main

    fifo = tmp_path / "out.html"
    os.mkfifo(fifo)
    # Old code: the FIFO was replaced by a regular file.
    assert main(["export", "--preset", "eagle-k3", "--out", str(fifo)]) == 2
    assert main(["simulate", "--preset", "eagle-k3", "--quiet", "--out", str(fifo)]) == 2
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_input_trace_that_is_not_a_regular_file_is_refused(tmp_path):
    import os

    from lab.trace import Trace, TraceFormatError

    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    for path in (fifo, tmp_path / "zero.json", tmp_path):  # old code: hung on the FIFO, read /dev/zero on
        with pytest.raises(TraceFormatError, match="not a regular file"):
            Trace.load(path)


@pytest.mark.parametrize(
    "values, message",
    [("-1:1:*2", "starts above 0"), ("0:5:*2", "starts above 0"), ("1:10000000:1", "more than 100,000 values")],
)
def test_m5_sweep_values_counted_before_made(values, message):
    # Old code: -1:1:*2 built 100,000 ever larger integers (80 s, +2.5 GB); 1:10000000:1 made 100,001 first.
    import time

    from lab.sweep.spec import parse_values

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        parse_values(values, "n")
    assert time.perf_counter() - t0 < 0.05


@pytest.mark.parametrize("template", ["{n:>2000000000}p1o1", "{n!r}p1o1"])
def test_m5_template_format_specs_refused(template):
    # Old code: {n:>2000000000} allocated a 2 GB string.
    from lab.sweep.spec import SweepSpec

    with pytest.raises(ValueError, match="no format spec"):
        SweepSpec.make(template, ["n=1"])


def test_peak_rss_is_the_child_own_not_the_parent():
    # The CI failure of 2026-12-04: ru_maxrss is inherited over fork+exec, so a big pytest process made every
    # bounded child look 1.5 GB. Hold 300 MiB here; a child that does nothing must still measure small.
    held = bytearray(300 * 2**20)
    held[::4096] = b"\1" * len(held[::4096])
    rss, _ = _peak_rss_mib("pass")
    assert rss < 100, rss
    del held


def test_m6_junk_in_meta_is_refused_on_load(tmp_path):
    """Old code: a 20 MB list in ``meta`` was loaded and kept (four 60 MB uploads held +1 GB of the app's server)."""
    import json

    doc = json.load(open("data/eras/0.32/eagle-k3.json"))
    for pad, said in (
        ([0] * 7_000_000, "more lists or numbers than 1,000,000 requests"),  # counted before parsing (probe 12-07, M7)
        ("x" * 7_000_000, "meta is larger than 1,024 KiB"),
    ):
        doc["meta"]["pad"] = pad
        path = tmp_path / "pad.json"
        path.write_text(json.dumps(doc))
        out = subprocess.run(
            [sys.executable, "-m", "lab", "show", "--quiet", str(path)], capture_output=True, text=True, timeout=120
        )
        assert out.returncode != 0 and said in out.stderr + out.stdout, out.stderr[-500:]


@pytest.mark.parametrize("req_ids", [["req-0"], ["x" * 1000] * 16, [1] * 16])
def test_m6_req_ids_one_short_string_a_request(req_ids):
    import json

    from lab.trace import Trace, TraceFormatError

    doc = json.load(open("data/eras/0.32/eagle-k3.json"))
    doc["req_ids"] = req_ids
    with pytest.raises(TraceFormatError, match="req_ids must be 16 strings"):
        Trace.from_json_dict(doc, "x.json")


_LINE = "vllm serve meta-llama/Llama-3.1-8B-Instruct "


@pytest.mark.parametrize(
    "flags, message",
    [
        ("--speculative-config '" + '{"a":' * 3000 + "1" + "}" * 3000 + "'", "--speculative-config: the JSON is"),
        ("--compilation-config '" + "[" * 3000 + "]" * 3000 + "'", "--compilation-config: the JSON is nested"),
        (
            """--speculative-config '{"method": "eagle3", "model": "x", "num_speculative_tokens": 1e400}'""",
            "--speculative-config: the number 1e400 is out of range",
        ),
        ("--speculative-config.num_speculative_tokens 1e400", "the number 1e400 is out of range"),
        ("--max-num-seqs 0", "--max-num-seqs 0: max_num_seqs must be at least 1"),
        ("--max-num-batched-tokens 0", "--max-num-batched-tokens 0: max_num_batched_tokens must be at least 1"),
    ],
)
def test_m3_deployment_lines_that_crashed_or_were_silently_changed(flags, message):
    """Old code: RecursionError / OverflowError tracebacks (exit 1); --max-num-seqs 0 became 1024 (exit 0)."""
    cmd = [sys.executable, "-m", "lab", "deployment", "--line", _LINE + flags]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr[-800:]


@pytest.mark.parametrize("where", ["busy port", "bad host"])
def test_m9_app_start_errors_are_one_line(where):
    """Old code: a raw OSError traceback ("Cannot find empty port in range"), even for a bad host."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        args = ["--port", str(busy.getsockname()[1])] if where == "busy port" else ["--host", "999.1.1.1"]
        out = subprocess.run([sys.executable, "app.py", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-800:]
    assert out.stderr.startswith("error: cannot serve on ") and len(out.stderr.strip().splitlines()) == 1
    assert ("is in use" if where == "busy port" else "is not an address or host name") in out.stderr


def test_m1_the_status_shows_a_trace_name_as_text():
    # The bench room --hostile probe found it: the status (a Markdown component) showed an uploaded trace's
    # scenario.name as markup ("**<img src=x onerror=…>**"), and "cached run" said nothing to a newcomer.
    import json

    from lab.app.loading import _status
    from lab.trace import Trace
    from lab.views.render import MARKDOWN

    doc = json.load(open("data/eras/0.32/eagle-k3.json"))
    doc["scenario"]["name"] = '<img src=x onerror="x()"> [a](http://example.com) **b**'
    shown = MARKDOWN.render(_status(Trace.from_json_dict(doc, "hostile.json"), "uploaded a.json"))
    assert "<img" not in shown and "&lt;img" in shown and "<a " not in shown and "<strong>b" not in shown
