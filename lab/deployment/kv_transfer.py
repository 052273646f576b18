"""What ``--kv-transfer-config`` changes in a deployment (vllm/config/vllm.py ``VllmConfig.__post_init__``):

- a connector without ``SupportsHMA`` (``KVConnectorFactory.supports_hma_config``; for MultiConnector, every child)
  turns the hybrid KV cache manager off where ``--disable-hybrid-kv-cache-manager`` is not given: no
  SlidingWindowSpec, so no block of a sliding-window layer is nulled (R11), and "hybrid SSM models ... require HMA
  and will fail at startup without it";
- a KV-transfer instance (a ``kv_role``) whose connector's ``requires_piecewise_for_cudagraph`` is true (LMCache
  with ``use_layerwise``) turns FULL graphs into PIECEWISE.

The connectors' answers are vLLM's, written to kv_connectors.json by lab/real_vllm/deployment/kv_connectors.py."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from lab.deployment.models import ModelFacts
from lab.deployment.scheduling import VllmRefusal

CONNECTORS_FILE = Path(__file__).with_name("kv_connectors.json")
# the extra-config switches a connector's requires_piecewise_for_cudagraph is asked about
PIECEWISE_KEYS = ("use_layerwise",)


@cache
def _connectors() -> dict:
    return json.loads(CONNECTORS_FILE.read_text())


def _children(kv: dict) -> list[dict]:
    if kv.get("kv_connector") != "MultiConnector":
        return [kv]
    return [c for c in (kv.get("kv_connector_extra_config") or {}).get("connectors", []) if isinstance(c, dict)]


def kv_transfer_effects(kv: dict, notes: list[str]) -> tuple[bool | None, bool]:
    """(supports the hybrid KV cache manager: None where a connector is not known, needs PIECEWISE graphs)."""
    if not kv or not kv.get("kv_connector"):
        return True, False
    hma, piecewise = True, False
    for child in _children(kv):
        name = str(child.get("kv_connector"))
        record = _connectors().get(name, "absent")
        if not isinstance(record, dict):
            notes.append(
                f"KV connector {name}: "
                + ("not one of vLLM 0.33.0's" if record == "absent" else "its module did not import where it was read")
                + ": whether it turns the hybrid KV cache manager or FULL graphs off is not modelled"
            )
            hma = None if hma else hma
            continue
        hma = hma and record["supports_hma"] if hma is not None else None
        extra = child.get("kv_connector_extra_config") or {}
        piecewise = piecewise or any(extra.get(k) for k in record["piecewise_when"])
    return hma, piecewise and bool(kv.get("kv_role"))


def kv_transfer(s: dict, facts: ModelFacts, notes: list[str]) -> tuple[bool | None, bool]:
    """The line's --kv-transfer-config for ``facts``: (hybrid KV cache manager kept, PIECEWISE required), refused
    where vLLM refuses it."""
    hma, piecewise = kv_transfer_effects(s.get("kv_transfer_config") or {}, notes)
    if hma is False:
        if s.get("disable_hybrid_kv_cache_manager") is False:  # --no-disable-hybrid-kv-cache-manager
            raise VllmRefusal(
                "Hybrid KV cache manager was explicitly enabled but is not supported in this configuration."
            )
        if facts.kind == "mamba_hybrid":
            raise VllmRefusal(
                "`--kv-transfer-config` selects a KV connector that does not support the hybrid KV cache manager; "
                "hybrid SSM models require HMA and will fail at startup without it"
            )
        notes.append(
            "--kv-transfer-config: its connector does not support the hybrid KV cache manager, so vLLM turns it off "
            "(no sliding-window KV group: R11 nulls no block)"
        )
    return hma, piecewise
