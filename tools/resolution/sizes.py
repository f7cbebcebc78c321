"""Micro-batch and sequence length.

Defaults: batch_size 1; seq_len 2048 for training (LLaMA-Factory cutoff_len default), 4096 for inference
(capped at max_position_embeddings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.resolution.checks import check_max_new_tokens, check_tokens
from tools.resolution.defaults import Filled

if TYPE_CHECKING:
    from tools.architecture import Architecture
    from tools.scenario import Scenario


def sizes(sc: Scenario, arch: Architecture, training: bool, f: Filled) -> tuple[int, int]:
    """(batch, seq) with their defaults; a context beyond the model's trained length is a note."""
    batch = sc.batch_size or f.fill("batch_size", 1, "micro-batch of one sequence per GPU")
    if sc.seq_len:
        seq = sc.seq_len
    elif training:
        seq = f.fill("seq_len", 2048, "a common fine-tuning cutoff length (LLaMA-Factory cutoff_len default)")
    else:
        seq = f.fill(
            "seq_len",
            min(4096, arch.max_position_embeddings),
            "4096-token context (capped at the model's max_position_embeddings)",
        )
    check_tokens(batch, seq)
    if seq > arch.max_position_embeddings:
        f.note("seq_beyond_context", seq_len=seq, max_position_embeddings=arch.max_position_embeddings)
    check_max_new_tokens(sc.max_new_tokens, seq)
    return batch, seq
