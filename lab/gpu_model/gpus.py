"""The GPUs the model knows and the head shape of the model whose bytes it counts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPU:
    name: str
    sm: int  # compute capability x 10 (90 Hopper, 100 Blackwell); 0 for a CPU
    num_sms: int
    note: str = ""
    # Device memory as torch reports it (decimal GB x 1e9): vLLM sizes its scheduler defaults from it
    # (vllm/engine/arg_utils.py EngineArgs.get_batch_defaults).
    memory_bytes: int = 0


GPUS = {
    "H100": GPU("H100 SXM (SM90)", 90, 132, memory_bytes=80 * 10**9),
    "H200": GPU("H200 (SM90)", 90, 132, memory_bytes=141 * 10**9),
    "B200": GPU("B200 (SM100)", 100, 148, memory_bytes=180 * 10**9),
    "CPU": GPU("CPU (vLLM CPU backend)", 0, 0),
}


@dataclass(frozen=True)
class HeadShape:
    num_q_heads: int = 32
    num_kv_heads: int = 8
    head_dim: int = 128
    dtype_bytes: int = 2

    def __post_init__(self):
        if (
            min(self.num_q_heads, self.num_kv_heads, self.head_dim, self.dtype_bytes) < 1
            or self.num_q_heads % self.num_kv_heads
        ):
            raise ValueError(f"heads: need positive sizes and query heads a multiple of KV heads, got {self}")

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token of one KV head."""
        return 2 * self.head_dim * self.dtype_bytes
