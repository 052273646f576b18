"""docs' generated tables: the speculator census and vLLM's history, written from their one home
(lab/speculators.py, lab/history.py) into the pages between ``<!-- generated: NAME -->`` and
``<!-- end generated -->``. tests/test_doc_tables.py fails when a page and its table differ;
``python -m lab.commands.doc_tables`` rewrites them.
"""

from __future__ import annotations

import pathlib
import re
import sys

from lab.history import ERA_LIST, PATH_NOTES, REFUSED_IN_ERA, fixed_in_era
from lab.speculators import (
    CORRECTION,
    NO_PASSES,
    ONCE_AT_0,
    ONCE_AT_1,
    ONE_QUERY,
    PER_STEP,
    SPECULATOR_LIST,
    Speculator,
)

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)

# What each way of choosing a pass's ``step`` (lab/speculators.py) means, in the census's words.
_STEPS_TEXT = {
    PER_STEP: "K: pass 0 reuses the target metadata; passes 1..K-1: `step` = pass (per-step path), 1 on the fused path",
    ONCE_AT_1: "as Eagle, but `advance_draft_positions` is False: the decode metadata is built once, `step` 1 "
    "for every decode",
    ONCE_AT_0: "K module passes share one metadata built with `step` 0 on the target-shaped batch",
    CORRECTION: "pass 0 its own metadata (`step` 0, one correction slot per request), pass k `step` k+1",
    ONE_QUERY: "**one** pass of `num_query_per_req` = {q} queries a request, its own metadata, `step` = {q}",
    NO_PASSES: "**none**",
}


def _methods(records: list[Speculator]) -> str:
    out = []
    for r in records:
        cell = f"`{r.method.replace('_', '-')}`"
        aliases = [a for a in r.aliases if not a.startswith("[")]
        if aliases:
            cell += " (" + ", ".join(f"`{a.replace('_', '-')}`" for a in aliases) + " the same)"
        if r.required_k:
            cell += f" (K = {r.required_k})"
        out.append(cell)
    return ", ".join(out)


def _query(r: Speculator) -> str:
    return "1+K" if r.query_bonus else "K"


def _bound(r: Speculator) -> str:
    if not r.has_draft_attention:
        return "none"
    if r.draft_bound is None:
        return "`max_model_len` always: **not changed by #43991**"
    extra = {"K": " + K", "0": "", "num_query_per_req": " + 1 + K" if r.query_bonus else " + K"}[r.draft_bound]
    return f"`min(max ub{extra}, mml)`" + (": no +K" if r.draft_bound == "0" else "")


def _graphs(r: Speculator) -> str:
    if not r.has_draft_attention:
        return "none"
    if not r.draft_graphs:
        return "eager only"
    query = {"1": "1", "target": "1+K (the target's)", "one_pass": _query(r)}[r.draft_graph_query]
    return f"FULL_DECODE_ONLY when the target decodes in FULL graphs, else eager; query {query}"


def _lookahead(r: Speculator) -> str:
    if not r.has_draft_attention:
        return "0"
    return "1+K" if r.lookahead_bonus else "K"


def _row(records: list[Speculator]) -> str:
    r = records[0]
    classes = " / ".join(dict.fromkeys(f"`{x.vllm_class}` (`{x.vllm_module.split('.')[0]}`)" for x in records))
    steps = _STEPS_TEXT[r.draft_steps].format(q=_query(r))
    cells = [_methods(records), classes, steps, _bound(r), _graphs(r), _lookahead(r), r.first_release, r.doc_note]
    return "| " + " | ".join(cells) + " |"


def speculators() -> str:
    """docs/rules.md's census: one row per rule, the methods that share it together."""
    head = (
        "| `method=` | vLLM 0.33.0 class (`spec_decode/`) | draft passes, `step` of each | `draft_max_seq_len` "
        "(fixed) | draft graphs | lookahead slots | in MRV2 since | notes |\n|---|---|---|---|---|---|---|---|\n"
    )
    groups: list[list[Speculator]] = []
    for r in SPECULATOR_LIST:
        key = (r.propose, r.first_release, r.doc_note)
        if groups and (groups[-1][0].propose, groups[-1][0].first_release, groups[-1][0].doc_note) == key:
            groups[-1].append(r)
        else:
            groups.append([r])
    return head + "\n".join(_row(g) for g in groups) + "\n"


def speculator_history() -> str:
    """docs/eras.md's table: the first release whose MRV2 had each speculator, and what the history shows
    for an era before it."""
    head = (
        "| speculator (`method=`) | vLLM 0.33.0 module | first release with it in MRV2 | what `Step.history()` "
        "shows before |\n|---|---|---|---|\n"
    )
    rows = []
    for r in SPECULATOR_LIST:
        before = ERA_LIST[0].name
        if not r.has_draft_attention:
            shows = "no draft passes in any era"
        elif r.in_era(before):
            shows = "the eras above"
        else:
            shows = f'no value: "{r.history_note_in(before)}"'
        rows.append(
            f"| {r.display_name} (`{r.method.replace('_', '-')}`) | `{r.vllm_module.replace('.', '/')}.py` | "
            f"{r.first_release} | {shows} |"
        )
    return head + "\n".join(rows) + "\n"


# The paths of docs/rules.md's history table: (column, path, model state).
_HISTORY_PATHS = (
    ("target, default model", "target", "default"),
    ("target, encoder-decoder", "target", "encoder_decoder"),
    ("target, mamba-hybrid", "target", "mamba_hybrid"),
    ("Eagle/MTP draft decodes", "draft", "default"),
)


def eras() -> str:
    """docs/rules.md's history: what each era passed on each path (``fixed_in_era``)."""
    head = "| era | " + " | ".join(c for c, _, _ in _HISTORY_PATHS) + " |\n|---|" + "---|" * len(_HISTORY_PATHS) + "\n"
    rows = []
    for i, era in enumerate(ERA_LIST):
        label = era.name + {0: " (the lab's `baseline`)", len(ERA_LIST) - 1: " (the lab's `fixed`)"}.get(i, "")
        cells = []
        for _, path, state in _HISTORY_PATHS:
            told = (
                ("`min(max(ub) + K, max_model_len)`" if path == "draft" else "batch max")
                if fixed_in_era(era.name, path, state)
                else "`max_model_len`"
            )
            note = PATH_NOTES.get((era.name, state if path == "target" else path))
            refused = REFUSED_IN_ERA.get((era.name, state)) if path == "target" else None
            cells.append(f"— ({refused})" if refused else f"{told} ({note})" if note else told)
        rows.append(f"| {label} ({era.releases_text}) | " + " | ".join(cells) + " |")
    return head + "\n".join(rows) + "\n"


def consumers() -> str:
    """docs/rules.md "Other consumers of max_seq_len": one row per lab/gpu_model/consumers.py record."""
    from lab.gpu_model.consumers import CONSUMERS, OBSERVED_AS
    from lab.gpu_model.observed import consumer_observed

    rows = [
        "| consumer | what it does with `max_seq_len` | vLLM file and symbol | modelled in the lab | "
        "observed in vLLM 0.33.0's own code (told 32,768 → batch max) |",
        "|---|---|---|---|---|",
    ]
    for c in CONSUMERS:
        path, _, symbol = c.vllm.partition(" ")
        where = f"`{path}`" + (f" `{symbol}`" if symbol else "")
        seen = consumer_observed(OBSERVED_AS.get(c.name, ""))
        rows.append(f"| {c.name} | {c.does} | {where} | {c.modelled} | {seen} |")
    return "\n".join(rows) + "\n"


def observed() -> str:
    """docs/kernels.md "What each kernel is handed, observed": lab/gpu_model/observed.py's table."""
    from lab.gpu_model.observed import observed_table

    return observed_table()


TABLES = {
    "speculators": speculators,
    "speculator_history": speculator_history,
    "eras": eras,
    "consumers": consumers,
    "observed": observed,
}


def render(text: str) -> str:
    """``text`` with every generated block rewritten from the tables (an unknown name is an error)."""

    def fill(m: re.Match) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise ValueError(f"unknown generated table {name!r}: one of {', '.join(TABLES)}")
        return m.group(1) + TABLES[name]() + m.group(4)

    return BLOCK.sub(fill, text)


def pages() -> list[pathlib.Path]:
    return sorted(p for p in DOCS.glob("*.md") if BLOCK.search(p.read_text()))


def main() -> int:
    for page in pages():
        text = page.read_text()
        new = render(text)
        if new != text:
            page.write_text(new)
            print(f"rewrote {page.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
