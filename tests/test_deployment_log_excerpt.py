"""Issue 47, the whole log: a start-up log excerpt read beside the serve line it ran, one rule for the CLI
(``python -m lab deployment --log EXCERPT -- LINE``) and the app's Deployment tab (a typed line and an excerpt pasted
beside it): its values compared field by field, and an excerpt that contradicts the line (another model, another
release) or states nothing refused with what it says (lab/deployment/log_excerpt.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.app.deployment_tab import deployment_tab
from lab.commands.main import main

LOGS = Path(__file__).parent / "data" / "startup_logs"
# The LMCache#3430 report's line (tests/test_deployment_startup_log.py EXCERPTS): RTX A5000 (the lab's A10G row),
# vLLM 0.21.0; its excerpt has no start-up line and names no release.
QWEN3_8B = (
    "vllm serve Qwen/Qwen3-8B --max-model-len 16384 --no-enable-prefix-caching "
    """--kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'"""
)
EXCERPT_FILE = "lmcache_3430_v0.21_qwen3_8b_a5000.log"
EXCERPT = (LOGS / EXCERPT_FILE).read_text()
# vLLM's start-up banner (vllm/entrypoints/common/startup.py), as club-3090#642 pasted it
BANNER = (
    "(APIServer pid=1) INFO 07-07 19:59:04 [api_utils.py:339]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version {version}\n"
    "(APIServer pid=1) INFO 07-07 19:59:04 [api_utils.py:339]   █▄█▀ █     █     █     █  model   {model}\n"
)


def ask(log: str, release: str = "0.21.0", line: str = QWEN3_8B) -> tuple:
    return deployment_tab(line, "A10G", release, 4, 256, 8, log)


def test_the_app_compares_a_pasted_excerpt_with_the_typed_line_as_the_cli_does(capsys):
    msg, md, *_, line_shown, _, _, release = ask(EXCERPT)
    assert msg == ""
    assert "**Your log (vLLM release not named) beside what the lab derives from its line**" in md
    assert "| cudagraph_profile | `PIECEWISE=51 (largest=512), FULL=35 (largest=256)` |" in md
    assert "| max_model_len | `16384` | `16384` | agrees |" in md
    # the line and the release stay as typed (an excerpt names neither)
    assert line_shown == {"__type__": "update"} and release == {"__type__": "update"}
    # the CLI's table, from the same comparison
    assert (
        main(["deployment", "--gpu", "A10G", "--vllm", "0.21.0", "--log", str(LOGS / EXCERPT_FILE), "--line", QWEN3_8B])
        == 0
    )
    out = capsys.readouterr().out
    assert "cudagraph_profile        lab: PIECEWISE=51 (largest=512), FULL=35 (largest=256); agrees" in out


def test_a_disagreement_is_shown_in_the_app():
    _, md, *_ = ask(EXCERPT.replace("FULL=35 (largest=256)", "FULL=24 (largest=184)"))
    assert "| cudagraph_profile | `PIECEWISE=51 (largest=512), FULL=24 (largest=184)` |" in md
    assert "**differs**" in md


@pytest.mark.parametrize(
    "log, release, said",
    [
        # another model than the line serves (the banner names it)
        (BANNER.format(version="0.21.0", model="Qwen/Qwen3-32B") + EXCERPT, "0.21.0", "names model Qwen/Qwen3-32B"),
        # another release than the one asked
        (BANNER.format(version="0.20.2", model="Qwen/Qwen3-8B") + EXCERPT, "0.21.0", "names vLLM 0.20.2"),
        # nothing the lab compares
        ("INFO 07-07 19:59:04 [loader.py:12] Loading weights took 3.1 seconds\n", "0.21.0", "states none of the"),
    ],
)
def test_an_excerpt_that_contradicts_the_line_is_said_under_it(log, release, said):
    msg, md, *_ = ask(log, release)
    assert "inline-error" in msg and said in msg and "still the last one" in msg
    assert md == {"__type__": "update"}  # the answer shown before stays


def test_a_banner_of_the_same_model_and_release_is_read_beside_the_line():
    msg, md, *_ = ask(BANNER.format(version="0.21.0", model="Qwen/Qwen3-8B") + EXCERPT)
    assert msg == "" and "**Your log (vLLM 0.21.0) beside what the lab derives from its line**" in md


def test_the_cli_refuses_the_same_contradictions(tmp_path, capsys):
    log = tmp_path / "excerpt.log"
    log.write_text(BANNER.format(version="0.20.2", model="Qwen/Qwen3-8B") + EXCERPT)
    assert main(["deployment", "--gpu", "A10G", "--vllm", "0.21.0", "--log", str(log), "--line", QWEN3_8B]) == 2
    assert "names vLLM 0.20.2, but the release asked is 0.21.0" in capsys.readouterr().err
    log.write_text(BANNER.format(version="0.21.0", model="Qwen/Qwen3-32B") + EXCERPT)
    assert main(["deployment", "--gpu", "A10G", "--log", str(log), "--line", QWEN3_8B]) == 2
    assert (
        "names model Qwen/Qwen3-32B (its start-up banner), but the line serves Qwen/Qwen3-8B" in capsys.readouterr().err
    )


def test_a_whole_log_still_answers_its_own_line_over_the_typed_one():
    # the app's rule since review 5: a log that names its line (non-default args) answers it, whatever is typed
    import json

    from lab.deployment.known_configs import KNOWN_CONFIGS

    config = json.dumps(next(c for name, _, c, _, _ in KNOWN_CONFIGS if name.startswith("meta-llama/")))
    log = (LOGS / "rank_llm_426_v0.19.log").read_text()
    out = deployment_tab(QWEN3_8B, "H200", "0.33.0", 2, 256, 8, log, config)
    assert out[0] == "" and out[4] == "vllm serve castorini/rank_vicuna_7b_v1 --max-model-len 4096"
    assert out[7].value == "0.19.1"
