"""Does max_seq_len matter on my GPU? A model per attention backend and GPU (rule R10).

``predict(trace, gpu, shape)`` says, for each backend vLLM could run on ``gpu``, whether and how the
``max_seq_len`` handed to attention changes the work, and predicts the baseline's extra work over
the trace (CTAs launched, KV tiles or pages walked, bytes) next to the fixed mode's. Every prediction
starts from ``step.kernel_max_seq_len`` (R9). The sources read for each formula and how they were
checked: docs/sweeps.md "Does it matter on my GPU?".

    gpus.py      the GPUs (GPU, GPUS) and the model's head shape (HeadShape)
    backends.py  the backend table: name, R10 verdict, work formula, GPUs, sources (also read by
                 lab/kernels/registry.py)
    formulas.py  the work formulas (trtllm_gen_decode, lab_split_plan, one *_work per kind of backend)
    predict.py   predict, predict_draft_pass, backends_for: the formulas summed over a trace's target
                 passes (or one draft pass); the lab's measurement beside
    report.py    summary, format_summary, format_model: the text of python -m lab gpu-model
    fa3_splits.py  FA3's split count as flash-attention's num_splits_heuristic decides it (restated)
    observed.py  the observation table (observed.json: what vLLM's own code hands each kernel) and R9 from it
"""

from lab.gpu_model.backends import BACKENDS, BY_NAME, Backend, Source
from lab.gpu_model.formulas import FA3_BLOCK_N, TILE_KV, lab_split_plan, trtllm_gen_decode
from lab.gpu_model.gpus import GPU, GPUS, HeadShape
from lab.gpu_model.predict import backends_for, predict, predict_draft_pass
from lab.gpu_model.report import HEADLINE, format_model, format_summary, summary

__all__ = [
    "GPU",
    "GPUS",
    "HeadShape",
    "Backend",
    "Source",
    "BACKENDS",
    "BY_NAME",
    "TILE_KV",
    "FA3_BLOCK_N",
    "trtllm_gen_decode",
    "lab_split_plan",
    "backends_for",
    "predict",
    "predict_draft_pass",
    "HEADLINE",
    "summary",
    "format_summary",
    "format_model",
]
