"""A model's ``config.json`` from the local Hugging Face cache, found the way huggingface_hub finds it
offline (``huggingface_hub.try_to_load_from_cache``; vLLM reads a model's config through it), never over
the network.

A user who serves ``org/name`` has ``<cache>/models--org--name/snapshots/<commit>/config.json``, where
``<cache>/models--org--name/refs/<revision>`` holds the commit (``main`` unless ``--revision`` says).
The cache folder is huggingface_hub's ``HF_HUB_CACHE``: that variable, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub`` (huggingface_hub/constants.py).
tests/test_deployment_hf_cache.py proves this lookup equal to huggingface_hub's own.

The model id comes from a pasted line: it is checked to be a repo id before it names a folder, and the
commit read from ``refs/`` to be a commit hash, so nothing from the line or the cache becomes a path of
its choosing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# huggingface_hub/utils/_validators.py REPO_ID_REGEX: "[namespace/]name", letters, digits, "-", "_", "." (no
# "--" or ".." in it, no leading or trailing "-"/"."), at most 96 characters.
_REPO_ID = re.compile(r"(?:[\w\-.]{1,96}/)?[\w\-.]{1,96}", re.ASCII)
_COMMIT = re.compile(r"[0-9a-f]{40}")
_REVISION = re.compile(r"[\w\-.]{1,128}", re.ASCII)  # a branch or tag name read as refs/<revision> (no "/": one file)
MAX_REF_BYTES = 256


def hub_cache_dir(environ: dict[str, str] | None = None) -> Path:
    """huggingface_hub/constants.py HF_HUB_CACHE, from the environment as it reads it at import."""
    env = os.environ if environ is None else environ
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    xdg = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(xdg).expanduser() / "huggingface" / "hub"


def is_repo_id(model: str) -> bool:
    """A Hugging Face repo id ("org/name" or "name"), as huggingface_hub's validate_repo_id accepts it."""
    return (
        bool(_REPO_ID.fullmatch(model))
        and "--" not in model
        and ".." not in model
        and model[:1] not in "-."
        and (model[-1:] not in "-.")
    )


def cached_config(model: str, revision: str | None = None, environ: dict[str, str] | None = None) -> Path | None:
    """The cached ``config.json`` of repo ``model`` at ``revision`` (default ``main``), or None when the
    cache does not hold it (or ``model`` is not a repo id)."""
    if not is_repo_id(model):
        return None
    revision = revision or "main"
    repo = hub_cache_dir(environ) / ("models--" + model.replace("/", "--"))
    if _COMMIT.fullmatch(revision):
        commit = revision
    elif _REVISION.fullmatch(revision):
        ref = repo / "refs" / revision
        try:
            if not ref.is_file() or ref.stat().st_size > MAX_REF_BYTES:
                return None
            commit = ref.read_text("ascii", errors="replace").strip()
        except OSError:
            return None
        if not _COMMIT.fullmatch(commit):
            return None
    else:
        return None
    config = repo / "snapshots" / commit / "config.json"
    return config if config.is_file() else None
