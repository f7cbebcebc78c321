"""Stated shapes ("hidden 4096, 32 layers, 32 heads"): the config.json keys the parser lays over a base model."""

from __future__ import annotations

import re

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import IS, Fields
from service.agent.offline.mentions import SEP, L, R

# --- stated shapes: "hidden 4096, 32 layers, 32 heads" build the architecture -------------------------------

# llama.cpp's "-ngl 20" / "20 layers on the GPU" / "offload 20 layers to CPU" place layers; they are not the depth
_NOT_PLACED = r"(?!\s+(?:on|to|onto|in)\s+(?:the\s+)?(?:cpu|gpu|ram|vram|system\s+memory))"

_SHAPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "hidden_size",
        rx.compile(
            rf"{L}(?:hidden{SEP}(?:size|dim(?:ension)?)?|d{SEP}model|model{SEP}dim(?:ension)?|embedding{SEP}dim(?:ension)?){IS}(\d{{3,6}}){R}"
            rf"|{L}(\d{{3,6}}){SEP}hidden{R}|隐藏层?(?:维度|大小)?\s*(?:为|=|是|:)?\s*(\d{{3,6}})|hidden\s*(?:为|=|是)\s*(\d{{3,6}})"
        ),
    ),
    (
        "num_hidden_layers",
        rx.compile(
            rf"(?<!last )(?<!top )(?<!first )(?<!final )(?<!offload )(?<!offloading ){L}(\d{{1,3}}){SEP}(?:transformer{SEP}|decoder{SEP}|hidden{SEP})?(?:layers|blocks){R}{_NOT_PLACED}"
            rf"|{L}(?:num{SEP}(?:hidden{SEP})?layers|n{SEP}layers?|layers){IS}(\d{{1,3}}){R}"
            rf"|(?<![后前])(?<![后前]\s)(\d{{1,3}})\s*层(?!\s*(?:放|留|卸载|offload|在\s*(?:cpu|gpu|内存|显存)))|层数\s*(?:为|=|是|:)?\s*(\d{{1,3}})"
        ),
    ),
    (
        "num_key_value_heads",
        rx.compile(
            rf"{L}(\d{{1,3}}){SEP}(?:kv|key{SEP}value){SEP}heads{R}|{L}(?:num{SEP}kv{SEP}heads|kv{SEP}heads|num{SEP}key{SEP}value{SEP}heads){IS}(\d{{1,3}}){R}"
            rf"|(\d{{1,3}})\s*个?\s*kv\s*头|kv\s*头数?\s*(?:为|=|是|:)?\s*(\d{{1,3}})"
        ),
    ),
    (
        "num_attention_heads",
        rx.compile(
            rf"{L}(\d{{1,3}}){SEP}(?:attention{SEP})?heads{R}|{L}(?:num{SEP}(?:attention{SEP})?heads|n{SEP}heads|heads|attention{SEP}heads){IS}(\d{{1,3}}){R}"
            rf"|(\d{{1,3}})\s*个?\s*(?:注意力)?头|(?<!kv)\s*头数\s*(?:为|=|是|:)?\s*(\d{{1,3}})"
        ),
    ),
    (
        "intermediate_size",
        rx.compile(
            rf"{L}(?:intermediate{SEP}(?:size)?|ffn{SEP}(?:hidden{SEP})?(?:size|dim)?|mlp{SEP}(?:size|dim)){IS}(\d{{3,6}}){R}"
            rf"|(?:ffn|中间层)\s*(?:维度|大小)?\s*(?:为|=|是|:)?\s*(\d{{3,6}})"
        ),
    ),
    (
        "vocab_size",
        rx.compile(
            rf"{L}(?:vocab(?:ulary)?{SEP}(?:size)?){IS}(\d+(?:\.\d+)?\s*k?){R}|{L}(\d+(?:\.\d+)?\s*k?){SEP}vocab(?:ulary)?{R}|词表\s*(?:大小)?\s*(?:为|=|是|:)?\s*(\d+(?:\.\d+)?\s*k?)"
        ),
    ),
)


def shape_overrides(low: str) -> Fields:
    """Architecture fields the question states (config.json keys); the parser lays them over a base model."""
    out: Fields = {}
    work = low
    for key, pattern in _SHAPE_RULES:
        m = pattern.search(work)
        if not m:
            continue
        raw = next(g for g in m.groups() if g)
        value = round(float(raw.replace("k", "").strip()) * 1000) if "k" in raw else int(raw)
        if value > 0:
            out[key] = value
        work = (
            work[: m.start()] + " " * (m.end() - m.start()) + work[m.end() :]
        )  # "32 kv heads" is not "32 heads"
    return out
