"""``python -m lab deployment -- vllm serve MODEL …``: does #40654/#43991 matter for this deployment?

    python -m lab deployment [--gpu H200] [--vllm 0.33.0] [--config PATH]
        [--requests N --prompt-len P --output-len O | --spec TEXT] [--json] [--check-with-vllm]
        -- vllm serve MODEL --max-model-len … --speculative-config '{…}' …
    python -m lab deployment --table            the table of docs/deployments.md
    python -m lab deployment --grid             every GPU x every line kind (lab/deployment/grid.py)

The line may also come as one string (``--line "vllm serve …"``). ``--check-with-vllm`` also hands
it to vLLM 0.33.0's own parser in .venv-vllm (lab/real_vllm/deployment/serve_flags.py) and says where they
differ. A bad line: one error line naming the flag, exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lab.deployment.answer import Workload, answer
from lab.deployment.answer_types import FromLog, Resolution, vllm_parser_from_json
from lab.deployment.report import deployments_table, format_text, models_table
from lab.deployment.resolve import DEPLOYMENT_GPUS, resolve
from lab.history import REFERENCE_RELEASE
from lab.vllm_env import CONFORMANCE_VENV_PYTHON, REPO, conformance_python

if TYPE_CHECKING:  # the start-up log's reader is imported only for --log
    from lab.deployment.startup_log import StartupLog

VLLM_PYTHON = CONFORMANCE_VENV_PYTHON  # .venv-vllm of this checkout (lab/vllm_env.py)


def register(sub) -> None:
    sp = sub.add_parser(
        "deployment",
        help="does #40654/#43991 matter for my deployment? (paste the vllm serve line after --)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("--gpu", default="H200", choices=DEPLOYMENT_GPUS, help="the GPU it serves on (default H200)")
    sp.add_argument(
        "--vllm", help=f"the vLLM release it runs (default {REFERENCE_RELEASE}; with --log, the release the log names)"
    )
    sp.add_argument("--config", help="the model's config.json (or its folder), for a model not in the lab's table")
    sp.add_argument("--line", help='the serve line as one string ("vllm serve MODEL …")')
    sp.add_argument(
        "--log",
        help="a vLLM start-up log: its serve line and release are answered (and compared); with a serve line, an "
        "excerpt of that line's start-up whose resolved values are compared",
    )
    sp.add_argument("--requests", type=int, default=16, help="workload: requests arriving together (default 16)")
    sp.add_argument("--prompt-len", type=int, default=2048, help="workload: prompt tokens each (default 2048)")
    sp.add_argument("--output-len", type=int, default=256, help="workload: tokens generated each (default 256)")
    sp.add_argument("--spec", help="workload: the requests of a lab spec instead (e.g. '8p16ko256_32p512o128a0+2')")
    sp.add_argument("--json", action="store_true", help="print the answer as JSON")
    sp.add_argument("--check-with-vllm", action="store_true", help="also parse the line with vLLM's own parser")
    sp.add_argument("--table", action="store_true", help="print docs/deployments.md's two tables")
    sp.add_argument("--grid", action="store_true", help="print every listed GPU x every line kind, each answered")
    sp.add_argument("serve", nargs=argparse.REMAINDER, help="-- vllm serve MODEL [flags]")
    sp.set_defaults(fn=run)


def _line(args) -> str:
    words = args.serve[1:] if args.serve[:1] == ["--"] else args.serve
    if args.line and words:
        raise ValueError("give the serve line once: after -- or with --line")
    return args.line or shlex.join(words)


def check_with_vllm(line: str, gpu: str | None = None, config_path: str | None = None) -> dict:
    """vLLM 0.33.0's own parser on the line, in .venv-vllm (a subprocess: vLLM and the lab's
    environment cannot share one); with ``gpu``, also the resolution against vLLM's configuration
    pieces (lab/real_vllm/deployment/check.py check_line) under "resolution", the model's facts read from
    ``config_path`` (``--config``, or the config.json found in the local Hugging Face cache) where given."""
    python = conformance_python()  # .venv-vllm, or $LAB_VLLM_PYTHON
    if not python.exists():
        return {"error": f"{python} is missing: make venv-vllm builds it"}
    words = shlex.split(line)
    words = words[1:] if words[:1] == ["vllm"] else words
    res = subprocess.run(
        [
            str(python),
            "-m",
            "lab.real_vllm.deployment",
            *(["--gpu", gpu, "--config", config_path or ""] if gpu else []),
            "--",
            *words,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin", "VLLM_LOGGING_LEVEL": "ERROR"},
    )
    if res.returncode:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit {res.returncode}"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def config_file(dep, given: str | None) -> str | None:
    """The config.json the answer read (``--config``, or the local Hugging Face cache's), for the check in
    .venv-vllm, whose environment has no cache settings; None for a model of the lab's table."""
    if given:
        return given
    return dep.model.source if dep.model.source and Path(dep.model.source).is_file() else None


def resolution_text(r: Resolution) -> str:
    """The resolution half of ``--check-with-vllm`` in words: each disagreeing field with both values."""
    if r.refused is not None:
        return f"refuses: {r.refused}"
    if r.error is not None:
        return f"could not check: {r.error}"
    fields = r.fields or {}
    if r.disagreements:
        return "disagrees on: " + "; ".join(
            f"{name} (lab {fields[name][0]}, vLLM {fields[name][1]})" for name in r.disagreements
        )
    return f"agrees on {', '.join(fields)}"


def _from_log(args) -> tuple[str, str, StartupLog, bool]:
    """(serve line, release, log, is it an excerpt) of ``--log``: the release the log names, unless --vllm says
    another. With a serve line beside it, the log is an excerpt of that line's start-up (no start-up line of its
    own: issue 47, the whole log; lab/deployment/log_excerpt.py, the app's rule too)."""
    # deferred, as --json's document below: a plain line imports neither (issue 47: a line in <= 1 s, imports in)
    from lab.deployment.log_excerpt import excerpt_release, names_its_line, read_excerpt
    from lab.deployment.startup_log import line_and_release, read_log_file, read_startup_log

    if args.line or args.serve:
        log = read_excerpt(read_log_file(args.log))
        if names_its_line(log):
            raise ValueError("the log names the line it ran: give the serve line or --log, not both")
        return _line(args), excerpt_release(log, args.vllm), log, True
    log = read_startup_log(read_log_file(args.log))
    line, release = line_and_release(log, args.vllm)
    return line, release, log, False


def log_text(c: FromLog) -> str:
    """The log's own words beside the lab's, for a terminal."""
    out = ["", f"from the log (vLLM {c.version or 'release not named'}): {c.line}"]
    for key in ("attention_backend", "cudagraph_mode", "model_runner", "block_size", "max_model_len",
                "enable_chunked_prefill", "cudagraph_profile", "async_scheduling",
                "max_num_batched_tokens"):  # fmt: skip
        p = getattr(c, key)
        if p is None:
            continue
        said = "not in the log" if p.log is None else ("agrees" if p.agree else f"the log says {p.log}")
        out.append(f"  {key:24} lab: {p.lab}; {said}")
    sizes = c.cudagraph_capture_sizes
    said = "not in the log" if sizes.log is None else "agrees" if sizes.agree else f"the log: {len(sizes.log)} sizes"
    out.insert(4, f"  {'cudagraph_capture_sizes':24} lab: {len(sizes.lab)} sizes; {said}")
    out += [f"  note: {n}" for n in c.notes]
    return "\n".join(out) + "\n"


def run(args) -> int:
    if args.table:
        sys.stdout.write(deployments_table() + "\n" + models_table())
        return 0
    if args.grid:
        from lab.deployment.grid import grid_cells, grid_table  # deferred: only --grid answers 99 lines

        sys.stdout.write(grid_table(grid_cells()))
        return 0
    log, excerpt = None, False
    if args.log:
        line, release, log, excerpt = _from_log(args)
    else:
        line, release = _line(args), args.vllm or REFERENCE_RELEASE
    if not line.strip():
        raise ValueError("paste the serve line after --: python -m lab deployment -- vllm serve MODEL …")
    dep = resolve(line, args.gpu, release, args.config)
    workload = Workload(args.requests, args.prompt_len, args.output_len, args.spec)
    a = answer(dep, workload)
    if log is not None:
        from lab.deployment.log_excerpt import compared_excerpt
        from lab.deployment.startup_log import compared_with_the_log

        compare = compared_excerpt if excerpt else compared_with_the_log
        a = dataclasses.replace(a, from_log=compare(log, line, dep))
    if args.check_with_vllm:
        parsed = vllm_parser_from_json(check_with_vllm(line, args.gpu, config_file(dep, args.config)))
        a = dataclasses.replace(a, vllm_parser=parsed)
    if args.json:  # fields, numbers as numbers (lab/deployment/answer_json.py SCHEMA, docs/deployments.md)
        from lab.deployment.answer_json import answer_json

        print(json.dumps(answer_json(a), indent=1))
    else:
        sys.stdout.write(format_text(a))
        if a.from_log is not None:
            sys.stdout.write(log_text(a.from_log))
        if (v := a.vllm_parser) is not None:
            print("vLLM's own parser: " + (f"refused: {v.error}" if v.error is not None else "accepts the line"))
            if v.resolution is not None:  # lab/real_vllm/deployment/check.py check_line
                print("vLLM's configuration code: " + resolution_text(v.resolution))
                if dep.model.hub_card_keys:  # both read the table's Hub-card subset: say what the check is worth
                    print(
                        "  (both read the lab's Hub-card subset of the model's config, not the published config.json:"
                        " give it with --config PATH to check the whole file)"
                    )
    return 0
