"""The replay of a deployment in the lab: the CLI command and the app's link (``replay``), the link naming the
deployment it replays (``replay_name``: the app titles the replay with it, not "custom scenario")."""

from __future__ import annotations

import re
import urllib.parse

from lab.deployment.answer_types import Replay
from lab.scenario import Scenario

REPLAY_VIEW = "lengths"  # the replay opens on the per-request lengths: the told max_seq_len against the batch's
# The link's ?deployment= words: a model id, a GPU, a release. Plain characters only, none Markdown or HTML reads
# (the name is drawn in the status, the headline and the summary); a link is data.
_WORDS = re.compile(r"[A-Za-z0-9 ._/+,:()=-]{1,160}")
NAME_PREFIX = "deployment: "


def deployment_words(dep) -> str:
    """The deployment a replay stands for, in a few words: "meta-llama/Llama-3.1-8B-Instruct on H200, vLLM 0.33.0"."""
    model = dep.line.model or ""
    # a model named by a folder (a log's, or the server's temporary copy of a pasted config.json) is no one's name
    model = model if re.fullmatch(r"[\w.-]+(/[\w.-]+)?", model) and not model.startswith(".") else "a local model"
    return f"{model} on {dep.gpu}, vLLM {dep.vllm}"


def replay(scenario: Scenario, words: str = "") -> Replay:
    """The commands that replay the deployment in the lab: the CLI and the app's URL (naming the deployment)."""
    spec = scenario.to_spec()
    query = {"spec": spec, "tab": REPLAY_VIEW}  # tab= takes a view's name (lab/views ALL_VIEWS), not its label
    if words and _WORDS.fullmatch(words):
        query["deployment"] = words
    return Replay(spec=spec, cli=f'python -m lab simulate --spec "{spec}"', app="/?" + urllib.parse.urlencode(query))


def replay_name(words: str) -> str:
    """The scenario's name for a link's ?deployment= words ("deployment: …"); ValueError for text that is not
    plain words (it is shown on the page)."""
    if not _WORDS.fullmatch(words):
        raise ValueError(
            "deployment in the address: at most 160 letters, digits, spaces and . _ / + , : ( ) = - characters"
        )
    return NAME_PREFIX + words
