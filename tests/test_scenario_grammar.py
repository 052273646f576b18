"""The scenario grammar of lab/spec_grammar.py, through parse_spec and format_spec of lab/scenario.py:
worked examples, round trips, and error messages.

An invalid *segment* must raise ``ValueError`` naming the segment; an invalid *value* must raise
``ValueError`` naming the Scenario field (docs/scenarios.md).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.scenario as scenario_module
import lab.spec_grammar as grammar_module
from lab import RequestSpec, Scenario, list_presets
from lab.blocks import block_table_width
from lab.presets import PRESETS
from lab.scenario import (
    CUDAGRAPH_MODES,
    MAX_BLOCK_TABLE_ENTRIES,
    MAX_SPECULATIVE_TOKENS,
    MODEL_STATES,
    format_spec,
    parse_spec,
)

# ---- worked examples of lab/spec_grammar.py -----------------------------------------------------


def _reqs(count: int, prompt: int, output: int, arrival: int = 0, every: int = 0) -> tuple[RequestSpec, ...]:
    return tuple(RequestSpec(arrival + i * every, prompt, output) for i in range(count))


WORKED_EXAMPLES = {
    "32p512o256_mml=128k_cg=piecewise": Scenario(
        requests=_reqs(32, 512, 256), max_model_len=128 * 1024, cudagraph_mode="PIECEWISE"
    ),
    "2p16ko32_16p256o512a0+4_mml=32k": Scenario(
        requests=_reqs(2, 16 * 1024, 32) + _reqs(16, 256, 512, arrival=0, every=4), max_model_len=32 * 1024
    ),
    "8p1ko64_k=3_accept=0.6_seed=7": Scenario(
        requests=_reqs(8, 1024, 64), num_speculative_tokens=3, acceptance_rate=0.6, seed=7
    ),
    "p100o20a5": Scenario(requests=(RequestSpec(5, 100, 20),)),
}


def test_worked_examples_are_in_the_docstring():
    """The examples tested below are the ones the module docstring shows (kept in sync)."""
    doc = grammar_module.__doc__
    for spec in WORKED_EXAMPLES:
        assert f"\n    {spec}\n" in doc, spec


def test_the_grammar_names_scenario_fields_and_values():
    """Every key of SPEC_SETTINGS (defined once, in lab/spec_grammar.py; lab.scenario hands the same dict
    on) sets a Scenario field, and the spellings of state= and cg= are the values the Scenario accepts."""
    assert scenario_module.SPEC_SETTINGS is grammar_module.SPEC_SETTINGS
    fields = {f.name for f in dataclasses.fields(Scenario)}
    assert set(grammar_module.SPEC_SETTINGS.values()) <= fields
    assert set(grammar_module._STATE_NAMES.values()) == set(MODEL_STATES)
    assert set(grammar_module._CG_NAMES.values()) == set(CUDAGRAPH_MODES)


@pytest.mark.parametrize("spec", list(WORKED_EXAMPLES))
def test_worked_example_parses_as_documented(spec):
    """Each worked example parses to exactly the scenario its docstring text describes."""
    assert parse_spec(spec) == WORKED_EXAMPLES[spec]
    assert parse_spec(format_spec(parse_spec(spec))) == parse_spec(spec)


def test_worked_examples_in_detail():
    """Spot checks with the docstring's words: counts, lengths, arrivals, k = x1024, settings."""
    s = parse_spec("32p512o256_mml=128k_cg=piecewise")
    assert len(s.requests) == 32
    assert {(r.prompt_len, r.output_len, r.arrival_step) for r in s.requests} == {(512, 256, 0)}
    assert s.max_model_len == 131072 and s.cudagraph_mode == "PIECEWISE"

    s = parse_spec("2p16ko32_16p256o512a0+4_mml=32k")
    assert len(s.requests) == 18
    assert all((r.prompt_len, r.output_len, r.arrival_step) == (16384, 32, 0) for r in s.requests[:2])
    short = s.requests[2:]
    assert [r.arrival_step for r in short] == list(range(0, 64, 4))
    assert all((r.prompt_len, r.output_len) == (256, 512) for r in short)
    assert s.max_model_len == 32768

    s = parse_spec("8p1ko64_k=3_accept=0.6_seed=7")
    assert len(s.requests) == 8 and s.requests[0].prompt_len == 1024 and s.requests[0].output_len == 64
    assert (s.num_speculative_tokens, s.acceptance_rate, s.seed) == (3, 0.6, 7)

    s = parse_spec("p100o20a5")
    assert s.requests == (RequestSpec(arrival_step=5, prompt_len=100, output_len=20),)


def test_defaults_match_the_docstring_table():
    """Settings not given take the defaults the docstring table lists."""
    s = parse_spec("p10o5")
    assert (
        s.max_model_len,
        s.block_size,
        s.num_speculative_tokens,
        s.model_state,
        s.cudagraph_mode,
        s.cudagraph_capture_sizes,
        s.max_num_seqs,
        s.max_num_batched_tokens,
        s.num_gpu_blocks,
        s.acceptance_rate,
        s.seed,
        s.max_num_steps,
    ) == (32768, 16, 0, "default", "FULL_AND_PIECEWISE", None, 256, 8192, None, 0.7, 0, 100_000)


def test_every_setting_key():
    """Each key of the settings table sets its field; k suffixes multiply by 1024; whitespace also
    separates segments and keys are case-insensitive."""
    s = parse_spec(
        "p1ko2k mml=64k_BS=32_k=2_state=mamba_cg=NONE_capture=1/2/4/8_seqs=12_tokens=2k"
        "_blocks=1k_accept=0.25_seed=11_steps=500"
    )
    assert s.requests == (RequestSpec(0, 1024, 2048),)
    assert s.max_model_len == 65536 and s.block_size == 32 and s.num_speculative_tokens == 2
    assert s.model_state == "mamba_hybrid" and s.cudagraph_mode == "NONE"
    assert s.cudagraph_capture_sizes == (1, 2, 4, 8)
    assert s.max_num_seqs == 12 and s.max_num_batched_tokens == 2048 and s.num_gpu_blocks == 1024
    assert s.acceptance_rate == 0.25 and s.seed == 11 and s.max_num_steps == 500
    assert parse_spec("p10o5_cg=full").cudagraph_mode == "FULL_AND_PIECEWISE"
    assert parse_spec("p10o5_capture=1/2k").cudagraph_capture_sizes == (1, 2048)


def test_request_group_arrivals():
    """count, a<arrival> and +<every>: the i-th request of a group arrives at arrival + i*every."""
    assert parse_spec("3p10o5a7").requests == _reqs(3, 10, 5, arrival=7)
    assert parse_spec("3p10o5a7+2").requests == _reqs(3, 10, 5, arrival=7, every=2)
    assert parse_spec("p10o5a7+2").requests == _reqs(1, 10, 5, arrival=7)
    # Groups keep their order, requests keep the order of the spec.
    assert parse_spec("p10o5a9_2p20o6").requests == (RequestSpec(9, 10, 5),) + _reqs(2, 20, 6)


def test_overrides_and_methods():
    """parse_spec(**overrides), Scenario.from_spec and Scenario.to_spec agree with the functions."""
    s = parse_spec("4p100o10_seed=1", seed=5, max_model_len=1024)
    assert s.seed == 5 and s.max_model_len == 1024
    assert Scenario.from_spec("4p100o10") == parse_spec("4p100o10")
    assert s.to_spec() == format_spec(s)


# ---- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list_presets())
def test_preset_round_trip(name):
    """parse_spec(format_spec(s)) == s for every preset."""
    s = Scenario.preset(name)
    assert s.name == name and s.description == PRESETS[name][1]
    assert parse_spec(format_spec(s)) == s
    assert parse_spec(PRESETS[name][0]) == s


def test_list_presets_matches_the_table():
    assert list_presets() == list(PRESETS) and len(list_presets()) >= 1


_sizes = st.one_of(st.integers(1, 5000), st.integers(1, 64).map(lambda x: x * 1024))


@st.composite
def request_lists(draw, max_prompt: int):
    """Groups (equal lengths, evenly spaced arrivals) and loose requests in any order, so that
    format_spec's grouping sees runs, breaks in runs and decreasing arrivals."""
    reqs: list[RequestSpec] = []
    for _ in range(draw(st.integers(1, 5))):
        prompt = draw(st.integers(1, max_prompt) | st.integers(1, max(1, max_prompt // 1024)).map(lambda x: x * 1024))
        prompt = min(prompt, max_prompt)
        output = draw(_sizes)
        count = draw(st.integers(1, 6))
        arrival = draw(st.integers(0, 50))
        every = draw(st.integers(-3, 5))
        reqs += [RequestSpec(max(0, arrival + i * every), prompt, output) for i in range(count)]
    return draw(st.permutations(reqs)) if draw(st.booleans()) else reqs


@st.composite
def valid_scenarios(draw):
    """Random valid scenarios over every field the grammar can write."""
    mml = draw(st.integers(2, 300_000) | st.integers(1, 256).map(lambda x: x * 1024))
    k = draw(st.integers(0, MAX_SPECULATIVE_TOKENS))
    requests = draw(request_lists(max_prompt=mml - 1))
    capture = draw(
        st.none()
        | st.lists(st.integers(1, 2048), min_size=1, max_size=8, unique=True).map(lambda xs: tuple(sorted(xs)))
    )
    block_size = draw(st.sampled_from([2**i for i in range(13)]))
    # Keep max_num_seqs x block-table width within what the lab holds.
    max_seqs = max(1, min(4096, MAX_BLOCK_TABLE_ENTRIES // block_table_width(mml, block_size)))
    fields = dict(
        requests=tuple(requests),
        max_model_len=mml,
        block_size=block_size,
        model_state=draw(st.sampled_from(MODEL_STATES)),
        num_speculative_tokens=k,
        cudagraph_mode=draw(st.sampled_from(CUDAGRAPH_MODES)),
        cudagraph_capture_sizes=capture,
        max_num_seqs=draw(st.integers(1, max_seqs)),
        max_num_batched_tokens=draw(st.integers(1 + k, 100_000) | st.integers(1, 64).map(lambda x: 1024 * x + k)),
        acceptance_rate=draw(st.floats(0.0, 1.0, allow_nan=False) | st.sampled_from([0, 1, 0.5, 0.1])),
        seed=draw(st.integers(0, 2**63 - 1)),
        max_num_steps=draw(st.integers(1, 10_000_000)),
    )
    # The encoder states' own constraints (no chunked prefill; encoder-only pools: k=0, o1).
    if fields["model_state"] in ("encoder_decoder", "encoder_only"):
        fields["max_num_batched_tokens"] = max(fields["max_num_batched_tokens"], mml)
    if fields["model_state"] == "encoder_only":
        fields["num_speculative_tokens"] = 0
        fields["requests"] = tuple(RequestSpec(r.arrival_step, r.prompt_len, 1) for r in fields["requests"])
    base = Scenario(**fields)
    if draw(st.booleans()):
        biggest = max(base.blocks_per_request(r) for r in base.requests)
        fields["num_gpu_blocks"] = draw(st.integers(biggest + 1, biggest + 100_000))
    return Scenario(**fields)


@settings(max_examples=300, deadline=None)
@given(valid_scenarios())
def test_round_trip_random_scenarios(s):
    """parse_spec(format_spec(s)) == s for random valid scenarios, and format_spec is canonical."""
    text = format_spec(s)
    back = parse_spec(text)
    assert back == s, text
    assert format_spec(back) == text


def test_name_and_description_do_not_take_part_in_equality():
    """name/description are labels: a renamed scenario is the same scenario (and the grammar drops them)."""
    s = parse_spec("p10o5")
    assert dataclasses.replace(s, name="x", description="y") == s


# ---- invalid segments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, bad",
    [
        ("8q1s1k", "8q1s1k"),
        ("p12", "p12"),
        ("o12", "o12"),
        ("p10o5_p12", "p12"),
        ("p10o5a", "p10o5a"),
        ("p10o5a1+", "p10o5a1+"),
        ("p10Ko5", "p10Ko5"),
        ("-2p10o5", "-2p10o5"),
        ("0p10o5", "0p10o5"),
        ("p10o5_mml=abc", "mml=abc"),
        ("p10o5_mml=", "mml="),
        ("p10o5_mml=1.5k", "mml=1.5k"),
        ("p10o5_foo=1", "foo=1"),
        ("p10o5_=3", "=3"),
        ("p10o5_cg=full-graph", "cg=full-graph"),
        ("p10o5_cg=full_graph", "graph"),  # '_' separates segments: 'graph' is the bad one
        ("p10o5_state=mamba_hybrid", "hybrid"),  # likewise: the field's own value cannot be written
        ("p10o5_state=ssm", "state=ssm"),
        ("p10o5_capture=1/x/8", "capture=1/x/8"),
        ("p10o5_capture=", "capture="),
        ("p10o5_accept=high", "accept=high"),
        ("p10o5_seed=-1", "seed=-1"),
        ("p10o5_seed=1k", "seed=1k"),
        ("p10o5_k=three", "k=three"),
    ],
)
def test_invalid_segment_names_the_segment(spec, bad):
    """A segment the grammar cannot read raises ValueError quoting that segment."""
    with pytest.raises(ValueError) as err:
        parse_spec(spec)
    assert repr(bad) in str(err.value)


@pytest.mark.parametrize(
    "spec, key",
    [
        ("p10o5_mml=1k_mml=2k", "mml"),
        ("p10o5_mml=1k_MML=2k", "mml"),
        ("p10o5_seed=1_seed=1", "seed"),
        ("p10o5_capture=1/2_capture=4", "capture"),
    ],
)
def test_duplicate_key(spec, key):
    """A setting given twice is an error that names the key (even if both values agree)."""
    with pytest.raises(ValueError, match=f"'{key}' is given twice"):
        parse_spec(spec)


@pytest.mark.parametrize("spec", ["", "   ", "_", "__ _\t\n"])
def test_empty_spec(spec):
    with pytest.raises(ValueError, match="empty scenario spec"):
        parse_spec(spec)


def test_settings_without_requests():
    with pytest.raises(ValueError, match="no request group"):
        parse_spec("mml=32k_k=3")


@pytest.mark.parametrize("spec", [None, 42, b"p10o5"])
def test_spec_must_be_a_string(spec):
    with pytest.raises(ValueError, match="must be a string"):
        parse_spec(spec)


# ---- invalid values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, field",
    [
        ("p1ko5_mml=1k", "requests[0].prompt_len"),  # prompt == max_model_len: no room to generate
        ("p10o5_p2ko5_mml=1k", "requests[1].prompt_len"),
        ("p0o5", "requests[0].prompt_len"),
        ("p10o0", "requests[0].output_len"),
        ("p10o5_mml=1", "max_model_len"),
        ("p10o5_mml=17000k", "max_model_len"),
        ("p10o5_bs=3", "block_size"),
        ("p10o5_bs=0", "block_size"),
        ("p10o5_bs=8k", "block_size"),
        ("p10o5_k=16", "num_speculative_tokens"),
        ("p10o5_accept=1.5", "acceptance_rate"),
        ("p10o5_accept=-0.1", "acceptance_rate"),
        ("p10o5_accept=nan", "acceptance_rate"),
        ("p10o5_accept=inf", "acceptance_rate"),
        ("p100o5_blocks=7", "num_gpu_blocks"),  # 100 tokens = 7 blocks of 16, + the null block = 8
        ("p10o5_capture=4/2", "cudagraph_capture_sizes"),
        ("p10o5_capture=2/2", "cudagraph_capture_sizes"),
        ("p10o5_capture=0/1", "cudagraph_capture_sizes"),
        ("p10o5_seqs=0", "max_num_seqs"),
        ("p10o5_seqs=5k", "max_num_seqs"),
        ("p10o5_tokens=3_k=3", "max_num_batched_tokens"),
        ("p10o5_steps=0", "max_num_steps"),
        ("p10o5_seed=9223372036854775808", "seed"),  # 2**63
    ],
)
def test_invalid_value_names_the_field(spec, field):
    """A readable segment with an impossible value raises ValueError starting with the field name."""
    with pytest.raises(ValueError) as err:
        parse_spec(spec)
    assert str(err.value).startswith(f"{field}:"), str(err.value)


def test_num_gpu_blocks_boundary():
    """num_gpu_blocks must hold the largest request plus the null block: prompt + output + 3K tokens
    (K lookahead, up to 1 + K scheduled and up to K rejected drafts the CPU still counts)."""
    # 100 + 20 tokens + 3 * 3 -> 129 tokens = 9 blocks of 16; 10 with the null block.
    assert parse_spec("p100o20_k=3_blocks=10").num_gpu_blocks == 10
    with pytest.raises(ValueError, match="^num_gpu_blocks:"):
        parse_spec("p100o20_k=3_blocks=9")
    # Positions stop below max_model_len: cdiv(min(100 + 5000, 256 - 1), 16) = 16 blocks.
    assert parse_spec("p100o5000_mml=256_blocks=17").num_gpu_blocks == 17
    with pytest.raises(ValueError, match="^num_gpu_blocks:"):
        parse_spec("p100o5000_mml=256_blocks=16")


@pytest.mark.parametrize(
    "fields, field",
    [
        (dict(requests=()), "requests"),
        (dict(requests=[(0, 10, 5)], model_state="mamba"), "model_state"),
        (dict(requests=[(0, 10, 5)], cudagraph_mode="FULL"), "cudagraph_mode"),
        (dict(requests=[(0, 10, 5)], cudagraph_capture_sizes=()), "cudagraph_capture_sizes"),
        (dict(requests=[(0, 10, 5)], block_size=16.0), "block_size"),
        (dict(requests=[(0, 10, 5)], max_model_len=True), "max_model_len"),
        (dict(requests=[(-1, 10, 5)]), "requests[0].arrival_step"),
        (dict(requests=[(0, 10, 5), (0, 10.0, 5)]), "requests[1].prompt_len"),
        (dict(requests=[(0, 10, 5)], num_speculative_tokens=-1), "num_speculative_tokens"),
        (dict(requests=[(0, 10, 5)], num_gpu_blocks=2.5), "num_gpu_blocks"),
        (dict(requests=[(0, 10, 5)], acceptance_rate="0.5"), "acceptance_rate"),
    ],
)
def test_invalid_constructor_value_names_the_field(fields, field):
    """Scenario(...) built directly validates the same way and names the field."""
    with pytest.raises(ValueError) as err:
        Scenario(**fields)
    assert str(err.value).startswith(f"{field}:"), str(err.value)


@pytest.mark.parametrize("seed", [-1, 2**63, True])
def test_seed_range(seed):
    """The seed must be a non-negative integer below 2**63 (what the engine's RNG and the grammar accept)."""
    with pytest.raises(ValueError, match="^seed:"):
        Scenario(requests=[(0, 10, 5)], seed=seed)
    assert Scenario(requests=[(0, 10, 5)], seed=2**63 - 1).seed == 2**63 - 1


# ---- variants ---------------------------------------------------------------------------------


def test_replace_revalidates():
    """dataclasses.replace (and Scenario.replace) build a checked variant: a too-small
    max_model_len raises, naming the request whose prompt no longer fits."""
    s = parse_spec("p100o20_p600o20_mml=2k")
    assert dataclasses.replace(s, max_model_len=1024).max_model_len == 1024
    with pytest.raises(ValueError, match=r"^requests\[1\]\.prompt_len:"):
        dataclasses.replace(s, max_model_len=600)
    with pytest.raises(ValueError, match=r"^requests\[0\]\.prompt_len:"):
        s.replace(max_model_len=64)
    with pytest.raises(ValueError, match="^block_size:"):
        dataclasses.replace(s, block_size=24)
    with pytest.raises(ValueError, match="^num_gpu_blocks:"):
        dataclasses.replace(parse_spec("p100o20_blocks=9"), num_speculative_tokens=9)
    assert dataclasses.replace(s, seed=3) == parse_spec("p100o20_p600o20_mml=2k_seed=3")


def test_requests_normalised_to_tuples():
    """Lists of lists become tuples of RequestSpec, so scenarios compare and hash by value."""
    a = Scenario(requests=[[0, 10, 5], (2, 20, 6)], cudagraph_capture_sizes=[1, 2])
    b = Scenario(requests=(RequestSpec(0, 10, 5), RequestSpec(2, 20, 6)), cudagraph_capture_sizes=(1, 2))
    assert a == b and hash(a) == hash(b)
    assert isinstance(a.requests, tuple) and isinstance(a.cudagraph_capture_sizes, tuple)


def test_unknown_preset_lists_known_ones():
    """Scenario.preset('nope') raises ValueError naming it and listing every known preset."""
    with pytest.raises(ValueError) as err:
        Scenario.preset("nope")
    msg = str(err.value)
    assert "'nope'" in msg and "known presets" in msg
    for name in list_presets():
        assert name in msg


def test_memory_bounds_are_named():
    """Scenarios whose block tables or KV pool the lab could not hold fail with the field named."""
    with pytest.raises(ValueError, match="^max_num_seqs: .* entries"):
        parse_spec("p10o1_seqs=4096_mml=16384k_bs=1")
    with pytest.raises(ValueError, match="^num_gpu_blocks: must be at most"):
        parse_spec("p10o1_blocks=1000000000")
