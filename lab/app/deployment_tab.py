"""The app's "Does it matter for my deployment?" tab, self-contained: ``add_deployment_tab()`` adds it
inside an open ``gr.Blocks`` / ``gr.Tabs`` with its event and api_name (``/deployment``). Paste a
``vllm serve`` line, pick the GPU and the release, read the answer, open the replay in one click.
The model logic is lab.deployment's; here only inputs, messages and outputs. A bad line is said under
the box it came from; the last answer stays."""

from __future__ import annotations

import dataclasses
import html
import json
import os
import tempfile
from contextlib import contextmanager

import gradio as gr

from lab.app.controls import inline_error
from lab.app.room.budget import over_budget
from lab.cost import scenario_cost
from lab.deployment import ServeLineError, Workload, answer, resolve
from lab.deployment.answer import scenario_of
from lab.deployment.answer_types import BackendTable
from lab.deployment.log_excerpt import compared_excerpt, excerpt_release, names_its_line, read_excerpt
from lab.deployment.models import MAX_CONFIG_BYTES
from lab.deployment.report import DEPLOYMENTS, format_markdown
from lab.deployment.resolve import DEPLOYMENT_GPUS
from lab.deployment.startup_log import (
    MAX_LOG_BYTES,
    StartupLog,
    compared_with_the_log,
    line_and_release,
    read_startup_log,
)
from lab.deployment.workload import size_problem
from lab.gpu_model.backends import backend_label, kernel_of_record
from lab.history import DEPLOYMENT_RELEASES, REFERENCE_RELEASE

EXAMPLES = {f"{label} on {gpu}": (line, gpu) for label, line, gpu in DEPLOYMENTS}
OWN_LINE = "(your own line)"
DEFAULT_EXAMPLE = "DeepSeek MTP, MLA on H200"
NOTE = (
    "**Does it matter for my deployment?** Paste the `vllm serve` line you deploy with (or pick an example), "
    "the GPU and the vLLM release. The lab reads the line as vLLM 0.33.0's own parser does, derives what vLLM "
    "would run (model kind, speculator, attention backend, CUDA-graph mode), replays it on the workload in "
    "every era, and says per path what attention is told, what the kernel sees and what the backend's work "
    "does with it. Predictions, not GPU measurements; `python -m lab deployment -- vllm serve …` prints the same."
)
PASTE_LABEL = "…or paste a vLLM start-up log, or a model's config.json"
CONFIG_LABEL = "config.json (a model outside the table)"
# A whole log answers the line it ran; an excerpt without that line is compared with the typed line (log_excerpt.py).
LOG_LABEL = (
    "start-up log (answers the line and release it ran), or an excerpt of the typed line's log (compared with it)"
)
# The tab takes no --config: a model the lab cannot find is answered from the config.json box (resolve's words).
CONFIG_HINT = f"paste its config.json into “{CONFIG_LABEL}” (open “{PASTE_LABEL}” below the line)"
# The workload's boxes: (the size's name in lab.deployment.workload, the box's label, its default).
SIZES = (("requests", "requests", 16), ("prompt_len", "prompt tokens", 2048), ("output_len", "output tokens", 256))


def deployment_tab(line, gpu, vllm, requests, prompt_len, output_len, log_text="", config_text=""):
    """(message under the line, answer Markdown, backends table, replay link, the line box, message under the
    workload's boxes, the table's notes, the release box). A pasted start-up log answers the line and release it
    ran (the line and release boxes then show them, and the answer what the log said beside the lab); a pasted
    config.json gives a model outside the table. A bad input: the message where it was typed names it and the
    other outputs keep what they showed (the boxes keep what was typed)."""
    given = (requests, prompt_len, output_len)
    problems = [p for (name, label, _), v in zip(SIZES, given) if (p := size_problem(name, v, label))]
    if problems:
        return _refused(sizes=problems)
    sizes = [int(v) for v in given]
    try:
        vllm, line_shown, log, excerpt = vllm or REFERENCE_RELEASE, gr.skip(), None, False
        if (log_text or "").strip():
            line, vllm, log, excerpt = _pasted_log(log_text, line, vllm)
            line_shown = gr.skip() if excerpt else line
        with _pasted_config(config_text) as config_path:
            # By id only: a model named as a path is never opened on this server (resolve's local_paths).
            dep = resolve(line or "", gpu or "H200", vllm, config_path, config_hint=CONFIG_HINT, local_paths=False)
        # the log's own words beside the lab's, as python -m lab deployment --log prints them
        from_log = None if log is None else (compared_excerpt if excerpt else compared_with_the_log)(log, line, dep)
    except (ServeLineError, ValueError, TypeError) as e:
        return _refused(line=[str(e)])
    except (RecursionError, OverflowError, MemoryError, ArithmeticError) as e:
        return _refused(line=[_unreadable(e)])
    try:  # the replay's cost before it is built (lab/cost.py, the app's budget)
        _fits_the_app(dep, *sizes)
    except ValueError as e:
        return _refused(sizes=[str(e)])
    try:
        a = answer(dep, Workload(*sizes))
        if from_log is not None:
            a = dataclasses.replace(a, from_log=from_log)
    except (ValueError, TypeError, RecursionError, OverflowError, ArithmeticError) as e:
        # e.g. a pasted config.json whose hidden_size is 0 (lab.gpu_model's HeadShape refuses it)
        return _refused(
            line=[f"the lab cannot answer this deployment: {e}" if isinstance(e, ValueError) else _unreadable(e)]
        )
    url = a.replay.app.removeprefix("/")  # relative: the app may sit behind a proxy's path
    link = (
        f'<a class="replay-link" href="{html.escape(url)}" target="_blank" rel="noopener">Open the replay in the '
        f"lab ↗</a> <code>{html.escape(a.replay.cli)}</code>"
    )
    table, table_notes = backends_table(a.backends)
    # A whole log answers for its own release: the release box shows it (a release the box does not list is added).
    # An excerpt is answered for the box's release (log_excerpt.py refuses one that names another).
    whole_log = log is not None and not excerpt
    release = (
        gr.Dropdown(choices=list(dict.fromkeys([*DEPLOYMENT_RELEASES, vllm])), value=vllm) if whole_log else gr.skip()
    )
    return "", format_markdown(a), table_html(table), link, line_shown, "", table_notes, release


def _pasted_log(text: str, line: str | None, release: str) -> tuple[str, str, StartupLog, bool]:
    """(line, release, log, is it an excerpt) of a pasted start-up log. A log that names the line it ran (its engine
    line or non-default args) answers that line and release, whatever the boxes hold; a log without them is an
    excerpt of the typed line's start-up, compared with it (lab/deployment/log_excerpt.py, as the CLI's
    ``--log EXCERPT -- LINE``); with no line typed, it must name its own."""
    if len(text) > MAX_LOG_BYTES:
        raise ValueError(f"the pasted log is {len(text):,} characters, over the {MAX_LOG_BYTES:,} read")
    log = read_excerpt(text)
    if not names_its_line(log) and (line or "").strip():
        return line, excerpt_release(log, release), log, True
    if not names_its_line(log):
        log = read_startup_log(text)  # its own words: what the log lacks (or the banner's model and release)
    return *line_and_release(log), log, False


def _refused(line: list[str] = (), sizes: list[str] = ()) -> tuple:
    """The outputs of a refused input: its message under the box it came from (the other box's cleared), the
    answer, table, link and line box as they were."""

    def message(texts) -> str:
        lines = "<br>".join(html.escape(t, quote=False) for t in texts)
        return inline_error(f"{lines}<br>The answer below is still the last one.") if texts else ""

    return message(line), gr.skip(), gr.skip(), gr.skip(), gr.skip(), message(sizes), gr.skip(), gr.skip()


# The GPU model's summary columns the tab's table shows (lab/gpu_model/report.py summary), under headers short
# enough for every column to fit 1366 px: the GPU is the answer's own, "measured" times only the lab's kernels,
# and the sentences (TABLE_NOTES) go in a list under the table, where they read as sentences.
TABLE_HEADERS = {
    "backend": "backend",
    "changes work": "changes work",
    "known": "how known",
    "quantity": "counts",
    "baseline": "told max_model_len",
    "fixed": "told batch max",
    "baseline extra": "extra",
    "extra bytes": "extra bytes",
}
TABLE_NOTES = ("on this workload", "split decided by", "sources")
TABLE_LABEL = "every vLLM backend the GPU model knows on this GPU, on this workload"
# Widths in pixels, 1,080 in all: every column in view at 1366 px, a long cell wraps, the numbers stay whole;
# narrower, the table scrolls in its box and the backend's name keeps its width.
TABLE_WIDTHS = (210, 150, 150, 150, 110, 110, 100, 100)


def backends_table(backends: BackendTable) -> tuple[dict, str]:
    """The answer's backends table as the tab shows it: TABLE_HEADERS' columns, each backend by its vLLM name
    with the lab's record in parentheses (lab/gpu_model/backends.py backend_label, as python -m lab backends);
    and the list of each one's TABLE_NOTES (HTML, the text escaped)."""
    if not backends.data:  # no backend the GPU model knows on this GPU (its headers are then empty too)
        return {"headers": list(TABLE_HEADERS.values()), "data": []}, ""
    column = {h: i for i, h in enumerate(backends.headers)}
    rows, notes = [], []
    for row in backends.data:
        label = backend_label(row[column["backend"]])
        rows.append([label] + [row[column[h]] for h in list(TABLE_HEADERS)[1:]])
        said = "; ".join(f"{h}: {row[column[h]]}" for h in TABLE_NOTES)
        kernel = kernel_of_record(row[column["backend"]])  # the name python -m lab backends lists it by
        said += f"; the lab's kernel of it in python -m lab backends: {kernel}" if kernel else ""
        notes.append(f"<li><code>{html.escape(label)}</code>: {html.escape(said, quote=False)}</li>")
    return {"headers": list(TABLE_HEADERS.values()), "data": rows}, f"<ul class='dep-table-notes'>{''.join(notes)}</ul>"


def table_html(table: dict) -> str:
    """``backends_table``'s rows as a plain HTML table, every header and cell escaped. A gr.Dataframe showed them
    before; with this table and the progress on the answer alone, the browser's part of a click (the answer received
    -> painted) about halved (issue 47's paste -> answer p95; docs/benchmarks.md)."""
    cols = "".join(f'<col style="width:{w}px">' for w in TABLE_WIDTHS)
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in table["headers"])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in table["data"])
    return (
        f'<div class="dep-table-label">{html.escape(TABLE_LABEL)}</div><div class="dep-table-box">'
        f'<table class="dep-backends"><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


@contextmanager
def _pasted_config(text: str | None):
    """A pasted config.json as a file lab.deployment.models reads (its size checked before it is written);
    None when nothing was pasted."""
    if not (text or "").strip():
        yield None
        return
    if len(text.encode("utf-8", errors="replace")) > MAX_CONFIG_BYTES:
        raise ValueError(f"the pasted config.json is over the {MAX_CONFIG_BYTES:,}-byte limit")
    with tempfile.TemporaryDirectory(prefix="lab-config-") as folder:
        path = os.path.join(folder, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            yield path
        except ValueError as e:  # said of what was pasted, never with the server's temporary path
            if path not in str(e):
                raise
            raise ValueError(str(e).replace(path, "the pasted config.json")) from None


def _unreadable(e: BaseException) -> str:
    """A line, log or config the lab's readers could not hold (nesting past Python's recursion limit, a number
    past a float): said under the box, never Gradio's error state, never the value itself."""
    why = {"RecursionError": "nested too deeply", "OverflowError": "a number too large"}.get(type(e).__name__)
    return f"the lab cannot read this input: {why or type(e).__name__}. Shorten or simplify it."


def _fits_the_app(dep, requests: int, prompt_len: int, output_len: int) -> None:
    """Refuse a workload whose replay would hold the server: its cost (lab/cost.py: steps, batch rows and
    block-table entries, from the replay's sizes with the line's own batch limits) against the app's one budget,
    before the scenario is simulated. Larger workloads: python -m lab deployment, which has no limit."""
    scenario = scenario_of(dep, Workload(requests, prompt_len, output_len))
    too_big = over_budget("this workload is", scenario_cost(scenario))
    if too_big:
        raise ValueError(
            f"{too_big} (max_num_seqs {dep.settings['max_num_seqs']:,}, max_num_batched_tokens "
            f"{dep.settings['max_num_batched_tokens']:,}). Ask it with python -m lab deployment --requests "
            f"{requests} --prompt-len {prompt_len} --output-len {output_len} -- vllm serve {dep.line.model} …"
        )


def _example(name, line, gpu, log_text):
    """The example's line and GPU, the log box emptied (it would answer instead); "(your own line)" keeps
    what is in the boxes."""
    if name in EXAMPLES:
        return (*EXAMPLES[name], "")
    return line, gpu, log_text


# The example's name for (line, GPU), or OWN_LINE: run in the browser when Answer is clicked.
_EXAMPLE_NAME_JS = (
    f"(line, gpu) => ({json.dumps({f'{gpu} {line}': name for name, (line, gpu) in EXAMPLES.items()})})"
    f"[gpu + ' ' + line] ?? {json.dumps(OWN_LINE)}"
)


def add_deployment_tab() -> None:
    """Add the deployment tab to the open gr.Blocks / gr.Tabs."""
    first_line, first_gpu = EXAMPLES[DEFAULT_EXAMPLE]
    with gr.Tab("Does it matter for my deployment?", id="deployment", elem_id="tab-deployment"):
        gr.Markdown(NOTE, elem_classes=["note"])
        with gr.Row():
            example = gr.Dropdown(
                [OWN_LINE, *EXAMPLES], value=DEFAULT_EXAMPLE, label="example", elem_id="dep-example", scale=1
            )
            # every GPU the resolver knows (the examples include A100 and L40S rows): a list, too many for a radio
            gpu = gr.Dropdown(list(DEPLOYMENT_GPUS), value=first_gpu, label="GPU", elem_id="dep-gpu", scale=0)
            # any release may be typed (a 0.21.0 log's excerpt is compared with 0.21.0): resolve refuses one the lab
            # does not follow, under the line
            vllm = gr.Dropdown(
                list(DEPLOYMENT_RELEASES),
                value=REFERENCE_RELEASE,
                label="vLLM release",
                elem_id="dep-vllm",
                scale=0,
                allow_custom_value=True,
            )
        line = gr.Textbox(first_line, label="vllm serve line", lines=2, max_lines=6, elem_id="dep-line")
        # The default example answered when the page is built (about 0.1 s): the tab opens on an answer.
        _, first_md, first_table, first_link, _, _, first_notes, _ = deployment_tab(
            first_line, first_gpu, REFERENCE_RELEASE, *(default for *_, default in SIZES)
        )
        line_msg = gr.HTML("", elem_id="dep-line-msg")
        with gr.Accordion(PASTE_LABEL, open=False, elem_id="dep-paste"):
            with gr.Row():
                log_text = gr.Textbox(
                    "",
                    label=LOG_LABEL,
                    lines=4,
                    max_lines=8,
                    elem_id="dep-log",
                )
                config_text = gr.Textbox("", label=CONFIG_LABEL, lines=4, max_lines=8, elem_id="dep-config")
        with gr.Row():
            # No minimum/maximum: Gradio would refuse a bad size with a toast; the lab's check says it inline. No
            # precision: Gradio would round 2.5 to 2 before the check sees it.
            requests, prompt, output = (
                gr.Number(default, label=label, elem_id=f"dep-{name.removesuffix('_len')}")
                for name, label, default in SIZES
            )
            run = gr.Button("Answer", variant="primary", elem_id="dep-run", scale=0)
        sizes_msg = gr.HTML("", elem_id="dep-sizes-msg")
        replay = gr.HTML(first_link, elem_id="dep-replay")
        out = gr.Markdown(first_md, elem_id="dep-answer")
        table = gr.HTML(first_table, elem_id="dep-table")
        table_notes = gr.HTML(first_notes, elem_id="dep-table-notes")
    inputs = [line, gpu, vllm, requests, prompt, output, log_text, config_text]
    outputs = [line_msg, out, table, replay, line, sizes_msg, table_notes, vllm]
    # The progress is shown on the answer alone: one status tracker drawn and taken off, not eight (issue 47).
    example.input(_example, [example, line, gpu, log_text], [line, gpu, log_text], api_name=False).then(
        deployment_tab, inputs, outputs, api_name=False, concurrency_limit=4, show_progress_on=out
    )
    # The example box names what was answered: an example's line, or the user's own. In the browser: a second
    # server event on the same click held the answer back (click to answer p50 842 -> 457 ms under load 8, issue 47).
    run.click(None, [line, gpu], example, js=_EXAMPLE_NAME_JS, api_name=False, queue=False)
    run.click(deployment_tab, inputs, outputs, api_name="deployment", concurrency_limit=4, show_progress_on=out)
