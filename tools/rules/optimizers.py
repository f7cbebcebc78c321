"""Optimizer state and step-transient bytes, one small class per optimizer.

Every rule answers the same two questions for a set of trainable tensors (`TrainableSpec`):
`state_bytes(spec, state_bytes)` (resident between steps) and `step_transient_bytes(...)` (extra
memory only while `optimizer.step()` runs). `state_bytes` is the element size of the optimizer's
state dtype (fp32 = 4 when there is an fp32 master copy or fp32 weights, 2 under pure bf16).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tools import calibration as cal


class TrainableSpec(NamedTuple):
    """The trainable tensors of one model (global, before any sharding).

    `matrices`: (rows, cols, count) for every 2-D trainable tensor kind; `vector_params`: the
    parameters held in 1-D tensors (norms, biases, DoRA magnitudes). params = matrices + vectors.
    """

    params: int
    matrices: tuple[tuple[int, int, int], ...] = ()
    vector_params: int = 0
    formula: str = ""  # how `params` was counted, symbolic
    substituted: str = ""  # with the numbers
    targets: tuple[str, ...] = ()  # LoRA: the targeted linear names (empty: the weights themselves train)
    outer_targets: tuple[
        str, ...
    ] = ()  # LoRA on the LM head / token embedding (tools.model.lora.OUTER_TARGETS)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class AdamW:
    """AdamW: two fp32 states (exp_avg, exp_avg_sq) per trainable parameter."""

    name: str = "adamw"
    source: str = "Loshchilov & Hutter 2019; torch.optim.AdamW exp_avg + exp_avg_sq; ZeRO (Rajbhandari et al. 2020) sec. 3.1"
    # The implementation is part of the rule: "fused" (torch.optim.AdamW(fused=True): HF Trainer's
    # default optim="adamw_torch_fused" since transformers 4.5x with torch >= 2.8, training_args.py
    # `default_optim`; DeepSpeed FusedAdam, Megatron/apex FusedAdam) updates in place per tensor;
    # "foreach" (torch.optim.AdamW default on CUDA, HF optim="adamw_torch") adds a step transient.
    implementation: str = "fused"
    paged: bool = False

    @property
    def foreach(self) -> bool:
        return self.implementation == "foreach"

    def state_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        return 2 * state_bytes * spec.params  # m and v

    def state_formula(self) -> str:
        return "2 x P_trainable x B_state"

    def state_substituted(self, spec: TrainableSpec, state_bytes: int) -> str:
        return f"2 x {spec.params:,} x {state_bytes} B"

    def step_transient_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        if not self.foreach:
            return 0  # fused kernel: in place, no transient (traced llama-3-8b: 0.01 GiB at the step)
        # torch/optim/adamw.py _multi_tensor_adamw: exp_avg_sq_sqrt = torch._foreach_sqrt(...) over the
        # group; traced torch.optim.AdamW(foreach=True): +1.00 x params x 4 B (calibration constant)
        return int(cal.ADAMW_FOREACH_TRANSIENT_FACTOR * spec.params * state_bytes)


@dataclass(frozen=True)
class AdamW8bit:
    """bitsandbytes AdamW8bit: two 8-bit states with one fp32 absmax per block of 256; 32-bit
    states for tensors under min_8bit_size elements (bitsandbytes/optim/optimizer.py)."""

    name: str = "adamw_8bit"
    source: str = (
        "bitsandbytes AdamW8bit (Dettmers et al. 2022, 8-bit Optimizers via Block-wise Quantization)"
    )
    paged: bool = False

    def state_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        total = 0
        in_matrices = 0
        for rows, cols, count in spec.matrices:
            n = rows * cols
            in_matrices += n * count
            if n >= cal.BNB_OPTIM_MIN_8BIT_SIZE:
                total += count * 2 * (n + 4 * _cdiv(n, cal.BNB_OPTIM_BLOCK))
            else:
                total += count * 2 * 4 * n
        total += 2 * 4 * max(0, spec.params - in_matrices)  # small 1-D tensors keep fp32 states
        return total

    def state_formula(self) -> str:
        return "2 x (1 B + 4 B/256) x P_matrices + 8 B x P_small"

    def state_substituted(self, spec: TrainableSpec, state_bytes: int) -> str:
        big = sum(r * c * n for r, c, n in spec.matrices if r * c >= cal.BNB_OPTIM_MIN_8BIT_SIZE)
        return f"2 x (1 B + 4 B/256) x {big:,} + 8 B x {spec.params - big:,}"

    def step_transient_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        return 0  # fused CUDA kernel updates in place


@dataclass(frozen=True)
class Sgd:
    """SGD: a momentum buffer per trainable parameter when momentum is on, else no state."""

    name: str = "sgd"
    momentum: bool = False
    paged: bool = False
    source: str = "torch.optim.SGD: one momentum_buffer per parameter when momentum > 0"

    def state_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        return spec.params * state_bytes if self.momentum else 0

    def state_formula(self) -> str:
        return "P_trainable x B_state" if self.momentum else "0"

    def state_substituted(self, spec: TrainableSpec, state_bytes: int) -> str:
        return f"{spec.params:,} x {state_bytes} B" if self.momentum else "0"

    def step_transient_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        return 0


@dataclass(frozen=True)
class Lion:
    """Lion: one momentum state per trainable parameter."""

    name: str = "lion"
    source: str = (
        "Chen et al. 2023 (Symbolic Discovery of Optimization Algorithms): one exp_avg per parameter"
    )
    paged: bool = False

    def state_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        return spec.params * state_bytes

    def state_formula(self) -> str:
        return "P_trainable x B_state"

    def state_substituted(self, spec: TrainableSpec, state_bytes: int) -> str:
        return f"{spec.params:,} x {state_bytes} B"

    def step_transient_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        return 0


@dataclass(frozen=True)
class Adafactor:
    """transformers.optimization.Adafactor (beta1=None): factored second moment for matrices
    (row + column vectors), full second moment for 1-D tensors (Shazeer & Stern 2018)."""

    name: str = "adafactor"
    source: str = "Shazeer & Stern 2018; transformers Adafactor exp_avg_sq_row / exp_avg_sq_col"
    paged: bool = False

    def state_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        in_matrices = sum(r * c * n for r, c, n in spec.matrices)
        factored = sum((r + c) * n for r, c, n in spec.matrices)
        return state_bytes * (factored + max(0, spec.params - in_matrices))

    def state_formula(self) -> str:
        return "sum(n_rows + n_cols) x B_state + P_vectors x B_state"

    def state_substituted(self, spec: TrainableSpec, state_bytes: int) -> str:
        in_matrices = sum(r * c * n for r, c, n in spec.matrices)
        factored = sum((r + c) * n for r, c, n in spec.matrices)
        return f"({factored:,} + {max(0, spec.params - in_matrices):,}) x {state_bytes} B"

    def step_transient_bytes(self, spec: TrainableSpec, state_bytes: int) -> int:
        # per-tensor loop: grad**2 and the update of the largest tensor, in fp32
        largest = max((r * c for r, c, _ in spec.matrices), default=0)
        return 2 * 4 * largest


OptimizerRule = AdamW | AdamW8bit | Sgd | Lion | Adafactor

OPTIMIZERS: dict[str, OptimizerRule] = {
    "adamw": AdamW(),  # fused: the HF Trainer default (adamw_torch_fused)
    "adamw_torch": AdamW(name="adamw_torch", implementation="foreach"),
    "paged_adamw": AdamW(name="paged_adamw", paged=True),
    "adamw_8bit": AdamW8bit(),
    "paged_adamw_8bit": AdamW8bit(name="paged_adamw_8bit", paged=True),
    "sgd": Sgd(),
    "sgd_momentum": Sgd(name="sgd_momentum", momentum=True),
    "lion": Lion(),
    "adafactor": Adafactor(),
}
PAGED_NOTE = (
    "paged optimizer: bitsandbytes allocates the states in CUDA unified memory, so under memory "
    "pressure they are paged to CPU RAM instead of failing; counted here as resident on the GPU"
)
