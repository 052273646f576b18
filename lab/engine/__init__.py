"""The embedded engine: a scheduler and a Model Runner V2 reduced to what builds attention metadata.

Start with plain.py: the rules the engine optimises (the gather, the out-of-range count, the
scheduler's running pass) stated plainly, one row or one request at a time. Then read the modules
in the order ``GPUModelRunner.execute_model`` runs (lab/engine/model_runner.py):

1. scheduler.py     ``Scheduler.schedule``: who runs, how many tokens, which new blocks (R1's lag)
2. block_pool.py    the KV-cache block pool: null block 0, LIFO free queue, no clearing on free
3. model_runner.py  ``ModelRunner.execute_model``: request states (slots), ``append_block_ids``
4. input_batch.py   ``sort_batch`` (batch order) and ``seq_lens_cpu_upper_bound`` (R1)
5. cudagraph.py     ``CudaGraphManager.dispatch`` (R8) and what a FULL replay freezes (R9)
6. model_states.py  ``prepare_attn``: the target ``max_seq_len`` (R2, R3) in both modes, and the eras
7. block_table.py   ``BlockTables.gather_block_tables`` (R6) and ``compute_slot_mappings`` (R7)
8. speculator.py    ``TargetDependentARSpeculator.propose``: ``draft_max_seq_len`` (R4) and the draft passes (R5)
9. oor.py           out-of-range accounting: what a walk of ``cdiv(max_seq_len, block_size)`` columns reads
                    (``StaleRegion`` per step; ``StaleLedger`` carries the stale entries' classes across steps)
10. sliding_window.py ``SlidingWindowGroup``: a sliding-window KV group's table, nulled below the window (R11)
11. step_record.py  ``StepRecord``: what one step did, handed to every observer (``on_step``)

Rule -> where it lives (the vLLM 0.33.0 symbol it mirrors is named there; docs/rules.md lists all):

    R1  input_batch.seq_lens_cpu_upper_bound          vllm/v1/worker/gpu/model_runner.py prepare_inputs
    R2  model_states.DefaultModelState.prepare_attn   model_states/default.py, mamba_hybrid.py prepare_attn
    R3  model_states.prepare_attn(for_capture=True)   cudagraph_utils.py prepare_inputs_to_capture
    R4  speculator.draft_max_seq_len                  spec_decode/target_dependent_ar/speculator.py propose
    R5  speculator.draft_step_upper_bound             spec_decode/speculator.py _build_attn_metadata
    R6  block_table.BlockTables.gather_block_tables   block_table.py gather_block_tables
    R7  block_table.compute_slot_mappings             block_table.py compute_slot_mappings
    R8  cudagraph.CudaGraphManager.dispatch           cudagraph_utils.py CudaGraphManager
    R9  cudagraph.kernel_visible_max_seq_len          a FULL replay keeps its capture's launch arguments
    R10 lab/gpu_model/backends.py (one record per backend; the registry's kernels point at them)
    R11 sliding_window.SlidingWindowGroup.gather      block_table.py gather_block_tables(num_computed_tokens=)

This package's ``__init__`` imports nothing, so any module here can be imported alone.
"""
