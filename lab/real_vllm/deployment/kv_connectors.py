"""vLLM 0.33.0's KV connectors, asked what ``--kv-transfer-config`` changes in a deployment: whether each supports the
hybrid KV cache manager (``SupportsHMA``; without it ``VllmConfig.__post_init__`` sets
``disable_hybrid_kv_cache_manager``, so no SlidingWindowSpec and no R11) and which ``kv_connector_extra_config`` key
makes ``requires_piecewise_for_cudagraph`` turn FULL graphs into PIECEWISE. Runs in .venv-vllm;
``python -m lab.real_vllm.deployment.kv_connectors --write`` rewrites lab/deployment/kv_connectors.json and
tests/conformance/test_deployment_flags_vllm.py fails when it differs. A connector whose module needs a package not
installed there is listed with ``null``: the lab says it does not know its effect."""

from __future__ import annotations

import json
import sys

from lab.deployment.kv_transfer import CONNECTORS_FILE, PIECEWISE_KEYS
from lab.real_vllm.conform.vllm_mrv2 import load_vllm


def connectors() -> dict:
    load_vllm()
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
    from vllm.distributed.kv_transfer.kv_connector.v1.base import supports_hma

    out = {}
    for name, loader in sorted(KVConnectorFactory._registry.items()):
        try:
            cls = loader()
        except ImportError:
            out[name] = None
            continue
        out[name] = {
            "supports_hma": bool(supports_hma(cls)),
            "piecewise_when": [k for k in PIECEWISE_KEYS if cls.requires_piecewise_for_cudagraph({k: True})],
        }
    return out


if __name__ == "__main__":
    table = connectors()
    if "--write" in sys.argv:
        CONNECTORS_FILE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(table)} connectors to {CONNECTORS_FILE}")
    else:
        print(json.dumps(table, indent=1, sort_keys=True))
