"""Micro-batch and sequence length.

Defaults: batch_size 1; seq_len 2048 for training (LLaMA-Factory cutoff_len default), 4096 for inference
(capped at max_position_embeddings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.resolution.checks import check_max_new_tokens, check_tokens
from tools.resolution.defaults import Filled

if TYPE_CHECKING:
    from tools.model.architecture import Architecture
    from tools.scenario import Scenario


def sizes(sc: Scenario, arch: Architecture, training: bool, f: Filled) -> tuple[int, int]:
    """(batch, seq) with their defaults; a context beyond the model's trained length is a note."""
    batch = sc.batch_size or f.fill("batch_size", 1, "batch_size.default")
    if sc.seq_len:
        seq = sc.seq_len
    elif training:
        seq = f.fill("seq_len", 2048, "seq_len.training_default")
    else:
        seq = f.fill("seq_len", min(4096, arch.max_position_embeddings), "seq_len.inference_default")
    if sc.images:
        if arch.image_tokens:
            # Qwen2-VL / Qwen2.5-VL: each image enters the decoder's sequence as merged patch tokens
            # (modeling_qwen2_vl: one token per 28 x 28 pixels after the 2 x 2 merge)
            image_seq = sc.images * arch.image_tokens
            # recorded beside seq_len, which stays the text length (re-resolving never adds the images twice)
            # a 1024 x 1024 image resized to 1036 x 1036: 37 x 37 merged 28-pixel patches
            f.assume(
                "images",
                sc.images,
                "images.tokens",
                text_tokens=seq,
                images=sc.images,
                image_tokens=arch.image_tokens,
                decoder_tokens=seq + image_seq,
            )
            seq += image_seq
        else:
            f.note("images_not_modelled")
    check_tokens(batch, seq)
    if seq > arch.max_position_embeddings:
        f.note("seq_beyond_context", seq_len=seq, max_position_embeddings=arch.max_position_embeddings)
    check_max_new_tokens(sc.max_new_tokens, seq)
    return batch, seq
