"""The trace: contract names, JSON round-trip, rejection of bad files, compactness."""

from __future__ import annotations

import base64
import dataclasses
import json
import pickle
import zlib

import numpy as np
import pytest

from lab import Scenario, Trace, TraceFormatError, list_presets, simulate


@pytest.fixture(scope="module")
def eagle_trace():
    return simulate(Scenario.preset("eagle-k3"))


def test_contract_names(eagle_trace):
    """Every name of docs/trace.md is there, with the documented types."""
    trace = eagle_trace
    assert isinstance(trace.scenario, Scenario) and len(trace.steps) > 0
    st = trace.steps[3]
    assert st.index == 3
    n = st.num_reqs
    assert len(st.req_ids) == n and all(isinstance(r, str) for r in st.req_ids)
    for name in ("num_computed_tokens", "num_scheduled_tokens", "num_blocks"):
        v = getattr(st, name)
        assert isinstance(v, list) and len(v) == n and all(isinstance(x, int) for x in v)
    assert len(st.seq_lens_cpu_upper_bound) == len(st.seq_lens) == st.num_reqs_padded
    assert st.cudagraph_mode in ("FULL", "PIECEWISE", "NONE")
    for d in (st.max_seq_len, st.kernel_max_seq_len):
        assert set(d) == {"baseline", "fixed"} and all(isinstance(x, int) for x in d.values())
    assert st.block_table.shape == (st.num_reqs_padded, trace.width)
    assert len(st.drafts) == 3
    for d in st.drafts:
        assert {"index", "seq_lens_cpu_upper_bound", "cudagraph_mode", "max_seq_len", "kernel_max_seq_len"} <= set(
            dir(d)
        )
    assert set(st.oor) == {"baseline", "fixed"}
    assert {"null", "live", "free", "padded"} <= set(st.oor["fixed"])
    assert trace.steps[-1].index == len(trace.steps) - 1
    assert [s.index for s in trace.steps[2:5]] == [2, 3, 4]
    with pytest.raises(IndexError):
        trace.steps[len(trace.steps)]
    assert list_presets() and all(isinstance(p, str) for p in list_presets())
    variant = dataclasses.replace(trace.scenario, max_model_len=65536, seed=5)
    assert variant.max_model_len == 65536 and variant.requests == trace.scenario.requests


def test_round_trip_every_preset(tmp_path):
    for name in list_presets():
        trace = simulate(Scenario.preset(name))
        path = tmp_path / f"{name}.json"
        trace.save(path)
        back = Trace.load(path)
        assert back.scenario == trace.scenario and back.req_ids == trace.req_ids and back.meta == trace.meta
        for k in trace.arrays:
            assert np.array_equal(back.arrays[k], trace.arrays[k]), (name, k)
        i = len(trace.steps) // 2
        assert np.array_equal(back.steps[i].block_table, trace.steps[i].block_table)
        json.loads(path.read_text())  # plain JSON


def _doc(trace) -> dict:
    return json.loads(json.dumps(trace.to_json_dict()))


def _load(doc) -> Trace:
    return Trace.from_json_bytes(json.dumps(doc).encode())


def _set_array(doc, name, arr, dtype=None):
    arr = np.asarray(arr, dtype=dtype or doc["arrays"][name]["dtype"])
    doc["arrays"][name]["shape"] = list(arr.shape)
    doc["arrays"][name]["encoding"] = "zlib+base64"
    doc["arrays"][name]["data"] = base64.b64encode(zlib.compress(arr.tobytes())).decode()


def test_rejects_bad_files(tmp_path, eagle_trace):
    """Bad or foreign files get a TraceFormatError that says what is wrong; nothing is unpickled."""
    good = _doc(eagle_trace)

    def expect(doc_or_bytes, words):
        data = doc_or_bytes if isinstance(doc_or_bytes, bytes) else json.dumps(doc_or_bytes).encode()
        with pytest.raises(TraceFormatError) as e:
            Trace.from_json_bytes(data)
        assert words in str(e.value), str(e.value)

    expect(b"\x80\x04\x95" + pickle.dumps({"a": 1})[3:], "pickle")
    expect(pickle.dumps([1, 2]), "pickle")
    expect(b"not json at all", "not a JSON trace")
    expect(b"[1, 2]", "JSON object")
    expect({**good, "format": "something-else"}, "not a max_seq_len lab trace")
    expect({**good, "version": 99}, "version 99")
    expect({k: v for k, v in good.items() if k != "arrays"}, "'arrays'")
    doc = json.loads(json.dumps(good))
    doc["scenario"]["block_size"] = 12
    expect(doc, "block_size")
    doc = json.loads(json.dumps(good))
    del doc["arrays"]["seq_lens"]
    expect(doc, "'seq_lens' is missing")
    doc = json.loads(json.dumps(good))
    doc["arrays"]["seq_lens"]["dtype"] = "float64"
    expect(doc, "dtype")
    doc = json.loads(json.dumps(good))
    doc["arrays"]["seq_lens"]["data"] = "!!!not base64!!!"
    expect(doc, "cannot be decoded")
    doc = json.loads(json.dumps(good))
    doc["arrays"]["max_seq_len"]["shape"] = [3, 2]
    expect(doc, "declares shape")  # checked on the declared shapes, before any array is inflated
    doc = json.loads(json.dumps(good))
    doc["arrays"]["row_inst"]["data"] = doc["arrays"]["inst_req"]["data"]
    expect(doc, "holds")
    doc = json.loads(json.dumps(good))
    _set_array(doc, "row_inst", np.full(len(eagle_trace.arrays["row_inst"]), 10_000))
    expect(doc, "unknown instance")
    doc = json.loads(json.dumps(good))
    msl = eagle_trace.arrays["max_seq_len"].copy()
    msl[0, 1] = 10**7
    _set_array(doc, "max_seq_len", msl)
    expect(doc, "max_model_len")
    doc = json.loads(json.dumps(good))
    doc["meta"]["cudagraph_capture_sizes"] = "all of them"
    expect(doc, "meta.cudagraph_capture_sizes")
    doc = json.loads(json.dumps(good))
    doc["meta"]["num_preemptions"] = -1
    expect(doc, "meta.num_preemptions")
    doc = json.loads(json.dumps(good))
    del doc["meta"]["cudagraph_capture_sizes"], doc["meta"]["source"]
    assert _load(doc).meta["cudagraph_capture_sizes"] == []  # optional fields get their defaults
    doc = json.loads(json.dumps(good))
    doc["arrays"]["extra"] = doc["arrays"]["seq_lens"]
    expect(doc, "unknown arrays")
    # A zip bomb: a tiny declared shape over a large compressed payload.
    doc = json.loads(json.dumps(good))
    doc["arrays"]["scheduler_step"]["data"] = base64.b64encode(zlib.compress(bytes(50_000_000))).decode()
    expect(doc, "scheduler_step")
    # A file that is not there, and one that is too big.
    with pytest.raises(TraceFormatError, match="cannot read"):
        Trace.load(tmp_path / "missing.json")
    # The good document still loads after all that.
    assert len(_load(good).steps) == len(eagle_trace.steps)


def test_compact_10k_steps_x_256_requests(tmp_path):
    """10,000 steps x 256 live requests: <= 20 MB on disk, <= 100 MB in memory."""
    s = Scenario.from_spec("256p128o10k_seqs=256_mml=32k_tokens=64k_steps=10000")
    trace = simulate(s)
    assert len(trace.steps) == 10_000 and len(trace.arrays["row_inst"]) == 10_000 * 256
    assert trace.nbytes() <= 100 * 2**20
    path = tmp_path / "big.json"
    trace.save(path)
    assert path.stat().st_size <= 20 * 2**20
    back = Trace.load(path)
    assert np.array_equal(back.arrays["num_computed_tokens"], trace.arrays["num_computed_tokens"])
    assert back.steps[9_999].max_seq_len == trace.steps[9_999].max_seq_len


@pytest.mark.parametrize("name", ["stale-block-reuse", "mixed-long-short", "full-graph-vs-eager", "eagle-k3"])
def test_oor_per_request_matches_the_engine(name):
    """Rebuilt from the trace alone (instance lifetimes, block log), the out-of-range entries of
    every walk add up, class by class, to the engine's live counts."""
    trace = simulate(Scenario.preset(name))
    stride = max(1, len(trace.steps) // 40)
    for st in trace.steps[::stride]:
        for mode in ("baseline", "fixed"):
            for p in range(1 + len(st.drafts)):
                want = st.oor[mode] if p == 0 else st.drafts[p - 1].oor[mode]
                e = st.oor_entries(mode, p)
                got = {c: int((e["class"] == c).sum()) for c in ("null", "live", "free", "padded")}
                assert got == {c: want[c] for c in got}, (name, st.index, mode, p)
                assert set(e["owner"][e["class"] == "live"]) <= set(trace.req_ids)
                assert (e["block"][e["class"] == "null"] == 0).all()
                per_req = st.oor_by_request(mode, p)
                assert set(per_req) == set(st.req_ids)
                for c in ("null", "live", "free"):
                    assert sum(v[c] for v in per_req.values()) == want[c]


def _fake_timings(trace) -> tuple[dict, dict]:
    """Per-step arrays shaped as a live kernel run writes them (values made up: the schema is tested
    here; lab/kernels' tests check real values)."""
    s = len(trace.steps)
    ms = np.column_stack([np.linspace(2.0, 3.0, s), np.linspace(0.5, 1.0, s)])
    ms[0] = np.nan  # a step that was not timed
    arrays = {
        "kernel_ms": ms,
        "kernel_iqr_ms": ms / 10,
        "kernel_bytes_real": np.full(s, 10**6),
        "kernel_bytes_walked": np.tile([4 * 10**6, 10**6], (s, 1)),
        "kernel_max_abs_err": np.zeros((s, 2)),
        "kernel_trusting_wrong": np.tile([1, 0], (s, 1)),
    }
    meta = {
        "backend": "torch-reference",
        "device": "cpu",
        "kernel": "paged_decode",
        "dtype": "float32",
        "command": "python -m lab simulate --preset eagle-k3 --backend torch-reference",
    }
    return meta, arrays


def test_kernel_timings_attach_and_round_trip(tmp_path, eagle_trace):
    t = Trace.from_json_dict(_doc(eagle_trace))
    assert t.timings is None and t.steps[3].timing is None
    meta, arrays = _fake_timings(t)
    t.attach_kernel_timings(meta, arrays)
    assert t.timings["backend"] == "torch-reference"
    assert t.steps[0].timing is None  # not timed
    tm = t.steps[3].timing
    assert tm["bytes_real"] == 10**6 and tm["baseline"]["bytes_walked"] == 4 * 10**6
    assert tm["fixed"]["gbps_real"] == pytest.approx(10**6 / (tm["fixed"]["ms"] * 1e-3) / 1e9)
    assert tm["baseline"]["trusting_wrong"] == 1 and tm["fixed"]["trusting_wrong"] == 0
    t.save(tmp_path / "t.json")
    back = Trace.load(tmp_path / "t.json")
    assert back.timings == t.timings
    for name in arrays:
        np.testing.assert_array_equal(back.arrays[name], t.arrays[name])
    # Bad timings are refused, on attach and on load.
    with pytest.raises(ValueError, match="kernel_ms"):
        Trace.from_json_dict(_doc(eagle_trace)).attach_kernel_timings(
            meta, {**arrays, "kernel_ms": -arrays["kernel_ms"]}
        )
    with pytest.raises(ValueError, match="meta.kernels"):
        Trace.from_json_dict(_doc(eagle_trace)).attach_kernel_timings({"backend": "x"}, arrays)
    doc = json.loads((tmp_path / "t.json").read_text())
    del doc["arrays"]["kernel_iqr_ms"]
    with pytest.raises(TraceFormatError, match="kernel timings need all"):
        _load(doc)
    doc = json.loads((tmp_path / "t.json").read_text())
    _set_array(doc, "kernel_trusting_wrong", np.full((len(t.steps), 2), 7, dtype=np.int8))
    with pytest.raises(TraceFormatError, match="trusting_wrong"):
        _load(doc)


HOSTILE = {
    "200,000 open brackets": b"[" * 200_000,
    "100,000 nested objects": b'{"a":' * 100_000,
    "a closed nesting past the parser's depth": b"[" * 5_000 + b"]" * 5_000,
    "an integer of 100,000 digits": b"1" * 100_000,
    "not UTF-8": b"\xff\xfe\x00",
    "empty": b"",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_json_gives_the_format_error(tmp_path, name):
    """Hostile files (deep nesting, huge numbers) get the lab's format error, never a RecursionError,
    from Trace.from_json_bytes, Trace.load, the CLI and the app's upload."""
    data = HOSTILE[name]
    with pytest.raises(TraceFormatError, match="not a JSON trace"):
        Trace.from_json_bytes(data)
    path = tmp_path / "hostile.json"
    path.write_bytes(data)
    with pytest.raises(TraceFormatError, match="hostile.json is not a JSON trace"):
        Trace.load(path)
    from lab.commands.main import main

    assert main(["show", str(path)]) == 2
    from lab.app.loading import LOADED
    from lab.app.upload import upload_trace

    out = dict(zip(LOADED, upload_trace(str(path))))
    assert "hostile.json is not a JSON trace" in out["upload_msg"]


@pytest.mark.parametrize("name", list_presets())
def test_draft_seq_lens_with_and_without_the_stored_array(name):
    """Each draft pass's exact lengths: recorded by the simulation (``draft_seq_lens``), and rebuilt by the
    trace layer for a file saved before that array; both give the same ``DraftPass.seq_lens``."""
    trace = simulate(Scenario.preset(name))
    doc = trace.to_json_dict()
    assert "draft_seq_lens" in doc["arrays"]
    stored = Trace.from_json_dict(doc)
    old = dict(doc, arrays={k: v for k, v in doc["arrays"].items() if k != "draft_seq_lens"})
    rebuilt = Trace.from_json_dict(old)
    assert "draft_seq_lens" not in rebuilt.arrays
    assert stored.arrays["draft_seq_lens"].shape == (len(stored.arrays["row_inst"]), stored.num_draft_passes)
    for a, b in zip(stored.steps, rebuilt.steps):
        for da, db in zip(a.drafts, b.drafts):
            assert da.seq_lens == db.seq_lens, (name, a.index, da.index)
            assert len(da.seq_lens) == a.num_reqs
            # Exact lengths never pass the upper bound the metadata is built from (R5).
            assert all(e <= u for e, u in zip(da.seq_lens, da.seq_lens_cpu_upper_bound))


def test_draft_seq_lens_of_a_bad_shape_is_a_format_error():
    doc = simulate(Scenario.preset("eagle-k3")).to_json_dict()
    arr = doc["arrays"]["draft_seq_lens"]
    raw = np.zeros((3, 1), np.int32).tobytes()
    doc["arrays"]["draft_seq_lens"] = dict(arr, shape=[3, 1], data=base64.b64encode(zlib.compress(raw)).decode())
    with pytest.raises(TraceFormatError, match="draft_seq_lens"):
        Trace.from_json_dict(doc)
