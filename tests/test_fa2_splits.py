"""FA2's split-KV count (lab/gpu_model/fa2_splits.py), with worked values from flash_api.cpp's arithmetic: only a
pure decode launch of a grouped-query model splits, from max_seqlen_k's 128-token blocks (head 128) against the A100's
108 SMs doubled; the matrix version equals the plain loop."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lab.gpu_model import observed
from lab.gpu_model.fa2_splits import (
    Fa2Launch,
    fa2_num_splits,
    fa2_split_inputs,
    fa2_splits_on,
    num_splits_heuristic,
    num_splits_heuristic_many,
)

A100_SMS = 108


def _decode(batch: int, max_seqlen_k: int, **kw) -> Fa2Launch:
    """A Qwen3-8B decode launch on an A100 (32 query heads, 8 KV heads, head 128)."""
    return Fa2Launch(**{"max_seqlen_q": 1, "max_seqlen_k": max_seqlen_k, "num_heads": 32, "num_kv_heads": 8,
                        "head_dim": 128, "num_sms": A100_SMS, "batch": batch, **kw})  # fmt: skip


def test_worked_values():
    """4 rows: 4 x 8 KV heads x 1 m-block = 32 blocks against 216; 17 n-blocks (2,049 tokens / 128): efficiencies
    32s/216 for s = 1..6 (0.15 .. 0.89), s = 7 and 8 not eligible (3 blocks a split either way), so 6 (0.89 is the
    best, 0.74 at s = 5 is under 85 % of it); 256 n-blocks (32,768 tokens) give 6 too. 1 row: 8 blocks; 16
    n-blocks (2,048) -> 16 (only 1-4, 6, 8, 16 eligible; 0.59 at 16 is the best), 256 n-blocks -> 24 (27 would
    fill a wave; 23 changes no block count, 24 reaches 0.89 >= 0.85)."""
    assert fa2_split_inputs(_decode(4, 2049)) == {
        "block_n": 128, "num_n_blocks": 17, "batch_nheads_mblocks": 32, "num_sms": 216}  # fmt: skip
    assert fa2_num_splits(_decode(4, 2049)) == fa2_num_splits(_decode(4, 32768)) == 6
    assert fa2_num_splits(_decode(1, 2048)) == 16 and fa2_num_splits(_decode(1, 32768)) == 24
    assert fa2_num_splits(_decode(16, 4096)) == 3
    assert fa2_num_splits(_decode(27, 32768)) == 1  # 216 blocks: at least 80 % of 216 -> 1 split
    # 173 blocks reach 80 % of 216 (172.8): 1. 172 do not: 172s / 216 keeps 0.80 of a wave busy for s = 1..4 and
    # 0.995 at s = 5 (4.98 waves), so 5 is the first count within 85 % of the best.
    assert num_splits_heuristic(173, 216, 256, 128) == 1 and num_splits_heuristic(172, 216, 256, 128) == 5
    assert fa2_split_inputs(_decode(1, 300, head_dim=64))["block_n"] == 256
    assert fa2_split_inputs(_decode(1, 300, head_dim=256))["block_n"] == 64


@pytest.mark.parametrize(
    "change",
    [
        {"max_seqlen_q": 2},  # a prefill or mixed launch
        {"num_kv_heads": 32},  # no grouped query heads
        {"window_left": 4095},  # a sliding layer: no split, even with the window longer than the keys
        {"window_left": 1 << 20},
        {"head_dim": 100},
        {"alibi": True},
    ],
)
def test_only_a_pure_decode_grouped_launch_splits(change):
    x = _decode(1, 32768, **change)
    assert not fa2_splits_on(x) and fa2_num_splits(x) == 1
    assert fa2_splits_on(_decode(1, 32768)) and fa2_num_splits(_decode(1, 32768)) > 1
    assert fa2_num_splits(_decode(1, 32768), num_splits=1) == 1  # a count vLLM passes is kept


def test_the_matrix_version_equals_the_plain_loop():
    rng = np.random.default_rng(7)
    bnm, nb = rng.integers(1, 500, 4000), rng.integers(1, 700, 4000)
    for sms in (2 * 108, 2 * 132, 2 * 58, 2 * 7):
        many = num_splits_heuristic_many(bnm, sms, nb)
        assert many.tolist() == [num_splits_heuristic(int(a), sms, int(c), 128) for a, c in zip(bnm, nb, strict=True)]


def test_vllm_hands_fa2_no_split_count_observed():
    """vLLM's FA2 launch receives num_splits 0 on every observed step kind (the builder pins only with AOT
    scheduling, FA3's), so FA2's own heuristic decides (lab/gpu_model/observed.json, vLLM 0.33.0's own forward)."""
    rows = [r for r in observed.load()["rows"] if r["backend"] == "FLASH_ATTN" and r["fa_version"] == 2]
    assert rows and {r["launch"].get("num_splits") for r in rows} == {0}


def _answer(line: str):
    from lab.deployment import answer, resolve

    return answer(resolve(line, "A100-80GB"))


def test_the_fa2_answer_says_its_split_count():
    """A100 (FA2): the deployment answer says what FA2 does with max_seqlen_k, its split-KV count, instead of "not
    modelled": under FULL graphs every pure decode replays capture's count; eagerly the count follows each era's
    value on some launches (FA2's heuristic on the step's rows), and the answer names how many."""
    full = _answer("vllm serve Qwen/Qwen3-8B").headline
    assert "FA2's split-KV count" in full and "replays a FULL graph" in full and "not modelled" not in full
    eager = _answer("vllm serve Qwen/Qwen3-8B --enforce-eager").headline
    m = re.search(r"differs on (\d+) of its (\d+) eager pure-decode launches", eager)
    assert m and 0 < int(m.group(1)) < int(m.group(2)), eager


def test_the_fa2_answer_follows_the_heuristic(monkeypatch):
    """A split count that ignores max_seqlen_k gives "the same with either value": the answer reads the model."""
    from lab.deployment import kernel_reads

    monkeypatch.setattr(kernel_reads, "fa2_num_splits", lambda x: 4)
    eager = _answer("vllm serve Qwen/Qwen3-8B --enforce-eager").headline
    assert re.search(r"is the same with either value on its \d+ eager pure-decode launches", eager), eager
