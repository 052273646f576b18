"""Notebook 07's exercises (every path vLLM 0.33.0 hands a max_seq_len: the DFlash family, n-gram, the encoder
model states)."""

from __future__ import annotations

from lab.exercises.checker import Exercise, Trap, step_of, trace_of

# Whisper-like: an encoder-decoder model's decoder, run without chunked prefill.
ENCODER_DECODER_SPEC = "3p200o20_mml=4k_tokens=4k_cg=piecewise_state=encoder-decoder"


def _dflash_ub(index: int) -> int:
    st = step_of("dflash-k7", index)
    return max(st.seq_lens_cpu_upper_bound[: st.num_reqs])


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "07.1",
        "`dflash-k7`, step 10: what `max_seq_len` does the DFlash query pass get in the fixed mode?",
        lambda: step_of("dflash-k7", 10).drafts[0].max_seq_len["fixed"],
        hint="DFlashSpeculator.propose: min(max upper bound + num_query_per_req, max_model_len), and its query is "
        "the bonus token plus K mask tokens.",
        nudge="step.drafts[0].max_seq_len['fixed'] of that step (pass 0 is DFlash's query pass); the drafts "
        "view draws it, and lab/speculators.py gives DFlash's num_query_per_req.",
        traps=(
            Trap(lambda: _dflash_ub(10) + 7, "one short: that's Eagle's +K; DFlash's query has the bonus token too"),
            Trap(
                lambda: _dflash_ub(10), "too low: that's the target's batch maximum; the query pass adds its own length"
            ),
            Trap(
                lambda: trace_of("dflash-k7").scenario.max_model_len,
                "that's max_model_len: the baseline, which DFlash never had in MRV2",
            ),
        ),
    ),
    Exercise(
        "07.2",
        "Spec `" + ENCODER_DECODER_SPEC + "`, step 4: what `max_seq_len` did vLLM 0.22.1 (the era after #40654) "
        "hand the decoder's attention?",
        lambda: step_of(ENCODER_DECODER_SPEC, 4).history()["after #40654"]["max_seq_len"],
        hint="step.history(); 0.22.1's WhisperModelState.prepare_attn (docs/eras.md).",
        nudge="simulate(Scenario.from_spec(ENCODER_DECODER_SPEC)).steps[4].history()['after #40654'] and "
        "its 'max_seq_len' key (the era of vLLM 0.22.1).",
        traps=(
            Trap(
                lambda: trace_of(ENCODER_DECODER_SPEC).scenario.max_model_len,
                "that's max_model_len: 0.19.1's WhisperModelState, and the mamba-hybrid state's until #43991; "
                "the encoder-decoder state had the batch max by 0.22.1",
            ),
        ),
    ),
)
