"""A model outside the lab's table, served from the local Hugging Face cache: its config.json is found there
as huggingface_hub finds it offline (proven equal to try_to_load_from_cache), and the answer names the model
as the line names it. Hostile ids and refs never become paths."""

from __future__ import annotations

import json

import pytest

from lab.deployment.hf_cache import cached_config, hub_cache_dir, is_repo_id
from lab.deployment.known_configs import KNOWN_CONFIGS
from lab.deployment.resolve import resolve
from lab.deployment.serve_line import ServeLineError

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
CONFIG = next(config for name, _, config, _, _ in KNOWN_CONFIGS if name.startswith("meta-llama/"))


def _cache(root, repo="acme/tiny-llama", config=CONFIG, refs=None):
    folder = root / ("models--" + repo.replace("/", "--"))
    for name, commit in (refs or {"main": COMMIT}).items():
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / name).write_text(commit)
        snap = folder / "snapshots" / commit
        snap.mkdir(parents=True, exist_ok=True)
        (snap / "config.json").write_text(json.dumps(config))
    return folder


def test_hub_cache_dir_follows_huggingface_hub_order(tmp_path):
    assert hub_cache_dir({"HF_HUB_CACHE": str(tmp_path / "a"), "HF_HOME": "/x"}) == tmp_path / "a"
    assert hub_cache_dir({"HF_HOME": str(tmp_path)}) == tmp_path / "hub"
    assert hub_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "huggingface" / "hub"


@pytest.mark.parametrize(
    "repo,revision",
    [("acme/tiny-llama", None), ("acme/tiny-llama", "v1"), ("acme/tiny-llama", OTHER), ("acme/missing", None)],
)
def test_lookup_equals_huggingface_hubs_own(tmp_path, repo, revision):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    _cache(tmp_path, refs={"main": COMMIT, "v1": OTHER})
    theirs = huggingface_hub.try_to_load_from_cache(repo, "config.json", cache_dir=tmp_path, revision=revision)
    ours = cached_config(repo, revision, {"HF_HUB_CACHE": str(tmp_path)})
    assert (str(ours) if ours else None) == (theirs if isinstance(theirs, str) else None)


def test_resolve_reads_the_cached_config_and_names_the_model(tmp_path, monkeypatch):
    _cache(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    dep = resolve("vllm serve acme/tiny-llama --max-model-len 4096", "H200", "0.33.0")
    assert dep.model.name == "acme/tiny-llama"
    assert dep.model.architecture == CONFIG["architectures"][0]
    assert str(tmp_path) in dep.model.source  # the answer says which file it read


def test_revision_flag_picks_the_snapshot(tmp_path, monkeypatch):
    _cache(tmp_path, refs={"main": COMMIT, "v1": OTHER})
    other = dict(CONFIG, max_position_embeddings=2048)
    (tmp_path / "models--acme--tiny-llama" / "snapshots" / OTHER / "config.json").write_text(json.dumps(other))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert resolve("vllm serve acme/tiny-llama --revision v1", "H200", "0.33.0").model.max_model_len == 2048
    assert resolve("vllm serve acme/tiny-llama", "H200", "0.33.0").model.max_model_len != 2048


def test_config_flag_names_the_model_from_the_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    assert resolve("vllm serve acme/tiny-llama", "H200", "0.33.0", str(path)).model.name == "acme/tiny-llama"


def test_unknown_model_says_how_to_give_one(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ServeLineError) as err:
        resolve("vllm serve acme/nowhere", "H200", "0.33.0")
    text = str(err.value)
    assert str(tmp_path) in text and "--config" in text and "huggingface-cli download acme/nowhere" in text


@pytest.mark.parametrize("repo", ["../../etc", "a/b/c", "--x", "a/..", "/abs/path", "a\\b", "x" * 200, "a/b\n"])
def test_hostile_ids_are_not_paths(tmp_path, repo):
    assert not is_repo_id(repo)
    assert cached_config(repo, None, {"HF_HUB_CACHE": str(tmp_path)}) is None


def test_a_ref_that_is_not_a_commit_is_not_followed(tmp_path):
    _cache(tmp_path)
    (tmp_path / "models--acme--tiny-llama" / "refs" / "main").write_text("../../../../etc")
    assert cached_config("acme/tiny-llama", None, {"HF_HUB_CACHE": str(tmp_path)}) is None
    assert cached_config("acme/tiny-llama", "../main", {"HF_HUB_CACHE": str(tmp_path)}) is None
