"""Chinese answers: errors, labels, formulas, notes and the parser's default reasons in Chinese,
with the same figures as the English ones."""

from __future__ import annotations

import re

import pytest

from service.agent.events import DoneEvent, ErrorEvent
from service.agent.render import component_label, render_answer, render_error
from tests.answer_support import ask, ask_in
from tools.errors import ScenarioError
from tools.estimator import estimate
from tools.scenario import Scenario


@pytest.mark.parametrize(
    ("question", "zh_text"),
    [
        ("Llama-9-7B 推理要多少显存", "不认识模型「llama-9-7b」"),
        ("用3张4090 TP=3 推理 Llama-3-8B", "张量并行 TP=3 不能整除模型的 32 个注意力头"),
        ("推理 Llama-3-8B PP=64 在 4090 上", "流水线并行 PP=64 比模型的 32 层还多"),
        ("Qwen2.5-7B 推理 一张 2080", "不认识显卡「2080」"),
        ("LoRA微调 Llama-3-8B 一张4090 batch -1", "必须大于或等于 1（你给的是 -1）"),
    ],
)
def test_chinese_errors_are_chinese(question: str, zh_text: str) -> None:
    event = ask(question)
    assert isinstance(event, ErrorEvent)
    assert zh_text in event.message
    prose = re.sub(r"[A-Za-z0-9_.\-]+", "", event.message.split("你是不是想找")[0])
    assert not re.search(r"\b(unknown|does not|larger than|Accepted|should)\b", event.message)
    assert prose.strip()


def test_error_codes_are_stable_and_english_stays_english() -> None:
    with pytest.raises(ScenarioError) as info:
        estimate(Scenario(model="llama-3-8b", task="inference", lora_rank=8), plan=False)
    err = info.value
    assert err.code == "lora_task" and err.values == {"task": "inference"}
    assert "LoRA 设置（秩、目标模块、DoRA）不适用于「inference」任务" in render_error(err, "zh")
    assert render_error(err, "en").startswith(
        "I could not estimate that: lora_rank: LoRA settings do not apply"
    )
    with pytest.raises(ScenarioError) as tp:
        estimate(Scenario(model="llama-3-8b", task="inference", tp=3, num_gpus=3), plan=False)
    assert tp.value.code == "tp_heads" and tp.value.values["divisors"] == "1, 2, 4, 8, 16, 32"
    assert "可接受的取值：能整除注意力头数的值：1, 2, 4, 8, 16, 32。" in render_error(tp.value, "zh")


def test_chinese_formulas_keep_symbols_and_numbers_and_say_the_symbols_in_chinese() -> None:
    """Chinese answers printed 'micro-batches in flight x layers x layer input ...' in English; formulas
    are now symbols and numbers, and the legend under the breakdown says what each symbol means."""
    e = estimate(Scenario(model="qwen2.5-14b", task="qlora", gpu="4090"), plan=False)
    zh, en = render_answer(e, "zh"), render_answer(e, "en")
    act = e.component("activations")
    # the peak is the loss backward: layer inputs only (the recomputed layer comes after it; traced) +
    # the final norm; q's and v's LoRA paths each keep their own 16-bit input copy (+2h norms) and the
    # bnb 4-bit base linears keep their inputs (MatMul4Bit ctx.tensors = (A, B)): both norm outputs
    # (+4h) and the SwiGLU product (+2i) in the per-layer figure
    assert act.formula == (
        "m_flight x L_local x A_in + A_final_norm; A_layer = s x b x (B_norms + B_attn + B_mlp) + A_core (flash)"
    )
    assert act.substituted == (
        "1 x 48 x 20,971,520 B = 1,006,632,960 B + 41,951,232 B = 1,048,584,192 B; "
        "A_layer = 2,048 x 1 x (81,928 + 24,576 + 110,592) B + 327,680 B = 444,940,288 B"
    )
    assert f"`{act.formula}` = `{act.substituted}`" in zh and f"`{act.formula}` = `{act.substituted}`" in en
    assert "公式中的符号：" in zh and "Symbols in the formulas:" in en
    assert "  - `m_flight`：本流水线阶段上在途的 micro-batch 数" in zh
    assert "  - `A_final_norm`：LM head 之前最终归一化保存的张量" in zh
    assert "  - `P_other`：本卡上的其他参数（嵌入、LM head、归一化）" in zh
    assert "  - `m_flight`: micro-batches in flight on this pipeline stage" in en
    assert "P_linear x 0.5 B (nf4) + P_other x 4 B + P_adapter x 4 B" in zh
    # only the symbols these formulas use are listed: no KV cache, no pipeline schedule here
    assert "`n_seq`" not in zh and "`m_schedule`" not in zh
    assert "micro-batches in flight" not in zh and "per layer" not in zh and "final norm" not in zh


def test_chinese_answers_keep_known_notes_in_chinese() -> None:
    """Notes were dropped from Chinese answers (English only); known ones now read in Chinese."""
    e = estimate(Scenario(model="llama-3-8b", task="inference", gpu="4090", seq_len=32768), plan=False)
    zh = render_answer(e, "zh")
    assert "序列长度 32,768 超过了模型的 max_position_embeddings（8,192）" in zh
    assert "exceeds" not in zh
    q = render_answer(estimate(Scenario(model="qwen2.5-14b", task="qlora", gpu="4090"), plan=False), "zh")
    assert "prepare_model_for_kbit_training 会把未量化的参数（嵌入、LM head、归一化）转成 fp32" in q


# Each question covers one kind of job; the answers are scanned for English component labels, notes
# dropped for want of a Chinese pattern, and the calibration's new formula words.
ZH_COVERAGE_QUESTIONS = (
    "一张A100 80G全参微调Llama-2-7B，batch 4，序列长度2048，需要多少显存",  # full FT (mixed)
    "两张4090能不能LoRA微调千问2.5-14B，batch 8，cutoff_len 2048，训练3轮",  # LoRA, epochs
    "单张4090用QLoRA微调Llama-3-8B，batch 2，序列2048，梯度累积8步",  # QLoRA, accumulation
    "Llama-3-8B在一张4090上推理，batch 1，上下文4096，要多少显存",  # inference
    "用vLLM在一张H100上部署Qwen2.5-7B，最大长度8192，能放多少KV缓存",  # serving
    "qwen3-30b-a3b MoE 全参微调，8张H100，ZeRO-3，batch 1，序列4096",  # MoE, ZeRO-3
    "用PPO训练llama-3-8b，4张A100 80G，batch 2，序列2048",  # RL: PPO
    "GRPO训练Qwen2.5-7B，8张H100，batch 4，序列1024",  # RL: GRPO
    "DPO训练qwen2.5-7b，4张A100 80G，batch 2，序列2048",  # RL: DPO
    "一张A100 80G全参微调qwen2.5-1.5b，fp32训练，batch 8，序列2048",  # fp32 (SDPA math kernel)
    "一张A100 80G全参微调qwen2.5-1.5b，amp混合精度，batch 8，序列2048，梯度累积4步",  # amp
    "Llama-2-7B全参微调开启梯度检查点，2张A100 80G，ZeRO-2，batch 8，序列4096",  # recompute, ZeRO-2
    "Llama-2-13B LoRA微调，秩64，目标全部线性层，一张A100 40G，batch 4，序列2048，开梯度检查点",
    "Mixtral-8x7B推理，两张A100 80G，张量并行2，batch 8，序列4096",  # MoE inference, TP
    "一张H100全参微调Llama-3-8B，bf16，adamw 8bit，batch 2，序列4096，梯度累积16步",
)


# English words allowed in a Chinese component label: product, library and kernel names, symbols
LABEL_WORDS_ALLOWED = frozenset(
    {
        "LoRA",
        "QLoRA",
        "KV",
        "CUDA",
        "NCCL",
        "FP32",
        "ZeRO",
        "logits",
        "autocast",
        "rollout",
        "cuBLAS",
        "vLLM",
        "AdamW",
        "flash",  # attention kernels, by the names Scenario.attention takes
        "eager",
        "math",
        "token",  # the word Chinese LLM documentation uses (vLLM, SGLang, Qwen docs)
    }
)


COMPONENT_LINE = re.compile(r"^- \*\*(.+?)\*\*：")


NEW_FORMULA_WORDS = (
    "final norm",
    "SDPA math kernel",
    "scored positions",
    "response tokens",
    "completion tokens",
)


def test_chinese_answers_have_no_untranslated_component_labels_or_notes() -> None:
    from service.agent.render import note_text

    seen_components: set[str] = set()
    for question in ZH_COVERAGE_QUESTIONS:
        done = ask(question)
        assert isinstance(done, DoneEvent), (question, done)
        answer = done.answer
        assert answer.language == "zh" and answer.estimate is not None, question
        est, text = answer.estimate, answer.answer
        seen_components |= {c.name for c in est.components}
        labels = [m.group(1) for m in map(COMPONENT_LINE.match, text.splitlines()) if m]
        assert len(labels) == len(est.components), question
        for label in labels:
            words = set(re.findall(r"[A-Za-z][A-Za-z0-9]*", label)) - {"3", "P"}
            english = {w for w in words if w not in LABEL_WORDS_ALLOWED and not re.fullmatch(r"[A-Z0-9]+", w)}
            assert not english, (question, label)
            assert "_" not in label, (question, label)  # a raw component name
        for note in est.notes:  # every estimator note is said in Chinese (none dropped, none in English)
            assert note_text(note, "zh") in text and note_text(note, "zh") != note_text(note, "en"), note
        for words in NEW_FORMULA_WORDS:
            assert words not in text, (question, words)
        assert "准确度：" in text, question
        # the scenario values read in Chinese (GRPO's rule-based reward is "无", not None)
        assert "= None" not in text, question
    # the calibration's new components appear in these answers and have Chinese labels
    assert {"activations", "gradients", "logits", "cuda_context", "allocator_slack"} <= seen_components


@pytest.mark.parametrize(
    ("stated", "component", "zh_label"),
    [
        # bf16 full fine-tuning peaks at the optimizer step, where the end-of-backward temporaries live
        (
            dict(
                model="llama-2-7b",
                task="full_finetune",
                precision_recipe="bf16",
                gpu="a100-80gb",
                batch_size=1,
                seq_len=2048,
            ),
            "end_of_backward_temporaries",
            "反向结束时的临时张量：第一层的激活值或嵌入层梯度（所有梯度都还在）",
        ),
        # GRPO with vLLM colocate (gpu_memory_utilization stated): the engine's reservation
        (
            dict(
                model="qwen2.5-7b",
                task="grpo",
                gpu="h100-80gb",
                num_gpus=8,
                batch_size=4,
                seq_len=1024,
                gpu_memory_utilization=0.3,
            ),
            "vllm_reservation",
            "vLLM 同卡推理引擎（权重副本 + KV 块）",
        ),
    ],
)
def test_calibration_components_have_chinese_labels(stated: dict, component: str, zh_label: str) -> None:
    e = estimate(Scenario(**stated), plan=False)
    assert component in {c.name for c in e.components}
    zh = render_answer(e, "zh")
    assert f"- **{zh_label}" in zh
    c = next(c for c in e.components if c.name == component)
    english = component_label(c, "en")
    assert english != component_label(c, "zh") and english not in zh  # the English label is not shown


# (question, Chinese assumption line, English assumption line). Chinese answers used to replace every
# reason below by the generic per-field line ("你没有说明显卡，按这张卡给出结论"), losing e.g. the
# Apple-silicon caveat and the ollama 4-bit note.
FILLED_REASONS = [
    (
        "Mac M2 32G 能跑 Qwen2.5-14B 推理吗",
        "- 显卡 = apple-32gb：32 GB 统一内存的 Apple 芯片 Mac（apple-32gb）：macOS 只允许 GPU 使用统一内存的一部分"
        "（Metal recommendedMaxWorkingSetSize，64 GB 以下约 2/3，64 GB 及以上约 3/4），按这一部分来比较",
        "- gpu = apple-32gb: an Apple silicon Mac with 32 GB of unified memory (apple-32gb): macOS lets the GPU use "
        "only part of it (Metal recommendedMaxWorkingSetSize, about 2/3 of RAM below 64 GB, 3/4 from 64 GB), and "
        "that part is the memory compared",
    ),
    (
        "我只有16G显存能跑Qwen2.5-7B推理吗",
        "- 显卡 = rtx-4060-ti：你只说了 16 GB 显存、没有说显卡型号：按 rtx-4060-ti 计算（目录里最常见的 16 GB 显卡）",
        "- gpu = rtx-4060-ti: a 16 GB card without a name: taken as rtx-4060-ti, the most common catalog card "
        "with 16 GB",
    ),
    (
        "ollama 跑 qwen2.5:14b 在 4090 上",
        "- 权重精度 = q4_k_m：ollama 的默认模型标签是 4 位 GGUF 量化（Q4_K_M，约 4.8 bpw）；要按其他精度计算请写明标签，"
        "如 q8_0 或 fp16",
        "- weight_dtype = q4_k_m: ollama's default model tags are 4-bit GGUF quantisations (Q4_K_M, about 4.8 bits per weight); "
        "name a tag such as q8_0 or fp16 for another precision",
    ),
    (
        "ChatGLM3-6B P-Tuning 单卡 3060 12G",
        "- 任务 = lora：P-Tuning / Prefix Tuning 在冻结的底座上只训练少量参数：按 LoRA 估算"
        "（冻结的 16 位底座 + 小的可训练适配器）",
        "- task = lora: P-Tuning / prefix tuning trains a small set of parameters on a frozen base: "
        "estimated as LoRA (frozen 16-bit base, small trainable adapter)",
    ),
    (
        "用 unsloth 在 colab 免费T4上微调 llama-3.1-8b，4bit",
        "- 任务 = qlora：在 4 位底座上微调但没有说明方法（unsloth / Colab 的 4 位微调示例）：4 位权重保持冻结、"
        "只训练 LoRA 适配器，即 NF4 底座上的 QLoRA",
        "- task = qlora: fine-tuning on a 4-bit base without a method named (unsloth / Colab 4-bit notebooks): "
        "the 4-bit weights stay frozen and LoRA adapters train, i.e. QLoRA on an NF4 base",
    ),
    (
        "DPO Qwen2.5-7B LoRA 两张A100",
        "- LoRA 秩 = 8：DPO 用 LoRA 但没有说明秩：按 PEFT LoraConfig 的默认值 r=8 计算",
        "- lora_rank = 8: LoRA named for DPO without a rank: PEFT LoraConfig default r=8",
    ),
    (
        "deepseek-r1-distill-qwen-7b 4090 推理",
        "- 模型 = deepseek-r1-distill-qwen-7b：DeepSeek-R1 的蒸馏模型是在 Qwen / Llama 上微调的模型，结构与底座相同"
        "（DeepSeek-R1 模型卡）：按目录条目 qwen2.5-7b 计算",
        "- model = deepseek-r1-distill-qwen-7b: DeepSeek-R1's distilled models are fine-tuned Qwen / Llama models "
        "with their base's shapes (DeepSeek-R1 model card): estimated with the catalog entry qwen2.5-7b",
    ),
    # the catalog's own assumptions (GPU alias, bare size): a code and values like every other
    (
        "7B 全参微调 一张A100",
        "- 模型 = 7B：你只给了参数规模 7B，目录里没有相差 2% 以内的模型：按这个规模常见的结构搭一个正好 7,000,000,000 "
        "参数的稠密模型计算（32 层，hidden 4096，32 个注意力头、8 个 KV 头（每头 128 维），SwiGLU 中间层 11712，词表 "
        "128,256，Llama-3 布局）",
        "- model = 7B: a bare '7B' is taken as a dense decoder of exactly 7,000,000,000 parameters with the shapes "
        "typical of that size: 32 layers, hidden 4096, 32 heads (8 KV heads of 128), SwiGLU intermediate 11712, "
        "vocabulary 128,256 (Llama-3 layout) (no catalog model within 2%)",
    ),
    (
        "8B 全参微调 一张A100",
        "- 模型 = llama-3.1-8b：你只给了参数规模 8B：按 Llama-3.1-8B 的结构计算（8.03B 参数）",
        "- model = llama-3.1-8b: a bare '8B' is taken as Llama-3.1-8B's architecture (8.03B params)",
    ),
    (
        "7B 全参微调 一张A100",
        "- 显卡 = a100-80gb：A100 有多个版本：按 80 GB 版本（a100-80gb）计算；要按另一个版本计算请写 A100 40GB",
        "- gpu = a100-80gb: 'A100' taken as the 80 GB variant (a100-80gb); say A100 40GB for the other",
    ),
]


@pytest.mark.parametrize(("question", "zh_line", "en_line"), FILLED_REASONS)
def test_filled_defaults_say_their_specific_reason_in_both_languages(
    question: str, zh_line: str, en_line: str
) -> None:
    zh = ask_in(question, "zh").splitlines()
    en = ask_in(question, "en").splitlines()
    assert zh_line in zh, [line for line in zh if line.startswith("- ")]
    assert en_line in en, [line for line in en if line.startswith("- ")]
    assert "你没有说明显卡" not in "\n".join(zh)  # every case here names its card (or its memory)


def test_filled_defaults_carry_a_stable_code_and_values() -> None:
    done = ask("Mac M2 32G 能跑 Qwen2.5-14B 推理吗")
    assert isinstance(done, DoneEvent) and done.answer.estimate is not None
    gpu = next(a for a in done.answer.estimate.assumptions if a.field == "gpu")
    assert (gpu.code, gpu.values) == ("card_apple_memory", {"gb": 32, "card": "apple-32gb"})
    assert gpu.reason.startswith("an Apple silicon Mac with 32 GB")  # English for API/LLM consumers
    assert done.answer.estimate.gpu.memory_bytes == 32 * 2**30 * 2 // 3  # what Metal lets one process use
