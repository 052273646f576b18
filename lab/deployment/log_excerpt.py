"""A start-up log excerpt read beside the serve line it ran: ``python -m lab deployment --log EXCERPT -- LINE`` and
the app's Deployment tab (a typed line with an excerpt pasted beside it). An excerpt is a log without the lines that
name what was run (vLLM's engine line and its "non-default args"): the line comes from the user, the excerpt's
later lines (attention backend, graph mode, capture sizes, block size, …) are compared with its resolution field by
field (startup_log.py ``compared_with_the_log``). One rule for both: an excerpt that contradicts the line (another
model or another release than the one asked) or that states nothing the lab compares is refused with what it says.
"""

from __future__ import annotations

from lab.deployment.answer_types import FromLog
from lab.deployment.resolve import Deployment
from lab.deployment.startup_log import StartupLog, StartupLogError, compared_with_the_log, read_startup_log
from lab.history import REFERENCE_RELEASE

# FromLog's fields that hold a compared value (each LoggedText / LoggedSizes: ``log`` None where the excerpt is silent)
COMPARED = (
    "attention_backend",
    "cudagraph_mode",
    "cudagraph_capture_sizes",
    "model_runner",
    "block_size",
    "max_model_len",
    "enable_chunked_prefill",
    "cudagraph_profile",
    "async_scheduling",
    "max_num_batched_tokens",
)


def names_its_line(log: StartupLog) -> bool:
    """Does the log hold the line it ran (the engine line or the non-default args), so that it answers on its own?"""
    return bool(log.engine or log.args)


def read_excerpt(text: str) -> StartupLog:
    """An excerpt's facts (read_startup_log without the start-up line it lacks)."""
    return read_startup_log(text, need_line=False)


def excerpt_release(log: StartupLog, asked: str | None) -> str:
    """The release to answer an excerpt for: the one ``asked`` (--vllm, the app's release box), else the one the
    excerpt names, else vLLM 0.33.0. An excerpt that names another release than the one asked is refused: its
    values would be compared with the rules of a release that did not print them."""
    if asked and log.release and log.release != asked:
        raise StartupLogError(
            f"the log excerpt names vLLM {log.version}, but the release asked is {asked}: "
            f"ask for vLLM {log.release} to compare it, or paste an excerpt of {asked}'s log"
        )
    return asked or log.release or REFERENCE_RELEASE


def compared_excerpt(log: StartupLog, line: str, dep: Deployment) -> FromLog:
    """``compared_with_the_log`` for an excerpt beside ``line`` (resolved as ``dep``): refused where the excerpt
    names another model than the line serves, or states none of the values the lab compares."""
    logged, served = (log.model or "").rstrip("/"), (dep.line.model or "").rstrip("/")
    if logged and logged != served:
        raise StartupLogError(
            f"the log excerpt names model {log.model} (its start-up banner), but the line serves {dep.line.model}: "
            "paste the excerpt of this line's own log, or the line it ran"
        )
    c = compared_with_the_log(log, line, dep)
    if all(getattr(c, key) is None or getattr(c, key).log is None for key in COMPARED):
        raise StartupLogError(
            "the log excerpt states none of the values the lab compares (vLLM's lines naming the attention backend, "
            "the CUDA-graph mode and sizes, the block size, max_model_len, chunked prefill, async scheduling or the "
            "model runner): paste the lines vLLM printed while it started"
        )
    return c
