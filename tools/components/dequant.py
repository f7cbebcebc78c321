"""bitsandbytes dequantisation workspace: the running quantised linear dequantised to 16 bits.

- training (MatMul4Bit / Linear8bitLt, forward and backward): max(in x out) / t x 2 B;
- generation: bitsandbytes matmul_4bit takes the gemv_4bit kernel for a single-token input without
  grad (no dequantised weight); any other input (a prompt, several sequences per step) runs
  MatMul4Bit.forward, which dequantises the running linear first
  (`F.dequantize_4bit(B, quant_state).to(A.dtype)`); transformers keeps the LM head 16-bit.
"""

from __future__ import annotations

from tools.components.local import largest_linear
from tools.components.phased import FWD_BWD, PhasedComponent, phased, same
from tools.components.step import ModelStep, TrainStep
from tools.rules.quant import Bnb4bitFormat, DenseFormat

FORMULA = "max(d_in x d_out) / t x 2 B"
LABEL = "dequant_workspace"  # label code (tools/labels.py)


def training_dequant_workspace(ts: TrainStep) -> PhasedComponent | None:
    fmt = ts.fmt
    if not (ts.adapters and fmt.quantised and not isinstance(fmt, DenseFormat)):
        return None
    largest = largest_linear(ts.model, ts.lay.tp)
    ws = largest * fmt.compute_bytes
    return phased(
        "dequant_workspace",
        LABEL,
        "bitsandbytes MatMul4Bit / Linear8bitLt dequantize in forward and backward",
        same(FWD_BWD, ws, lambda: (FORMULA, f"{largest:,} x {fmt.compute_bytes} B = {ws:,} B")),
        ts.role,
    )


def generation_dequant_workspace(ms: ModelStep, prompt_len: int, seqs: int) -> PhasedComponent | None:
    fmt = ms.fmt
    if not isinstance(fmt, Bnb4bitFormat):
        return None
    largest = largest_linear(ms.model, ms.lay.tp)
    ws = largest * fmt.compute_bytes
    entry = (ws, lambda: (FORMULA, f"{largest:,} x {fmt.compute_bytes} B = {ws:,} B"))
    at = {
        phase: entry for phase, tokens in (("prefill", ms.batch * prompt_len), ("decode", seqs)) if tokens > 1
    }
    if not at:
        return None
    return phased(
        "dequant_workspace",
        LABEL,
        "bitsandbytes matmul_4bit / MatMul4Bit.forward (gemv_4bit only for one token)",
        at,
        ms.role,
    )
