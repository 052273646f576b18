"""What ``python -m lab bench room --custom --greedy`` adds to the room (issue 50's "done when"): each honest attendee
also runs a scenario of their own and fetches its step data (as the page does after Run), and checks at the end of
the round that the server still has it (a trace lost from the cache: the page would have to run it again); and
three greedy attendees load the server on purpose, as the hostile probe of 2026-12-07 did, until the honest ones
are done: the costliest run the app's budget accepts, again and again (a new seed each time, so never from the
cache), ⟳ time again in a loop, and a 1.3 MB start-up log pasted into the deployment question in a loop."""

from __future__ import annotations

import threading
import time

from lab.history import REFERENCE_RELEASE

# /run's controls after the scenario text (lab.app.loading.run; the client leaves the gr.State inputs out):
# max_model_len, block size, K, model state, graph mode, acceptance, seed, then runner, view, presenter, step.
CONTROLS = (32768, 16, 3, "default", "FULL_AND_PIECEWISE", 0.7, 0, "embedded CPU", "block_table", False, 0)
# Within the app's budget and close to it (lab.app.room.budget: about 1,910 of 2,000 steps, 38,000 of 40,000 rows).
COSTLIEST = "20p4000o1900_seed={i}"
_LOG_LINE = "INFO 12-07 10:00:00 [core.py:93] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct'}\n"
_SHARD = "INFO 12-07 10:00:{s:02d} [worker.py:{i}] loading shard {i} of the model's weights\n"
LONG_LOG = _LOG_LINE + "".join(_SHARD.format(s=i % 60, i=i) for i in range(17_000))  # 1.3 MB, as the probe's


def custom_spec(j: int, r: int) -> str:
    """Attendee ``j``'s own scenario in round ``r``: small, and unlike any other attendee's (never from the cache)."""
    return f"{2 + j % 3}p{600 + 13 * j + r}o{40 + j % 17}"


def run_key(out) -> str | None:
    """The trace key a load answered with (the one "run-" string among /run's outputs), or None when refused."""
    return next((o for o in out if isinstance(o, str) and o.startswith("run-")), None)


def custom_run(c, url: str, j: int, r: int, timed, fetch_steps, preset: str = "eagle-k3") -> str:
    """Attendee ``j``, on ``preset``, types their own scenario, presses Enter (the controls follow the text) and Run,
    then fetches its step data, as the page does; the run's key."""
    import httpx

    spec = custom_spec(j, r)
    controls = c.predict(spec, api_name="/parse_spec")[:7]  # max_model_len … seed, as Enter fills them
    run = (spec, *controls, *CONTROLS[7:])
    out = timed("custom run (server)", lambda: c.predict(preset, *run, api_name="/run"))
    key = run_key(out)
    if key is None:
        said = next((o for o in out if isinstance(o, str) and "inline-error" in o), "no key")
        raise AssertionError(f"session {j}: custom run {custom_spec(j, r)} not run: {said[:160]}")
    resp = timed("custom run's step data (server)", lambda: fetch_steps(httpx, f"{url}lab/steps/{key}"))
    resp.raise_for_status()
    if resp.status_code != 200:
        raise AssertionError(f"session {j}: its run's step data not there after three minutes ({resp.status_code})")
    return key


def still_there(url: str, key: str) -> bool:
    """Whether the server still has ``key``'s trace at the end of the round (404: let go from its cache)."""
    import httpx

    return httpx.get(f"{url}lab/steps/{key}", timeout=60).status_code != 404


def _greedy_runs(c, i: int) -> None:
    c.predict("eagle-k3", COSTLIEST.format(i=i), *CONTROLS, api_name="/run")


def _time_again(c, i: int) -> None:
    if i == 0:
        c.predict("stale-block-reuse", "embedded CPU", "kernels", False, api_name="/pick_preset")
    c.predict("embedded CPU + kernels", "kernels", 3, False, api_name="/time_again")


def _long_log(c, i: int) -> None:
    c.predict("", "H200", REFERENCE_RELEASE, 16, 2048, 256, LONG_LOG, "", api_name="/deployment")


GREEDY = {
    "the costliest run within the budget, in a loop": _greedy_runs,
    "⟳ time again in a loop": _time_again,
    "a 1.3 MB start-up log in a loop": _long_log,
}


def start_greedy(url: str, done: threading.Event, counts: dict) -> list[threading.Thread]:
    """The three greedy attendees, each in a thread, looping until ``done``; ``counts[name]``: [requests, seconds]."""
    from gradio_client import Client

    def loop(name: str, act) -> None:
        c = Client(url, verbose=False, ssl_verify=False, analytics_enabled=False)
        counts[name] = [0, 0.0]
        i = 0
        while not done.is_set():
            t0 = time.perf_counter()
            try:
                act(c, i)
            except Exception:  # noqa: BLE001 (a refusal or a full line is what such an attendee gets)
                time.sleep(1.0)
            counts[name][0] += 1
            counts[name][1] += time.perf_counter() - t0
            i += 1

    threads = [threading.Thread(target=loop, args=item, daemon=True) for item in GREEDY.items()]
    for t in threads:
        t.start()
    return threads
