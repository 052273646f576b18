"""``python -m lab.real_vllm.observe [--write]`` (in .venv-vllm): print the observation table, or write it to
lab/gpu_model/observed.json (lab/real_vllm/observe/table.py). ``--flashinfer-rows``: the FLASHINFER rows as JSON
(run by table.py in a subprocess with .vllm-flashinfer on its path)."""

from __future__ import annotations

import json
import sys

from lab.real_vllm.observe.table import OUT, observe_all, observe_flashinfer_here, render


def main(argv: list[str]) -> int:
    if "--flashinfer-rows" in argv:
        # the FLASHINFER subprocess (table.observe_flashinfer), .vllm-flashinfer on its path: its rows as JSON
        sys.stdout.write(json.dumps(observe_flashinfer_here()))
        return 0
    text = render(observe_all())
    if "--write" in argv:
        OUT.write_text(text)
        print(f"wrote {OUT}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
