"""The speculator table (lab/speculators.py) against vLLM 0.33.0's own code: each record's class exists where
it says, its method is one vLLM takes, every method vLLM takes is a record, an alias or a refusal, and
the rules a record states (lookahead, prefill lookahead, new drafting slots, which "mtp" path a draft runs,
what a draft's name implies) are what vLLM's own ``SpeculativeConfig`` and ``VllmConfig`` compute on the
same settings. Runs in .venv-vllm (skipped elsewhere, required under ``make test``)."""

from __future__ import annotations

import importlib
import inspect
import os
import re
from types import SimpleNamespace
from typing import get_args

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab import speculators as S  # noqa: E402


def _flat(literal) -> set[str]:
    out = set()
    for a in get_args(literal):
        out |= _flat(a) if get_args(a) else {a}
    return out


def _spec_config(record: S.Speculator, k: int, layers: int = 1, model_type: str = "llama"):
    """vLLM's SpeculativeConfig methods, run on the settings a record names (not constructed: that needs
    the models)."""
    from vllm.config.speculative import SpeculativeConfig

    ns = SimpleNamespace(
        method=record.vllm_method,
        num_speculative_tokens=k,
        parallel_drafting=False,
        draft_model_config=SimpleNamespace(
            hf_config=SimpleNamespace(num_nextn_predict_layers=layers, model_type=model_type, sample_from_anchor=True)
        ),
    )
    for name in ("use_eagle", "use_dflash", "use_dspark", "uses_draft_model", "use_multi_module_mtp", "use_gemma4_mtp"):
        setattr(ns, name, getattr(SpeculativeConfig, name).__get__(ns))
    return ns


@pytest.mark.parametrize("record", S.SPECULATOR_LIST, ids=lambda r: r.method)
def test_each_record_names_vllms_class_and_method(record):
    from vllm.config.speculative import SpeculativeMethod

    module = importlib.import_module("vllm.v1.worker.gpu.spec_decode." + record.vllm_module)
    assert inspect.isclass(getattr(module, record.vllm_class))
    assert record.vllm_method in _flat(SpeculativeMethod)


def test_every_method_vllm_takes_is_in_the_table():
    """A record, an alias of one, a method MRV2 refuses, or an MTP model-type name ("is deprecated and
    replaced with mtp")."""
    from vllm.config.speculative import MTPModelTypes, SpeculativeMethod

    known = set(S.SPECULATORS) | set(S.METHOD_ALIASES) | set(S.UNMODELLED_METHODS)
    for name in _flat(SpeculativeMethod):
        assert name in known or (name in _flat(MTPModelTypes) and S.canonical_method(name) == "mtp"), name


@pytest.mark.parametrize("record", S.SPECULATOR_LIST, ids=lambda r: r.method)
@pytest.mark.parametrize("k", [1, 3])
def test_the_records_rules_are_vllms(record, k):
    from vllm.config.speculative import SpeculativeConfig
    from vllm.config.vllm import VllmConfig

    layers = record.num_mtp_layers(k)
    spec = _spec_config(record, k, layers, "gemma4_mtp" if record.method == "gemma4_mtp" else "llama")
    config = SimpleNamespace(speculative_config=spec, num_speculative_tokens=k)
    assert record.num_lookahead_tokens(k) == VllmConfig.num_lookahead_tokens.fget(config)
    assert record.num_prefill_lookahead_tokens(k) == VllmConfig.num_prefill_lookahead_tokens.fget(config)
    # 0.33.0 keeps no parallel drafting slots (Release.parallel_drafting_slots is 0.32's)
    assert record.max_num_new_slots_for_drafting(k, False) == SpeculativeConfig.max_num_new_slots_for_drafting.fget(
        spec
    )
    if record.vllm_method == "mtp":  # the "mtp" path init_speculator picks for this draft
        vllm_path = (
            "gemma4_mtp" if spec.use_gemma4_mtp() else "mtp_multi_module" if spec.use_multi_module_mtp() else "mtp"
        )
        assert S.mtp_variant(layers, k, spec.draft_model_config.hf_config.model_type) == vllm_path
        assert vllm_path == record.method or k == 1  # one module and K = 1: vLLM runs plain MTP


def test_a_drafts_name_implies_the_method_vllm_infers():
    """SpeculativeConfig.__post_init__ detects the method from the draft's name in this order; the lab's
    ``method_from_draft_name`` checks the same words in the same order."""
    from vllm.config.speculative import SpeculativeConfig

    source = inspect.getsource(SpeculativeConfig.__post_init__)
    vllm_order = re.findall(r'"([a-z0-9-]+)" in self\.draft_model_config\.model\.lower\(\)', source)
    assert vllm_order == [part for part, _ in S.DRAFT_NAME_WORDS]
    assert re.search(r'if self\.model in \("ngram", "\[ngram\]"\):\s+self\.method = "ngram"', source)
    assert S.method_from_draft_name("yuhuili/EAGLE-LLaMA3-Instruct-8B") == "eagle"
    assert S.method_from_draft_name("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B") == "eagle3"
    assert S.method_from_draft_name("deepseek-ai/dspark_qwen3_8b_block7") == "dspark"
    assert S.method_from_draft_name("[ngram]") == "ngram"
    assert S.method_from_draft_name("meta-llama/Llama-3.2-1B-Instruct") == "draft_model"
