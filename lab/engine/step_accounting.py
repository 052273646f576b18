"""The lab's own accounting of one ``execute_model`` step: what the trace records that vLLM never computes.

vLLM's ``GPUModelRunner.execute_model`` (vllm/v1/worker/gpu/model_runner.py) builds the attention
metadata and runs the model. The lab also follows what each kernel launch sees (R9:
``kernel_visible_max_seq_len``), the stale block-table entries (lab/engine/oor.py ``StaleLedger``),
what every walk reads past each row's blocks, and hands all of it to the observers as one
``StepRecord`` (lab/engine/step_record.py). ``ModelRunner.execute_model`` (lab/engine/model_runner.py)
makes one ``StepAccounting`` per step and calls it where vLLM's steps happen: the accounting reads
the runner's results and never changes what the runner computes.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from lab.engine.cudagraph import kernel_visible_max_seq_len
from lab.engine.model_states import MODES
from lab.engine.oor import StaleRegion
from lab.engine.step_record import BlockAppend, RequestAdded, RequestRemoved, StepRecord

_NO_IDS = np.empty(0, dtype=np.int32)


def freed_block_ids(removed: list[RequestRemoved]) -> np.ndarray:
    """The blocks the removed requests held, freed since the last step: with this step's new blocks,
    every owner change the stale ledger must follow."""
    if not removed:
        return _NO_IDS
    return removed[0].block_ids if len(removed) == 1 else np.concatenate([r.block_ids for r in removed])


class StepAccounting:
    """What one step records for the trace, gathered at the points of ``execute_model``'s steps.

    Call order: ``idle_step`` (nothing scheduled) or ``block_tables_gathered``,
    ``attn_metadata_built``, ``drafts_proposed``, ``walks_counted`` (before ``postprocess``), then
    ``step_record``.
    """

    def __init__(
        self, runner, scheduler_output, kv_owner: np.ndarray, removed: list[RequestRemoved], added: list[RequestAdded]
    ):
        self.runner = runner
        self.scheduler_output = scheduler_output
        self.kv_owner = kv_owner  # the block pool's owners
        self.removed = removed
        self.added = added
        self.freed = freed_block_ids(removed)
        self.block_append: BlockAppend | None = None  # this step's update_requests (None: no new blocks)
        self.stale_totals = None
        self.kernel_max_seq_len: dict[str, int] = {}
        self.draft_max_seq_len: dict[str, int] = {}
        self.walk_max_seq_len: list[int] = []
        self.walk_num_rows: list[int] = []
        self.num_blocks = None
        self.oor = None
        self.sliding: dict = {}

    def _settle_stale_ledger(self):
        """The ledger moves the stale entries whose blocks changed owner, and takes those the gather
        uncovered or overwrote."""
        out = self.scheduler_output
        return self.runner.stale_ledger.settle(self.kv_owner, out.new_block_ids, self.freed)

    def idle_step(self) -> StepRecord:
        """vLLM's "No need to run the model.": the ledger still follows the blocks freed and allocated."""
        self._settle_stale_ledger()
        return StepRecord(self.scheduler_output, self.removed, self.added, None)

    def block_tables_gathered(self) -> None:
        """After gather_block_tables (R6): the kernel's input table, stale columns included."""
        self.stale_totals = self._settle_stale_ledger()

    def attn_metadata_built(self, batch_desc, attn_metadata: dict) -> None:
        """R9: what the launch sees of each mode's max_seq_len (a FULL replay keeps the captured value)."""
        max_model_len = self.runner.max_model_len
        self.kernel_max_seq_len = {
            m: kernel_visible_max_seq_len(batch_desc.cg_mode, attn_metadata[m].max_seq_len, max_model_len)
            for m in MODES
        }

    def drafts_proposed(self) -> None:
        """R4: the speculator's own max_seq_len per mode, read right after ``propose``."""
        if self.runner.speculator is not None:
            self.draft_max_seq_len = dict(self.runner.speculator.draft_max_seq_len)

    def walks_counted(self, batch, drafts: list) -> None:
        """What each kernel launch walks: one walk per (pass, mode), the target pass then each draft
        pass; then what each walk reads out of range, and, with a sliding window, what it reads nulled."""
        runner = self.runner
        self.walk_max_seq_len = [self.kernel_max_seq_len[m] for m in MODES]
        # Encoder-only attention reads no block table: its walks have no rows.
        num_rows = batch.num_reqs_after_padding if runner.model_state.reads_block_table else 0
        self.walk_num_rows = [num_rows] * len(MODES)
        for d in drafts:
            self.walk_max_seq_len += [d.kernel_max_seq_len[m] for m in MODES]
            self.walk_num_rows += [d.num_reqs_padded] * len(MODES)
        self.num_blocks = runner.block_tables.num_blocks[batch.idx_mapping_np]
        self.oor = self._count_out_of_range(batch.num_reqs_after_padding)
        if runner.sliding is not None:
            self.sliding = dict(
                sliding_nulled_rows=runner.sliding.nulled,
                sliding_nulled=runner.sliding.walks(self.walk_max_seq_len),
                sliding_gathered=partial(runner.sliding.input_table, batch.num_reqs_after_padding),
            )

    def _count_out_of_range(self, num_reqs_padded: int) -> np.ndarray:
        """The lab's, not vLLM's: what each walk reads past each row's blocks, by class (lab/engine/oor.py;
        lab/engine/plain.py ``out_of_range_counts`` says it plainly)."""
        block_tables = self.runner.block_tables
        num_reqs = len(self.num_blocks)
        stale_totals = self.stale_totals
        # The ledger counts every batch row; rows past the batch hold ids only under vLLM 0.32.
        if block_tables.ids_past(num_reqs):
            stale_totals = None
        stale_columns = block_tables.stale_columns(num_reqs_padded)
        region = StaleRegion(stale_columns, self.num_blocks, block_tables.row_hwm, self.kv_owner, stale_totals)
        return region.walks(self.walk_max_seq_len, self.walk_num_rows, self.runner.block_size)

    def step_record(
        self, state, batch_desc, batch, attn_metadata: dict, drafts: list, num_accepted: np.ndarray
    ) -> StepRecord:
        """The step as the runner executed it, for the observers."""
        return StepRecord(
            self.scheduler_output,
            self.removed,
            self.added,
            self.block_append,
            batch_inst=state.batch_inst,
            dispatch_args=state.dispatch_args,
            batch_desc=batch_desc,
            batch=batch,
            attn_metadata=attn_metadata,
            kernel_max_seq_len=self.kernel_max_seq_len,
            gathered=partial(self.runner.block_tables.input_table, batch.num_reqs_after_padding),
            num_blocks=self.num_blocks,
            drafts=drafts,
            draft_max_seq_len=self.draft_max_seq_len,
            num_accepted=num_accepted,
            walk_max_seq_len=self.walk_max_seq_len,
            walk_num_rows=self.walk_num_rows,
            oor=self.oor,
            kv_owner=self.kv_owner,
            **self.sliding,
        )
