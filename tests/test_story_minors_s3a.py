"""Issue 49, the workshop review's minors (their fixes in docs/app.md): each test fails on the code before it."""

from __future__ import annotations

import dataclasses
import json
import types
import urllib.parse
from pathlib import Path

from lab.deployment import answer, resolve
from lab.deployment.answer import extra_words
from lab.history import ERAS

PIECEWISE_B200 = (
    "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4 --speculative-config "
    '\'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "num_speculative_tokens": 3}\' '
    '-cc \'{"cudagraph_mode": "PIECEWISE"}\''
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


LOGS = Path(__file__).parent / "data" / "startup_logs"
LLAMA_LINE = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32k"


def _llama_config() -> str:
    from lab.deployment.known_configs import KNOWN_CONFIGS

    return json.dumps(next(c for name, _, c, _, _ in KNOWN_CONFIGS if name.startswith("meta-llama/")))


def test_a_pasted_log_shows_its_release_and_what_it_said_beside_the_lab():
    """Minor 6: the release box kept 0.33.0 while the answer said "vllm: 0.22.1", and the tab never showed what
    the log said against what the lab derives (the CLI's --log did)."""
    from lab.app.deployment_tab import deployment_tab

    log = (LOGS / "live_vllm_cpu_0.32_eagle.log").read_text()
    out = deployment_tab("", "H200", "0.33.0", 4, 256, 8, log, _llama_config())
    assert out[0] == ""
    release = out[7]
    assert release.value == "0.32.0" and "0.32.0" in [c[0] for c in release.choices]
    md = out[1]
    assert "**Your log (vLLM 0.32.0) beside what the lab derives from its line**" in md
    assert "| attention_backend | `CPU_ATTN` | `FLASH_ATTN` | **differs** |" in md
    assert "| model_runner | `V2` | `V2` | agrees |" in md
    # no log: the release box is left as the user set it
    line_only = deployment_tab(LLAMA_LINE, "H200", "0.22.1", 4, 256, 8)
    assert line_only[0] == "" and "Your log" not in line_only[1]
    assert isinstance(line_only[7], dict) and line_only[7].get("__type__") == "update" and len(line_only[7]) == 1


def test_the_replay_of_a_deployment_is_named_after_it():
    """Minor 6: the replay opened from an answer was titled "custom scenario"."""
    from lab.app import loading

    a = answer(resolve(LLAMA_LINE, "H200"))
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(a.replay.app).query))
    assert query["deployment"] == "meta-llama/Llama-3.1-8B-Instruct on H200, vLLM 0.33.0"
    request = types.SimpleNamespace(query_params={**query, "spec": "2p64o4_mml=32000"}, headers={}, username=None)
    out = dict(zip(loading.LOADED, loading.initial("hero", "eagle-k3", request, lambda *a, **k: None)))
    assert "**deployment: meta-llama/Llama-3.1-8B-Instruct on H200, vLLM 0.33.0**" in out["status"]
    # words that are not plain (Markdown, HTML) are refused and said; the page still opens
    bad = types.SimpleNamespace(query_params={**query, "deployment": "<b>x</b>"}, headers={}, username=None)
    out = dict(zip(loading.LOADED, loading.initial("hero", "eagle-k3", bad, lambda *a, **k: None)))
    assert "deployment in the address" in out["spec_msg"] and "<b>" not in out["status"]


def test_a_local_model_path_is_not_put_in_the_replays_name():
    from lab.deployment.replay import deployment_words

    dep = resolve(LLAMA_LINE, "H200")
    local = dataclasses.replace(dep, line=dataclasses.replace(dep.line, model="/tmp/tmpabc/target"))
    assert deployment_words(local) == "a local model on H200, vLLM 0.33.0"


def test_lab_backends_and_the_deployment_tab_name_a_backend_alike(capsys):
    """Minor 7: the tab said "FLASH_ATTN (fa3)", "TRITON_ATTN (triton-unified)", "FLASHINFER (trtllm-gen)" and
    python -m lab backends "vllm-flash-attn", "vllm-triton-unified", "flashinfer-trtllm-gen", with nothing tying
    them. Now both say vLLM's registry name (AttentionBackendEnum) with the same label, backend_label, and each
    says the other's name."""
    import types as _t

    from lab.app.deployment_tab import EXAMPLES, deployment_tab
    from lab.commands.kernels import cmd_backends

    cmd_backends(_t.SimpleNamespace())
    listed = capsys.readouterr().out
    for kernel, label in (
        ("vllm-flash-attn", "FLASH_ATTN (fa3)"),
        ("vllm-triton-unified", "TRITON_ATTN (triton-unified)"),
        ("flashinfer-trtllm-gen", "FLASHINFER (trtllm-gen)"),
    ):
        assert f"\n{kernel} (cuda) [vLLM's {label}]: " in listed
    notes = deployment_tab(*EXAMPLES["dense + EAGLE3 on H200"], "0.33.0", 16, 2048, 256)[6]
    assert "<code>FLASH_ATTN (fa3)</code>" in notes and "python -m lab backends: vllm-flash-attn" in notes
    assert "python -m lab backends: vllm-triton-unified" in notes


def test_the_trtllm_gen_source_line_says_why_it_names_no_repository():
    """Minor 7's last part: a B200 answer showed "(generated TRTLLM-gen kernel source in the search index;
    repository not identified)" in the tab's sources. NVIDIA ships those kernels as cubins (TensorRT-LLM#6757), so the
    line now says so."""
    from lab.deployment.report import format_markdown
    from lab.gpu_model.backends import TRTLLM_GEN_SOURCE

    text = format_markdown(answer(resolve("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192", "B200")))
    assert f"{TRTLLM_GEN_SOURCE} `FmhaSm100f*Kernel_*.cpp`" in text
    assert "search index" not in text and "not identified" not in text
    assert "TensorRT-LLM#6757" in TRTLLM_GEN_SOURCE and "cubins only" in TRTLLM_GEN_SOURCE


def test_presenter_layout_enlarges_the_legend_and_keeps_the_foot_note_inside():
    """Minor 11, the server's figure (lab.views.presenter_layout, twin of LabSteps.largerSmallType): the legend's
    type grows with the rest, and the bottom margin holds the foot note hung below the plot area."""
    from lab import Scenario, simulate
    from lab.views import ALL_VIEWS, presenter_layout

    spec = ALL_VIEWS["drafts"][1](simulate(Scenario.preset("eagle-k3")), 20)
    big = presenter_layout(spec)["layout"]
    assert big["legend"]["font"]["size"] == round(spec["layout"]["legend"]["font"]["size"] * 1.35)
    foot = next(a for a in big["annotations"] if a.get("y", 0) < 0 and "Why a bar rises" in a["text"])
    plot = big["height"] - big["margin"]["t"] - big["margin"]["b"]
    lines = foot["text"].count("<br>") + 1
    assert big["margin"]["b"] >= -foot["y"] * plot + lines * 1.3 * foot["font"]["size"]
