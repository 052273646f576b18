"""The conformance suite's inputs that used to be the lab's own and now are vLLM's: for each, an injected
engine bug that the suite catches because that input comes from vLLM (docs/fidelity.md, "What the suite
takes from the lab"). Runs in ``.venv-vllm``."""

from __future__ import annotations

import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab import Scenario  # noqa: E402
from lab import conform as C  # noqa: E402
from lab.engine import cudagraph  # noqa: E402
from lab.engine.model_runner import ModelRunner  # noqa: E402


def test_the_old_rounding_is_caught(monkeypatch):
    """Injected engine bug: the MRV1 rounding (adjust_cudagraph_sizes_for_spec_decode) the lab used to
    apply. The suite takes its sizes from vLLM, so it now disagrees, on the sizes and on the padding."""
    orig = cudagraph.default_capture_sizes

    def rounded(max_num_seqs, max_num_batched_tokens, k, device_capability=90):
        sizes = orig(max_num_seqs, max_num_batched_tokens, k, device_capability)
        q = 1 + k
        return sorted({-(-x // q) * q for x in sizes if -(-x // q) * q <= max(sizes)})

    monkeypatch.setattr(cudagraph, "default_capture_sizes", rounded)
    cmp = C.conform(Scenario.from_spec("4p40o12_k=2_accept=1"), kernels=False)
    fields = {d.field for d in cmp.disagreements}
    assert "cudagraph_capture_sizes (_set_cudagraph_sizes)" in fields, cmp.table()
    assert any("num_tokens_after_padding" in f or "num_reqs_padded" in f for f in fields), fields


def test_fifo_request_slots_are_caught(monkeypatch):
    """Injected engine bug: request slots reused first-in first-out. The suite replays each step's
    removals and additions through vLLM's own finish_requests and RequestState (free_indices.pop()),
    so the slots, and the gathered table built from them, disagree."""
    orig = ModelRunner._add

    def fifo(self, inst, req_num):
        self._free_req_indices.append(self._free_req_indices.pop(0))  # pop() now takes the oldest slot
        return orig(self, inst, req_num)

    monkeypatch.setattr(ModelRunner, "_add", fifo)
    cmp = C.conform(Scenario.from_spec("6p20o8a0+2_seqs=3_mml=1k"))
    fields = {d.field for d in cmp.disagreements}
    assert "request slot (RequestState.add_request)" in fields, cmp.table()
