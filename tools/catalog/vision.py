"""Vision-tower parameter counts of the vision-language models in the catalog.

A catalog entry's `architecture` is its language model (what the KV cache and decoding follow); the
vision encoder, its projector and the language model's cross-attention extras are counted here and
carried in `extra_params`, so the weights term holds the whole checkpoint. Each function follows the
module shapes of its transformers `modeling_*.py`; tests recompute the catalog's `extra_params` from them.
"""

from __future__ import annotations


def _linear(in_f: int, out_f: int, bias: bool = True) -> int:
    return in_f * out_f + (out_f if bias else 0)


def qwen2_vl_vision_params(
    *,
    out_hidden_size: int,
    embed_dim: int = 1280,
    depth: int = 32,
    mlp_ratio: int = 4,
    patch_size: int = 14,
    temporal_patch_size: int = 2,
    in_channels: int = 3,
    spatial_merge_size: int = 2,
) -> int:
    """Qwen2-VL vision tower + patch merger (modeling_qwen2_vl.Qwen2VisionTransformerPretrainedModel)."""
    # PatchEmbed: Conv3d(in_channels, embed_dim, kernel=(temporal, patch, patch), bias=False)
    patch_embed = in_channels * temporal_patch_size * patch_size * patch_size * embed_dim
    hidden = embed_dim * mlp_ratio
    # Qwen2VLVisionBlock: norm1/norm2 LayerNorm (weight + bias), attn.qkv and attn.proj with bias,
    # VisionMlp fc1/fc2 with bias
    block = 2 * 2 * embed_dim + _linear(embed_dim, 3 * embed_dim) + _linear(embed_dim, embed_dim)
    block += _linear(embed_dim, hidden) + _linear(hidden, embed_dim)
    # PatchMerger: ln_q LayerNorm(embed_dim), Linear(4 e, 4 e), GELU, Linear(4 e, out_hidden_size)
    merged = embed_dim * spatial_merge_size**2
    merger = 2 * embed_dim + _linear(merged, merged) + _linear(merged, out_hidden_size)
    return patch_embed + depth * block + merger


def qwen2_5_vl_vision_params(
    *,
    out_hidden_size: int,
    embed_dim: int = 1280,
    depth: int = 32,
    intermediate_size: int = 3420,
    patch_size: int = 14,
    temporal_patch_size: int = 2,
    in_channels: int = 3,
    spatial_merge_size: int = 2,
) -> int:
    """Qwen2.5-VL vision tower + merger (modeling_qwen2_5_vl.Qwen2_5_VisionTransformerPretrainedModel)."""
    patch_embed = in_channels * temporal_patch_size * patch_size * patch_size * embed_dim  # Conv3d, no bias
    # Qwen2_5_VLVisionBlock: norm1/norm2 RMSNorm (weight), attn.qkv/proj with bias,
    # Qwen2_5_VLMLP gate_proj/up_proj/down_proj with bias (SwiGLU)
    block = 2 * embed_dim + _linear(embed_dim, 3 * embed_dim) + _linear(embed_dim, embed_dim)
    block += 2 * _linear(embed_dim, intermediate_size) + _linear(intermediate_size, embed_dim)
    # Qwen2_5_VLPatchMerger: ln_q RMSNorm(embed_dim), Linear(4 e, 4 e), GELU, Linear(4 e, out_hidden_size)
    merged = embed_dim * spatial_merge_size**2
    merger = embed_dim + _linear(merged, merged) + _linear(merged, out_hidden_size)
    return patch_embed + depth * block + merger


def mllama_vision_params(
    *,
    hidden_size: int = 1280,
    num_hidden_layers: int = 32,
    num_global_layers: int = 8,
    intermediate_size: int = 5120,
    patch_size: int = 14,
    image_size: int = 560,
    max_num_tiles: int = 4,
    num_aspect_ratios: int = 8,
    in_channels: int = 3,
) -> int:
    """Llama-3.2-Vision image encoder (modeling_mllama.MllamaVisionModel)."""
    h = hidden_size
    num_patches = (image_size // patch_size) ** 2 + 1  # + the class token
    patch_embedding = in_channels * patch_size * patch_size * h  # Conv2d, bias=False
    class_embedding = h
    # MllamaPrecomputedPositionEmbedding: embedding (num_patches x h), gate (1),
    # tile_embedding Embedding(max_aspect_ratio_id + 1, max_num_tiles * num_patches * h)
    gated_positional = num_patches * h + 1 + (num_aspect_ratios + 1) * max_num_tiles * num_patches * h
    # pre/post MllamaPrecomputedAspectRatioEmbedding: Embedding(ratios + 1, max_num_tiles * h) + gate
    tile_positional = 2 * ((num_aspect_ratios + 1) * max_num_tiles * h + 1)
    layernorms = 2 * 2 * h  # layernorm_pre, layernorm_post (LayerNorm weight + bias)
    # MllamaVisionEncoderLayer: q/k/v/o without bias, fc1/fc2 with bias, two LayerNorms
    layer = 4 * h * h + _linear(h, intermediate_size) + _linear(intermediate_size, h) + 2 * 2 * h
    gated_layer = layer + 2  # the global encoder's layers add gate_attn and gate_ffn scalars
    return (
        patch_embedding
        + class_embedding
        + gated_positional
        + tile_positional
        + layernorms
        + num_hidden_layers * layer
        + num_global_layers * gated_layer
    )


def mllama_extra_params(
    *,
    text_hidden_size: int,
    head_dim: int = 128,
    num_cross_attention_layers: int,
    vision_output_dim: int = 7680,
    extra_text_tokens: int = 8,
) -> int:
    """Llama-3.2-Vision parameters beyond a plain Llama decoder of the same layers (modeling_mllama).

    The vision encoder, the multi_modal_projector Linear(vision_output_dim, text_hidden, bias), the
    cross-attention layers' q_norm/k_norm (RMSNorm(head_dim)) and two tanh gates each, and the
    `extra_text_tokens` rows the embedding holds beyond the LM head's vocabulary (128256 + 8).
    """
    projector = _linear(vision_output_dim, text_hidden_size)
    cross = num_cross_attention_layers * (2 * head_dim + 2)
    return mllama_vision_params() + projector + cross + extra_text_tokens * text_hidden_size
