"""vLLM 0.33.0's own ``vllm serve`` argument parser, asked which flags it accepts: the table the lab's
serve-line reader (lab/deployment/serve_line.py) checks a pasted line against. Runs in the
conformance environment (.venv-vllm); ``python -m lab.real_vllm.deployment.serve_flags --write`` rewrites the
stored table and tests/conformance/test_serve_flags.py fails when it differs from vLLM's parser."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from lab.real_vllm.conform.vllm_mrv2 import VllmUnavailable
from lab.vllm_env import VLLM_VERSION

FLAGS_FILE = Path(__file__).resolve().parents[2] / "deployment" / "vllm_serve_flags.json"


def serve_parser():
    """vllm/entrypoints/cli/serve.py ``ServeSubcommand.subparser_init``: ``make_arg_parser`` on a
    ``FlexibleArgumentParser``. On a CPU-only machine vLLM cannot infer a device type while it builds
    the defaults (vllm/config/device.py), so the platform is pointed at the CPU first."""
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    try:
        import vllm
        from vllm.entrypoints.common.cli_args import make_arg_parser
        from vllm.platforms import current_platform
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError as e:
        raise VllmUnavailable(f"vLLM is not importable here ({e})") from e
    if vllm.__version__ != VLLM_VERSION:
        raise VllmUnavailable(f"found vLLM {vllm.__version__}, the reference is {VLLM_VERSION}")
    current_platform.device_type = "cpu"
    return make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))


def vllm_flags() -> dict:
    """Every option string ``vllm serve`` accepts: its ``dest`` and whether it takes one value, a list
    (``nargs='+'``/``'*'``), an optional one (``nargs='?'``) or none (a switch: the value it stores,
    read by parsing it alone). The strings are the parser's own lookup table (``_option_string_actions``), not
    each action's ``option_strings``: vllm/utils/argparse_utils.py ``_register_action`` cuts an
    ``EnableDisableAction``'s list down to the visible ones, while its ``--no-enable-*`` / ``--no-disable-*``
    spellings stay registered, "still accepted for backwards compatibility, but ... hidden from help"."""
    parser = serve_parser()
    flags = {}
    for opt, action in parser._option_string_actions.items():
        if action.dest == "help":
            continue
        if action.nargs == 0:
            stored = getattr(parser.parse_args([opt]), action.dest)
            flags[opt] = {"dest": action.dest, "takes": "switch", "stores": stored}
            continue
        takes = {"+": "list", "*": "list", "?": "optional"}.get(action.nargs, "value")
        flags[opt] = {"dest": action.dest, "takes": takes, **_values_taken(parser, opt, action)}
    return {"vllm_version": VLLM_VERSION, "flags": dict(sorted(flags.items()))}


# One value of each class a flag's type may take (lab/deployment/serve_line.py VALUE_CLASSES reads them back).
PROBES = {"int": "1", "suffixed": "1k", "float": "1.5", "json": "{}", "text": "x"}


def _values_taken(parser, opt: str, action) -> dict:
    """What the flag's type and choices take: ``choices`` (as strings) where argparse checks them, else
    ``accepts``, the value classes (PROBES) vLLM's parser takes for it, each asked by parsing it."""
    if action.choices is not None:
        return {"choices": sorted(str(c) for c in action.choices)}
    accepts = []
    for name, value in PROBES.items():
        try:
            parser.parse_args([opt, value])
        except (SystemExit, Exception):
            continue
        accepts.append(name)
    return {"accepts": accepts}


def vllm_parse(argv: list[str], parser=None) -> dict:
    """vLLM's parser on ``argv`` (the part after ``vllm``, starting with ``serve``): the parsed
    namespace as plain values, or ``{"error": message}`` where argparse refuses the line. ``parser``: one
    ``serve_parser()`` to reuse (building it takes most of a second)."""
    parser = parser or serve_parser()
    try:
        ns = parser.parse_args(argv[1:] if argv[:1] == ["serve"] else argv)
    except SystemExit as e:
        return {"error": f"vLLM's parser exited with {e.code}"}
    except Exception as e:  # FlexibleArgumentParser raises ValueError for some misuses
        return {"error": f"{type(e).__name__}: {e}"}
    return json.loads(json.dumps(vars(ns), default=str))


if __name__ == "__main__":
    table = vllm_flags()
    if "--write" in sys.argv:
        FLAGS_FILE.write_text(json.dumps(table, indent=1) + "\n")
        print(f"wrote {len(table['flags'])} flags to {FLAGS_FILE}")
    else:
        print(json.dumps(table, indent=1))
