"""The model a question names -> what the estimator is given: a catalog id, a Hub repo id, or a size.

- `org/name` repo ids: the catalog's entry when it has one (and the name carries no quantisation tag), else the
  repo id itself, in the question's own letter case, which `service.hub.estimate_any_model` looks up on the
  Hub, as `POST /v1/estimate` does;
- a variant the catalog lacks of a model it has ("Qwen2.5-Math-7B"): that model, said as an assumption;
- a name the catalog lacks, with a size in it ("InternLM2-20B", "Skywork-13B"): that size (a model of the usual
  dense shape, tools/catalog/sizes.py), said as an assumption -- unless the name is a known family with a version
  the catalog has never heard of ("Llama-5-9000B", "Qwen9-7B"): those look like typos and get the catalog's
  near names instead.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from service.agent.offline import patterns as rx
from service.agent.offline.mentions import FilledReason, Mention
from service.agent.offline.numbers import param_count, size_label

_QUANT_TAG = rx.compile(r"gptq|awq|fp8|int4|int8|bnb|4bit|8bit|nf4|gguf|exl2")
# llama.cpp / ExLlama repos ("bartowski/...-GGUF", "...-exl2"): weights files only, no config.json to read on the
# Hub; the format comes from the question's own words (q4_k_m, 4.65bpw), the shapes from the base model
_FILE_FORMAT_TAG = rx.compile(r"[\-_.](?:gguf|exl2|ggml)(?:[\-_.].*)?$")
_SIZE_TAIL = rx.compile(r"^(.*?)[\s_\-]*(\d+(?:\.\d+)?)(b|m)(?:[\s_\-].*)?$")
_SEPARATORS = rx.compile(r"[\s_\-.]+")
_FAMILY = rx.compile(r"^[a-z]+")
# fine-tuned variants that keep their base's shapes (Qwen2.5-Math / -Coder, Llama chat/instruct releases)
_VARIANT_WORD = rx.compile(r"[\s_\-](?:math|coder|code|chat|instruct|it|base|hf)(?=[\s_\-])")
MAX_FALLBACK_PARAMS = (
    2 * 10**12
)  # a size beyond the largest published dense/MoE models is a typo, not a model


def _stem(name: str) -> str | None:
    """'internlm2-20b' -> 'internlm2', 'qwen2.5-coder-7b-instruct' -> 'qwen2.5'... (the text before the size)."""
    m = _SIZE_TAIL.match(name.lower())
    return _SEPARATORS.sub("", m.group(1)) if m and m.group(1) else None


@lru_cache(maxsize=1)
def _catalog_stems() -> tuple[frozenset[str], frozenset[str]]:
    """(stems of every catalog id and alias, their leading family words)."""
    from tools.catalog import list_models

    stems: set[str] = set()
    for spec in list_models():
        for name in (spec.id, spec.name, spec.hf_repo.rsplit("/", 1)[-1], *spec.aliases):
            stem = _stem(name)
            if stem:
                stems.add(stem)
    families = {m.group(0) for s in stems if (m := _FAMILY.match(s))}
    return frozenset(stems), frozenset(families)


def _original_case(repo: str, question: str) -> str:
    """The repo id as the user typed it ('Qwen/Qwen2.5-7B-Instruct-AWQ'): Hub ids keep their letter case."""
    found = re.search(re.escape(repo), unicodedata.normalize("NFKC", question), re.IGNORECASE)
    return found.group(0) if found else repo


def settle_model(mention: Mention, question: str, low: str = "") -> Mention:
    """The name the estimator gets for `mention` (see the module docstring)."""
    from tools.catalog.models import lookup_model

    name = mention.value
    spec = lookup_model(name)
    if "/" in name:
        if spec is not None and not _QUANT_TAG.search(name.rsplit("/", 1)[-1]):
            return Mention(spec.id, mention.start, mention.end, mention.reason)
        base = lookup_model(_FILE_FORMAT_TAG.sub("", name.rsplit("/", 1)[-1]))
        if base is not None and _FILE_FORMAT_TAG.search(name):
            return Mention(base.id, mention.start, mention.end, mention.reason)
        return Mention(_original_case(name, question), mention.start, mention.end, mention.reason)
    if spec is not None or mention.reason is not None:
        return mention
    typed = _original_case(low[mention.start : mention.end] or name, question) if low else name
    return _base_of_variant(mention, typed) or _size_of_unknown(mention, typed) or mention


def _base_of_variant(mention: Mention, typed: str) -> Mention | None:
    """'qwen2.5-math-7b' -> the catalog's qwen2.5-7b: a variant word dropped from a name the catalog lacks."""
    from tools.catalog.models import lookup_model

    base = _VARIANT_WORD.sub("-", mention.value)
    spec = lookup_model(base) if base != mention.value else None
    if spec is None:
        return None
    reason = FilledReason(code="model_variant", values={"name": typed, "model": spec.id})
    return Mention(spec.id, mention.start, mention.end, reason)


def _size_of_unknown(mention: Mention, typed: str) -> Mention | None:
    name = mention.value
    m = _SIZE_TAIL.match(name)
    stem = _stem(name)
    if not m or not stem:
        return None
    params = param_count(m.group(2) + m.group(3))
    if not params or params > MAX_FALLBACK_PARAMS:
        return None
    stems, families = _catalog_stems()
    family = _FAMILY.match(stem)
    if stem not in stems and family and family.group(0) in families and rx.fullmatch(r"[a-z]+[\d.]+", stem):
        return None  # "llama-5-9000b", "qwen9-7b": a known family, a version it never had -> near names
    size = size_label(params)
    reason = FilledReason(code="model_size_only", values={"name": typed, "size": size})
    return Mention(size, mention.start, mention.end, reason)
