"""What one ``execute_model`` did, handed to every observer of the engine's step loop.

The runner builds one ``StepRecord`` per scheduler step (idle steps included, with ``batch`` None)
and calls ``observer.on_step(record)`` on each observer; after the last step it calls
``observer.on_finish(end)``. The trace recorder (lab/trace/recorder.py), the invariant checker
(tests/invariants.py) and conformance (lab/real_vllm/conform/recording.py) are such observers: none of
them reaches into the runner.

Arrays are the runner's own for this step: observers keep what they need and must not write to them
(nor to the records: ``RequestAdded``, ``RequestRemoved`` and ``BlockAppend`` are slotted dataclasses,
not frozen ones, whose construction costs three times as much on every churn step).
``block_table`` is built from the engine's block tables when first read: read it during ``on_step``
(a later step changes what it would be built from).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from lab.engine.cudagraph import BatchExecutionDescriptor
from lab.engine.input_batch import InputBatch
from lab.engine.model_states import AttnMetadata
from lab.engine.scheduler import SchedulerOutput
from lab.engine.speculator import DraftPassMetadata


@dataclass(slots=True)
class RequestAdded:
    """A request state added before this step (vllm RequestState.add_request)."""

    inst: int  # the lab's instance id (a preempted request comes back as a new instance)
    req_num: int  # scenario request number
    req_index: int  # request-state slot: its persistent block-table row
    mamba_state_idx: int  # -1 for the default model state


@dataclass(slots=True)
class RequestRemoved:
    """A request state removed before this step (finished or preempted), with the blocks it held."""

    inst: int
    req_index: int
    block_ids: np.ndarray  # [num_blocks] its row of BlockTables.block_tables


@dataclass(slots=True)
class BlockAppend:
    """One BlockTables.append_block_ids call: ``counts[i]`` ids of ``block_ids`` to slot ``req_indices[i]``."""

    req_indices: np.ndarray  # [k] request slots
    counts: np.ndarray  # [k]
    block_ids: np.ndarray  # [sum(counts)], concatenated in order


@dataclass
class StepRecord:
    """One scheduler step as the runner executed it, with vLLM's names.

    Shapes: ``n`` = batch.num_reqs real rows, ``n_pad`` = batch.num_reqs_after_padding, ``P`` walks
    (the target pass then each draft pass, each in MODES order), ``F`` = len(OOR_FIELDS).
    """

    scheduler_output: SchedulerOutput
    removed: list[RequestRemoved]
    added: list[RequestAdded]
    block_append: BlockAppend | None  # this step's new block ids (None when there were none)
    # --- the rest is None/empty on an idle step (nothing scheduled) ---
    batch_inst: np.ndarray | None = None  # [n] instance of each batch row, in batch order
    dispatch_args: tuple | None = None  # (num_reqs, num_tokens, uniform_token_count) given to dispatch
    batch_desc: BatchExecutionDescriptor | None = None  # what the CUDA-graph manager chose (R8)
    batch: InputBatch | None = None  # R1: seq_lens_cpu_upper_bound, exact seq_lens, ...
    attn_metadata: dict[str, AttnMetadata] = field(default_factory=dict)  # mode -> prepare_attn result (R2)
    kernel_max_seq_len: dict[str, int] = field(default_factory=dict)  # mode -> what the launch sees (R9)
    # [n_pad, max_num_blocks_per_req] the gathered input table (R6), or what builds it on first read
    # (the engine's: most observers never read it): read ``block_table``, during ``on_step``.
    gathered: np.ndarray | Callable[[], np.ndarray] | None = None
    num_blocks: np.ndarray | None = None  # [n] valid columns of each row
    drafts: list[DraftPassMetadata] = field(default_factory=list)  # K draft passes (R4, R5)
    draft_max_seq_len: dict[str, int] = field(default_factory=dict)  # mode -> the speculator's value (R4)
    num_accepted: np.ndarray | None = None  # [n] drafts accepted in this step's verification
    walk_max_seq_len: list[int] = field(default_factory=list)  # [P] kernel_max_seq_len of each walk
    walk_num_rows: list[int] = field(default_factory=list)  # [P] rows each walk covers
    oor: np.ndarray | None = None  # [P, F] out-of-range counts of each walk
    kv_owner: np.ndarray | None = None  # owner instance of every block id (FREE, NULL_OWNER)
    # R11, only with a sliding-window group (lab/engine/sliding_window.py; None without one):
    sliding_nulled_rows: np.ndarray | None = None  # [n] entries its gather nulled in each row
    sliding_nulled: np.ndarray | None = None  # [P] entries each walk reads there that were nulled
    # [n_pad, max_num_blocks_per_req] its gathered table, or what builds it: read ``sliding_block_table``
    sliding_gathered: np.ndarray | Callable[[], np.ndarray] | None = None

    @property
    def sliding_block_table(self) -> np.ndarray | None:
        if callable(self.sliding_gathered):
            self.sliding_gathered = self.sliding_gathered()
        return self.sliding_gathered

    @property
    def block_table(self) -> np.ndarray | None:
        if callable(self.gathered):
            self.gathered = self.gathered()
        return self.gathered

    @property
    def scheduler_step(self) -> int:
        return self.scheduler_output.scheduler_step

    @property
    def is_idle(self) -> bool:
        return self.batch is None

    @property
    def cg_mode(self) -> str:
        return self.batch_desc.cg_mode


@dataclass(frozen=True)
class EngineEnd:
    """How the run ended: requests still live (max_num_steps reached) are handed over with their blocks."""

    num_preemptions: int
    truncated: bool  # max_num_steps reached with requests unfinished
    still_running: list[RequestRemoved]


class StepObserver(Protocol):
    def on_step(self, record: StepRecord) -> None: ...

    def on_finish(self, end: EngineEnd) -> None: ...
