"""The lab's colours, one home (issue 49: one era had five colours across the views, ux review 5 minor 16).

One colour per era of vLLM's max_seq_len history, the same in every view, legend, headline badge and the
cheat sheet: before #40654 red, after #40654 orange, after #43991 blue. A mode of a trace is an era
(lab.history.MODE_ERA: baseline is before #40654, fixed after #43991), so a mode takes its era's colour.

The block-table classes take colours no era has, so an era's line or bar is never lost among the cells it
is drawn over (a walk line in the live cells' red was, issue "the workshop path"): a live block (another
request's KV) is magenta, a freed one a pale magenta, a padded row khaki.
"""

from __future__ import annotations

from lab.history import ERAS, MODE_ERA

# Era -> colour, oldest first (lab.history.ERAS).
ERA_COLOR = {ERAS[0]: "#d62728", ERAS[1]: "#ff7f0e", ERAS[2]: "#1f77b4"}
# A darker shade of each era's colour: its draft passes' line beside its target line.
ERA_DARK = {ERAS[0]: "#7f0000", ERAS[1]: "#a63603", ERAS[2]: "#08306b"}
# A mode is an era: its colour is the era's.
MODE_COLOR = {m: ERA_COLOR[e] for m, e in MODE_ERA.items()}

CLASS_COLOR = {
    "valid": "#2ca02c",
    # null (the commonest stale class) is a mid grey, not the palest colour: it is what a long walk reads most.
    "null": "#9e9e9e",
    "live": "#c51b7d",
    "free": "#f1b6da",
    "padded": "#c2a878",
    "unwalked": "#ffffff",
    "nulled": "#17becf",  # R11: a sliding-window group's entry nulled below the window
}
# The draft slack (+K) in the hero drawing: hatched in the after-#43991 era's colour.
SLACK_PATTERN = {"shape": "/", "fgcolor": ERA_COLOR[ERAS[2]], "bgcolor": "#ffffff", "solidity": 0.45}
GRAPH_COLOR = {"FULL": "#fdd0a2", "PIECEWISE": "#c6dbef", "NONE": "#d9d9d9"}


def era_color(era: str) -> str:
    """The colour of an era by its name ("after #40654")."""
    return ERA_COLOR[era]


def era_css() -> str:
    """CSS giving each era's colour to the headline's badges and era headers (``pr-badge pr40654``,
    ``era-0``…): the HTML pages read the same palette as the figures."""
    rules = []
    for k, era in enumerate(ERAS):
        c = ERA_COLOR[era]
        # !important: the headline's table rule (border: none) is more specific than a class.
        rules.append(f".era-{k} {{border-top: 3px solid {c} !important; color: {c} !important}}")
        rules.append(f".era-dot-{k} {{color: {c} !important}}")
        pr = era.split("#", 1)[1] if "#" in era else None
        if pr:
            rules.append(f".pr-badge.pr{pr} {{background: {c}}}")
    return "\n".join(rules) + "\n"
