"""A card the user names is that card (issue 24 section 6): a stated size is taken at that size under its
name, AMD cards are AMD (a ROCm/HIP runtime term, no CUDA context), an Apple Silicon Mac gets no CUDA
context, no offload to the CPU it shares its memory with and no second Mac, and a card with neither a known
name nor a size is asked about, never replaced by a default card.

Before: "my laptop has an MX450 2G" was answered for an A100 80GB ("fits"); "7900 XTX 24gb" became an
RTX 4090 (the parser took "24gb" as the most common 24 GB card).
"""

from __future__ import annotations

import pytest

from service.agent.events import DoneEvent, ErrorEvent
from tests.answer_support import ask
from tools.catalog.gpus import find_gpu
from tools.errors import ScenarioError
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import GiB, MiB


@pytest.mark.parametrize(
    ("name", "card", "vendor", "gib"),
    [
        ("MX450 2G", "MX450 (2 GB as stated)", "nvidia", 2.0),
        ("7900 XTX 24gb", "Radeon RX 7900 XTX", "amd", 24.0),
        ("Radeon RX 6800 16GB", "Radeon RX 6800 (16 GB as stated)", "amd", 16.0),
        ("GTX 1080 Ti 11GB", "GTX 1080 Ti (11 GB as stated)", "nvidia", 11.0),
        ("arc a770 16gb", "arc a770 (16 GB as stated)", "intel", 16.0),
        # Macs: the part of unified memory Metal lets the GPU use (2/3 below 64 GB), as the catalog's Macs
        ("M2 Max 32GB", "Apple Silicon Mac, 32 GB unified memory", "apple", 21.33),
        ("M1 8GB", "M1 (8 GB as stated)", "apple", 5.33),
    ],
)
def test_a_named_card_is_that_card_at_its_size(name: str, card: str, vendor: str, gib: float) -> None:
    spec, _ = find_gpu(name)
    assert (spec.name, spec.vendor, round(spec.memory_bytes / GiB, 2)) == (card, vendor, gib)


@pytest.mark.parametrize("name", ["mx450", "MacBook", "rtx-9090"])
def test_a_card_without_a_known_name_or_a_size_is_asked_about(name: str) -> None:
    with pytest.raises(ScenarioError) as err:
        find_gpu(name)
    assert err.value.code == "gpu_memory_needed" and "how much memory" in err.value.message
    assert f"'{name} 8GB'" in (err.value.accepted or "")


def _overhead(gpu: str) -> dict[str, int]:
    est = estimate(Scenario(model="llama-3-8b", task="inference", gpu=gpu), plan=False)
    assert sum(c.bytes for c in est.components) == est.per_gpu.total_bytes
    return {c.name: c.bytes for c in est.components if c.kind == "overhead"}


def test_amd_cards_pay_the_rocm_runtime_not_a_cuda_context() -> None:
    for gpu in ("mi300x", "7900 xtx", "Radeon RX 6800 16GB"):
        terms = _overhead(gpu)
        assert "cuda_context" not in terms and terms["hip_runtime"] == 600 * MiB
    assert _overhead("h100")["cuda_context"] == 600 * MiB


def test_a_mac_has_no_runtime_context_term() -> None:
    mac, card = _overhead("apple-64gb"), _overhead("h100")
    assert set(mac) == {"allocator_slack"} and mac["allocator_slack"] == card["allocator_slack"]


def test_a_mac_is_told_neither_to_offload_to_its_cpu_nor_to_buy_more_macs() -> None:
    """Llama-2-13B LoRA does not fit a 32 GB Mac: on a 32 GB card the planner offers more GPUs and CPU
    offload; on the Mac only what one Mac can do is left (QLoRA), and no fewest-Macs figure."""
    on_card = estimate(Scenario(model="llama-2-13b", task="lora", gpu="32gb"))
    on_mac = estimate(Scenario(model="llama-2-13b", task="lora", gpu="apple-32gb"))
    assert not on_card.fits and not on_mac.fits
    changes = [sg.scenario_changes for sg in on_card.suggestions]
    assert any(c.get("num_gpus", 1) > 1 or c.get("offload_optimizer") == "cpu" for c in changes)
    assert on_card.min_gpus and on_card.min_gpus > 1
    for sg in on_mac.suggestions:
        c = sg.scenario_changes
        assert c.get("num_gpus", 1) == 1 and c.get("tp", 1) == 1 and c.get("zero_stage", 0) == 0
        assert c.get("offload_optimizer") in (None, "none") and c.get("offload_params") in (None, "none")
    assert [sg.scenario_changes.get("task") for sg in on_mac.suggestions] == ["qlora"]
    assert on_mac.min_gpus is None and on_mac.min_gpus_changes is None


@pytest.mark.parametrize(
    ("question", "card", "gib"),
    [
        ("my laptop has an MX450 2G, can I run qwen2.5-0.5b?", "mx450 (2 GB as stated)", 2.0),
        ("can I run llama-3-8b on a 7900 XTX 24gb?", "Radeon RX 7900 XTX", 24.0),
        ("llama 3 8b inference on my M1 8GB macbook", "M1", None),
    ],
)
def test_the_question_is_answered_for_the_card_named(question: str, card: str, gib: float | None) -> None:
    done = ask(question)
    assert isinstance(done, DoneEvent), done
    est = done.answer.estimate
    assert est is not None
    if gib is None:  # a Mac of 8 GB: the part Metal lets its GPU use, not a catalog card
        assert est.gpu.vendor == "apple" and round(est.gpu.memory_bytes / GiB, 2) == 5.33
    else:
        assert est.gpu.name == card and round(est.gpu.memory_bytes / GiB, 2) == gib
    assert "a100" not in est.gpu.id and "4090" not in est.gpu.id


@pytest.mark.parametrize("question", ["does llama-2-7b run on my MX450?", "llama-2-7b on my macbook"])
def test_an_unsized_unknown_card_gets_a_question_not_a_default(question: str) -> None:
    done = ask(question)
    assert isinstance(done, ErrorEvent), done
    assert done.field == "gpu" and "how much memory" in done.message


@pytest.mark.parametrize(
    ("gpu", "engine", "context"),
    [("apple-64gb", "llama.cpp", None), ("apple-64gb", "ollama", None), ("mi300x", "vllm", "hip_runtime")],
)
def test_serving_engines_name_the_cards_runtime(gpu: str, engine: str, context: str | None) -> None:
    dtype = "q4_k_m" if engine in ("llama.cpp", "ollama") else None
    est = estimate(
        Scenario(model="llama-3-8b", task="inference", gpu=gpu, engine=engine, weight_dtype=dtype), plan=False
    )
    names = [c.name for c in est.components]
    assert "cuda_context" not in names and sum(c.bytes for c in est.components) == est.per_gpu.total_bytes
    if context:
        assert dict(zip(names, (c.bytes for c in est.components), strict=True))[context] == 600 * MiB


def test_several_macs_and_offload_on_a_mac_are_said() -> None:
    two = estimate(Scenario(model="llama-3-70b", task="inference", gpu="apple-64gb", num_gpus=2), plan=False)
    assert [n.code for n in two.notes if n.code == "several_macs"] == ["several_macs"]
    offload = estimate(
        Scenario(model="llama-2-7b", task="full_finetune", gpu="apple-128gb", offload_optimizer="cpu"),
        plan=False,
    )
    assert "unified_memory_offload" in [n.code for n in offload.notes]
    card = estimate(Scenario(model="llama-3-70b", task="inference", gpu="h100", num_gpus=2), plan=False)
    assert not {"several_macs", "unified_memory_offload"} & {n.code for n in card.notes}
