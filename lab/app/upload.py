"""An uploaded trace put into a session: a saved trace (JSON only, size-limited, schema-checked), or a
release's own recording of an era, shown beside the engine on its scenario. Fills ``LOADED`` as every load
does (lab.app.loading); a wrong file is named under the upload and the session keeps its trace."""

from __future__ import annotations

import html
import os

import gradio as gr

from lab import Trace
from lab.app.controls import inline_error
from lab.app.loading import _loaded, _loaded_error, _owner, _simulate
from lab.app.room.budget import MAX_APP_ROWS, OverBudget, check_trace
from lab.app.room.cache import TRACES, bytes_key
from lab.app.room.line import Busy
from lab.app.runner_choices import EMBEDDED_CPU
from lab.history import ERAS
from lab.scenario import format_spec
from lab.views.render import md_text

MAX_UPLOAD_BYTES = 64 * 1024 * 1024


def upload_trace(path, view="block_table", presenter=False, compare_key=None, request: gr.Request = None):
    """A saved trace: JSON only, size-limited, schema-checked by Trace.from_json_bytes. A wrong file
    is named under the upload; the session keeps its trace."""

    def refuse(text: str) -> list:
        return _loaded_error(
            upload_msg=inline_error(
                html.escape(text, quote=False) + "<br>A trace is the JSON that "
                "<code>python -m lab simulate --preset eagle-k3 --out t.json</code> or "
                "this page's download writes. The views still show the last run."
            ),
            settings=gr.Accordion(open=True),
            upload=None,
        )  # cleared: try another file

    if not path:
        return refuse("no file uploaded")
    path = os.fspath(path)
    name = os.path.basename(path)
    size = os.path.getsize(path)
    if size > MAX_UPLOAD_BYTES:
        return refuse(f"{name} is {size / 2**20:.2f} MiB; uploads are at most {MAX_UPLOAD_BYTES / 2**20:g} MiB")
    with open(path, "rb") as f:
        data = f.read()
    if data.lstrip()[:11] in (b"diff --git ",) or (data.startswith((b"--- ", b"From ")) and b"\n+++ " in data):
        # A patch is code (docs/patch.md): the app never runs one, for a room or on a laptop.
        return refuse(
            f"{name} is a patch: a patch is code and this server never runs one. Run it on your own machine with "
            f"python -m lab patch --diff {name} --spec SPEC --out patched.json, then upload the trace it writes"
        )
    if not name.lower().endswith(".json"):
        kind = "an image" if data[:4] in (b"\x89PNG", b"GIF8") or data[:3] == b"\xff\xd8\xff" else "not JSON"
        return refuse(f"{name} is {kind}: uploads take a .json trace")
    try:
        # parsed within the app's budget: each request is at least one batch row (lab.app.room.budget)
        trace = Trace.from_json_bytes(data, source=name, max_requests=MAX_APP_ROWS)
    except ValueError as e:  # TraceFormatError is a ValueError
        return refuse(str(e))
    rec = trace.meta.get("recording")
    if rec and rec.get("era") != ERAS[-1]:
        # A release's own recording (data/eras): its 'fixed' run is that release as shipped, so the era
        # views can't read it as the lab's two modes. Show the engine on its scenario, and the recording
        # in the Recorded eras view, set against the engine in its era.
        try:  # the upload's scenario: within the app's step budget, like a run (lab.app.room.budget)
            key, trace, _ = _simulate(trace.scenario, EMBEDDED_CPU, lambda *a, **k: None, owner=_owner(request))
        except (Busy, OverBudget) as e:
            return refuse(str(e))
        return _loaded(
            key,
            trace,
            format_spec(trace.scenario),
            f"the engine on the scenario {rec.get('vllm')} recorded ({name})",
            "recorded",
            0,
            presenter,
            compare_key,
            upload_msg=f"{html.escape(name)} is {html.escape(str(rec.get('vllm')))}'s own recording "
            f"({html.escape(str(rec.get('era')))}): shown in the Recorded eras view, beside the engine on its "
            f"scenario.",
        )
    try:  # within the app's budget: its step data is built here (lab.app.room.budget)
        check_trace(trace, name)
    except OverBudget as e:
        return refuse(str(e))
    key = TRACES.put(bytes_key(data), trace, _owner(request))  # the attendee's share of the cache
    return _loaded(
        key,
        trace,
        format_spec(trace.scenario),
        f"uploaded {md_text(name)}",
        view,
        0,
        presenter,
        compare_key,
        upload_msg=f"Loaded {html.escape(name)}.",
    )
