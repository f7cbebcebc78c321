"""Model catalog: every computed count vs its published count, look-ups, bare sizes, errors."""

from __future__ import annotations

import math

import pytest

from service.agent.assumption_text import code_text
from tools.catalog import ModelSpec, find_model, get_model, list_models, resolve_model
from tools.catalog.fuzzy import normalize
from tools.catalog.sizes import parse_bare_size
from tools.errors import ScenarioError

MODELS = list_models()

# Exact HF safetensors counts pinned in this test (independent of models.json)
EXACT = {
    "llama-2-7b": 6_738_415_616,
    "llama-3-8b": 8_030_261_248,
    "qwen2.5-7b": 7_615_616_512,
    "mistral-7b-v0.1": 7_241_732_096,
    "gpt2": 124_439_808,
    "mixtral-8x7b": 46_702_792_704,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "qwen3-8b": 8_190_735_360,
    "qwen3-30b-a3b": 30_532_122_624,
    "qwen3-235b-a22b": 235_093_634_560,
    "deepseek-v2-lite": 15_706_484_224,
    "deepseek-v2": 235_741_434_880,
    "gemma-2-9b": 9_241_705_984,
    "phi-3-mini": 3_821_079_552,
    "falcon-7b": 6_921_720_704,
    "falcon-40b": 41_835_970_560,  # untied lm_head (unlike Falcon-7B)
    "qwen2-57b-a14b": 57_408_658_944,
    "glm-4-9b": 9_399_951_360,
}


def test_catalog_size_and_coverage() -> None:
    ids = {m.id for m in MODELS}
    assert len(MODELS) >= 40
    assert len(ids) == len(MODELS)
    required = {
        "llama-2-7b",
        "llama-2-13b",
        "llama-2-70b",
        "llama-3-8b",
        "llama-3-70b",
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.1-405b",
        "llama-3.2-1b",
        "llama-3.2-3b",
        "llama-3.3-70b",
        "mistral-7b-v0.1",
        "mistral-7b-v0.3",
        "mixtral-8x7b",
        "mixtral-8x22b",
        "qwen2.5-0.5b",
        "qwen2.5-1.5b",
        "qwen2.5-3b",
        "qwen2.5-7b",
        "qwen2.5-14b",
        "qwen2.5-32b",
        "qwen2.5-72b",
        "qwen3-0.6b",
        "qwen3-1.7b",
        "qwen3-4b",
        "qwen3-8b",
        "qwen3-14b",
        "qwen3-32b",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "qwen1.5-moe-a2.7b",
        "deepseek-v2-lite",
        "deepseek-v2",
        "deepseek-v3",
        "glm-4-9b",
        "yi-1.5-6b",
        "yi-1.5-34b",
        "baichuan2-7b",
        "baichuan2-13b",
        "internlm2.5-7b",
        "gemma-2-2b",
        "gemma-2-9b",
        "gemma-2-27b",
        "gemma-3-1b",
        "gemma-3-12b",
        "gemma-3-27b",
        "phi-3-mini",
        "phi-3-medium",
        "phi-4",
        "gpt2",
        "gpt2-xl",
        "tinyllama-1.1b",
        "falcon-7b",
        "falcon-40b",
    }
    assert required <= ids


@pytest.mark.parametrize("spec", MODELS, ids=[m.id for m in MODELS])
def test_computed_count_matches_published(spec: ModelSpec) -> None:
    published_model = spec.published_params - spec.stored_duplicate_params
    assert abs(spec.params - published_model) / published_model < 0.005, (spec.params, spec.published_params)
    assert spec.published_source
    if spec.published_source.startswith("HF safetensors parameter count"):
        # an exact figure: equality, not a tolerance
        assert spec.params + spec.stored_duplicate_params == spec.published_params


@pytest.mark.parametrize("model_id,count", sorted(EXACT.items()))
def test_pinned_exact_counts(model_id: str, count: int) -> None:
    assert get_model(model_id).params == count


def test_tied_duplicate_in_checkpoint() -> None:
    spec = get_model("qwen3-0.6b")
    assert spec.architecture.tie_word_embeddings
    assert spec.stored_duplicate_params == 151936 * 1024
    assert spec.params == 596_049_920  # the loaded model: embedding held once


def test_max_error_across_catalog_under_half_percent() -> None:
    worst = max(
        abs(m.params - (m.published_params - m.stored_duplicate_params)) / m.published_params for m in MODELS
    )
    assert worst < 0.005


@pytest.mark.parametrize(
    "name,model_id",
    [
        ("meta-llama/Llama-2-7b-hf", "llama-2-7b"),
        ("Llama2-7B", "llama-2-7b"),
        ("llama 2 7b", "llama-2-7b"),
        ("LLAMA-2-7B-CHAT-HF", "llama-2-7b"),
        ("Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("qwen3-30b-a3b", "qwen3-30b-a3b"),
        ("DeepSeek-V3", "deepseek-v3"),
        ("deepseek-r1", "deepseek-v3"),
        ("Mixtral-8x7B", "mixtral-8x7b"),
        ("mixtral 8x7b", "mixtral-8x7b"),
        ("Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("gemma-2-9b-it", "gemma-2-9b"),
        ("Phi-3-mini-4k-instruct", "phi-3-mini"),
        ("THUDM/glm-4-9b-chat", "glm-4-9b"),
        ("internlm2_5-7b-chat", "internlm2.5-7b"),
        ("GPT-2", "gpt2"),
    ],
)
def test_find_model_aliases(name: str, model_id: str) -> None:
    assert find_model(name).id == model_id


def test_aliases_do_not_collide_across_models() -> None:
    owner: dict[str, str] = {}
    for spec in MODELS:
        for alias in {spec.id, spec.name, *spec.aliases}:
            key = normalize(alias)
            assert owner.setdefault(key, spec.id) == spec.id, (alias, owner[key], spec.id)


def test_unknown_model_error_has_suggestions() -> None:
    with pytest.raises(ScenarioError) as err:
        find_model("llama-2-7")
    assert err.value.field == "model"
    assert "unknown model 'llama-2-7'" in err.value.message
    assert err.value.suggestions[0] == "llama-2-7b"
    assert len(err.value.suggestions) == 3
    assert "bare size" in (err.value.accepted or "")
    with pytest.raises(ScenarioError) as err:
        find_model("qwen2.5-8b")
    assert "qwen2.5-7b" in err.value.suggestions or "qwen3-8b" in err.value.suggestions


@pytest.mark.parametrize(
    "text,expected",
    [
        ("7B", (None, 7_000_000_000)),
        ("0.5b", (None, 500_000_000)),
        ("8x7B", (8, 7_000_000_000)),
        ("70亿", (None, 7_000_000_000)),
        ("700亿", (None, 70_000_000_000)),
        ("1.8万亿", (None, 1_800_000_000_000)),
        ("7 billion", (None, 7_000_000_000)),
        ("124M", (None, 124_000_000)),
        ("llama", None),
    ],
)
def test_parse_bare_size(text: str, expected: tuple[int | None, int] | None) -> None:
    assert parse_bare_size(text) == expected


@pytest.mark.parametrize(
    "text,model_id",
    [
        # a catalog model stands in only within 2 % of the stated size
        ("8B", "llama-3.1-8b"),
        ("13b", "llama-2-13b"),
        ("70B", "llama-3.1-70b"),
        ("700亿", "llama-3.1-70b"),
        ("0.5B", "qwen2.5-0.5b"),
        ("8x7B", "mixtral-8x7b"),
        ("124M", "gpt2"),
        ("175B", "gpt-3-175b"),
        ("405B", "llama-3.1-405b"),
    ],
)
def test_resolve_bare_size(text: str, model_id: str) -> None:
    resolved = resolve_model(text)
    assert resolved.spec is not None and resolved.spec.id == model_id
    assert resolved.params == resolved.spec.params
    assert resolved.assumed_code in ("model.bare_size", "model.nearest_size")
    assert resolved.assumed_values["model"] == resolved.spec.name
    size = parse_bare_size(text)
    assert size is not None
    wanted = size[1] * (size[0] or 1)
    assert size[0] or abs(resolved.params - wanted) / wanted <= 0.02


@pytest.mark.parametrize(
    "text", ["7B", "70亿", "1.5B", "20B", "a 20B model", "30B", "120B", "1.8万亿", "2B", "50B"]
)
def test_bare_size_without_a_close_catalog_model_builds_one(text: str) -> None:
    size = parse_bare_size(text)
    assert size is not None
    wanted = size[1]
    resolved = resolve_model(text)
    assert resolved.spec is None
    assert resolved.params == wanted  # exact: within 0.5 % by construction, 0 % in fact
    arch = resolved.architecture
    # the shapes are typical ones; the rounding remainder carried in extra_params is well under 0.1 %
    assert abs(arch.extra_params) / wanted < 0.001
    assert 1.5 <= arch.intermediate_size / arch.hidden_size <= 4.5
    # 8 KV heads where they divide the heads (GQA groups whole heads), else the largest count that does
    assert arch.kv_heads == math.gcd(8, arch.num_attention_heads) and arch.d_head == 128
    assert resolved.assumed_code == "model.built_for_size"
    assert (resolved.assumed_values["params"], resolved.assumed_values["layers"]) == (
        wanted,
        arch.num_hidden_layers,
    )


def test_bare_sizes_typical_shapes() -> None:
    a7 = resolve_model("7B").architecture
    assert (a7.num_hidden_layers, a7.hidden_size, a7.num_attention_heads) == (32, 4096, 32)  # Llama-3-8B's
    a20 = resolve_model("20B").architecture
    assert (a20.num_hidden_layers, a20.hidden_size) == (64, 5120)  # Qwen2.5-32B's
    big = resolve_model("1.8万亿").architecture
    assert big.hidden_size >= 16384 and big.num_hidden_layers >= 126


def test_resolve_catalog_model_assumes_nothing() -> None:
    resolved = resolve_model("Qwen2.5-7B-Instruct")
    assert resolved.assumed_code is None
    assert resolved.params == 7_615_616_512


def test_bare_7b_says_which_architecture() -> None:
    def said(text: str) -> str | None:
        resolved = resolve_model(text)
        return code_text(resolved.assumed_code or "", resolved.assumed_values, "en")

    assert said("7B") == (
        "a bare '7B' is taken as a dense decoder of exactly 7,000,000,000 parameters with the shapes typical of "
        "that size: 32 layers, hidden 4096, 32 heads (8 KV heads of 128), SwiGLU intermediate 11712, vocabulary "
        "128,256 (Llama-3 layout) (no catalog model within 2%)"
    )
    assert said("14B") == (
        "a bare '14B' is taken as Phi-3-medium-4k's architecture, the catalog model with the nearest parameter "
        "count (13.96B params, 0.3% from 14.00B)"
    )


def test_bare_size_too_small_is_an_error() -> None:
    with pytest.raises(ScenarioError) as err:
        resolve_model("5k")
    assert err.value.field == "model"


@pytest.mark.parametrize(
    "name,model_id",
    [
        ("Qwen/Qwen2.5-7B-Instruct-AWQ", "qwen2.5-7b"),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "qwen2.5-7b"),
        ("unsloth/Llama-3.2-1B-Instruct-bnb-4bit", "llama-3.2-1b"),
        ("TheBloke/Llama-2-7B-Chat-GPTQ", "llama-2-7b"),
        ("Qwen/QwQ-32B-Preview", "qwen2.5-32b"),
    ],
)
def test_quantised_and_derived_repos_map_to_their_architecture(name: str, model_id: str) -> None:
    assert find_model(name).id == model_id


def test_spec_serialises_its_counts() -> None:
    dumped = get_model("mixtral-8x7b").model_dump()
    assert dumped["params"] == 46_702_792_704
    assert dumped["active_params"] == 12_879_925_248


def test_added_catalog_models_match_published_counts() -> None:
    from tools.catalog import get_model

    # HF safetensors totals; Phi: 32 x (4 x (2560^2 + 2560) + 2 x 2560 x 10240 + 10240 + 2560 + 2 x 2560)
    # + 2 x 51,200 x 2560 + 51,200 (head bias) + 2 x 2560 = 2,779,683,840
    expected = {
        "codellama-34b": 33_743_970_304,
        "codellama-7b": 6_738_546_688,
        "codellama-13b": 13_016_028_160,
        "phi-2": 2_779_683_840,
        "phi-1.5": 1_418_270_720,
        "stablelm-base-alpha-3b": 3_637_321_728,
    }
    for model_id, count in expected.items():
        assert get_model(model_id).params == count, model_id
