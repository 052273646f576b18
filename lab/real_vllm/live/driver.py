"""The engine driver: a ``Scenario`` run by a real vLLM engine (Model Runner V2) on this CPU.

``run_live(scenario)`` builds one in-process ``LLM`` on a tiny dummy-weight model (lab/real_vllm/live/models.py),
then runs the scenario once per mode: requests are added at their arrival steps (prompts as token
ids), the engine is stepped with ``LLMEngine.step()``, and the hooks (lab/real_vllm/live/tap.py) record each
step. Between the modes the engine is put back to its freshly built state (block pool free queue,
request slots, block tables), so both runs schedule and allocate identically; the driver checks it.

The only module of the lab, with lab/real_vllm/live/tap.py's callers, that imports vllm (lazily, in ``load``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time

from lab import vllm_env
from lab.engine.cudagraph import capture_sizes
from lab.engine.model_states import MODES
from lab.machine import cpu_model
from lab.real_vllm.live import cpu_platform, hooks, old_cpu
from lab.real_vllm.live.limits import HOW_TO_RUN, LIVE_SERIES, CpuCannotRun, LiveUnavailable, check_scenario
from lab.real_vllm.live.models import tiny_models, write_model
from lab.real_vllm.live.tap import Tap
from lab.speculators import speculator


def load(device: str = "cpu"):
    """Install vLLM's pre-import shim (lab/vllm_env.py), import vLLM and check its version. Returns (vllm module,
    series)."""
    try:
        vllm_env.install(device)  # before triton and vllm are imported: TRITON_INTERPRET is read at import
    except ImportError as e:
        raise LiveUnavailable(f"triton is not installed here ({e}); run from the live environment: {HOW_TO_RUN}") from e
    try:
        import vllm
    except ImportError as e:
        raise LiveUnavailable(f"vLLM is not importable here ({e}); run from the live environment: {HOW_TO_RUN}") from e
    try:
        ser = hooks.series(vllm.__version__)
    except hooks.UnsupportedVersion as e:
        raise LiveUnavailable(str(e)) from e
    return vllm, ser


def _engine_core(llm):
    client = llm.llm_engine.engine_core
    return getattr(client, "engine_core", client)


def _runner(llm):
    core = _engine_core(llm)
    worker = core.model_executor.driver_worker
    worker = getattr(worker, "worker", worker)
    return worker.model_runner


def reset_engine_state(llm) -> None:
    """Put the scheduler's block pool, the runner's request slots and block tables back to what a
    freshly built engine has, once every request finished: the next run then allocates the same
    block ids and slots in the same order as the first."""
    from vllm.v1.core.kv_cache_utils import FreeKVCacheBlockQueue

    core = _engine_core(llm)
    sched = core.scheduler
    if sched.has_unfinished_requests():
        raise RuntimeError("reset_engine_state: requests are still running")
    pool = sched.kv_cache_manager.block_pool
    for b in pool.blocks:
        if b.ref_cnt != 0 and b is not pool.null_block:
            raise RuntimeError(f"reset_engine_state: block {b.block_id} is still held")
        b.prev_free_block = b.next_free_block = None
    pool.free_block_queue = FreeKVCacheBlockQueue(pool.blocks)
    null = pool.free_block_queue.popleft()
    if null is not pool.null_block:
        raise RuntimeError("reset_engine_state: the null block is not block 0")
    runner = _runner(llm)
    rs = runner.req_states
    # The last finished requests reach the runner with the next step's scheduler output: remove them
    # now, as finish_requests would (sorted), and drop the scheduler's note of them.
    for rid in sorted(rs.req_id_to_index):
        runner._remove_request(rid)
    sched.finished_req_ids.clear()
    rs.free_indices[:] = list(range(len(rs.free_indices)))
    bt = runner.block_tables
    for t in bt.input_block_tables:
        t.zero_()
    for t in bt.block_tables:
        t.gpu.zero_()
    bt.num_blocks.np[:] = 0
    bt.num_blocks.copy_to_uva()


@contextlib.contextmanager
def _unpacked_weights_kept(on: bool):
    """DFlash and DSpark on the CPU: vLLM's CPU build packs each unquantized linear's weight for its GEMM and empties
    ``layer.weight`` (UnquantizedLinearMethod.process_weights_after_loading ->
    dispatch_cpu_unquantized_gemm(layer, remove_weight=True), model_executor/layers/utils.py); DFlash's
    _build_context_kv_buffers (models/qwen3_dflash.py) slices ``qkv_proj.weight`` itself, as on a GPU, and
    fails on the empty tensor. While the model loads, the weight is kept beside its packed copy
    (``remove_weight=False``): every GEMM still runs on the packed copy; only DFlash's fused context-KV
    projection reads the kept one. Nothing in the scheduler or the attention metadata changes."""
    if not on:
        yield
        return
    from vllm.model_executor.layers import utils

    orig = utils.dispatch_cpu_unquantized_gemm

    def keep(layer, remove_weight):
        return orig(layer, remove_weight=False)

    utils.dispatch_cpu_unquantized_gemm = keep
    try:
        yield
    finally:
        utils.dispatch_cpu_unquantized_gemm = orig


def engine_kwargs(scenario, folder: str, device: str = "cpu", series: str = LIVE_SERIES) -> dict:
    """vLLM's ``LLM``/``EngineArgs`` keywords for this scenario, its tiny models written under ``folder``."""
    s = scenario
    models = tiny_models(s)
    target = write_model(os.path.join(folder, "target"), models.target, s.max_model_len, **models.target_options)
    graphs = {}
    if device != "cpu" and s.cudagraph_mode != "NONE":  # GPU only (scripts/live_gpu.sh): unverified here
        graphs = {
            "compilation_config": {
                "cudagraph_mode": s.cudagraph_mode,
                "cudagraph_capture_sizes": [int(x) for x in capture_sizes(s)],
            }
        }
    kwargs = dict(
        model=str(target),
        load_format="dummy",
        skip_tokenizer_init=True,
        dtype="bfloat16",
        enforce_eager=s.cudagraph_mode == "NONE",
        **graphs,
        block_size=s.block_size,
        max_model_len=s.max_model_len,
        max_num_seqs=s.max_num_seqs,
        max_num_batched_tokens=s.max_num_batched_tokens,
        num_gpu_blocks_override=s.total_num_gpu_blocks,
        enable_prefix_caching=False,
        # what vLLM's CPU platform turns it into (lab/real_vllm/live/cpu_platform.py): cpu_variant already asks for that
        enable_chunked_prefill=s.enable_chunked_prefill,
        async_scheduling=False,
        seed=s.seed,
    )
    if vllm_env.needs_port(series):
        kwargs["distributed_executor_backend"] = "uni"  # in-process: the hooks see the worker (0.22.1 forces mp)
    if s.num_speculative_tokens:
        # The speculator's record (lab/speculators.py): the method vLLM runs it under (Gemma4 and multi-module
        # MTP are "mtp": SpeculativeConfig.use_gemma4_mtp, use_multi_module_mtp pick them from the model),
        # its draft folder (a tiny EAGLE/EAGLE3 head, a whole tiny Llama for draft_model; none for n-gram,
        # extract-hidden-states and MTP, which drafts with the target's own layer) and the keys vLLM needs
        # beside them (n-gram's lookup window, extract-hidden-states' layer ids).
        record = speculator(s.speculative_method)
        config = {"method": record.vllm_method}
        if record.live.draft:
            draft = write_model(os.path.join(folder, "draft"), models.draft, s.max_model_len, **models.draft_options)
            config["model"] = str(draft)
        config["num_speculative_tokens"] = s.num_speculative_tokens
        kwargs["speculative_config"] = {**config, **dict(record.live.config)}
    return kwargs


def build_llm(scenario, folder: str, device: str = "cpu", series: str = LIVE_SERIES):
    """The in-process engine for this scenario (its settings, a tiny model, dummy weights). On the CPU,
    vLLM's refusal of this CPU (NotImplementedError from its platform or kernels) is ``CpuCannotRun``."""
    from vllm import LLM

    s = scenario
    unpacked = bool(s.num_speculative_tokens) and speculator(s.speculative_method).live.unpacked_weights
    kwargs = engine_kwargs(s, folder, device, series)
    with _unpacked_weights_kept(device == "cpu" and unpacked):
        try:
            llm = LLM(**kwargs)
        except NotImplementedError as e:
            if device != "cpu":
                raise
            raise CpuCannotRun(f"vLLM cannot run this scenario on this CPU ({cpu_model()}): {e}") from e
    from vllm.v1.worker.gpu.model_runner import GPUModelRunner

    if not isinstance(_runner(llm), GPUModelRunner):  # the runner itself (0.19 has no use_v2_model_runner)
        raise LiveUnavailable("vLLM did not pick Model Runner V2 (VLLM_USE_V2_MODEL_RUNNER=1 was ignored)")
    return llm


def attention_backends(vllm_config) -> list[str]:
    """The attention backends vLLM built the model's attention layers with (AttentionBackend.get_name())."""
    layers = vllm_config.compilation_config.static_forward_context.values()
    return sorted({layer.attn_backend.get_name() for layer in layers if getattr(layer, "attn_backend", None)})


def cpu_attn_isa(vllm_config) -> str | None:
    """The kernel ISA vLLM's CPU_ATTN runs on this CPU (cpu_attn.py ``_get_attn_isa``: amx, vec, vec16,
    neon, ...), from vLLM's own rule; None where this release has no such rule."""
    import torch

    try:
        from vllm.v1.attention.backends.cpu_attn import _get_attn_isa
    except ImportError:
        return None
    block_size = vllm_config.cache_config.block_size
    return _get_attn_isa(torch.bfloat16, block_size, vllm_config.model_config.get_head_size())


def platform_facts(llm, scenario, series: str) -> dict:
    """What vLLM's CPU platform chose for the engine it built (backend, block size, chunked prefill, budget),
    held to lab/real_vllm/live/cpu_platform.py's plan for the live series: a CPU the plan does not foresee stops the
    recording with both sides named, instead of a comparison with the wrong scenario."""
    import torch

    config = llm.llm_engine.vllm_config
    chosen = cpu_platform.what_vllm_chose(config)
    backends = attention_backends(config)
    facts = {**chosen, "attention_backends": backends, "cpu": cpu_model(), "torch_threads": torch.get_num_threads()}
    if "CPU_ATTN" in backends:
        facts["isa"] = cpu_attn_isa(config)
    if series != LIVE_SERIES:
        return facts
    plan = cpu_platform.plan(scenario)
    bad = cpu_platform.disagreements(plan, chosen, tiny_models(scenario).uses_mla)
    if plan.attention_backend not in backends:
        built = ", ".join(backends) or "none"
        bad.append(f"attention backend: vLLM built {built}, the lab planned {plan.attention_backend}")
    if bad:
        raise LiveUnavailable(
            f"vLLM's CPU platform did not run this scenario as lab/real_vllm/live/cpu_platform.py plans on this CPU "
            f"({cpu_model()}, AMX tiles: {plan.amx}): " + "; ".join(bad)
        )
    why = plan.block_size_why
    return {**facts, "attention_backend": plan.attention_backend, "amx": plan.amx, "block_size_why": why}


def drive(llm, scenario, tap: Tap, progress=None) -> int:
    """Add each request at its arrival step and step the engine until all finished (or max_num_steps).
    Returns the number of steps that ran a batch."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    s = scenario
    eng = llm.llm_engine
    order = sorted(range(len(s.requests)), key=lambda i: s.requests[i].arrival_step)
    nxt = 0
    clock = 0
    num_steps = 0
    while (nxt < len(order) or eng.has_unfinished_requests()) and num_steps < s.max_num_steps:
        if not eng.has_unfinished_requests() and nxt < len(order):
            clock = max(clock, s.requests[order[nxt]].arrival_step)  # idle: jump to the next arrival
        while nxt < len(order) and s.requests[order[nxt]].arrival_step <= clock:
            i = order[nxt]
            r = s.requests[i]
            tokens = [(7 + 13 * i + j) % 500 + 3 for j in range(r.prompt_len)]
            params = SamplingParams(
                max_tokens=min(r.output_len, s.max_model_len - r.prompt_len), ignore_eos=True, detokenize=False
            )
            eng.add_request(f"req-{i}", TokensPrompt(prompt_token_ids=tokens), params)
            nxt += 1
        tap.begin(clock)
        eng.step()
        step = tap.end()
        clock += 1
        num_steps += bool(step is not None and not step.idle)
        if progress is not None:
            progress(num_steps)
    tap.truncated = eng.has_unfinished_requests()
    if tap.truncated:  # max_num_steps reached: end the rest so a next run starts clean
        core = _engine_core(llm)
        ids = [r.request_id for r in list(core.scheduler.requests.values())]
        eng.abort_request(ids)
        tap.begin(clock)
        while eng.has_unfinished_requests():
            eng.step()
        tap.cur = None
    return num_steps


def run_live(scenario, modes=MODES, time_attention: bool = True, progress=None, device: str = "cpu") -> dict:
    """Run ``scenario`` on vLLM once per mode. Returns {"taps": {mode: Tap}, "version", "series",
    "build_s", "run_s": {mode: seconds}, "truncated", "platform": what vLLM's CPU platform chose}."""
    vllm, ser = load(device)
    check_scenario(scenario, ser, device)
    time_attention = time_attention and device == "cpu"  # the hook times vLLM's CPU attention backend
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lab-live-") as folder, old_cpu.installed(ser):
        llm = build_llm(scenario, folder, device, ser)
        platform = platform_facts(llm, scenario, ser) if device == "cpu" else {}
        build_s = time.perf_counter() - t0
        taps, run_s = {}, {}
        truncated = False
        for k, mode in enumerate(modes):
            if k:
                reset_engine_state(llm)
            tap = Tap(scenario, mode, time_attention, ser)
            if scenario.model_state == "mamba_hybrid":
                tap.hybrid = True
            t1 = time.perf_counter()
            with hooks.installed(vllm.__version__, tap.wrappers()):
                drive(llm, scenario, tap, progress)
            truncated = tap.truncated
            run_s[mode] = time.perf_counter() - t1
            taps[mode] = tap
        del llm
    return {
        "taps": taps,
        "version": vllm.__version__,
        "series": ser,
        "build_s": build_s,
        "run_s": run_s,
        "truncated": truncated,
        "platform": platform,
    }
