"""Trainable parameters of full, freeze, LoRA and DoRA fine-tuning, exactly.

LoRA (Hu et al. 2021; PEFT peft/tuners/lora/layer.py `update_layer`): each targeted Linear(in, out)
gets lora_A (r x in) and lora_B (out x r), no bias: r * (in + out) trainable parameters.
DoRA (Liu et al. 2024; PEFT `lora_magnitude_vector`): + one magnitude vector of out_features.
Target matching follows PEFT `check_target_module_exists`: a module matches when its name equals
a target or ends with "." + target; `all-linear` = every nn.Linear except the output layer
(PEFT `_maybe_include_all_linear_layers` excludes the LM head).
Freeze tuning (LLaMA-Factory `freeze_trainable_layers`): the last N decoder layers are trainable.
"""

from __future__ import annotations

from tools.call_memo import memo_args
from tools.errors import ScenarioError
from tools.model.architecture import LinearShape, ParamBreakdown
from tools.rules.optimizers import TrainableSpec

ALL_LINEAR = ("all-linear", "all_linear", "all")
# Outside the decoder: PEFT wraps the LM head (nn.Linear) and the token embedding (nn.Embedding,
# peft/tuners/lora/layer.py class Embedding: lora_embedding_A r x V, lora_embedding_B h x r) when named
# explicitly; "all-linear" never includes them (torchtune: apply_lora_to_output).
OUTER_TARGETS = ("lm_head", "embed_tokens")


def decoder_linears(params: ParamBreakdown) -> list[LinearShape]:
    """The linears LoRA can target (the LM head is not one: PEFT excludes the output layer)."""
    return [lin for lin in params.linears if lin.name != "lm_head"]


def linear_names(params: ParamBreakdown) -> list[str]:
    seen: list[str] = []
    for lin in decoder_linears(params):
        if lin.name not in seen:
            seen.append(lin.name)
    return seen


def targeted_linears(params: ParamBreakdown, targets: list[str] | tuple[str, ...]) -> list[LinearShape]:
    """The linear kinds matched by `targets`; ScenarioError naming the model's linears otherwise."""
    linears = decoder_linears(params)
    if any(t.strip().lower() in ALL_LINEAR for t in targets):
        return linears
    names = set(linear_names(params))
    wanted: set[str] = set()
    for target in targets:
        short = target.strip().rsplit(".", 1)[-1]  # "self_attn.q_proj" -> "q_proj"
        if short in OUTER_TARGETS:
            continue  # counted by outer_targets()
        if short not in names:
            raise ScenarioError(
                "lora_targets",
                f"this model has no linear module named '{target}'",
                accepted="all-linear or any of: " + ", ".join([*linear_names(params), *OUTER_TARGETS]),
                suggestions=[n for n in linear_names(params) if short[:1] and n.startswith(short[:1])][:3],
                code="lora_target_unknown",
                values={"target": target, "names": ", ".join([*linear_names(params), *OUTER_TARGETS])},
            )
        wanted.add(short)
    return [lin for lin in linears if lin.name in wanted]


def outer_targets(targets: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The LM head / embedding among the targets (PEFT matches them only when named)."""
    shorts = {t.strip().rsplit(".", 1)[-1] for t in targets}
    return tuple(t for t in OUTER_TARGETS if t in shorts)


def lora_trainable(
    params: ParamBreakdown, rank: int, targets: list[str] | tuple[str, ...], *, dora: bool = False
) -> TrainableSpec:
    """Exact LoRA (+ DoRA) trainable tensors: sum over targeted linears of r*(in+out) (+ out)."""
    chosen = targeted_linears(params, targets)
    matrices: list[tuple[int, int, int]] = []
    total = vectors = 0
    terms: list[str] = []
    for lin in chosen:
        per = rank * (lin.in_features + lin.out_features)  # lora_A r x in + lora_B out x r
        total += lin.count * per
        matrices.append((rank, lin.in_features, lin.count))
        matrices.append((lin.out_features, rank, lin.count))
        if dora:
            vectors += lin.count * lin.out_features  # lora_magnitude_vector (out_features,)
        terms.append(f"{lin.count} x {rank} x ({lin.in_features} + {lin.out_features})")
    vocab = (params.lm_head or params.embedding) // max(1, hidden_of(params))
    for name in outer_targets(targets):
        h = hidden_of(params)
        per = rank * (h + vocab)  # lm_head: A r x h, B V x r; embed_tokens: A r x V, B h x r
        total += per
        matrices += [
            (rank, h if name == "lm_head" else vocab, 1),
            (vocab if name == "lm_head" else h, rank, 1),
        ]
        terms.append(f"{rank} x ({h} + {vocab}) ({name})")
    total += vectors
    dora_f = " + sum(d_out)" if dora else ""
    dora_s = f" + {vectors:,} (DoRA)" if dora else ""
    return TrainableSpec(
        params=total,
        matrices=tuple(matrices),
        vector_params=vectors,
        formula=f"sum(n_linear x r x (d_in + d_out)){dora_f}",
        substituted=" + ".join(terms) + dora_s + f" = {total:,}",
        targets=tuple(dict.fromkeys(lin.name for lin in chosen)),
        outer_targets=outer_targets(targets),
    )


# lora_trainable is pure and costs a quarter of a resolve: the planner resolves the same model and rank
# for many candidates (and PPO's critic takes the actor's adapters). Keyed by the breakdown's identity
# (catalog models are cached objects); the entry keeps its breakdown alive, so an id is never reused
# while its entry exists.
_LORA_SPECS: dict[tuple[int, int, tuple[str, ...], bool], tuple[ParamBreakdown, TrainableSpec]] = {}


def lora_spec(
    pb: ParamBreakdown, rank: int, targets: list[str] | tuple[str, ...], dora: bool
) -> TrainableSpec:
    """`lora_trainable(pb, rank, targets, dora=dora)`, made once per distinct model, rank and targets."""
    key = (id(pb), rank, tuple(targets), dora)
    hit = _LORA_SPECS.get(key)
    if hit is not None and hit[0] is pb:
        return hit[1]
    spec = lora_trainable(pb, rank, targets, dora=dora)
    if len(_LORA_SPECS) >= 256:
        _LORA_SPECS.clear()
    _LORA_SPECS[key] = (pb, spec)
    return spec


def hidden_of(params: ParamBreakdown) -> int:
    """The hidden size, from the first decoder linear reading the residual stream."""
    for lin in params.linears:
        if lin.name in ("q_proj", "qkv_proj", "c_attn", "q_a_proj", "gate_proj", "up_proj", "fc1"):
            return lin.in_features
    return params.linears[0].in_features if params.linears else 1


@memo_args  # every full fine-tuning candidate of a planner search
def full_trainable(params: ParamBreakdown, hidden: int) -> TrainableSpec:
    """Every parameter trainable: linears, embeddings and LM head as matrices, the rest 1-D."""
    matrices = [(lin.out_features, lin.in_features, lin.count) for lin in params.linears]
    in_matrices = sum(lin.count * lin.in_features * lin.out_features for lin in params.linears)
    if hidden:
        vocab_rows = params.embedding // hidden
        matrices.append((vocab_rows, hidden, 1))
        in_matrices += vocab_rows * hidden
        if params.lm_head:
            matrices.append((params.lm_head // hidden, hidden, 1))
            in_matrices += params.lm_head
    return TrainableSpec(
        params=params.total,
        matrices=tuple(matrices),
        vector_params=max(0, params.total - in_matrices),
        formula="P",
        substituted=f"{params.total:,}",
    )


def freeze_trainable(params: ParamBreakdown, trainable_layers: int) -> TrainableSpec:
    """Last `trainable_layers` decoder layers trainable (average layer size; MoE layers included)."""
    n = min(trainable_layers, params.num_layers)
    per_layer = params.layers_total / params.num_layers
    total = round(per_layer * n)
    frac = n / params.num_layers
    matrices = tuple(
        (lin.out_features, lin.in_features, max(1, round(lin.count * frac)) if n else 0)
        for lin in decoder_linears(params)
    )
    in_matrices = sum(r * c * k for r, c, k in matrices)
    return TrainableSpec(
        params=total,
        matrices=matrices,
        vector_params=max(0, total - in_matrices),
        formula="N_trainable_layers x P_layers / L",
        substituted=f"{n} x {params.layers_total:,} / {params.num_layers} = {total:,}",
    )
