"""The conformance environment's settings, before any test module imports triton or vLLM: Triton's
interpreter (chosen when triton is imported) and no GPU, so vLLM hands out the real ``triton``
(vllm/triton_utils/importing.py), whichever test module runs first."""

import os

os.environ["TRITON_INTERPRET"] = "1"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
