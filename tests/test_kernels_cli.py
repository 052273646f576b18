"""The kernel options of the CLI: simulate --backend, bench kernels, backends."""

from __future__ import annotations

import json

import pytest
import torch

from lab.commands.bench.kernels import bench_shape
from lab.commands.main import main
from lab.kernels.batch import Shape, parse_shape
from lab.trace import Trace


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def test_simulate_with_backend_prints_timings_and_saves_them(capsys, tmp_path):
    out = tmp_path / "t.json"
    rc = main(
        [
            "simulate",
            "--spec",
            "4p40o10_2p20o8a2_mml=1k_cg=piecewise",
            "--backend",
            "torch-reference",
            "--every",
            "3",
            "--repeats",
            "1",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0
    assert "kernels: backend torch-reference on " in text and "reproduce: python -m lab simulate --spec" in text
    assert "trusting wrong b/f" in text and "kernel totals over" in text
    tr = Trace.load(out)
    assert tr.timings["backend"] == "torch-reference"
    rc = main(["show", str(out), "--quiet"])
    assert rc == 0 and "kernel totals over" in capsys.readouterr().out


def test_simulate_with_unknown_or_unavailable_backend_is_an_error(capsys):
    assert main(["simulate", "--spec", "2p10o2", "--backend", "nope"]) == 2
    assert "error: unknown backend 'nope'" in capsys.readouterr().err
    assert main(["simulate", "--spec", "2p10o2", "--backend", "torch-reference", "--device", "cuda"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_bench_kernels_prints_table_commands_and_json(capsys, tmp_path):
    js, md = tmp_path / "b.json", tmp_path / "b.md"
    rc = main(
        [
            "bench",
            "kernels",
            "--shape",
            "4x256/2k/16",
            "--shape",
            "4x256s/1k/32",
            "--repeats",
            "1",
            "--json",
            str(js),
            "--md",
            str(md),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0
    assert "| 4x256/2048/16 |" in text and "| 4x256s/1024/32 |" in text
    assert "reproduce: python -m lab bench kernels --backend torch-reference --device cpu --shape 4x256/2048/16" in text
    assert "peer ratio (vLLM's own CPU paged-attention kernel on the same batches): not measured: " in text
    doc = json.loads(js.read_text())
    rows = doc["rows"]
    assert rows[0]["predicted_ratio"] == 8.0 and rows[1]["predicted_ratio"] == 4.0
    assert doc["environment"]["torch"] == torch.__version__
    assert doc["peer"].startswith("not measured: ")  # no CPU build of vLLM in .venv (the live env has one)
    assert "fixed % of copy" in md.read_text()


def test_bench_shape_grammar_and_errors(capsys):
    assert parse_shape("64x4k/32k/16") == Shape(64, 4096, "uniform", 32768, 16)
    assert parse_shape("8x1ks/128k/64") == Shape(8, 1024, "skewed", 131072, 64)
    with pytest.raises(ValueError, match="BATCHxCONTEXT"):
        parse_shape("64x4k")
    with pytest.raises(ValueError, match="exceeds max_model_len"):
        parse_shape("4x8k/4k/16")
    assert main(["bench", "kernels", "--shape", "oops"]) == 2
    assert "error: bad shape 'oops'" in capsys.readouterr().err


def test_bench_kernels_on_the_compiled_backend(capsys):
    from lab.kernels import compiled

    try:
        compiled.load()
    except compiled.CompiledKernelUnavailable as e:
        pytest.skip(f"the compiled kernel does not run here: {e}")
    rc = main(
        [
            "bench",
            "kernels",
            "--backend",
            "cpp-fused-gather",
            "--shape",
            "4x256/2k/16",
            "--repeats",
            "1",
            "--threads",
            "2",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "| 4x256/2048/16 |" in text and "% of copy" in text
    assert "--backend cpp-fused-gather --device cpu --shape 4x256/2048/16 --repeats 1 --threads 2" in text


def test_bench_shape_counts_walked_bytes():
    torch.set_num_threads(1)
    r = bench_shape(Shape(2, 100, "skewed", 512, 16), repeats=1, warmup=0, copy_gbps=1.0)
    # skewed lengths 50 and 100: fixed walks cdiv(100, 16) = 7 pages per row, baseline 32
    assert r["fixed_max_seq_len"] == 100 and r["baseline_max_seq_len"] == 512
    token = 2 * 2 * 64 * 4
    assert r["fixed_bytes_walked"] == 2 * 7 * 16 * token and r["baseline_bytes_walked"] == 2 * 32 * 16 * token
    assert r["bytes_real"] == 150 * token
    assert r["fixed_pct_of_copy"] == pytest.approx(100 * r["fixed_gbps"])


def test_backends_command_lists_every_backend(capsys):
    assert main(["backends"]) == 0
    text = capsys.readouterr().out
    assert "torch-reference (cpu): runs here" in text
    assert "flashinfer-trtllm-gen (cuda) [vLLM's FLASHINFER (trtllm-gen)]: not here:" in text  # vLLM's name beside it
    assert "R10: max_seq_len does not change its work (read in the source): pages come from kv_indptr" in text
    # vLLM's AttentionBackendEnum names first, the lab's record of the work in parentheses (as the app's tab)
    assert "TRITON_MLA (triton-mla), MLA: yes: splits, scratch, merge [measured on vLLM's own code (CPU)]" in text
    assert "FLASHINFER_MLA (flashinfer-mla), MLA: yes: grid and split [assumed]" in text
    assert "FLASH_ATTN (fa3), GQA: slightly: split count" in text and "  lab-torch-reference, GQA: yes" in text


def test_simulate_on_given_steps(capsys, tmp_path):
    out = tmp_path / "t.json"
    assert (
        main(
            [
                "simulate",
                "--spec",
                "4p40o10_mml=1k_cg=piecewise",
                "--backend",
                "torch-reference",
                "--steps",
                "1,4",
                "--repeats",
                "1",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    tr = Trace.load(out)
    assert [st.index for st in tr.steps if st.timing is not None] == [1, 4]
    assert "--steps 1,4" in tr.timings["command"]
    capsys.readouterr()
    assert main(["simulate", "--spec", "2p10o2", "--backend", "torch-reference", "--steps", "1,x"]) == 2
    assert "error: --steps must be step indices" in capsys.readouterr().err
