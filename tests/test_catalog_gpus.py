"""GPU catalog: usable memory figures, aliases people type, and errors."""

from __future__ import annotations

import pytest

from service.agent.assumption_text import code_text
from tests.answer_support import answer_text
from tools.catalog import find_gpu, get_gpu, list_gpus
from tools.catalog.gpus import gpu_key
from tools.errors import ScenarioError
from tools.estimator import estimate
from tools.scenario import Scenario

MiB = 2**20


def test_catalog_size_and_fields() -> None:
    gpus = list_gpus()
    assert len(gpus) >= 25
    assert len({g.id for g in gpus}) == len(gpus)
    for gpu in gpus:
        assert gpu.memory_bytes >= 8 * 2**30 - 4 * MiB  # the smallest: RTX 4060, 8188 MiB
        assert gpu.memory_source and gpu.marketed and gpu.vendor


@pytest.mark.parametrize(
    "gpu_id,mib",
    [  # nvidia-smi memory.total as printed on the card (MiB)
        ("a100-80gb", 81920),
        ("rtx-4060", 8188),
        ("rtx-4060-ti", 16380),
        ("rtx-4070", 12282),
        ("a100-40gb", 40960),
        ("h100-80gb", 81559),
        ("h100-nvl", 95830),
        ("h200", 143771),
        ("b200", 183359),
        ("gh200", 97871),
        ("h20", 97871),
        ("rtx-4090", 24564),
        ("rtx-4090d", 24564),
        ("rtx-3090", 24576),
        ("rtx-5090", 32607),
        ("rtx-3060", 12288),
        ("t4", 15360),
        ("v100-16gb", 16384),
        ("v100-32gb", 32768),
        ("a10g", 23028),
        ("l40s", 46068),
        ("l20", 46068),
        ("rtx-a6000", 49140),
    ],
)
def test_memory_figures(gpu_id: str, mib: int) -> None:
    assert get_gpu(gpu_id).memory_bytes == mib * MiB


def test_amd_and_ascend_memory() -> None:
    assert get_gpu("mi300x").memory_bytes == 206_158_430_208  # rocm-smi VRAM Total Memory (B): 192 GiB
    assert get_gpu("mi250").memory_bytes == 68_702_699_520  # per GCD
    assert get_gpu("ascend-910b").memory_bytes == 64 * 2**30


@pytest.mark.parametrize(
    "name,gpu_id",
    [
        ("A100", "a100-80gb"),
        ("a100 80g", "a100-80gb"),
        ("A100-SXM4-80GB", "a100-80gb"),
        ("A100 40GB", "a100-40gb"),
        ("4090", "rtx-4090"),
        ("RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("4090D", "rtx-4090d"),
        ("3090", "rtx-3090"),
        ("3060", "rtx-3060"),
        ("5090", "rtx-5090"),
        ("T4", "t4"),
        ("colab T4", "t4"),
        ("V100", "v100-32gb"),
        ("V100 16GB", "v100-16gb"),
        ("A10", "a10"),
        ("A10G", "a10g"),
        ("L40S", "l40s"),
        ("A6000", "rtx-a6000"),
        ("H100", "h100-80gb"),
        ("H100 80GB HBM3", "h100-80gb"),
        ("H100 PCIe", "h100-pcie"),
        ("H100 NVL", "h100-nvl"),
        ("H100 96GB", "h100-96gb"),
        ("H200", "h200"),
        ("B200", "b200"),
        ("GH200", "gh200"),
        ("A800", "a800-80gb"),
        ("H800", "h800"),
        ("H20", "h20"),
        ("L20", "l20"),
        ("910B", "ascend-910b"),
        ("Ascend 910B", "ascend-910b"),
        ("昇腾910B", "ascend-910b"),
        ("MI250", "mi250"),
        ("MI300X", "mi300x"),
    ],
)
def test_find_gpu_aliases(name: str, gpu_id: str) -> None:
    assert find_gpu(name)[0].id == gpu_id


def test_ambiguous_names_say_which_variant() -> None:
    _, note = find_gpu("A100")
    assert note is not None
    assert (
        code_text(*note, "en") == "'A100' taken as the 80 GB variant (a100-80gb); say A100 40GB for the other"
    )
    assert find_gpu("A100 80GB")[1] is None
    v100 = find_gpu("V100")[1]
    assert v100 is not None and v100.values["variant"] == "32 GB"
    h100 = find_gpu("H100")[1]
    assert h100 is not None and code_text(*h100, "en") == (
        "'H100' taken as the 80 GB SXM variant (h100-80gb); say H100 PCIe, H100 NVL (94 GB) or H100 96GB for the others"
    )
    assert code_text(*h100, "zh") == (
        "H100 有多个版本：按 80 GB SXM 版本（h100-80gb）计算；要按其他版本计算请写 H100 PCIe、H100 NVL (94 GB) 或 H100 96GB"
    )


def test_dtype_support() -> None:
    assert not get_gpu("t4").bf16 and not get_gpu("v100-32gb").bf16
    assert get_gpu("a100-80gb").bf16 and not get_gpu("a100-80gb").fp8
    assert get_gpu("h100-80gb").fp8 and get_gpu("rtx-4090").fp8


def test_alias_keys_unique_across_cards() -> None:
    owner: dict[str, str] = {}
    for gpu in list_gpus():
        for alias in {gpu.id, gpu.name, *gpu.aliases}:
            key = gpu_key(alias)
            if key:
                assert owner.setdefault(key, gpu.id) == gpu.id, (alias, owner[key], gpu.id)


def test_unknown_gpu_error() -> None:
    with pytest.raises(ScenarioError) as err:
        find_gpu("A1000")
    assert err.value.field == "gpu"
    assert "unknown GPU 'A1000'" in err.value.message
    assert "a100-80gb" in err.value.suggestions
    with pytest.raises(ScenarioError):
        find_gpu("")


@pytest.mark.parametrize(
    "name,gpu_id",
    [
        ("4090-24gb", "rtx-4090"),
        ("l40s 48GB", "l40s"),
        ("5090 32G", "rtx-5090"),
        ("b200-192gb", "b200"),
        ("h100-94gb", "h100-nvl"),
        ("3060 12GB", "rtx-3060"),
    ],
)
def test_stated_memory_that_matches_is_accepted(name: str, gpu_id: str) -> None:
    assert find_gpu(name)[0].id == gpu_id


def test_stated_memory_the_catalog_lacks_is_taken_at_that_size() -> None:
    # a modded 48 GB 4090: the 4090's dtype support at 48 GiB, with the assumption saying so
    spec, note = find_gpu("4090 48GB")
    assert spec.memory_bytes == 48 * 2**30 and spec.bf16 and spec.fp8
    assert note is not None
    text = code_text(*note, "en") or ""
    assert "RTX 4090" in text and "stated 48 GB" in text and "24 GB" in text
    # the synthetic id resolves again to the same card (follow-ups re-resolve the scenario)
    again, _ = find_gpu(spec.id)
    assert again.memory_bytes == spec.memory_bytes
    spec8, note8 = find_gpu("3060 8GB")
    assert (
        spec8.memory_bytes == 8 * 2**30
        and note8 is not None
        and "stated 8 GB" in (code_text(*note8, "en") or "")
    )


@pytest.mark.parametrize(
    "name,gb", [("24gb", 24), ("12GB", 12), ("24G显存", 24), ("my 12GB card", 12), ("16 GB VRAM", 16)]
)
def test_bare_card_size_is_taken_at_that_size(name: str, gb: int) -> None:
    spec, note = find_gpu(name)
    assert spec.memory_bytes == gb * 2**30
    assert note is not None and f"stated {gb} GB" in (code_text(*note, "en") or "")
    assert find_gpu(spec.id)[0].memory_bytes == gb * 2**30


@pytest.mark.parametrize(
    "name,gpu_id,mib",
    [
        ("2080ti-22gb", "rtx-2080-ti-22gb", 22528),
        ("2080 Ti", "rtx-2080-ti", 11264),
        ("4060 Ti 8GB", "rtx-4060-ti-8gb", 8188),
        ("4060 Ti 16GB", "rtx-4060-ti", 16380),
        ("4070 Ti Super", "rtx-4070-ti-super", 16376),
        ("4080 Super", "rtx-4080", 16376),
        ("3080 12GB", "rtx-3080-12gb", 12288),
        ("A4000", "rtx-a4000", 16376),
        ("A4500", "rtx-a4500", 20470),
        ("A5000", "rtx-a5000", 24564),
        ("A30", "a30", 24576),
        ("Gaudi 2", "gaudi2", 98304),
        ("Gaudi3", "gaudi3", 131072),
    ],
)
def test_cards_people_ask_about(name: str, gpu_id: str, mib: int) -> None:
    spec, _ = find_gpu(name)
    assert spec.id == gpu_id and spec.memory_bytes == mib * 2**20


def test_turing_cards_have_no_bf16() -> None:
    assert not find_gpu("2080 Ti")[0].bf16 and not find_gpu("2080ti-22gb")[0].bf16


def test_apple_unified_memory_is_what_metal_lets_a_process_use() -> None:
    # MTLDevice.recommendedMaxWorkingSetSize: about 3/4 of RAM at 64 GB and above, about 2/3 below
    assert find_gpu("Mac Studio 128GB")[0].memory_bytes == 96 * 2**30
    assert find_gpu("mac 64gb")[0].memory_bytes == 48 * 2**30
    assert find_gpu("macbook 32gb")[0].memory_bytes == 32 * 2**30 * 2 // 3
    assert find_gpu("m2 ultra 192gb")[0].memory_bytes == 144 * 2**30
    assert get_gpu("apple-16gb").vendor == "apple" and not get_gpu("apple-16gb").bf16
    assert find_gpu("MI210")[0].memory_bytes == 68_702_699_520


def test_popular_consumer_cards_are_known() -> None:
    """'InternLM2.5-7B QLoRA 一张 4060' was 'unknown GPU 4060'; nvidia-smi memory.total 8188 MiB."""
    text = answer_text("InternLM2.5-7B QLoRA 一张 4060")
    assert "GeForce RTX 4060（每张 8.00 GiB）" in text
    e = estimate(Scenario(model="internlm2.5-7b", task="qlora", gpu="4060"), plan=False)
    assert e.gpu.memory_bytes == 8188 * 2**20 and not e.fits
