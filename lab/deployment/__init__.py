"""Does #40654/#43991 matter for my deployment? The answer from a pasted ``vllm serve`` line.

Data flows one way: the line -> what vLLM 0.33.0 would run -> a lab Scenario -> the engine's trace ->
the answer (and its text, Markdown and table). docs/deployments.md tells the whole story.

    serve_line.py      read_serve_line: the line as vLLM's own parser reads it (vllm_serve_flags.json,
                       written from that parser by lab/real_vllm/deployment/serve_flags.py)
    models.py          ModelFacts, facts_from_config, load_config_json, lookup: the model's kind and sizes
                       as vLLM derives them (known_configs.py: the table of widely deployed models)
    selection.py       select_backend, resolve_cudagraph: the attention backend and CUDA-graph mode vLLM
                       0.33.0 picks (vllm/platforms/cuda.py, vllm/config/)
    resolve.py         resolve: the Deployment (what vLLM would run, the Scenario settings that replay it)
    workload.py        Workload and the bounds of its sizes (the CLI's and the app's)
    answer.py          answer: per path and era, what attention is told and the kernel sees,
                       the backend's predicted work, plain words, the replay
    answer_types.py    Answer and its parts, frozen dataclasses; to_json and json_schema (answer_json.py: --json)
    resolved.py        what vLLM would run, as fields (Resolved) and in words
    report.py          format_text, format_markdown, deployments_table (docs/deployments.md)
    grid.py            every --gpu x every line kind, answered (python -m lab deployment --grid)
    log_excerpt.py     a start-up log excerpt read beside the serve line it ran (the CLI's --log EXCERPT -- LINE
                       and the app's typed line with a pasted excerpt): one rule, its contradictions refused

``python -m lab deployment -- vllm serve …`` is lab/commands/deployment.py; the check against vLLM itself
(``--check-with-vllm``) is lab/real_vllm/deployment/.
"""

from lab.deployment.answer import Workload, answer
from lab.deployment.resolve import Deployment, resolve
from lab.deployment.serve_line import ServeLine, ServeLineError, read_serve_line

__all__ = ["Deployment", "ServeLine", "ServeLineError", "Workload", "answer", "read_serve_line", "resolve"]
