"""`vramwise trace`: exact peak tensor memory of the real HF model code on fake tensors.

Optional: needs the `[trace]` extra (torch, transformers, peft). Nothing outside this package
imports torch.
"""
