"""Logits and loss: s*b*V tensors that formula sheets forget (huge for V = 128k-152k).

HF causal LMs (LlamaForCausalLM + transformers/loss/loss_utils.py ForCausalLMLoss) compute the
logits in the activation dtype, upcast them to fp32 (`logits.float()`), and cross_entropy saves an
fp32 log_softmax; its backward adds an fp32 gradient of the same size. Bytes per element of s*b*V
at each moment are named in tools/calibration.py. Under TP the LM head is vocab-parallel
(Megatron VocabParallelEmbedding / vocab_parallel_cross_entropy): V / t per rank.
Inference computes the logits of the last position only (HF generate `logits_to_keep=1`, vLLM
`compute_logits` on sampled positions) and upcasts them to fp32 for sampling.
"""

from __future__ import annotations

from collections.abc import Callable

from tools import calibration as cal

Texts = Callable[[], tuple[str, str]]  # (formula, substituted), made only when shown

SOURCE = "transformers ForCausalLMLoss (fp32 upcast + cross_entropy); calibration.LOGITS_* constants"

TRAINING_BYTES_PER_ELEMENT: dict[str, int] = {
    "end_of_forward": cal.LOGITS_LOSS_PEAK_BYTES,  # the loss forward: B logits + fp32 copy + fp32 log_softmax
    "backward": cal.LOGITS_BACKWARD_PEAK_BYTES,  # the loss backward, all layer activations still alive
}


def training_logits(
    *, tokens: int, vocab_local: int, phase: str, softcap_bytes: int = 0
) -> tuple[int, str, str]:
    """(bytes, formula, substituted) of the logits/loss tensors at `phase` (0 outside fwd/bwd).

    `softcap_bytes`: Gemma-2 final-logit soft-capping (modeling_gemma2 Gemma2ForCausalLM:
    `tanh(logits / cap) * cap`): tanh saves its output (activation dtype) until its backward, which
    runs after the loss backward: + B per element at both moments."""
    total, texts = training_logits_entry(
        tokens=tokens, vocab_local=vocab_local, phase=phase, softcap_bytes=softcap_bytes
    )
    return total, *texts()


def training_logits_entry(
    *, tokens: int, vocab_local: int, phase: str, softcap_bytes: int = 0
) -> tuple[int, Texts]:
    """`training_logits` as (bytes, a callable making (formula, substituted) when shown)."""
    per_elem = TRAINING_BYTES_PER_ELEMENT.get(phase, 0)
    if per_elem:
        per_elem += softcap_bytes
    total = per_elem * tokens * vocab_local
    return total, lambda: (
        f"s*b*V/t x {per_elem} B" + (" (final_logit_softcapping)" if softcap_bytes else ""),
        f"{tokens:,} x {vocab_local:,} x {per_elem} B = {total:,} B",
    )


def inference_logits(*, sequences: int, vocab_local: int, positions: int = 1) -> tuple[int, str, str]:
    total, texts = inference_logits_entry(sequences=sequences, vocab_local=vocab_local, positions=positions)
    return total, *texts()


def inference_logits_entry(*, sequences: int, vocab_local: int, positions: int = 1) -> tuple[int, Texts]:
    """`inference_logits` as (bytes, a callable making (formula, substituted) when shown)."""
    per_elem = cal.INFERENCE_LOGITS_BYTES
    total = per_elem * sequences * positions * vocab_local
    return total, lambda: (
        "b x V/t x (B + 4) B",
        f"{sequences} x {positions} x {vocab_local:,} x {per_elem} B = {total:,} B",
    )
