"""The deployment answer as text (``python -m lab deployment``) and as Markdown (the app's tab), and
the table of common deployments in docs/deployments.md (``deployments_table``), every cell computed."""

from __future__ import annotations

from lab.deployment.answer import ERA_RELEASES, Workload, answer
from lab.deployment.resolve import resolve
from lab.engine.model_states import ERAS


def _work_line(w: dict | None, backend: str) -> str:
    if w is None:
        return f"{backend}: the lab has no work model of this backend"
    return (
        f"{w['backend']}: max_seq_len changes its work? {w['verdict']} ({w['known']}). {w['how']}. "
        f"Target passes, {w['quantity']}: {w['baseline']:,} with max_model_len, {w['fixed']:,} with the "
        f"batch max (extra {w['extra']:,}, {w['extra_bytes'] / 2**20:,.1f} MiB read); predictions, not GPU "
        f"measurements"
    )


def format_text(a: dict) -> str:
    """The answer for a terminal: plain words first, then what vLLM would run, then per path and era."""
    out = [a["headline"], ""]
    out += [f"  {k:18} {v}" for k, v in a["deployment"].items()]
    out += ["", f"workload: {a['workload']['spec']} ({a['workload']['steps']} steps)", ""]
    out.append(f"  {'path':14} {'era':14} {'told max_seq_len':34} kernel sees (R9)")
    for r in a["paths"]:
        mark = " *" if r["era"] == a["era"] else "  "
        out.append(f"{mark}{r['path']:14} {r['era']:14} {r['told']:34} {r['kernel'] or r['note']}")
    out.append(f"  (* your release's era: {a['era']}, vLLM {ERA_RELEASES[a['era']]})")
    out += ["", _work_line(a["work"], a["deployment"]["attention backend"].split()[0])]
    out += ["", "replay it:", f"  {a['replay']['cli']}", f"  the app: {a['replay']['app']}"]
    if a["notes"]:
        out += ["", "notes:"] + [f"  - {n}" for n in a["notes"]]
    return "\n".join(out) + "\n"


def format_markdown(a: dict) -> str:
    """The answer for the app: the plain words, what vLLM would run, the per-path table, the work."""
    out = [f"### {a['headline'][0].upper()}{a['headline'][1:]}", ""]
    out += [f"- **{k}**: {v}" for k, v in a["deployment"].items()]
    out += ["", f"Workload `{a['workload']['spec']}` ({a['workload']['steps']} steps).", ""]
    out += ["| path | era | told `max_seq_len` | the kernel sees (R9) |", "|---|---|---|---|"]
    for r in a["paths"]:
        era = f"**{r['era']}** (yours)" if r["era"] == a["era"] else r["era"]
        out.append(f"| {r['path']} | {era} | {r['told']} | {r['kernel'] or r['note']} |")
    out += ["", _work_line(a["work"], a["deployment"]["attention backend"].split()[0])]
    if a["work"]:
        out += [f"- source [{s['status']}]: {s['repo']} `{s['file']}` {s['function']}" for s in a["work"]["sources"]]
    out += ["", f"Replay: `{a['replay']['cli']}`"]
    if a["notes"]:
        out += ["", "Notes:"] + [f"- {n}" for n in a["notes"]]
    return "\n".join(out) + "\n"


# The common deployments of docs/deployments.md: (label, serve line, GPU). Each row is computed.
DEPLOYMENTS = (
    ("dense + EAGLE3", "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32k --speculative-config "
     '\'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}\'', "H200"),
    ("dense + EAGLE3", "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32k --speculative-config "
     '\'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}\'', "B200"),
    ("dense + EAGLE3, PIECEWISE", "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4 --speculative-config "
     '\'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "num_speculative_tokens": 3}\' '
     '-cc \'{"cudagraph_mode": "PIECEWISE"}\'', "B200"),
    ("DeepSeek MTP, MLA", "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config "
     '\'{"method": "mtp", "num_speculative_tokens": 1}\'', "H200"),
    ("DeepSeek MTP, MLA", "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config "
     '\'{"method": "mtp", "num_speculative_tokens": 1}\'', "B200"),
    ("Qwen3-Next hybrid + MTP", "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
     '\'{"method": "qwen3_next_mtp", "num_speculative_tokens": 2}\'', "H200"),
    ("gpt-oss, sliding windows", "vllm serve openai/gpt-oss-120b", "H200"),
    ("gpt-oss, sliding windows", "vllm serve openai/gpt-oss-120b", "B200"),
    ("draft model", "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4 --speculative-config "
     '\'{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}\'', "H200"),
    ("n-gram", "vllm serve Qwen/Qwen3-8B --speculative-config "
     '\'{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}\'', "H200"),
    ("n-gram, eager", "vllm serve Qwen/Qwen3-8B --enforce-eager --speculative-config "
     '\'{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}\'', "H200"),
    ("encoder-only embedding", "vllm serve BAAI/bge-large-en-v1.5", "H200"),
)  # fmt: skip


def deployments_table(workload: Workload | None = None) -> str:
    """docs/deployments.md's table: one row per deployment, every cell from ``answer``."""
    workload = workload or Workload()
    head = (
        "| deployment | GPU | backend (lab model) | graphs | paths told max_model_len before #40654 → in 0.33.0 "
        "| kernel sees (0.33.0, target) | work changes? | predicted extra (target passes) | answer |"
    )
    out = [head, "|---" * 9 + "|"]
    for label, line, gpu in DEPLOYMENTS:
        a = answer(resolve(line, gpu), workload)
        rows = [r for r in a["paths"] if r["era"] == ERAS[-1]]
        old = [r for r in a["paths"] if r["era"] == ERAS[0]]
        told = "; ".join(f"{o['path']}: {o['told']} → {n['told']}" for o, n in zip(old, rows)) or "-"
        target = rows[0]["kernel"] if rows else "-"
        w = a["work"]
        work = f"{w['verdict']} ({w['known']})" if w else "no lab model"
        extra = f"{w['extra']:,} {w['quantity']} (+{w['extra_share']:.0%})" if w else "-"
        d = a["deployment"]
        out.append(
            f"| {label}: `{line}` | {gpu} | {d['attention backend'].split(';')[0]} | {d['cuda graphs'].split(';')[0]} "
            f"| {told} | {target} | {work} | {extra} | {a['headline'].split(':')[0]} |"
        )
    return "\n".join(out) + "\n"
