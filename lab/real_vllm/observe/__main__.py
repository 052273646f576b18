"""``python -m lab.real_vllm.observe [--write]`` (in .venv-vllm): print the observation table, or write it to
lab/gpu_model/observed.json (lab/real_vllm/observe/table.py)."""

from __future__ import annotations

import sys

from lab.real_vllm.observe.table import OUT, observe_all, render


def main(argv: list[str]) -> int:
    text = render(observe_all())
    if "--write" in argv:
        OUT.write_text(text)
        print(f"wrote {OUT}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
