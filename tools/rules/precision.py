"""Precision recipes: bytes per trainable parameter for weights, gradients, master copy and states.

| recipe   | weights | grads | master | state dtype | source |
|----------|---------|-------|--------|-------------|--------|
| fp32     | 4       | 4     | -      | fp32        | plain PyTorch fp32 training |
| amp      | 4       | 4     | -      | fp32        | HF Trainer bf16=True over an fp32 model (torch.autocast): + 2 B autocast copies |
| mixed    | 2       | 2     | 4      | fp32        | ZeRO paper sec. 3.1 (Rajbhandari et al. 2020): 2 + 2 + 12 = 16 B/param with Adam |
| megatron | 2       | 4     | 4      | fp32        | Megatron-LM theoretical_memory_usage.py: fp32 main_grad, 18 B/param with Adam |
| bf16     | 2       | 2     | -      | bf16        | pure bf16: torch optimizers create states in the parameter dtype |
"""

from __future__ import annotations

from typing import NamedTuple


class Recipe(NamedTuple):
    """A mixed-precision recipe: element sizes of weights, gradients, master weights, states and activations."""

    name: str
    weight_bytes: int  # how trainable parameters are stored on the GPU
    grad_bytes: int
    master_bytes: int  # fp32 master copy (0 = none)
    state_bytes: int  # element size of optimizer states
    autocast_copies: bool  # torch.autocast keeps 16-bit copies of fp32 weights during the step
    activation_bytes: int  # B: element size of activations
    residual_bytes: int  # element size of the residual stream (fp32 under amp: fp32 embeddings)
    fused_optimizer: bool  # DeepSpeed FusedAdam / Megatron apex FusedAdam: no foreach step transient
    label: str
    source: str

    @property
    def is_16bit_compute(self) -> bool:
        return self.activation_bytes == 2


RECIPES: dict[str, Recipe] = {
    "fp32": Recipe(
        "fp32",
        4,
        4,
        0,
        4,
        False,
        4,
        4,
        False,
        "fp32 weights, gradients and Adam states",
        "PyTorch fp32 training",
    ),
    "amp": Recipe(
        "amp",
        4,
        4,
        0,
        4,
        True,
        2,
        4,
        False,
        "AMP: fp32 weights + 16-bit autocast (HF Trainer bf16=True)",
        "torch.autocast; HF Trainer with an fp32-loaded model",
    ),
    "mixed": Recipe(
        "mixed",
        2,
        2,
        4,
        4,
        False,
        2,
        2,
        True,
        "16-bit weights and grads + fp32 master and Adam states",
        "ZeRO (Rajbhandari et al. 2020) sec. 3.1; DeepSpeed bf16/fp16 optimizer",
    ),
    "megatron": Recipe(
        "megatron",
        2,
        4,
        4,
        4,
        False,
        2,
        2,
        True,
        "Megatron: 16-bit weights, fp32 main_grad and master",
        "Megatron-LM megatron/training/theoretical_memory_usage.py (18 B/param)",
    ),
    "bf16": Recipe(
        "bf16",
        2,
        2,
        0,
        2,
        False,
        2,
        2,
        False,
        "pure bf16 (bf16 optimizer states)",
        "torch.optim state tensors follow the parameter dtype (torch.zeros_like(p))",
    ),
}
