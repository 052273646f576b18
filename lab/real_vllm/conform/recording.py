"""What the engine did, step by step, in the form conformance feeds to vLLM.

``EngineRecording`` is a step observer (lab/engine/step_record.py): the engine runs unchanged and
hands it each ``StepRecord``; it keeps the block-table calls of the step (to replay them on vLLM's
``BlockTables``), the batch, the dispatch, the metadata of both modes and the draft passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.engine.model_runner import run_engine
from lab.engine.oor import OOR_FIELDS
from lab.engine.step_record import EngineEnd, StepRecord


@dataclass
class RecordedStep:
    """One engine step (idle steps are not kept), as conformance compares it."""

    index: int  # position among the recorded (non-idle) steps: the trace's step index
    out: object  # the SchedulerOutput
    prefill_len: np.ndarray  # [n] per scheduled request, scheduler order (vLLM RequestState.prefill_len)
    block_ops: list  # ("add", req_index) | ("append", req_indices, counts, block_ids), in call order
    slot_ops: list  # ("remove", inst) | ("add", inst, req_num, req_index): request states, in call order
    dispatch_args: tuple  # (num_reqs, num_tokens, uniform_token_count) given to CudaGraphManager.dispatch
    batch: object  # the lab's InputBatch
    cg_mode: str
    attn_metadata: dict  # mode -> the lab's AttnMetadata
    inst: np.ndarray  # [n] instance of each batch row, batch order
    table: np.ndarray  # [num_reqs_padded, max_num_blocks_per_req] gathered input table (a copy)
    drafts: list  # DraftPassMetadata per draft pass
    draft_max_seq_len: int | None  # the speculator's fixed-mode value (R4)
    walked: int  # block-table entries every walk of the step read, both modes (lab/engine/oor.py)
    sliding_table: np.ndarray | None = None  # R11: the sliding-window group's gathered table (a copy), or None


class EngineRecording:
    """A step observer that keeps every non-idle step as a ``RecordedStep``."""

    def __init__(self):
        self.steps: list[RecordedStep] = []
        self._ops: list = []
        self._slot_ops: list = []

    def on_step(self, record: StepRecord) -> None:
        self._slot_ops += [("remove", r.inst) for r in record.removed]
        self._slot_ops += [("add", a.inst, a.req_num, a.req_index) for a in record.added]
        self._ops += [("add", a.req_index) for a in record.added]
        if record.block_append is not None:
            a = record.block_append
            self._ops.append(("append", np.array(a.req_indices), np.array(a.counts), np.array(a.block_ids)))
        if record.is_idle:
            return  # an idle step's block-table calls (if any) carry over to the next step
        out = record.scheduler_output
        self.steps.append(
            RecordedStep(
                index=len(self.steps),
                out=out,
                prefill_len=out.prefill_len,  # a fresh array each step (fancy index)
                block_ops=self._ops,
                slot_ops=self._slot_ops,
                dispatch_args=record.dispatch_args,
                batch=record.batch,
                cg_mode=record.cg_mode,
                attn_metadata=record.attn_metadata,
                inst=np.array(record.batch_inst),
                table=record.block_table.copy(),
                drafts=record.drafts,
                draft_max_seq_len=record.draft_max_seq_len.get("fixed"),
                walked=int(record.oor[..., OOR_FIELDS.index("walked")].sum()),
                sliding_table=None if record.sliding_gathered is None else record.sliding_block_table.copy(),
            )
        )
        self._ops = []
        self._slot_ops = []

    def on_finish(self, end: EngineEnd) -> None:
        pass


def record_engine(scenario) -> list[RecordedStep]:
    """Run the lab's engine on ``scenario`` and return every (non-idle) step as conformance needs it."""
    recording = EngineRecording()
    run_engine(scenario, [recording])
    return recording.steps
