"""Each backend record of the GPU model runs on the GPUs vLLM 0.33.0's own gates allow among the listed ones
(lab/gpu_model/gpus.py ``CUDA_SMS``): the backend class's ``supports_compute_capability`` and, for FlashInfer's
three decode paths, ``vllm/utils/flashinfer.py supports_trtllm_attention``. Those gates are compiled from the
wheel's files with ``ast`` and run here, so the test needs no CUDA, no flashinfer and no kernel package (the
classes' modules import them). A record that ran on fewer GPUs than vLLM's gate left B300 and the SM8x GPUs
with "the lab has no work model" for kernels it has (the B300 grid answered differently from B200's). Runs in
``.venv-vllm`` (skipped elsewhere, required under LAB_REQUIRE_VLLM=1)."""

from __future__ import annotations

import ast
import importlib.util
import os
from pathlib import Path

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

from gate_standins import trtllm_globals  # noqa: E402
from vllm.platforms.interface import DeviceCapability  # noqa: E402
from vllm.v1.attention.backends.registry import AttentionBackendEnum  # noqa: E402

from lab.deployment.backend_rules import fa_version  # noqa: E402
from lab.gpu_model import BY_NAME  # noqa: E402
from lab.gpu_model.backends import VLLM_BACKEND_OF  # noqa: E402
from lab.gpu_model.gpus import CUDA_SMS  # noqa: E402

VLLM = Path(importlib.util.find_spec("vllm").origin).parent
BASE = ("vllm.v1.attention.backend", "AttentionBackend")


def _compiled(path: Path, name: str, cls: str | None, namespace: dict):
    """vLLM's own ``name`` (a method of ``cls``, or a module function), its decorators and annotations dropped,
    compiled from ``path`` into ``namespace``; None where ``cls`` does not define it."""
    body = ast.parse(path.read_text()).body
    if cls is not None:
        body = next(c.body for c in body if isinstance(c, ast.ClassDef) and c.name == cls)
    node = next((f for f in body if isinstance(f, ast.FunctionDef) and f.name == name), None)
    if node is None:
        return None
    node.decorator_list, node.returns = [], None
    for a in node.args.args + node.args.kwonlyargs:
        a.annotation = None
    exec(compile(ast.Module([node], []), str(path), "exec"), namespace)  # noqa: S102 - vLLM's own text
    return namespace[name]


def _module_file(module: str) -> Path:
    return VLLM.joinpath(*module.split(".")[1:]).with_suffix(".py")


def supports(vllm_name: str, sm: int) -> bool:
    """``AttentionBackendEnum[vllm_name]``'s class ``supports_compute_capability`` on SM ``sm`` (the base class's
    where the class defines none)."""
    module, _, cls = AttentionBackendEnum[vllm_name].get_path().rpartition(".")
    for mod, c in ((module, cls), BASE):
        fn = _compiled(_module_file(mod), "supports_compute_capability", c, {"DeviceCapability": DeviceCapability})
        if fn is not None:
            return bool(fn(None, DeviceCapability(sm // 10, sm % 10)))
    raise AssertionError(f"{vllm_name}: no supports_compute_capability")


def trtllm(sm: int, is_prefill: bool) -> bool:
    """vllm/utils/flashinfer.py ``supports_trtllm_attention`` on SM ``sm`` (batch invariance off, the cubins
    reachable: the lab's assumption for a serving GPU)."""
    gate = _compiled(VLLM / "utils" / "flashinfer.py", "supports_trtllm_attention", None, trtllm_globals(sm))
    return bool(gate(is_prefill))


def vllm_runs(record: str, sm: int) -> bool:
    """Whether vLLM 0.33.0 runs the kernel ``record`` models on SM ``sm``."""
    name = VLLM_BACKEND_OF[record]
    if not supports(name, sm):
        return False
    if record == "trtllm-gen":  # both phases on TRTLLM-gen kernels: the SM100 family
        return trtllm(sm, is_prefill=True)
    if record == "flashinfer-xqa":  # XQA decode only: SM90 and SM12x
        return trtllm(sm, is_prefill=False) and not trtllm(sm, is_prefill=True)
    if record == "fa3":  # FLASH_ATTN runs FA3 where get_flash_attn_version says 3 (tests/conformance checks it)
        return fa_version(sm) == 3
    if record == "flashmla":  # the dense decode: vllm/v1/attention/ops/flashmla.py is_flashmla_dense_supported
        text = (VLLM / "v1" / "attention" / "ops" / "flashmla.py").read_text()
        assert "if not current_platform.is_device_capability_family(90):" in text
        return sm // 10 == 9
    return True


RECORDS = sorted(r for r in VLLM_BACKEND_OF if r in BY_NAME and VLLM_BACKEND_OF[r] != "CPU_ATTN")


@pytest.mark.parametrize("record", RECORDS)
def test_a_backend_record_runs_where_vllm_runs_its_kernel(record):
    lab = [sm for sm in CUDA_SMS if sm in BY_NAME[record].sms]
    vllm = [sm for sm in CUDA_SMS if vllm_runs(record, sm)]
    assert lab == vllm, f"{record}: the lab's record runs on {lab}, vLLM 0.33.0 on {vllm}"


def test_the_gates_are_read_not_assumed():
    """The compiled gates answer as their source says: TRTLLM-gen on SM100/SM103 only, XQA decode on SM90 and the
    SM12x family (the GeForce RTX 5090 / RTX PRO 6000 rows), FlashInfer from SM80."""
    assert [sm for sm in CUDA_SMS if trtllm(sm, is_prefill=True)] == [100, 103]
    assert [sm for sm in CUDA_SMS if trtllm(sm, is_prefill=False)] == [90, 100, 103, 120]
    assert BY_NAME["flashinfer-xqa"].sms == (90, 120)
    assert supports("FLASHINFER", 80) and not supports("FLASHINFER_MLA", 90) and supports("FLASHINFER_MLA", 103)
