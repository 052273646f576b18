#!/usr/bin/env bash
# Record what the CPU live recorder cannot (docs/live.md, "What stays unverified without a GPU") on a
# machine with an NVIDIA GPU: CUDA graphs (FULL_AND_PIECEWISE, PIECEWISE), the fused draft path, and the
# mamba-hybrid model state, with CUDA vLLM 0.32.0 (the hooks also know 0.33.x). Async scheduling is not
# recorded: the recorder steps the engine synchronously.
#
#   bash scripts/live_gpu.sh [OUT_DIR]      # default out/live_gpu; needs ~10 GB of disk and network to PyPI
#
# Each recording is compared with the embedded engine (python -m lab compare); the tables and traces land
# in OUT_DIR. NOT RUN YET: no GPU machine was available when this was written; nothing in the repository
# claims a GPU result.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/live_gpu}
VLLM_VERSION=${VLLM_VERSION:-0.32.0}
mkdir -p "$OUT"
VENV=.venv-vllm-gpu
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "vllm==$VLLM_VERSION"   # its own CUDA torch
  "$VENV/bin/python" -m pip install -q --no-deps -e .
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
run() {  # name spec
  echo "== $1: $2"
  "$VENV/bin/python" -m lab record --device cuda --spec "$2" --out "$OUT/$1.json" --quiet 2>&1 | tail -3 \
    | tee "$OUT/$1.log"
  "$VENV/bin/python" -m lab compare "$OUT/$1.json" | tee "$OUT/$1.compare.txt" || true
}
S="sched=sync_vllm=${VLLM_VERSION%.*}"
run full-graphs      "6p512o160_6p512o48a2_capture=1/2/4/8_$S"
run piecewise        "8p512o100_mml=32k_cg=piecewise_$S"
run eagle-full       "8p256o64_k=3_accept=0.7_mml=4k_$S"
run hybrid           "8p512o64_state=mamba_mml=8k_cg=piecewise_$S"
echo "results in $OUT"
