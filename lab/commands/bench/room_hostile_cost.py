"""The attacks of the hostile probe of 2026-12-07 (issue 50) that ``python -m lab bench room --hostile`` sends beside
the earlier ones (lab/commands/bench/room_hostile.py): short inputs whose work had no budget (a capture grid, a wide
block table, a million requests, a sweep of million-step points, a width declared by an upload), a model named as a
path, logs joined in quadratic time, lists that inflate before any check, inputs that left Gradio's error state,
and a flood of requests for step data being built. ``refusals(url, pid)`` sends each once, one after another, and
gives what the server said, how long it took and the server's RSS before, at its peak and after."""

from __future__ import annotations

import json
import os
import time

from lab.history import REFERENCE_RELEASE

_LINE = "vllm serve meta-llama/Llama-3.1-8B-Instruct"
_WIDE = "2p1o8_mml=16384k_bs=1_seqs=2"  # 28 characters, 18 rows of a 16M-column table: 3 GB a run before
_LOG = "INFO 01-01 00:00:00 [u.py:1] non-default args: {'model': 'x',\n" + "'a': 1,\n" * 160_000  # 380 s before
_HIDDEN0 = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 0, "num_hidden_layers": 2}
_HIDDEN0.update(num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192)


def _wide_upload(folder: str) -> str:
    """C2: a valid trace whose meta declares a 16M-column table (10 KB; 2.6 GB when it was accepted)."""
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    doc = simulate(get_preset("eagle-k3")).to_json_dict()
    doc["meta"]["width"] = 16 * 1024 * 1024
    path = os.path.join(folder, "wide.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def _lists_upload(folder: str) -> str:
    """M7: 24 MB of empty lists inside an object (60 MiB of them took +1.5 GB before the shape was checked)."""
    path = os.path.join(folder, "lists.json")
    with open(path, "wb") as f:
        f.write(b'{"a": [' + b"[]," * 8_000_000 + b"[]]}")
    return path


def _named_upload(folder: str) -> str:
    """m9: a valid trace whose scenario is named with ten million characters (21 s and +230 MiB when accepted)."""
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    doc = simulate(get_preset("eagle-k3")).to_json_dict()
    doc["scenario"]["name"] = "n" * 10_000_000
    path = os.path.join(folder, "named.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def _large_body(url: str) -> str:
    """m5: a request declaring a 100 MB body (a pasted log through the API cost +335 MiB before the 8 MiB check),
    sent on a raw socket (an HTTP client will not declare more than it sends); the server's status line."""
    import socket
    import urllib.parse

    where = urllib.parse.urlsplit(url)
    head = (
        f"POST {where.path}gradio_api/queue/join HTTP/1.1\r\nHost: {where.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {100 * 2**20}\r\n\r\n"
    )
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        sock.sendall(head.encode() + b"{" * 65536)  # the first 64 KiB only: the answer comes before the rest
        reply = sock.recv(4096).decode("latin-1")
    return reply.split("\r\n", 1)[0] or "no answer"


def _deployment(c, line: str, log: str = "", config: str = "") -> str:
    out = c.predict(line, "H200", REFERENCE_RELEASE, 16, 2048, 256, log, config, api_name="/deployment")
    return out[0] or out[5] or "answered"


def _steps_flood(c, url: str) -> str:
    """M3: 45 requests at once for step data being built: each answered at once (202), none parked on a thread."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    cookies = dict(getattr(c, "cookies", None) or {})
    out = c.predict("eagle-k3", "3p100o40_seed=97", *_CONTROLS, api_name="/run")
    key = next((o for o in out if isinstance(o, str) and o.startswith("run-")), None)
    if key is None:
        return "no run key came back"
    t0 = time.perf_counter()
    with ThreadPoolExecutor(45) as pool:
        codes = list(pool.map(lambda _: httpx.get(f"{url}lab/steps/{key}", cookies=cookies, timeout=30), range(45)))
    took = time.perf_counter() - t0
    counts = {s: sum(r.status_code == s for r in codes) for s in sorted({r.status_code for r in codes})}
    page = httpx.get(f"{url}config", cookies=cookies, timeout=30)
    return f"45 step-data GETs answered in {took:.1f} s ({counts}); GET /config {page.status_code}"


# /run's controls after the scenario text: max_model_len, block_size, K, model state, graph mode, acceptance, seed,
# then runner, view, presenter, step.
_CONTROLS = (32768, 16, 3, "default", "FULL_AND_PIECEWISE", 0.7, 0, "embedded CPU", "block_table", False, 0)


def attacks(folder: str, url: str) -> list[tuple[str, object, str]]:
    """(name, fn(client) -> what the server said, the words a refusal says) for each attack of the probe."""
    from gradio_client import handle_file

    wide, lists, named = _wide_upload(folder), _lists_upload(folder), _named_upload(folder)

    def run(c, spec):
        out = c.predict("eagle-k3", spec, *_CONTROLS, api_name="/run")
        return next((o for o in out if isinstance(o, str) and "inline-error" in o), "answered")

    def upload(c, path):
        out = c.predict(handle_file(path), "block_table", False, api_name="/upload_trace")
        return next((o for o in out if isinstance(o, str) and "inline-error" in o), "answered")

    def sweep(c):
        base = "1p1o16000k_mml=16384k_seqs=1_steps=1000000"
        return c.predict(base, "accept", "0.5,0.6", "(none)", "", 1, "num_steps", api_name="/run_sweep")[2]

    big = "100000000000"
    return [
        (
            "C1 capture grid (/deployment)",
            lambda c: _deployment(c, f"{_LINE} -cc.max_cudagraph_capture_size {big} --max-num-batched-tokens {big}"),
            "capture sizes up to 65,536",
        ),
        ("C2 16M-column table (/run)", lambda c: run(c, _WIDE), "block-table entries"),
        ("C2 upload declaring 16M columns", lambda c: upload(c, wide), "is not the scenario's block-table width"),
        ("C3 sweep of 1M-step points (/run_sweep)", sweep, "Too big for the app"),
        ("C4 1000000p1o1 (/run)", lambda c: run(c, "1000000p1o1"), "1,000,000 batch rows"),
        ("M1 160,000-line open record (/deployment)", lambda c: _deployment(c, "", _LOG), ""),
        (
            "M2 model /etc/hostname (/deployment)",
            lambda c: _deployment(c, "vllm serve /etc/hostname"),
            "by its Hugging Face id",
        ),
        ("M3 45 GETs of a key being built", lambda c: _steps_flood(c, url), "GET /config 200"),
        ("M7 24 MB of [] (/upload_trace)", lambda c: upload(c, lists), "more lists or numbers than"),
        (
            "m1 --max-num-seqs 300 digits (/deployment)",
            lambda c: _deployment(c, f"{_LINE} --max-num-seqs {'1' * 300}0.5t"),
            "too large a number",
        ),
        (
            "m1 5,000-deep dotted -cc key (/deployment)",
            lambda c: _deployment(c, f"{_LINE} --compilation-config.cudagraph_capture_sizes{'.a' * 5000} 1"),
            "inline-error",
        ),
        (
            "m1 config.json hidden_size 0 (/deployment)",
            lambda c: _deployment(c, "vllm serve my/model", "", json.dumps(_HIDDEN0)),
            "inline-error",
        ),
        ("m5 a 100 MB request body", lambda c: _large_body(url), " 413 "),
        ("m9 a 10M-character trace name (/upload_trace)", lambda c: upload(c, named), "at most 200"),
    ]


def attack_list(url: str) -> list[tuple[str, object]]:
    """The attacks as ``bench room --hostile`` sends them among the attendees (lab/commands/bench/room.py)."""
    import tempfile

    return [(name, fn) for name, fn, _ in attacks(tempfile.mkdtemp(prefix="lab-hostile-"), url)]


def refusals(url: str, pid: int | None, folder: str, settle_s: float = 2.0, auth=None) -> list[dict]:
    """Each attack once, one after another: what it said (the first 160 characters, no markup), whether that is
    the refusal expected, seconds, and the server's RSS (MiB) before, at its peak during it and ``settle_s``
    after."""
    import re

    from gradio_client import Client

    from lab.commands.bench.room_hostile import RssSampler, rss_mib

    c = Client(url, auth=auth, verbose=False, ssl_verify=False, analytics_enabled=False)
    rows = []
    for name, fn, expected in attacks(folder, url):
        before = rss_mib(pid) if pid else None
        t0 = time.perf_counter()
        with RssSampler(pid, 0.05) if pid else _Nothing() as sampler:
            try:
                said = str(fn(c))
            except Exception as e:  # noqa: BLE001 (Gradio's error state comes back as an exception: a failure)
                said = f"ERROR STATE {type(e).__name__}: {e}"
        secs = time.perf_counter() - t0
        time.sleep(settle_s)
        rows.append(
            {
                "attack": name,
                "said": re.sub(r"<[^>]+>", "", said).replace("\n", " ")[:160],
                "refused": expected in said and not said.startswith("ERROR STATE") and said != "answered",
                "seconds": secs,
                "rss_before": before,
                "rss_peak": getattr(sampler, "peak", None),
                "rss_after": rss_mib(pid) if pid else None,
            }
        )
    return rows


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def report(rows: list[dict], w) -> None:
    """The table of ``refusals``."""
    w(f"  {'attack':<44} {'refused':>7} {'s':>6}   RSS MiB before / peak / after   said\n")
    for r in rows:
        rss = "" if r["rss_before"] is None else f"{r['rss_before']:.0f} / {r['rss_peak']:.0f} / {r['rss_after']:.0f}"
        w(f"  {r['attack']:<44} {'yes' if r['refused'] else 'NO':>7} {r['seconds']:6.1f}   {rss:<30} {r['said']}\n")


def run_refusals(out=None, password: str = "bench-password") -> list[dict]:
    """``python -m lab bench room --refusals``: ``python app.py --warm`` with a password, started here, and each
    attack sent once (``refusals``); prints the table and returns its rows."""
    import sys
    import tempfile

    from lab import machine
    from lab.commands.bench.app_process import app_process

    w = (out or sys.stdout).write
    pids: list[int] = []
    os.environ["LAB_PASSWORD"] = password
    try:
        with app_process("eagle-k3", extra=("--warm",), pids=pids) as (url, _):
            time.sleep(20)  # the presets warmed, as a room starts
            rows = refusals(url, pids[0], tempfile.mkdtemp(prefix="lab-refusals-"), auth=("bench", password))
    finally:
        os.environ.pop("LAB_PASSWORD", None)
    w(f"python -m lab bench room --refusals  ({machine.describe()}; one attack at a time, RSS sampled every 50 ms)\n")
    report(rows, w)
    return rows
