"""The scenario panel: the scenario text and the numeric controls reconciled into one Scenario, and
the inline message that bad input from the page gets where it was typed (never a Gradio error).

No grammar here: the text is parsed by lab.scenario, and the grammar key of a control's field is
read from its ``SPEC_SETTINGS``.
"""

from __future__ import annotations

import html

import gradio as gr

from lab import Scenario
from lab.app.room.budget import check_spec_text
from lab.presets import PRESETS
from lab.scenario import format_spec, get_preset, parse_spec
from lab.spec_grammar import SPEC_SETTINGS

# The numeric controls and the Scenario fields they set.
CONTROL_FIELDS = (
    "max_model_len",
    "block_size",
    "num_speculative_tokens",
    "model_state",
    "cudagraph_mode",
    "acceptance_rate",
    "seed",
)
# Scenario field -> grammar key (lab.scenario.SPEC_SETTINGS is grammar key -> field).
_SPEC_KEY = {field: key for key, field in SPEC_SETTINGS.items()}
_INT_FIELDS = ("max_model_len", "block_size", "num_speculative_tokens", "seed")
EXAMPLE_SPEC = "16p1ko128_k=3_mml=32k_cg=piecewise"


class InputError(ValueError):
    """Bad input from the page: shown where the input is, never raised to Gradio."""


def inline_error(text: str) -> str:
    """The red message under an input (the scenario text, the upload); ``text`` is HTML."""
    return f"<div class='inline-error' role='alert'>⚠ {text}</div>"


def spec_error(e: Exception) -> str:
    """The message under the scenario text for a scenario that does not parse or run."""
    return inline_error(
        f"{html.escape(str(e), quote=False)}<br>A valid scenario, for example: <code>{EXAMPLE_SPEC}</code> "
        "(grammar: docs/scenarios.md). The views still show the last run."
    )


def controls_of(s: Scenario) -> dict:
    """Each control's value for a scenario, by its field name."""
    return {f: getattr(s, f) for f in CONTROL_FIELDS}


def _control_value(field: str, v):
    if v is None or v == "":
        raise InputError(f"{field}: no value given")
    if field in _INT_FIELDS:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
            raise InputError(f"{field}: must be an integer, got {v!r}")
        return int(v)
    if field == "acceptance_rate":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"{field}: must be a number in [0, 1], got {v!r}")
        return float(v)
    return v


def parse_app_spec(spec: str, **overrides):
    """``parse_spec`` on this server: the text's request groups within the app's budget first
    (lab.app.room.budget.check_spec_text, ``OverBudget``), before a single request is made."""
    check_spec_text(spec)
    return parse_spec(spec, **overrides)


def scenario_from_inputs(preset: str | None, spec: str, controls: dict, base: str | None = None) -> Scenario:
    """The scenario the page asks for, without overriding anything the user typed.

    ``base`` is the text the controls were last filled from (a run, a preset, Enter in the text).
    A control the user changed since then overrides the text; a setting the user typed into the
    text (and did not also change in the controls) is kept. Both changed to different values: an
    error naming both, nothing silently dropped."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("the scenario text is empty: pick a preset or write one")
    if set(controls) != set(CONTROL_FIELDS):
        raise TypeError(f"controls by name: {sorted(CONTROL_FIELDS)}, got {sorted(controls)}")
    values = [_control_value(f, controls[f]) for f in CONTROL_FIELDS]
    text = parse_app_spec(spec)
    ref = text
    if isinstance(base, str) and base.strip():
        try:
            ref = parse_app_spec(base)
        except ValueError:
            ref = text
    overrides = {}
    for field, v in zip(CONTROL_FIELDS, values):
        r, t = getattr(ref, field), getattr(text, field)
        if v == r:
            continue  # the control was not touched: the text decides
        if t != r and t != v:
            raise InputError(
                f"the text says {_SPEC_KEY[field]}={t} but the control {field} says {v}: "
                f"change one of them (Enter in the text fills the controls from it)"
            )
        overrides[field] = v
    scenario = parse_spec(spec, **overrides) if overrides else text
    if preset in PRESETS:
        p = get_preset(preset)
        if p == scenario:  # dataclass equality ignores name and description
            scenario = p
    return scenario


def parse_spec_text(spec: str):
    """Enter in the scenario text: the controls it implies, and the text becomes the controls' base."""
    try:
        s = parse_app_spec(spec if isinstance(spec, str) else "")
    except ValueError as e:
        return [gr.skip()] * len(CONTROL_FIELDS) + [gr.skip(), spec_error(e)]
    return [*controls_of(s).values(), spec, f"Parsed: {len(s.requests)} requests, `{format_spec(s)}`. Run to see it."]
