"""Review 5's minors (../shared/reviews/ux_review_5.md), helper s3a's part: each test fails on the code before it."""

from __future__ import annotations

import dataclasses

from lab.deployment import answer, resolve
from lab.deployment.answer import extra_words
from lab.history import ERAS

PIECEWISE_B200 = (
    "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4 --speculative-config "
    '\'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "num_speculative_tokens": 3}\' '
    "-cc '{\"cudagraph_mode\": \"PIECEWISE\"}'"
)
QWEN3_NEXT_MTP = (
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
    '\'{"method": "qwen3_next_mtp", "num_speculative_tokens": 2}\''
)


def test_a_slight_verdict_is_not_followed_by_a_large_share():
    """Minor 5: "Slightly, on 4 of 260 steps" was followed by "957 more fa3_n_blocks (+1428%)". Under a slight
    verdict the line names the steps it changes and gives no share of the workload."""
    a = answer(resolve(PIECEWISE_B200, "B200"))
    assert a.headline.startswith("slightly, on 4 of 110 steps (no extra bytes read)")
    assert "64 more ctas_launched on the 4 steps it changes in the target passes" in a.headline
    assert "%)" not in a.headline
    # the review's numbers: a split-bound verdict with a share of 14x still gives no share
    big = dataclasses.replace(a.work, extra=957, extra_share=14.28, verdict="slightly: split bound")
    assert extra_words(big) == "957 more ctas_launched on the 4 steps it changes"
    # a verdict that reads more bytes keeps its share
    costly = dataclasses.replace(big, verdict="yes: grid and split", extra_bytes=2**30)
    assert extra_words(costly) == "957 more ctas_launched (+1428%)"


def test_the_kernel_column_splits_full_steps_from_the_batch_max():
    """Minor 5: Qwen3-Next with MTP on B200 read "batch max 2,048-131,072 (median 131,072); 124 of 127 steps see
    max_model_len under FULL graphs": a median at max_model_len called a batch max. Now the FULL steps and the
    others are said apart."""
    a = answer(resolve(QWEN3_NEXT_MTP, "B200"))
    rows = {r.path: r for r in a.paths if r.era == ERAS[-1]}
    assert rows["target"].kernel_text == (
        "max_model_len (262,144) on 124 FULL steps; batch max 2,048-2,054 (median 2,051) on 3"
    )
    assert rows["draft pass 1"].kernel_text == "max_model_len (262,144) on all 127 FULL steps"
