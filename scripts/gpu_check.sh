#!/usr/bin/env bash
# GPU check of the lab's kernels, for a machine with an NVIDIA GPU where torch (CUDA build) and
# Triton are installed (vLLM need not be). Installs nothing big: only pytest/numpy if missing.
# Runs the GPU tests, the live kernel run and `python -m lab bench kernels --device cuda`, and
# writes logs, JSON and markdown tables to a folder. Where this Python has vLLM 0.33.0 (a CUDA build),
# also `python -m lab bench vllm-kernels --device cuda`: vLLM's own Triton MLA decode, Triton unified
# attention and FlexAttention mask build in both modes, compiled, timed beside the grids, scratch and
# loads the CPU interpreter counts (docs/kernels.md "vLLM's own kernels"). Every step has a timeout;
# together at most 150 + 100 + 3 x 40 + 50 + 120 s = 9 minutes, plus start-up.
#
#   scripts/gpu_check.sh [OUT_DIR]        (default: $OUT, else ./gpu-results)
set -u
cd "$(dirname "$0")/.."
OUT_DIR=${1:-${OUT:-gpu-results}}
mkdir -p "$OUT_DIR"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
log() { echo "== $*" | tee -a "$OUT_DIR/summary.txt"; }
start=$(date +%s)

$PY - <<'PY' 2>&1 | tee "$OUT_DIR/env.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", torch.cuda.get_device_name(0), "sm", f"{p.major}{p.minor}", "SMs", p.multi_processor_count)
try:
    import triton; print("triton", triton.__version__)
except ImportError:
    print("triton not installed")
PY
$PY -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" || { log "no CUDA device: nothing to check"; exit 1; }
$PY -c "import pytest, numpy" 2>/dev/null || $PY -m pip install -q pytest numpy 2>&1 | tail -2

log "backends on this machine"
$PY -m lab backends | tee "$OUT_DIR/backends.txt"

log "GPU tests (pytest -m gpu)"
timeout 150 $PY -m pytest -m gpu -q -rs -p no:cacheprovider tests/test_kernels_gpu.py \
  --junitxml "$OUT_DIR/pytest-gpu.xml" 2>&1 | tee "$OUT_DIR/pytest-gpu.log"
log "pytest exit: ${PIPESTATUS[0]}"

log "bench kernels, torch-reference on cuda"
timeout 100 $PY -m lab bench kernels --device cuda --repeats 10 \
  --json "$OUT_DIR/bench-torch-reference.json" --md "$OUT_DIR/bench-torch-reference.md" 2>&1 \
  | tee "$OUT_DIR/bench-torch-reference.log"
BACKENDS_HERE=$($PY -m lab backends)  # "NAME (DEVICE): runs here" or "NAME (DEVICE): not here: WHY"
for b in triton-split-kv flashinfer-trtllm-gen flashinfer-native; do
  line=$(grep -m1 "^$b (cuda):" <<<"$BACKENDS_HERE" || true)
  if [[ "$line" == *": runs here" ]]; then
    log "bench kernels, $b on cuda"
    dtype=float32; case "$b" in flashinfer-*) dtype=bfloat16;; esac
    timeout 40 $PY -m lab bench kernels --backend "$b" --device cuda --repeats 10 --dtype "$dtype" \
      --shape 64x4k/32k/16 --shape 16x4k/128k/16 \
      --json "$OUT_DIR/bench-$b.json" --md "$OUT_DIR/bench-$b.md" 2>&1 | tee "$OUT_DIR/bench-$b.log"
  else
    log "skip $b: ${line#*: }"
  fi
done

log "live run: short-decode-long-context, torch-reference on cuda, every 16th step"
timeout 50 $PY -m lab simulate --preset short-decode-long-context --backend torch-reference --device cuda \
  --every 16 --repeats 5 --quiet --out "$OUT_DIR/live-trace.json" 2>&1 | tee "$OUT_DIR/live.log"

if $PY -c "import sys, vllm; sys.exit(0 if vllm.__version__ == '0.33.0' else 1)" 2>/dev/null; then
  log "bench vllm-kernels on cuda (vLLM's own kernels, compiled, both modes)"
  timeout 120 $PY -m lab bench vllm-kernels --device cuda --repeat 20 --shape 4x250/4k/16 --shape 8x1ks/32k/16 \
    --shape 4x250/128k/16 --shape 64x4k/128k/16 --json "$OUT_DIR/bench-vllm-kernels.json" 2>&1 \
    | tee "$OUT_DIR/bench-vllm-kernels.log"
else
  log "skip bench vllm-kernels: vLLM 0.33.0 is not importable by $PY (the CPU counts: make venv-vllm, then" \
    ".venv-vllm/bin/python -m lab bench vllm-kernels)"
fi

log "done in $(( $(date +%s) - start )) s; results in $OUT_DIR"
