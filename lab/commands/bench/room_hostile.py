"""``python -m lab bench room --hostile``: the room bench (lab/commands/bench/room.py) with attackers in the room
(issue 36's hostile probe; docs/app.md): while the attendees open presets, fetch step data and ask the
deployment question, other clients send what one attendee could send through the app's own API. Each attack
is sent ``rounds`` times; the bench prints what the server answered and how long it took, the server's peak
RSS during the attack, its RSS before the room and ``after_s`` seconds after everyone left, and the attendees'
p95 per action beside it (the same bench without attackers: run both and compare)."""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
import threading
import time
import zlib

from lab.history import REFERENCE_RELEASE

_C1_SPEC = "_".join(["1000000p1o1"] * 12)  # C1: 12 x the per-group limit, 143 characters
_LONG_RUN = "1p1o10000000"  # M3: ten million decode steps
_DEEP_JSON = "[" * 3000 + "]" * 3000  # m3: nesting past Python's recursion limit
_SCRIPT = '<img src=x onerror="document.title=1">'


def rss_mib(pid: int) -> float | None:
    """The process's resident set now (VmRSS in /proc; None where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class RssSampler:
    """The server's RSS every ``period`` seconds in a thread: its peak while running."""

    def __init__(self, pid: int, period: float = 0.2):
        self.pid, self.period, self.peak, self._stop = pid, period, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mib(self.pid) or 0.0)
            time.sleep(self.period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)


def _bomb_file(folder: str) -> str:
    """C2: a trace of 15 MiB or so whose 23 arrays each declare 64 MiB of zeros (1.4 GiB inflated)."""
    import numpy as np

    from lab.scenario import get_preset
    from lab.trace.recorder import simulate
    from lab.trace.schema import SCHEMA

    doc = simulate(get_preset("eagle-k3")).to_json_dict()
    z = zlib.compressobj(9)
    blob = base64.b64encode(b"".join(z.compress(bytes(2**22)) for _ in range(16)) + z.flush()).decode()
    for name, (dtype, *_rest) in SCHEMA.items():
        if name in doc["arrays"]:
            item = np.dtype(dtype).itemsize
            doc["arrays"][name] = {**doc["arrays"][name], "shape": [64 * 2**20 // item], "data": blob}
    path = os.path.join(folder, "bomb.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def _script_file(folder: str) -> str:
    """M1: a valid trace whose scenario name and source are markup."""
    from lab.scenario import get_preset
    from lab.trace.recorder import simulate

    doc = simulate(get_preset("eagle-k3")).to_json_dict()
    doc["scenario"]["name"] = doc["meta"]["source"] = _SCRIPT
    path = os.path.join(folder, "script.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def _said(out) -> str:
    """What the server said back, in a line: the first inline error or "Not run" status among the outputs."""
    texts = [o for o in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(o, str)]
    for t in texts:
        if "Not run" in t or "inline-error" in t or "⚠" in t or "**Not run**" in t:
            return re.sub(r"<[^>]+>", "", t).replace("\n", " ").strip()[:150]
    return "answered: " + (re.sub(r"<[^>]+>", "", texts[0]).strip()[:100] if texts else "(no text)")


def attacks(folder: str) -> list[tuple[str, object]]:
    """(name, fn(client) -> what the server said) for every attack the bench sends."""
    from gradio_client import handle_file

    bomb, script = _bomb_file(folder), _script_file(folder)
    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct"

    def run_spec(c, spec):
        controls = c.predict(spec, api_name="/parse_spec")  # Enter in the scenario text, as the page does
        refused = [x for x in controls if isinstance(x, str) and ("inline-error" in x or "⚠" in x)]
        if refused:
            return refused[0]
        # The preset box keeps a preset (the page's); the text and its controls are the attack.
        return c.predict("eagle-k3", spec, *controls[:7], "embedded CPU", "block_table", False, 0, api_name="/run")

    def script_escaped(c):
        out = c.predict(handle_file(script), "block_table", False, api_name="/upload_trace")
        shown = " ".join(o for o in out if isinstance(o, str))
        return "escaped" if "<img" not in shown and "&lt;img" in shown else "NOT ESCAPED: " + shown[:100]

    return [
        ("C1 12 groups of 1,000,000 requests (/run)", lambda c: run_spec(c, _C1_SPEC)),
        (
            "C2 a zip bomb trace (/upload_trace)",
            lambda c: c.predict(handle_file(bomb), "block_table", False, api_name="/upload_trace"),
        ),
        ("M1 markup in a trace's name (/upload_trace)", script_escaped),
        ("M3 ten million steps (/run)", lambda c: run_spec(c, _LONG_RUN)),
        (
            "M4 50 x p1 o1999 (/deployment)",
            lambda c: c.predict(line, "H200", REFERENCE_RELEASE, 50, 1, 1999, "", "", api_name="/deployment"),
        ),
        (
            "M5 values -1:1:*2 (/sweep_estimate)",
            lambda c: c.predict("4p100o20", "mml", "-1:1:*2", "(none)", "", 1, api_name="/sweep_estimate"),
        ),
        (
            "M5 a 2 GB format spec (/sweep_estimate)",
            lambda c: c.predict("{n:>2000000000}p1o1", "n", "1,2", "(none)", "", 1, api_name="/sweep_estimate"),
        ),
        (
            "m3 JSON 3,000 deep (/deployment)",
            lambda c: c.predict(
                f"{line} --speculative-config '{_DEEP_JSON}'",
                "H200",
                REFERENCE_RELEASE,
                16,
                2048,
                256,
                "",
                "",
                api_name="/deployment",
            ),
        ),
    ]


def _attacker(url: str, todo: list, rounds: int, start, results: dict) -> None:
    from gradio_client import Client

    try:  # a busy server can time a new client out: said as the attack's answer, and the room still starts
        c = Client(url, verbose=False, ssl_verify=False, analytics_enabled=False)
    except Exception as e:  # noqa: BLE001
        results.setdefault(todo[0][0], []).append((0.0, f"no client: {type(e).__name__}: {str(e)[:80]}"))
        c = None
    start.wait(timeout=300)
    for _ in range(rounds if c is not None else 0):
        for name, fn in todo:
            t0 = time.perf_counter()
            try:
                said = fn(c)
                said = said if isinstance(said, str) and not said.startswith(("(", "[")) else _said(said)
            except Exception as e:  # noqa: BLE001 (a refusal raised as gr.Error is an answer too)
                said = f"{type(e).__name__}: {str(e)[:120]}"
            results.setdefault(name, []).append(((time.perf_counter() - t0) * 1e3, said))


def attack_list() -> list[tuple[str, object]]:
    """The attacks, their files written to a fresh temporary folder."""
    return attacks(tempfile.mkdtemp(prefix="lab-hostile-"))


def run_attackers(url: str, todo: list, rounds: int, start) -> tuple[list[threading.Thread], dict]:
    """One attacker thread per attack in ``todo``, each a party of ``start`` (the attendees' barrier)."""
    results: dict[str, list] = {}
    threads = [threading.Thread(target=_attacker, args=(url, [a], rounds, start, results), daemon=True) for a in todo]
    for t in threads:
        t.start()
    return threads, results


def report(results: dict, rss: dict, w) -> None:
    """What each attack got back and how long it took; the server's RSS before, at its peak, after."""
    w(
        f"  server RSS: {rss['before']:.0f} MiB before the room, peak {rss['peak']:.0f} MiB during it, "
        f"{rss['after']:.0f} MiB {rss['after_s']:g} s after everyone left\n"
    )
    for name, got in results.items():
        worst = max(ms for ms, _ in got)
        w(f"  attack {name:<44} x{len(got)}  worst {worst / 1e3:6.1f} s  -> {got[-1][1][:110]}\n")
