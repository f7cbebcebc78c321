"""Building blocks of the estimator, each against hand-derived or published numbers."""

from __future__ import annotations

import pytest

from tools.estimator import estimate
from tools.model.architecture import Architecture, LinearShape
from tools.model.lora import freeze_trainable, lora_trainable
from tools.resolve import resolve
from tools.rules.activations import final_norm_bytes, stage_activations
from tools.rules.optimizers import OPTIMIZERS, TrainableSpec
from tools.rules.precision import RECIPES
from tools.rules.quant import Bnb4bitFormat, BnbInt8Format, GroupwiseIntFormat, weight_format
from tools.scenario import Scenario
from tools.units import GiB, fmt_gib

SQ = LinearShape(name="q_proj", in_features=4096, out_features=4096, count=1)
N = 4096 * 4096


def per_param(fmt, lin=SQ) -> float:
    data, meta = fmt.linear_bytes([lin])
    return (data + meta) / (lin.in_features * lin.out_features)


# --- quantisation ---------------------------------------------------------------------------------
def test_nf4_bytes_per_param_with_and_without_double_quant() -> None:
    assert per_param(Bnb4bitFormat("nf4", double_quant=False)) == 0.5 + 4 / 64 == 0.5625
    assert per_param(Bnb4bitFormat("nf4", double_quant=True)) == 0.5 + 1 / 64 + 4 / (64 * 256)
    # QLoRA paper: double quantisation cuts the constants from 0.5 to ~0.127 bits per parameter
    dq_bits = (per_param(Bnb4bitFormat("nf4", double_quant=True)) - 0.5) * 8
    assert dq_bits == pytest.approx(0.127, abs=0.001)


def test_gptq_and_awq_int4_group_128() -> None:
    gptq = GroupwiseIntFormat("gptq", bits=4, group=128)
    data, meta = gptq.linear_bytes([SQ])
    assert data == N // 2
    groups = 4096 // 128
    assert meta == groups * 4096 * 2 + groups * 4096 // 2 + 4 * 4096  # fp16 scales + packed zeros + g_idx
    awq = weight_format("int4", "awq")
    assert awq.linear_bytes([SQ])[1] == groups * 4096 * 2 + groups * 4096 // 2


def test_bnb_int8_stores_int8_plus_fp32_row_scales() -> None:
    assert BnbInt8Format().linear_bytes([SQ]) == (N, 4 * 4096)


def test_fp8_keeps_embeddings_and_head_16bit() -> None:
    e = estimate(Scenario(model="llama-2-7b", task="inference", weight_dtype="fp8", gpu="h100"), plan=False)
    lin = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
    other = 6_738_415_616 - lin
    assert e.component("weights").bytes == lin + 2 * other
    assert e.component("quant_metadata").bytes == 32 * 7 * 8  # 7 linears per layer, two fp32 scales each


def test_int4_inference_defaults_to_gptq_and_says_so() -> None:
    e = estimate(Scenario(model="llama-2-7b", task="inference", weight_dtype="int4", gpu="4090"), plan=False)
    assert any(a.field == "quant_method" and a.value == "gptq" for a in e.assumptions)
    assert e.component("weights").bytes < 4.5e9


# --- precision recipes and optimizers -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("recipe", "bytes_per_param"), [("fp32", 16), ("amp", 16), ("mixed", 16), ("megatron", 18), ("bf16", 8)]
)
def test_recipe_bytes_per_param_with_adamw(recipe: str, bytes_per_param: int) -> None:
    r = RECIPES[recipe]
    spec = TrainableSpec(params=1000)
    states = OPTIMIZERS["adamw"].state_bytes(spec, r.state_bytes)
    assert (
        r.weight_bytes * 1000 + r.grad_bytes * 1000 + r.master_bytes * 1000 + states == bytes_per_param * 1000
    )


def test_optimizer_state_bytes() -> None:
    big = TrainableSpec(params=N + 4096, matrices=((4096, 4096, 1),), vector_params=4096)
    assert OPTIMIZERS["adamw"].state_bytes(big, 4) == 8 * (N + 4096)
    # 8-bit: 2 B + two fp32 absmax per 256-block for the matrix; the 4096-vector < min_8bit_size? (= 4096: not <)
    eight = OPTIMIZERS["adamw_8bit"].state_bytes(big, 4)
    assert eight == 2 * (N + 4 * N // 256) + 8 * 4096
    assert OPTIMIZERS["paged_adamw_8bit"].state_bytes(big, 4) == eight
    assert OPTIMIZERS["sgd"].state_bytes(big, 4) == 0
    assert OPTIMIZERS["sgd_momentum"].state_bytes(big, 4) == 4 * (N + 4096)
    assert OPTIMIZERS["lion"].state_bytes(big, 4) == 4 * (N + 4096)
    assert OPTIMIZERS["adafactor"].state_bytes(big, 4) == 4 * (4096 + 4096) + 4 * 4096


def test_adamw_foreach_transient_only_outside_fused_frameworks() -> None:
    amp = estimate(
        Scenario(model="llama-3.2-1b", task="full_finetune", precision_recipe="amp", gpu="h100"), plan=False
    )
    mixed = estimate(
        Scenario(model="llama-3.2-1b", task="full_finetune", precision_recipe="mixed", gpu="h100"), plan=False
    )
    foreach = estimate(
        Scenario(
            model="llama-3.2-1b",
            task="full_finetune",
            precision_recipe="amp",
            gpu="h100",
            optimizer="adamw_torch",
        ),
        plan=False,
    )
    # optim="adamw_torch" (torch AdamW, foreach on CUDA): a transient as large as the params in fp32
    # at the step (traced: +1.00 x P x 4 B)
    rs = resolve(Scenario(model="llama-3.2-1b", task="full_finetune", precision_recipe="amp"))
    p = rs.model.params.total
    step = {ph.phase: ph.tensor_bytes for ph in foreach.per_gpu.phases}["optimizer_step"]
    assert step == 4 * p + 4 * p + 8 * p + 4 * p  # weights + grads + m,v + foreach transient
    # the default "adamw" is HF Trainer's adamw_torch_fused (transformers >= 4.5x, torch >= 2.8):
    # no step transient (traced llama-3-8b: 0.01 GiB); the step phase then shows the end of backward
    # (all gradients + the tied embedding's gradient being accumulated: 2 x V x h x 4 B)
    fused_step = {ph.phase: ph.tensor_bytes for ph in amp.per_gpu.phases}["optimizer_step"]
    assert amp.component("optimizer_step_temporaries") is None
    assert fused_step == 16 * p + 2 * rs.model.params.embedding * 4
    # mixed (DeepSpeed, stated) at ZeRO-0: no foreach transient, but DeepSpeed's FP16_Optimizer upcasts and
    # flattens every gradient in step() (fp16/fused_optimizer.py): 8 B per parameter (traced)
    temp = mixed.component("optimizer_step_temporaries")
    assert temp is not None and temp.bytes == 8 * p and "FP16_Optimizer" in temp.source


def test_8bit_adam_saves_about_6_bytes_per_param() -> None:
    kw = {"model": "llama-2-7b", "task": "full_finetune", "gpu": "h100"}
    a = estimate(Scenario(**kw, optimizer="adamw"), plan=False).component("optimizer_states").bytes
    b = estimate(Scenario(**kw, optimizer="adamw_8bit"), plan=False).component("optimizer_states").bytes
    assert (a - b) / 6_738_415_616 == pytest.approx(6.0, abs=0.05)


def test_paged_optimizer_says_it_may_page_to_cpu() -> None:
    e = estimate(
        Scenario(model="llama-2-7b", task="qlora", optimizer="paged_adamw_8bit", gpu="4090"), plan=False
    )
    assert any(n.code == "paged_optimizer" for n in e.notes)


# --- LoRA / DoRA / freeze --------------------------------------------------------------------------------
def _pb(model: str):
    return resolve(Scenario(model=model, task="inference")).model.params


def test_lora_all_linear_and_dora_counts() -> None:
    pb = _pb("llama-2-7b")
    # PEFT: Llama-2-7B r=16 all-linear = 39,976,960 trainable
    assert lora_trainable(pb, 16, ["all-linear"]).params == 32 * 16 * ((4096 + 4096) * 4 + (4096 + 11008) * 3)
    assert lora_trainable(pb, 16, ["all-linear"]).params == 39_976_960
    # DoRA adds one magnitude vector of out_features per targeted linear
    assert lora_trainable(pb, 8, ["q_proj", "v_proj"], dora=True).params == 4_194_304 + 32 * (4096 + 4096)


def test_lora_gqa_counts_use_kv_width() -> None:
    pb = _pb("llama-3-8b")  # k/v project to 8 heads x 128 = 1024
    assert lora_trainable(pb, 8, ["q_proj", "v_proj"]).params == 32 * 8 * ((4096 + 4096) + (4096 + 1024))
    assert lora_trainable(pb, 8, ["q_proj", "v_proj"]).params == 3_407_872  # PEFT print for Llama-3-8B


def test_freeze_last_layers() -> None:
    pb = _pb("llama-2-7b")
    layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert freeze_trainable(pb, 2).params == 2 * layer


# --- activations ------------------------------------------------------------------------------------------
GPT3ISH = Architecture(
    hidden_size=4096,
    num_hidden_layers=32,
    num_attention_heads=32,
    intermediate_size=16384,
    vocab_size=51200,
    block_style="gpt",
    gated_mlp=False,
    norm_has_bias=True,
)


def _act(arch, **kw):
    base = {"b": 8, "s": 1024, "act_bytes": 2, "residual_bytes": 2, "flash": False, "tp": 1, "sp": False}
    base.update(kw)
    recompute = base.pop("recompute", "none")
    return stage_activations(arch, recompute=recompute, n_layers=32, in_flight=1, **base).bytes


def test_korthikanti_gpt_block_per_layer() -> None:
    s, b, h, a = 1024, 8, 4096, 32
    assert _act(GPT3ISH) == 32 * (s * b * h * 34 + 5 * a * s * s * b)  # Table 2, no parallelism
    # TP=2 without sequence parallel: sbh(10 + 24/t + 5as/(ht))
    assert _act(GPT3ISH, tp=2) == 32 * int(s * b * h * (10 + 24 / 2) + 5 * a * s * s * b / 2)
    # with sequence parallel: everything / t
    assert _act(GPT3ISH, tp=2, sp=True) == 32 * int(s * b * h * 34 / 2 + 5 * a * s * s * b / 2)
    # selective recompute drops exactly the 5as^2b attention core
    assert _act(GPT3ISH, recompute="selective") == 32 * s * b * h * 34
    # full recompute: layer inputs (2sbh each) + one layer live
    assert _act(GPT3ISH, recompute="full") == 32 * 2 * s * b * h + (s * b * h * 34 + 5 * a * s * s * b)


def test_llama_block_saves_more_than_korthikanti_34() -> None:
    arch = resolve(Scenario(model="llama-2-7b")).model.arch
    s, b, h = 2048, 1, 4096
    per_layer = _act(arch, s=s, b=b, flash=True) // 32
    # norms 2*(4 fp32 + 2 normalised + 2 output)h + 2 fp32 rsqrt (4 B each) + q 2h + k,v 4h + SDPA out 2h
    # (o_proj's input is a view of it: SDPA returns a (b, s, a, d) layout; traced op by op)
    # + SwiGLU 4*2*i + fp32 LSE 4 per head
    assert per_layer == s * b * (2 * 8 * h + 8 + 2 * h + 4 * h + 2 * h + 8 * 11008 + 4 * 32)
    assert per_layer > s * b * h * 34
    eager = _act(arch, s=s, b=b, flash=False) // 32
    # eager: no LSE; fp32 softmax output + bf16 probabilities per score element (a*s^2*b)
    assert eager == per_layer - 4 * 32 * s * b + 6 * 32 * s * s * b


def test_lora_saves_only_what_its_targets_need() -> None:
    from tools.rules.activations import SaveMask

    arch = resolve(Scenario(model="llama-2-7b")).model.arch
    s, h = 2048, 4096
    qv = SaveMask.for_targets(("q_proj", "v_proj"))
    base = {"b": 1, "s": s, "act_bytes": 2, "residual_bytes": 2, "flash": True, "tp": 1, "sp": False}
    per_layer = stage_activations(arch, recompute="none", n_layers=1, in_flight=1, mask=qv, **base).bytes
    # frozen norms: fp32 copies 2*4h + 2 rsqrt (4 B) + the attention norm output 2h (lora_A input);
    # q 2h, k,v 4h, SDPA out 2h (no o_proj input); SwiGLU gate/act/up 3*2*i (no down_proj input); LSE
    assert per_layer == s * (8 * h + 8 + 2 * h + 2 * h + 4 * h + 2 * h + 6 * 11008 + 4 * 32)
    # PEFT's fp32 adapters under autocast: q's and v's LoRA paths each save their own 16-bit cast of the
    # norm output instead of sharing one (traced llama-2-7b LoRA q,v: +2h B per token per layer)
    own = SaveMask.for_targets(("q_proj", "v_proj"), own_input_copies=True)
    per_layer_own = stage_activations(arch, recompute="none", n_layers=1, in_flight=1, mask=own, **base).bytes
    assert per_layer_own == per_layer + s * 2 * h
    lora = estimate(Scenario(model="llama-2-7b", task="lora", gpu="h100"), plan=False)
    # + the frozen final norm's fp32 upcast and rsqrt before the LM head
    fn = final_norm_bytes(arch, tokens=s, act_bytes=2, residual_bytes=2, trains=False)
    assert fn == s * (4 * h + 4)
    assert lora.component("activations").bytes == 32 * per_layer_own + fn


def test_freeze_tuning_saves_activations_only_in_trainable_layers() -> None:
    kw = {"model": "llama-2-7b", "gpu": "h100"}
    full = estimate(Scenario(**kw, task="full_finetune"), plan=False).component("activations").bytes
    frozen = (
        estimate(Scenario(**kw, task="freeze", trainable_layers=2), plan=False).component("activations").bytes
    )
    # 2 of 32 layers save activations; both add the final norm's saved tensors before the LM head
    # (freeze: its weight is frozen, only the fp32 upcast + rsqrt; full: + normalised + LM-head input)
    rs = resolve(Scenario(**kw, task="full_finetune"))
    tokens = rs.batch * rs.seq
    fn_full = final_norm_bytes(rs.model.arch, tokens=tokens, act_bytes=2, residual_bytes=2, trains=True)
    fn_frozen = final_norm_bytes(rs.model.arch, tokens=tokens, act_bytes=2, residual_bytes=2, trains=False)
    assert fn_full == tokens * (8 * 4096 + 4)
    assert (frozen - fn_frozen) * 16 == full - fn_full


def test_activations_do_not_shrink_with_data_parallel() -> None:
    kw = {"model": "llama-2-7b", "task": "full_finetune", "gpu": "h100", "batch_size": 2}
    one = estimate(Scenario(**kw), plan=False).component("activations").bytes
    eight = estimate(Scenario(**kw, num_gpus=8, zero_stage=3), plan=False).component("activations").bytes
    assert one == eight


def test_context_parallel_divides_sequence() -> None:
    kw = {"model": "llama-2-7b", "task": "full_finetune", "gpu": "h100", "seq_len": 8192}
    one = estimate(Scenario(**kw), plan=False).component("activations").bytes
    cp2 = estimate(Scenario(**kw, cp=2, num_gpus=2), plan=False).component("activations").bytes
    assert cp2 == estimate(Scenario(**{**kw, "seq_len": 4096}), plan=False).component("activations").bytes
    assert cp2 < one / 2 + 1


def test_fp32_training_falls_back_from_flash_with_a_note() -> None:
    e = estimate(
        Scenario(
            model="llama-3.2-1b", task="full_finetune", precision_recipe="fp32", gpu="h100", seq_len=1024
        ),
        plan=False,
    )
    assert any(n.code == "fp32_gqa_math_kernel" for n in e.notes)
    # llama-3.2-1b has GQA: fp32 SDPA runs the math kernel (the memory-efficient one takes no
    # enable_gqa), which saves the scores' softmax like eager but different per-token tensors
    acts = e.component("activations")
    assert acts is not None and acts.label_values == {"recompute": "none", "kernel": "math"}


def test_logits_are_large_for_128k_vocab() -> None:
    e = estimate(Scenario(model="llama-3-8b", task="lora", gpu="h100", seq_len=4096), plan=False)
    # loss backward: saved fp32 log_softmax + fp32 grad out + fp32 grad in: 12 B x s x V (the bf16
    # logits are already freed; traced llama-3-8b: 8 B x s x V temporaries beside the 4 B saved)
    assert e.component("logits").bytes == 12 * 4096 * 128256


def test_amp_autocast_copies_two_bytes_per_matmul_weight() -> None:
    e = estimate(
        Scenario(model="llama-3.2-1b", task="full_finetune", precision_recipe="amp", gpu="h100", seq_len=512),
        plan=False,
    )
    from tools.footprint import model_footprint

    rs = resolve(e.scenario)
    fp = model_footprint(rs)
    (c,) = [x for x in fp.components_at("end_of_forward") if x.name == "autocast_weight_copies"]
    assert all(x.name != "autocast_weight_copies" for x in fp.components_at("optimizer_step"))
    pb = rs.model.params
    lin = sum(x.count * x.in_features * x.out_features for x in pb.linears)
    assert c.bytes == 2 * (lin + pb.embedding)  # tied head: the embedding matrix is the LM head's weight


def test_sliding_window_caps_kv() -> None:
    from tools.rules.kv_cache import kv_bytes, kv_specs

    arch = resolve(Scenario(model="mistral-7b-v0.1")).model.arch
    specs = kv_specs(arch, dtype_bytes=2)
    if arch.sliding_window:
        assert kv_bytes(specs, 32768, 1) == kv_bytes(specs, arch.sliding_window, 1)
    custom = arch.model_copy(update={"sliding_window": 1024, "sliding_window_layers": None})
    capped = kv_specs(custom, dtype_bytes=2)
    assert kv_bytes(capped, 8192, 2) == 2 * 32 * 8 * 128 * 2 * 1024 * 2


def test_llama_tp_with_and_without_sequence_parallel() -> None:
    arch = resolve(Scenario(model="llama-2-7b")).model.arch
    s, h = 2048, 4096
    one = _act(arch, s=s, b=1, flash=True)
    assert _act(arch, s=s, b=1, flash=True, tp=2, sp=True) == one // 2  # everything split by t
    # without SP the norms' saved tensors (2 x (4 + 2 + 2) x h + 2 x 4 B rsqrt per token) stay whole
    norms = 32 * s * (2 * 8 * h + 8)
    assert _act(arch, s=s, b=1, flash=True, tp=2) == (one - norms) // 2 + norms


# --- traced calibration (docs/accuracy.md): framework rules and per-implementation tensors ---------------
def _phase_parts(rs, phase: str) -> dict[str, int]:
    from tools.footprint import model_footprint

    return {c.name: c.bytes for c in model_footprint(rs).components_at(phase)}


def test_gradient_lifetime_follows_the_framework() -> None:
    base = {"model": "llama-3.2-1b", "task": "full_finetune", "precision_recipe": "bf16", "seq_len": 1024}
    p = resolve(Scenario(**base)).model.params.total
    # HF Trainer, no accumulation: zero_grad(set_to_none=True) -> no gradients before backward finishes
    hf = resolve(Scenario(**base))
    assert "gradients" not in _phase_parts(hf, "end_of_forward")
    assert "gradients" not in _phase_parts(hf, "backward")
    assert _phase_parts(hf, "optimizer_step")["gradients"] == 2 * p
    # accumulation keeps .grad between micro-batches; DeepSpeed ZeRO keeps its gradient partitions
    for extra in ({"gradient_accumulation_steps": 4}, {"zero_stage": 1, "num_gpus": 2}):
        rs = resolve(Scenario(**base, **extra))
        assert _phase_parts(rs, "backward")["gradients"] == 2 * p, extra
    e = estimate(Scenario(**base, gpu="h100"), plan=False)
    assert any(n.code == "gradients_from_backward" for n in e.notes)


def test_qk_norm_saves_fp32_copies_per_head() -> None:
    arch = resolve(Scenario(model="qwen3-8b")).model.arch
    plain = arch.model_copy(update={"qk_norm": False})
    s, a, g, d = 512, arch.num_attention_heads, arch.kv_heads, arch.d_head
    extra = _act(arch, s=s, b=1, flash=True) - _act(plain, s=s, b=1, flash=True)
    # fp32 upcast (4) + normalised copy (2) per head element, fp32 rsqrt per head: traced 30,888 B/token
    assert (4 + 2) * (a + g) * d + 4 * (a + g) == 30_880
    assert extra == 32 * s * 30_880  # _act: 32 layers


def test_sliding_window_prefill_holds_the_whole_prompt() -> None:
    e = estimate(
        Scenario(model="mistral-7b-v0.1", task="inference", batch_size=4, seq_len=8192, max_new_tokens=4),
        plan=False,
    )
    per_tok = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads x 128, bf16
    phases = {ph.phase: ph for ph in e.per_gpu.phases}
    rs = resolve(e.scenario)
    assert _phase_parts(rs, "prefill")["kv_cache"] == per_tok * 8188 * 4  # DynamicCache: every prompt token
    assert _phase_parts(rs, "decode")["kv_cache"] == per_tok * 4096 * 4  # trimmed to the window
    assert (
        e.per_gpu.peak_phase == "prefill" and phases["prefill"].tensor_bytes > phases["decode"].tensor_bytes
    )


def test_gemma2_softcapping_keeps_the_tanh_outputs() -> None:
    rs = resolve(Scenario(model="gemma-2-2b", task="full_finetune", precision_recipe="bf16", seq_len=1024))
    assert rs.model.arch.final_logit_softcapping == 30.0 and rs.model.arch.norm_fp32_scale
    # loss backward 12 B + the bf16 tanh output of the final soft-capping, per logit element
    assert _phase_parts(rs, "backward")["logits"] == (12 + 2) * 1024 * 256000


def test_lora_dropout_keeps_a_dropped_copy_and_a_mask_per_target() -> None:
    kw = {"model": "llama-2-7b", "task": "lora", "gpu": "a100", "precision_recipe": "bf16"}
    plain = estimate(Scenario(**kw), plan=False).component("activations").bytes
    dropped = estimate(Scenario(**kw, lora_dropout=0.05), plan=False).component("activations").bytes
    s, h = 2048, 4096
    # q and v: a dropped bf16 copy each instead of the shared norm output (+2h) and a 1-byte mask each (+2h)
    assert dropped - plain == 32 * s * (2 * h + 2 * h)


def _sources_once(e) -> None:  # type: ignore[no-untyped-def]
    for c in e.components:
        parts = [p.strip() for p in c.source.split("; ")]
        assert len(parts) == len(set(parts)), c.source
        assert not ("ZeRO paper" in c.source and "Rajbhandari" in c.source), c.source


def test_full_finetune_components_are_readable_and_add_up() -> None:
    """Llama-2-7B full FT, mixed AdamW: 16 B/param = 107,814,649,856 B (100.41 GiB) of model states."""
    e = estimate(Scenario(model="llama-2-7b", task="full_finetune", gpu="a100"))
    p = 6_738_415_616
    states = sum(e.component(n).bytes for n in ("weights", "gradients", "master_weights", "optimizer_states"))
    assert states == 16 * p == 107_814_649_856
    opt = e.component("optimizer_states")
    # was: "53,907,324,928 B x 6,738,415,616/6,738,415,616 local = 53,907,324,928 B"
    assert opt.substituted == "2 x 6,738,415,616 x 4 B = 53,907,324,928 B"
    assert (
        e.component("gradients").source
        == "ZeRO (Rajbhandari et al. 2020) sec. 3.1; DeepSpeed bf16/fp16 optimizer"
    )
    act = e.component("activations")
    # was a one-line wall of symbols ("(1|2)*B*q", "MoE: top_k*(mlp_e + ...)") for a dense model
    assert "(1|2)" not in act.formula and "top_k" not in act.formula
    # traced calibration (docs/accuracy.md): o_proj's input is a view of the SDPA output (attention
    # 40,960 -> 32,768 B/token), the norms' fp32 rsqrt (+8 B/token), and the final norm before the LM head
    assert act.substituted == (
        "1 x 32 layers x 381,960,192 B = 12,222,726,144 B + final norm 67,117,056 B = 12,289,843,200 B; "
        "per layer: 2,048 x 1 x (65,544 norms + 32,768 attention + 88,064 MLP) B + 262,144 B core = 381,960,192 B"
    )
    assert 2048 * (65_544 + 32_768 + 88_064) + 262_144 == 381_960_192  # the line's own arithmetic
    assert 32 * 381_960_192 + 2048 * (8 * 4096 + 4) == 12_289_843_200
    slack = e.component("allocator_slack")
    assert slack.bytes == 4 * GiB and "(the cap)" in slack.substituted  # 5% of 113 GiB is capped at 4 GiB
    _sources_once(e)


def test_qlora_weights_formula_says_what_is_4_bit_and_what_is_not() -> None:
    """QLoRA Qwen2.5-14B on a 4090: linears in NF4, embeddings/LM head/norms in fp32 (PEFT
    prepare_model_for_kbit_training), adapters fp32; scales listed once, not the full 0.5 B rate."""
    e = estimate(Scenario(model="qwen2.5-14b", task="qlora", gpu="4090"))
    w, meta = e.component("weights"), e.component("quant_metadata")
    assert w.substituted == (
        "13,212,057,600 x 0.5 B + 1,557,976,064 x 4 B + 6,291,456 x 4 B = 12,863,098,880 B"
    )
    assert 13_212_057_600 // 2 + 1_557_976_064 * 4 + 6_291_456 * 4 == 12_863_098_880
    assert meta.formula == "scales per quantised linear weight: 1/64 B + 4/(64*256) B"
    assert meta.bytes == 209_664_000  # 13,212,057,600 / 64 + 13,212,057,600 * 4 / 16,384 (rounded per block)
    # at the loss backward no layer is being recomputed, the loss
    # tensors are 12 B/elem, and under checkpointing the autocast adapter copies are not kept for
    # backward (traced, docs/accuracy.md)
    assert e.fits and fmt_gib(e.per_gpu.total_bytes) == "18.24 GiB"
    _sources_once(e)


def test_int4_serving_rates_read_as_bytes() -> None:
    e = estimate(Scenario(model="llama-3-70b", task="inference", weight_dtype="int4", gpu="a100"))
    assert e.component("weights").substituted == (
        "68,451,041,280 x 0.5 B + 2,102,665,216 x 2 B = 38,430,851,072 B"
    )
    _sources_once(e)
