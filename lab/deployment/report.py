"""The deployment answer as text (``python -m lab deployment``) and as Markdown (the app's tab), and
the table of common deployments in docs/deployments.md (``deployments_table``), every cell computed."""

from __future__ import annotations

import html
import re

from lab.deployment.answer import ERA_RELEASES_TEXT, Workload, answer, extra_words
from lab.deployment.answer_types import Answer, FromLog, PathRow, Work
from lab.deployment.resolve import resolve
from lab.history import ERAS


def _work_line(w: Work | None, backend: str) -> str:
    if w is None:
        return f"{backend}: the lab has no work model of this backend"
    drafts = "".join(
        f"; {d.path} ({d.q_len} query token{'s' if d.q_len > 1 else ''} a request): {d.baseline:,} / "
        f"{d.fixed:,} (extra {d.extra:,})"
        for d in w.drafts
    )
    assumed = ". Draft passes: the target's backend and heads assumed, rows at their upper bound" if drafts else ""
    return (
        f"{w.label}: max_seq_len changes its work? {w.verdict} ({w.known}). {w.how}. "
        f"{w.quantity} with max_model_len / with the batch max: target passes {w.baseline:,} / "
        f"{w.fixed:,} (extra {w.extra:,}, {w.extra_bytes / 2**20:,.1f} MiB read){drafts}{assumed}; "
        f"predictions, not GPU measurements"
    )


def format_text(a: Answer) -> str:
    """The answer for a terminal: plain words first, then what vLLM would run, then per path and era."""
    out = [a.headline, ""]
    out += [f"  {k:18} {v}" for k, v in a.resolved_text.items()]
    out += ["", f"workload: {a.workload.spec} ({a.workload.steps} steps)", ""]
    width = max([len("told max_seq_len")] + [len(r.told_text) for r in a.paths])
    out.append(f"  {'path':14} {'era':14} {'told max_seq_len':{width}} the backend's work reads (R9)")
    for r in a.paths:
        mark = " *" if r.era == a.era else "  "
        out.append(f"{mark}{r.path:14} {r.era:14} {r.told_text:{width}} {r.kernel_text or r.note}")
    out.append(f"  (* your release's era: {a.era}, vLLM {ERA_RELEASES_TEXT[a.era]})")
    out += ["", _work_line(a.work, a.resolved.attention_backend)]
    out += ["", "replay it:", f"  {a.replay.cli}", f"  the app: {a.replay.app}"]
    if a.notes:
        out += ["", "notes:"] + [f"  - {n}" for n in a.notes]
    return "\n".join(out) + "\n"


def format_markdown(a: Answer) -> str:
    """The answer for the app: the plain words, what vLLM would run, the per-path table, the work."""
    verdict, _, why = a.headline.partition(": ")
    # Names with underscores (FLASH_ATTN, max_model_len) as code: Markdown would read them as emphasis.
    why = re.sub(r"\b(\w+_\w+)\b", r"`\1`", why)
    out = [f"### {verdict[0].upper()}{verdict[1:]}", "", f"**{why}**", ""]
    out += [f"- **{k}**: {v}" for k, v in a.resolved_text.items()]
    out += ["", f"Workload `{a.workload.spec}` ({a.workload.steps} steps).", ""]
    out += ["| path | era | told `max_seq_len` | what the backend's work reads (R9) |", "|---|---|---|---|"]
    for r in a.paths:
        era = f"**{r.era}** (yours)" if r.era == a.era else r.era
        out.append(f"| {r.path} | {era} | {r.told_text} | {r.kernel_text or r.note} |")
    out += ["", _work_line(a.work, a.resolved.attention_backend)]
    if a.work:
        out += [f"- source [{s.status}]: {s.repo} `{s.file}` {s.function}" for s in a.work.sources]
    out += ["", f"Replay: `{a.replay.cli}`"]
    if a.from_log is not None:
        out += ["", *_log_markdown(a.from_log)]
    if a.notes:
        out += ["", "Notes:"] + [f"- {n}" for n in a.notes]
    return "\n".join(out) + "\n"


LOGGED = ("attention_backend", "cudagraph_mode", "cudagraph_capture_sizes", "model_runner", "block_size",
          "max_model_len", "enable_chunked_prefill", "cudagraph_profile", "async_scheduling",
          "max_num_batched_tokens")  # fmt: skip


def _log_markdown(c: FromLog) -> list[str]:
    """A pasted log's own words beside what the lab derives from its line, field by field (the tab; the CLI's
    --log prints the same in lab/commands/deployment.py log_text)."""
    out = [f"**Your log (vLLM {c.version or 'release not named'}) beside what the lab derives from its line**", ""]
    out += ["| field | the log says | the lab derives | |", "|---|---|---|---|"]
    for key in LOGGED:
        p = getattr(c, key)
        if p is None:
            continue
        if key == "cudagraph_capture_sizes":
            log = "not said" if p.log is None else f"{len(p.log)} sizes, {p.log[0]} to {p.log[-1]}" if p.log else "none"
            lab = f"{len(p.lab)} sizes, {p.lab[0]} to {p.lab[-1]}" if p.lab else "none"
        else:
            log, lab = "not said" if p.log is None else _code(p.log), _code(p.lab)
        out.append(f"| {key} | {log} | {lab} | {'—' if p.agree is None else 'agrees' if p.agree else '**differs**'} |")
    return out + [""] + [f"- {html.escape(n, quote=False)}" for n in c.notes]


def _code(text: str) -> str:
    """A value from a pasted log as a code span in a table cell (no backtick or bar of it ends either)."""
    return "`" + str(text).replace("`", "'").replace("|", "/") + "`"


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
    ("gpt-oss, sliding windows", "vllm serve openai/gpt-oss-120b", "A100-80GB"),
    ("draft model", "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4 --speculative-config "
     '\'{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}\'', "H200"),
    ("n-gram", "vllm serve Qwen/Qwen3-8B --speculative-config "
     '\'{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}\'', "H200"),
    ("n-gram, eager", "vllm serve Qwen/Qwen3-8B --enforce-eager --speculative-config "
     '\'{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}\'', "H200"),
    ("encoder-only embedding", "vllm serve BAAI/bge-large-en-v1.5", "H200"),
    ("dense, fp8 KV cache", "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8", "L40S"),
)  # fmt: skip


def _short(row: PathRow | None) -> str:
    """A path row's told value in a cell: "32,000" (max_model_len) or "batch max <= 2,309"; "—": no path."""
    if row is None or row.told is None:
        return "—"
    return f"{row.told.max:,}" if row.told_is_max_model_len else f"batch max <= {row.told.max:,}"


def _kernel_short(row: PathRow | None) -> str:
    if row is None or row.told is None:
        return "—"
    if row.kernel is None:  # the backend's record: not read (R10)
        return "not read by the backend"
    if row.full_graph_steps:
        return f"{row.full_graph_steps} of {row.steps} steps: max_model_len (FULL)"
    return _short(row) + ", every step"


def deployments_table(workload: Workload | None = None) -> str:
    """docs/deployments.md's table: one row per deployment, every cell from ``resolve`` and ``answer``."""
    workload = workload or Workload()
    out = [
        "| deployment | GPU | backend (lab model) | CUDA graphs | max_seq_len told: before #40654 → 0.33.0 "
        "| what the target's backend reads (0.33.0, R9) | does the backend's work follow it? "
        "| predicted extra, target passes | predicted extra, draft passes | answer |",
        "|---" * 10 + "|",
    ]
    for label, line, gpu in DEPLOYMENTS:
        dep = resolve(line, gpu)
        a = answer(dep, workload)
        old = {r.path: r for r in a.paths if r.era == ERAS[0]}
        new = [r for r in a.paths if r.era == ERAS[-1]]
        told = "; ".join(f"{r.path}: {_short(old.get(r.path))} → {_short(r)}" for r in new)
        w, b, g = a.work, dep.backend, dep.graphs
        cells = [
            f"{label}<br>`{line}`",
            gpu,
            f"{b.vllm_name} ({b.lab_backend or 'none'})",
            g.vllm_mode if g.lab_mode == g.vllm_mode else f"{g.vllm_mode} (lab: {g.lab_mode})",
            told,
            _kernel_short(new[0] if new else None),
            f"{w.verdict} ({w.known})" if w else "no lab model",
            extra_words(w).replace(" more", "") if w else "—",
            "; ".join(f"{d.path}: {d.extra:,}" for d in w.drafts) or "—" if w else "—",
            a.headline.split(":")[0],
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def models_table() -> str:
    """docs/deployments.md's table of the models the lab knows by name (lab/deployment/known_configs.py)."""
    from lab.deployment.models import KNOWN_MODELS

    out = ["| model | kind | architecture | max_model_len (derived) | head size | facts read in |", "|---" * 6 + "|"]
    for name, m in KNOWN_MODELS.items():
        subset = f"a Hub-card subset of {len(m.hub_card_keys)} keys (no published copy found)"
        read = subset if m.hub_card_keys else m.source
        cells = [f"`{name}`", m.kind.replace("_", "-"), m.architecture, f"{m.max_model_len:,}", str(m.head_size), read]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"
