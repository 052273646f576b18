"""``python -m lab deployment --json`` is fields a script reads: every answer of the docs' deployments table
(and a V1 one) validates against SCHEMA, numbers are numbers, the capture sizes a list, and every field is
documented in docs/deployments.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.commands.main import main
from lab.deployment.answer import Workload, answer
from lab.deployment.answer_json import FROM_LOG, PATH, RESOLUTION, RESOLVED, SCHEMA, answer_json
from lab.deployment.report import DEPLOYMENTS
from lab.deployment.resolve import resolve

jsonschema = pytest.importorskip("jsonschema")
DOCS = Path(__file__).resolve().parents[1] / "docs" / "deployments.md"
SMALL = Workload(2, 256, 8)


@pytest.fixture(scope="module")
def documents():
    out = []
    for _, line, gpu in DEPLOYMENTS:
        dep = resolve(line, gpu, "0.33.0")
        out.append((line, answer_json(answer(dep, SMALL))))
    return out


def test_every_table_answer_validates(documents):
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for line, doc in documents:
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, (line, errors[:3])
        json.dumps(doc, allow_nan=False)  # plain JSON: no default=str, no NaN


def test_fields_not_sentences(documents):
    line, doc = next((line, d) for line, d in documents if "FULL" in d["resolved"]["cudagraph_mode"])
    r = doc["resolved"]
    assert re.fullmatch(r"[A-Z_0-9]+", r["attention_backend"]) and re.fullmatch(r"[A-Z_]+", r["cudagraph_mode"])
    assert r["cudagraph_capture_sizes"] == sorted(r["cudagraph_capture_sizes"]) and r["cudagraph_capture_sizes"][0] >= 1
    assert isinstance(r["max_model_len"], int) and isinstance(r["async_scheduling"], bool)
    target = [p for p in doc["paths"] if p["path"] == "target" and p["exists"]]
    assert {p["era"] for p in target} == {"before #40654", "after #40654", "after #43991"}
    old = next(p for p in target if p["era"] == "before #40654")
    assert old["told"]["max"] == r["max_model_len"] and old["told_is_max_model_len"] is True


def test_a_v1_answer_validates():
    dep = resolve("vllm serve Qwen/Qwen3-8B", "H200", "0.19.1")
    doc = answer_json(answer(dep, SMALL))
    jsonschema.validate(doc, SCHEMA)
    assert doc["resolved"]["vllm"] == "0.19.1"


def test_the_cli_prints_the_schema_document(capsys):
    assert (
        main(
            [
                "deployment",
                "--json",
                "--requests",
                "2",
                "--prompt-len",
                "64",
                "--output-len",
                "4",
                "--",
                "vllm",
                "serve",
                "Qwen/Qwen3-8B",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["resolved"]["model"] == "Qwen/Qwen3-8B"


def test_every_field_is_documented():
    text = DOCS.read_text()
    section = text[text.index("## The `--json` answer") :]
    for name in [*SCHEMA["properties"], *RESOLVED["properties"], *PATH["properties"], *FROM_LOG["properties"],
                 *RESOLUTION["properties"], *FROM_LOG["properties"]["model_runner"]["properties"]]:  # fmt: skip
        assert f"`{name}`" in section, name


LOGS = Path(__file__).resolve().parent / "data" / "startup_logs"


def test_from_log_and_resolution_are_in_the_schema(capsys, monkeypatch):
    from lab.commands import deployment as deployment_cli

    log = LOGS / "euroeval_1120_v0.10_gptoss.log"  # vLLM 0.10.1: asked about on 0.33.0
    assert main(["deployment", "--json", "--requests", "2", "--prompt-len", "64", "--output-len", "4",
                 "--vllm", "0.33.0", "--log", str(log)]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["from_log"]["line"].startswith("vllm serve") and "agree" in doc["from_log"]["attention_backend"]
    resolution = {"fields": {"max_num_seqs": [1024, 1024], "cudagraph_mode": ["FULL", "PIECEWISE"]},
                  "disagreements": ["cudagraph_mode"]}  # fmt: skip
    monkeypatch.setattr(
        deployment_cli, "check_with_vllm", lambda *a: {"model": "Qwen/Qwen3-8B", "resolution": resolution}
    )
    assert main(["deployment", "--json", "--check-with-vllm", "--requests", "2", "--prompt-len", "64",
                 "--output-len", "4", "--", "vllm", "serve", "Qwen/Qwen3-8B"]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):  # a key outside the schema is refused
        jsonschema.validate({**doc, "vllm_parser": {"resolution": {**resolution, "why": "x"}}}, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "something_else": 1}, SCHEMA)


def test_the_docs_say_the_app_offers_every_gpu():
    # lab/app/deployment_tab.py: the GPU is a dropdown of every GPU of lab/gpu_model/gpus.py (DEPLOYMENT_GPUS)
    from lab.deployment.resolve import DEPLOYMENT_GPUS

    text = " ".join(DOCS.read_text().split())
    assert "The app offers H100, H200 and B200 only" not in text
    assert "the app's GPU is a dropdown of every GPU in lab/gpu_model/gpus.py" in text
    assert len(DEPLOYMENT_GPUS) > 3


def test_the_answer_names_backends_as_vllm_does(documents):
    """The answer's words name vLLM's backend (FLASH_ATTN, TRITON_MLA, ...), the lab's record of its work only
    beside it in parentheses, "FLASH_ATTN (fa3)" (issue 37: the text said "fa3 follows it", "by fa3's builder",
    names `lab backends` and vLLM's log do not use); the JSON's work carries both."""
    from lab.gpu_model.backends import VLLM_BACKEND_OF

    bare = re.compile(r"(?<![(\w-])(" + "|".join(map(re.escape, VLLM_BACKEND_OF)) + r")(?![\w-])")
    checked = 0
    for line, doc in documents:
        work = doc.get("work")
        if work:
            assert work["vllm_backend"] == VLLM_BACKEND_OF.get(work["backend"])
            assert work["label"].startswith(work["vllm_backend"] or work["backend"])
        texts = [doc["headline"]] + [r["kernel_text"] for r in doc["paths"]]
        for text in texts:
            assert not bare.search(text), (line, bare.search(text).group(0), text)
            checked += 1
    assert checked > 50
