"""Issue 47 item 3: the known-model table holds published config.json files; a row with no published copy found
(Llama-3.3-70B-Instruct, Kimi-K2-Instruct, Qwen3-Next-80B-A3B-Instruct) is a Hub-card subset and never poses as the
file. Its answer names the keys it holds and asks for the model's config.json; a config.json given with --config, or
found in the local Hugging Face cache, is read whole instead."""

from __future__ import annotations

import json

import pytest

from lab.deployment import Workload, answer, resolve
from lab.deployment.answer_json import answer_json
from lab.deployment.known_configs import KNOWN_CONFIGS, PUBLISHED
from lab.deployment.models import KNOWN_MODELS

HUB_CARD_ROWS = {"meta-llama/Llama-3.3-70B-Instruct", "moonshotai/Kimi-K2-Instruct", "Qwen/Qwen3-Next-80B-A3B-Instruct"}
KIMI = "moonshotai/Kimi-K2-Instruct"
ONE = Workload(spec="p1000o8")


def test_only_the_rows_without_a_published_copy_are_hub_card_subsets():
    assert {name for name, m in KNOWN_MODELS.items() if m.hub_card_keys} == HUB_CARD_ROWS
    published = {p.name for p in PUBLISHED.glob("*.json")}
    for name, source, config, _notes, _extra in KNOWN_CONFIGS:
        m = KNOWN_MODELS[name]
        if name in HUB_CARD_ROWS:
            assert m.hub_card_keys == tuple(config) and source.startswith("huggingface.co/"), name
            assert m.notes[0].startswith(f"model facts from a Hub-card subset of {len(config)} keys"), name
        else:  # a whole file, copied from the cited repository, in known_configs/
            assert source.startswith("github.com/") and name.replace("/", "__") + ".json" in published, name
            assert config == json.loads((PUBLISHED / (name.replace("/", "__") + ".json")).read_text()), name


@pytest.fixture(scope="module")
def kimi_answer():
    return answer(resolve(f"vllm serve {KIMI} -tp 8", "H200"), ONE)


def test_a_hub_card_row_says_so_and_asks_for_the_config(kimi_answer):
    said = kimi_answer.resolved_text["model"]
    assert "a Hub-card subset of 13 keys, not its config.json" in said and "--config PATH" in said
    assert "kv_lora_rank" in kimi_answer.notes[0] and "paste or upload" in kimi_answer.notes[0]
    doc = answer_json(kimi_answer)["resolved"]
    assert doc["config_hub_card_keys"][:2] == ["architectures", "model_type"] and len(doc["config_hub_card_keys"]) == 13


def _whole_kimi_config() -> dict:
    """The row's keys plus ones only the whole file has (a different layer count shows which was read)."""
    row = next(c for name, _, c, _, _ in KNOWN_CONFIGS if name == KIMI)
    return {**row, "num_hidden_layers": 61, "q_lora_rank": 1536, "v_head_dim": 128, "qk_nope_head_dim": 128}


def test_a_given_config_replaces_the_hub_card_row(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_whole_kimi_config()))
    a = answer(resolve(f"vllm serve {KIMI} -tp 8", "H200", config_path=str(path)), ONE)
    assert "Hub-card" not in a.resolved_text["model"] and not any("Hub-card" in n for n in a.notes)
    assert answer_json(a)["resolved"]["config_hub_card_keys"] == []


def test_the_cached_config_json_wins_over_a_hub_card_row_but_not_over_a_published_one(tmp_path, monkeypatch):
    commit = "a" * 40
    for model in (KIMI, "meta-llama/Llama-3.1-8B-Instruct"):
        repo = tmp_path / ("models--" + model.replace("/", "--"))
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text(commit)
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "snapshots" / commit / "config.json").write_text(json.dumps(_whole_kimi_config()))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    kimi = resolve(f"vllm serve {KIMI} -tp 8", "H200").model
    assert not kimi.hub_card_keys and kimi.source.endswith("config.json")
    llama = resolve("vllm serve meta-llama/Llama-3.1-8B-Instruct", "H200").model
    assert llama.source.startswith("github.com/")  # the table's published file is the model's own


def test_check_with_vllm_says_both_sides_read_the_hub_card_subset(monkeypatch, capsys):
    """--check-with-vllm hands vLLM the same config the answer read; for a Hub-card row it says what that check is
    worth (the JSON as .venv-vllm's side returns it, stubbed: tests/test_deployment_check_with_vllm.py runs it)."""
    from lab.commands import deployment as deployment_cli
    from lab.commands.main import main

    agreed = {"resolution": {"fields": {"max_num_seqs": [1024, 1024]}, "disagreements": []}}
    monkeypatch.setattr(deployment_cli, "check_with_vllm", lambda line, gpu, config=None: agreed)
    assert main(["deployment", "--check-with-vllm", "--line", f"vllm serve {KIMI} -tp 8"]) == 0
    assert "both read the lab's Hub-card subset" in capsys.readouterr().out
    assert main(["deployment", "--check-with-vllm", "--line", "vllm serve Qwen/Qwen3-8B"]) == 0
    assert "Hub-card" not in capsys.readouterr().out
