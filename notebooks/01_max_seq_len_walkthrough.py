# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # What `max_seq_len` does a Model Runner V2 step hand to attention?
#
# vLLM's Model Runner V2 (`vllm/v1/worker/gpu/`) builds attention metadata every step. One field,
# `max_seq_len`, tells the attention kernel the longest KV length in the batch. Before vLLM PR
# #40654 every path passed `max_model_len` (the context limit) instead; PR #43991 fixed the last two
# paths: `MambaHybridModelState.prepare_attn` and the Eagle/MTP draft metadata.
#
# This walkthrough drives the lab's engine through real batches and shows, step by step, what each
# mode passes: **baseline** (`max_model_len` everywhere, before the fixes) and **fixed** (the batch
# maximum, after #43991).

# %%
from lab import Scenario, list_presets, simulate

list_presets()

# %% [markdown]
# ## A short decode batch under a long context limit
#
# 32 requests with 512-token prompts, decoding under `max_model_len = 128k`. Rule R1: the CPU
# knows `seq_lens_cpu_upper_bound = num_computed_tokens + num_scheduled_tokens`; rule R2: the fixed
# `prepare_attn` passes its maximum.

# %%
trace = simulate(Scenario.preset("short-decode-long-context"))
step = trace.steps[20]
print(step)
print("upper bounds of the first rows:", step.seq_lens_cpu_upper_bound[:6])
print("max_seq_len baseline / fixed:", step.max_seq_len["baseline"], "/", step.max_seq_len["fixed"])

# %% [markdown]
# A kernel that sizes its work from `max_seq_len` walks `cdiv(max_seq_len, block_size)` columns of
# every row of the block table. Past each request's `num_blocks` it reads entries it should not:
# the null block, stale ids of finished requests, or blocks another live request owns now.

# %%
bs = trace.scenario.block_size
for mode in ("baseline", "fixed"):
    cols = -(-step.kernel_max_seq_len[mode] // bs)
    print(f"{mode:>8}: walks {cols} columns per row; out of range this step:",
          {k: v for k, v in step.oor[mode].items() if k in ("null", "live", "free", "padded")})

# %% [markdown]
# ## Stale block ids (R6)
#
# Each step `gather_block_tables` copies only columns `[0, num_blocks)` of each request into the
# input table. The columns after that keep whatever an earlier request in that batch row left.

# %%
stale = simulate(Scenario.preset("stale-block-reuse"))
# The first step where a baseline walk reads another request's live block.
def foreign(st):
    e = st.oor_entries("baseline")
    rows = e["row"][(e["class"] == "live")]
    owners = e["owner"][(e["class"] == "live")]
    return [int(r) for r, o in zip(rows, owners) if o != st.req_ids[r]]


st = next(s for s in stale.steps if s.oor["baseline"]["live"] and foreign(s))
e = st.oor_entries("baseline")
i = foreign(st)[0]
nb = st.num_blocks[i]
print(f"step {st.index}, batch row {i} = {st.req_ids[i]}, valid blocks {st.block_table[i, :nb].tolist()}")
print("  past num_blocks:", st.block_table[i, nb:nb + 6].tolist())
mine = e["row"] == i
for col, block, cls, owner in list(zip(e["col"][mine], e["block"][mine], e["class"][mine], e["owner"][mine]))[:6]:
    print(f"  column {col}: block {block} is {cls}" + (f", held by {owner}" if owner else ""))
print("this step, baseline:", {k: v for k, v in st.oor["baseline"].items()})
print("this step, fixed:   ", {k: v for k, v in st.oor["fixed"].items()})

# %% [markdown]
# ## CUDA graphs freeze what the kernel sees (R8, R9)
#
# A FULL-graph replay keeps the launch arguments of capture, where `prepare_attn` ran with
# `for_capture=True`, i.e. `max_model_len`. On those steps the fix moves the metadata, not the kernel.

# %%
fg = simulate(Scenario.preset("full-graph-vs-eager"))
for st in fg.steps[::20]:
    print(f"step {st.index:3d} {st.cudagraph_mode:9s} reqs {st.num_reqs:2d} padded to {st.num_reqs_padded:2d} "
          f"metadata {st.max_seq_len} kernel sees {st.kernel_max_seq_len}")

# %% [markdown]
# ## Eagle drafts (R4, R5)
#
# Draft pass 0 reuses the target metadata; passes 1..K-1 get
# `draft_max_seq_len = min(max(upper bound) + K, max_model_len)` after the fix.

# %%
eagle = simulate(Scenario.preset("eagle-k3"))
st = eagle.steps[10]
for d in st.drafts:
    print(d.index, d.cudagraph_mode, d.max_seq_len, "max draft upper bound", max(d.seq_lens_cpu_upper_bound))

# %% [markdown]
# ## The same, drawn (`lab.views`)
#
# The app's figures are plain functions of a trace and a step. The block table of the stale-block
# step above: green is valid, grey the null block, red a block a live request holds, orange a freed
# one; the vertical lines are the columns each mode's kernel walks. The timeline shows the FULL-graph
# steps as bands, where both modes' kernels see `max_model_len` (R9).

# %%
from lab.views import block_table_figure, summary_numbers, timeline_figure

stale_step = next(s for s in stale.steps if s.oor["baseline"]["live"] and foreign(s))
block_table_figure(stale, stale_step.index).show()
timeline_figure(fg, 60).show()
summary_numbers(stale, stale_step.index)["baseline"]

# %% [markdown]
# ## What it costs a kernel that sizes its work from `max_seq_len` (R10)
#
# `lab.run` replays steps of a trace through a real paged-attention kernel (the torch reference: it
# walks `cdiv(max_seq_len, block_size)` pages of every row and masks by `seq_lens`) in both modes on
# the same KV cache. The *trusting* variant does not mask pages past a row's own: it goes wrong
# exactly on the steps where the engine counts out-of-range entries. Times here are this machine's
# CPU (the trace's `timings` says which); on an H200 the kernels vLLM runs do not size their work
# from `max_seq_len`, on SM100 TRTLLM-gen they do (docs/kernels.md).

# %%
from lab import run
from lab.kernels.live import steps_within_budget

small = simulate(Scenario.from_spec("6p300o60a0+5_mml=8k_cg=piecewise"))
timed = run(small.scenario, trace=small, steps=steps_within_budget(small, 2 * 2**20), repeats=1, threads=1)
print(timed.timings["backend"], "on", timed.timings["device"])
for st in timed.steps:
    t = st.timing
    if t is None:
        continue
    oor = {m: sum(st.oor[m][c] for c in ("null", "live", "free")) for m in ("baseline", "fixed")}
    print(f"step {st.index:3d}: baseline {t['baseline']['ms']:7.2f} ms, fixed {t['fixed']['ms']:6.2f} ms; "
          f"out-of-range {oor['baseline']:5d}/{oor['fixed']}, trusting wrong "
          f"{t['baseline']['trusting_wrong']}/{t['fixed']['trusting_wrong']}")
    assert all((oor[m] > 0) == bool(t[m]["trusting_wrong"]) for m in oor)
