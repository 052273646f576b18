"""The GPUs the model knows and the head shape of the model whose bytes it counts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPU:
    name: str
    sm: int  # compute capability x 10 (80 Ampere, 89 Ada, 90 Hopper, 100/103 Blackwell, 120 GB202); 0 for a CPU
    num_sms: int
    note: str = ""
    # Device memory as NVML reports it (nvidia-smi's MiB total x 2**20; vllm/platforms/cuda.py NvmlCudaPlatform.
    # get_device_total_memory reads pynvml's nvmlDeviceGetMemoryInfo total): vLLM sizes its scheduler defaults from
    # it (vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: >= 160 GiB, >= 70 GiB unless "a100" in the name).
    memory_bytes: int = 0
    device_name: str = ""  # torch.cuda.get_device_name, what vLLM's get_device_name returns
    bandwidth_gb_s: int = 0  # peak DRAM bandwidth, GB/s
    source: str = ""  # where the SM count, memory and bandwidth come from


_MIB = 2**20
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (SXM4)"
_HOPPER = "NVIDIA H100 Tensor Core GPU datasheet"
_GB202_NOTE = "SMs, memory and bandwidth not read from a device here: memory is nvidia-smi's total in public reports"
GPUS = {
    "A100-40GB": GPU("A100 SXM4 40GB (SM80)", 80, 108, memory_bytes=40960 * _MIB, device_name="NVIDIA A100-SXM4-40GB",
                     bandwidth_gb_s=1555, source=_A100),
    "A100-80GB": GPU("A100 SXM4 80GB (SM80)", 80, 108, memory_bytes=81920 * _MIB, device_name="NVIDIA A100-SXM4-80GB",
                     bandwidth_gb_s=2039, source=_A100),
    "A10G": GPU("A10G (SM86)", 86, 80, memory_bytes=23028 * _MIB, device_name="NVIDIA A10G", bandwidth_gb_s=600,
                source="AWS EC2 G5 instance page; NVIDIA GA102 (A10) datasheet"),
    "L4": GPU("L4 (SM89)", 89, 58, memory_bytes=23034 * _MIB, device_name="NVIDIA L4", bandwidth_gb_s=300,
              source="NVIDIA L4 Tensor Core GPU datasheet"),
    "L40S": GPU("L40S (SM89)", 89, 142, memory_bytes=46068 * _MIB, device_name="NVIDIA L40S", bandwidth_gb_s=864,
                source="NVIDIA L40S GPU datasheet"),
    "H20": GPU("H20 (SM90)", 90, 78, memory_bytes=97871 * _MIB, device_name="NVIDIA H20", bandwidth_gb_s=4000,
               source="NVIDIA H20 product brief (as reported by vendors)"),
    "H100": GPU("H100 SXM (SM90)", 90, 132, memory_bytes=81559 * _MIB, device_name="NVIDIA H100 80GB HBM3",
                bandwidth_gb_s=3350, source=_HOPPER),
    "H100-PCIe": GPU("H100 PCIe (SM90)", 90, 114, memory_bytes=81559 * _MIB, device_name="NVIDIA H100 PCIe",
                     bandwidth_gb_s=2000, source=_HOPPER),
    "H200": GPU("H200 (SM90)", 90, 132, memory_bytes=143771 * _MIB, device_name="NVIDIA H200", bandwidth_gb_s=4800,
                source="NVIDIA H200 Tensor Core GPU datasheet"),
    "B200": GPU("B200 (SM100)", 100, 148, memory_bytes=183359 * _MIB, device_name="NVIDIA B200", bandwidth_gb_s=8000,
                source="NVIDIA DGX B200 datasheet (180 GB a GPU)"),
    "B300": GPU("B300 (SM103)", 103, 148, memory_bytes=288 * 10**9, device_name="NVIDIA B300 SXM6 AC",
                bandwidth_gb_s=8000, note="SMs and torch's memory figure not read from a B300: 148 assumed as on B200",
                source="NVIDIA Blackwell Ultra (HGX B300) page: 288 GB HBM3e, 8 TB/s"),
    # Consumer and workstation Blackwell (GB202, SM120; GB202 has 128 CUDA cores an SM). Memory: nvidia-smi's
    # memory.total as public reports print it for these cards; neither card was read here.
    "RTX-5090": GPU("GeForce RTX 5090 (SM120)", 120, 170, memory_bytes=32607 * _MIB,
                    device_name="NVIDIA GeForce RTX 5090", bandwidth_gb_s=1792, note=_GB202_NOTE,
                    source="NVIDIA GeForce RTX 5090 specs: 21,760 CUDA cores (170 SMs), 32 GB GDDR7, 512-bit at "
                           "28 Gbps = 1,792 GB/s (as quoted by reviews; NVIDIA's page not read here)"),
    "RTX-PRO-6000": GPU("RTX PRO 6000 Blackwell (SM120)", 120, 188, memory_bytes=97887 * _MIB,
                        device_name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition", bandwidth_gb_s=1792,
                        note=_GB202_NOTE,
                        source="NVIDIA RTX PRO 6000 Blackwell specs: 24,064 CUDA cores (188 SMs), 96 GB GDDR7 ECC, "
                               "1,792 GB/s (as quoted by reviews; NVIDIA's page not read here)"),
    "CPU": GPU("CPU (vLLM CPU backend)", 0, 0),
}  # fmt: skip
# The GPUs a deployment can be resolved for (lab/deployment/resolve.py; the stand-in CUDA platform reads the same rows)
SERVING_GPUS = tuple(name for name in GPUS if name != "CPU")
# The compute capabilities (x 10) of those GPUs, and the SM100 family among them (vLLM's gates:
# DeviceCapability.major == 10, current_platform.is_device_capability_family(100)): a backend record runs on these.
CUDA_SMS = tuple(sorted({gpu.sm for gpu in GPUS.values() if gpu.sm}))
SM100_FAMILY = tuple(sm for sm in CUDA_SMS if sm // 10 == 10)


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
