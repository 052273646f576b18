"""Every spelling vLLM 0.33.0's ``vllm serve`` parser takes, handed to it and to the lab (issue 47): each option
string of its lookup table (the hidden ``--no-enable-*``/``--no-disable-*`` of ``EnableDisableAction`` included),
its shortest unambiguous abbreviation, the flag given twice, and dotted keys. Where vLLM's parser accepts the line
the lab accepts it with the same meaning for every dest it reads; where vLLM refuses a spelling (an ambiguous
abbreviation, an unknown flag) the lab refuses it too. Runs in ``.venv-vllm``."""

from __future__ import annotations

import contextlib
import io
import os

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from lab.deployment.serve_line import READERS, ServeLineError, read_serve_line, serve_flags  # noqa: E402
from lab.real_vllm.deployment.serve_flags import serve_parser, vllm_parse  # noqa: E402

VALUES = ("{}", "1", "auto", "x")  # tried in turn for a flag that takes a value, the first vLLM takes is used


@pytest.fixture(scope="module")
def parser():
    return serve_parser()


def _vllm(parser, words):
    with contextlib.redirect_stderr(io.StringIO()):
        return vllm_parse(["serve", "m", *words], parser)


def _same_meaning(line_words, theirs):
    ours = read_serve_line("vllm serve m " + " ".join(line_words))
    for dest, value in ours.settings.items():
        v = theirs[dest]
        if dest == "max_model_len" and v == -1:
            v = None
        if isinstance(value, dict) and isinstance(v, str):  # vLLM builds a config object: each key in its repr
            assert all(f"{k}=" in v or f"'{k}': " in v for k in value), (line_words, dest, v, value)
        elif dest == "attention_backend":
            assert v.endswith(value.upper()), (dest, v)
        else:
            assert v == value, (line_words, dest, v, value)
    return ours


def _line_for(parser, opt, spec):
    if spec["takes"] == "switch":
        return [opt]
    for value in VALUES:
        words = [opt, value]
        if "error" not in _vllm(parser, words):
            return words
    return None


def test_every_option_string_is_read_as_vllms_parser_reads_it(parser):
    counts = {"lines": 0, "read": 0, "no value vLLM takes": 0}
    for opt, spec in serve_flags().items():
        if spec["dest"] == "model":
            continue  # beside a positional model: `vllm serve` moves --model to the front, two models (refused)
        words = _line_for(parser, opt, spec)
        if words is None:
            counts["no value vLLM takes"] += 1  # e.g. a flag whose type takes none of VALUES
            continue
        theirs = _vllm(parser, words)
        ours = _same_meaning([w if " " not in w else repr(w) for w in words], theirs)
        counts["lines"] += 1
        counts["read"] += spec["dest"] in READERS
        if spec["dest"] not in READERS:
            assert opt in ours.ignored  # listed in the answer as "read by vLLM, no effect here"
    assert counts["lines"] > 430, counts
    print(counts)


def _shortest_unique_prefix(opt, flags):
    for n in range(3, len(opt)):
        prefix = opt[:n]
        if prefix not in flags and [o for o in flags if o.startswith(prefix)] == [opt]:
            return prefix
    return None


def test_abbreviations_are_what_argparse_takes(parser):
    flags = serve_flags()
    checked = 0
    for opt in [o for o in flags if o.startswith("--") and flags[o]["dest"] in READERS]:
        prefix = _shortest_unique_prefix(opt, flags)
        words = _line_for(parser, opt, flags[opt])
        if prefix is None or words is None or flags[opt]["dest"] == "model":
            continue
        words = [prefix, *words[1:]]
        theirs = _vllm(parser, words)
        assert "error" not in theirs, words
        _same_meaning(words, theirs)
        # one character fewer matches several flags (or none): vLLM refuses it, so does the lab
        shorter = prefix[:-1]
        if len(shorter) > 2 and shorter not in flags:
            assert "error" in _vllm(parser, [shorter, *words[1:]])
            with pytest.raises(ServeLineError):
                read_serve_line("vllm serve m " + " ".join([shorter, *words[1:]]))
        checked += 1
    assert checked > 20


@pytest.mark.parametrize(
    "words",
    [
        ["--max-model-len", "4k", "--max-model-len", "8k"],
        ["--enable-prefix-caching", "--no-enable-prefix-caching"],
        ["--no-enable-chunked-prefill", "--enable-chunked-prefill"],
        ["--disable-sliding-window", "--no-disable-sliding-window"],
        ["--speculative-config", '{"method": "eagle", "num_speculative_tokens": 3}', "--speculative-config.model", "d"],
        ["--speculative_config.method", "ngram", "--speculative-config.num_speculative_tokens", "2"],
        ["--hf-overrides.max_position_embeddings", "32k", "--hf-overrides.architectures+", "A,B"],
        ["-cc.cudagraph_mode", "FULL", "-cc.max_cudagraph_capture_size", "64"],
        ["--kv-transfer-config", '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'],
        ["--runner", "pooling", "--convert", "embed"],
    ],
)
def test_repeated_and_dotted_spellings(parser, words):
    theirs = _vllm(parser, words)
    assert "error" not in theirs, theirs
    quoted = [f"'{w}'" if ("{" in w or " " in w) else w for w in words]
    _same_meaning(quoted, theirs)


# values of each class, other than the ones the table was written with (serve_flags.py PROBES)
CLASS_VALUES = ("7", "3k", "2.5", '{"a": 1}', "abc", "-3")


def test_values_are_refused_where_vllms_parser_refuses_them(parser):
    """For every value-taking flag the answer does not read: a value of each class, and for a flag with choices one
    of them and one that is not, is accepted by the lab exactly where vLLM's parser accepts it."""
    flags = serve_flags()
    checked, disagreements, named = 0, [], set()
    for opt, spec in flags.items():
        if spec["takes"] == "switch" or spec["dest"] in READERS or not opt.startswith("--"):
            continue
        if not spec.get("choices") and not spec.get("accepts"):
            continue  # a type that took none of the probes (a range check): not checked by the lab
        values = [spec["choices"][0], "not-a-choice"] if spec.get("choices") else CLASS_VALUES
        for value in values:
            theirs = "error" not in _vllm(parser, [f"{opt}={value}"])
            try:
                read_serve_line(f"vllm serve m '{opt}={value}'")
                ours = True
            except ServeLineError:
                ours = False
            checked += 1
            if ours != theirs and ours and value.startswith("{") and spec.get("accepts") == ["json"]:
                named.add(opt)  # NAMED EXCEPTION: a config object's keys are its class's; the lab checks JSON only
            elif ours != theirs:
                disagreements.append((opt, value, ours, theirs))
    print(checked, "values checked;", len(disagreements), "disagreements;", len(named), "named exceptions")
    assert checked > 1000 and not disagreements, disagreements[:10]
    # docs/deployments.md names the exception: the config-object flags the answer does not read
    assert all(flags[opt]["accepts"] == ["json"] for opt in named) and len(named) <= 22
