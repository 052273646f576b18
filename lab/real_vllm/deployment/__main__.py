"""``python -m lab.real_vllm.deployment [--gpu GPU [--config PATH]] -- vllm serve words…``: what ``python -m lab
deployment --check-with-vllm`` runs in .venv-vllm (lab/commands/deployment.py ``check_with_vllm``), one JSON
object on the last line of stdout: vLLM 0.33.0's own parser on the words (serve_flags.py ``vllm_parse``) and,
with ``--gpu``, under "resolution", the lab's resolution against vLLM's configuration pieces (check.py
``check_line``). A named module, not a ``python -c`` string, so tests/test_imports.py sees this crossing."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from lab.real_vllm.deployment.check import check_line
from lab.real_vllm.deployment.serve_flags import vllm_parse


def main(argv: list[str]) -> dict:
    p = argparse.ArgumentParser(prog="python -m lab.real_vllm.deployment")
    p.add_argument("--gpu", help="resolve on this GPU too (the lab's name)")
    p.add_argument("--config", help="the model's config.json")
    p.add_argument("words", nargs=argparse.REMAINDER, help="-- the vllm serve words after `vllm`")
    args = p.parse_args(argv)
    words = args.words[1:] if args.words[:1] == ["--"] else args.words
    out = vllm_parse(words)
    if args.gpu:
        out["resolution"] = check_line(shlex.join(["vllm", *words]), args.gpu, args.config or None)
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
