"""RL lengths and sampling as trainers' configs and people name them.

- TRL (GRPOConfig / DPOConfig): `max_prompt_length`, `max_completion_length`, `num_generations`;
- verl (ppo_trainer.yaml): `data.max_prompt_length`, `data.max_response_length`, `actor_rollout_ref.rollout.n`,
  `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu`, `data.train_batch_size` (prompts per step, all GPUs:
  a global batch, which does not change a GPU's peak);
- OpenRLHF (cli/train_ppo_ray.py): `--prompt_max_len`, `--generate_max_len`, `--n_samples_per_prompt`,
  `--micro_train_batch_size`;
- words: "prompt 1024, completions of 4096 tokens", "每个 prompt 采样 16 条，回复长度 4096", "提示长度 512".

The Scenario holds one sequence length (prompt + completion: tools/rl.py `_fill_defaults` takes the prompt as
seq_len - max_new_tokens), so a stated prompt and completion become seq_len = prompt + completion and
max_new_tokens = completion. For an RL task with one of the two stated, the other is TRL's default (said as an
assumption), because max_new_tokens alone above the default seq_len is an error, not a job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from service.agent.offline import patterns as rx
from service.agent.offline.field_common import IS, Fields, K
from service.agent.offline.mentions import SEP, FilledReason, L, R
from service.agent.offline.numbers import token_count
from tools.scenario import RL_TASKS

TRL_PROMPT_LEN = 512  # trl/trainer/grpo_config.py max_prompt_length default
TRL_COMPLETION_LEN = 256  # trl/trainer/grpo_config.py max_completion_length default

_ZH_IS = r"(?:为|=|是|:|设为|设成|改成|改为|换成|调到|到)?"
# hydra-style keys keep their path: data.max_prompt_length, actor_rollout_ref.rollout.response_length
_PATH = r"(?:[a-z_]+\.)*"
_PROMPT = rx.compile(
    rf"{L}{_PATH}(?:max{SEP}prompt{SEP}len(?:gth)?|prompt{SEP}max{SEP}len(?:gth)?|max{SEP}input{SEP}len(?:gth)?"
    rf"|prompts?{SEP}len(?:gth)?|prompts?{SEP}(?:of|up{SEP}to)){IS}{K}(?![0-9a-z])"
    rf"|{L}{K}{SEP}tokens?{SEP}prompts?{R}|{L}prompts?\s*(?:[:=]\s*)?{K}(?:\s*tokens?)?(?![0-9a-z])"
    rf"|(?:prompt|提示词?|问题)\s*(?:的)?\s*(?:最大)?长度\s*{_ZH_IS}\s*{K}(?![0-9a-z])"
)
_COMPLETION = rx.compile(
    rf"{L}{_PATH}(?:max{SEP}(?:completion|response){SEP}len(?:gth)?|generate{SEP}max{SEP}len(?:gth)?"
    rf"|(?:completion|response)s?{SEP}len(?:gth)?|(?:completion|response)s?{SEP}(?:of|up{SEP}to)){IS}{K}(?![0-9a-z])"
    rf"|{L}{K}{SEP}tokens?{SEP}(?:completions?|responses?){R}|{L}(?:completion|response)\s*(?:[:=]\s*)?{K}(?:\s*tokens?)?(?![0-9a-z])"
    rf"|(?:回复|回答|response|completion|输出|生成)\s*(?:的)?\s*(?:最大)?长度\s*{_ZH_IS}\s*{K}(?![0-9a-z])"
    rf"|(?:回复|回答|输出|生成)\s*(?:最多|最长|上限|不超过)\s*{K}\s*(?:个\s*)?(?:token|tokens)?(?![0-9a-z])"
)
_GENERATIONS = rx.compile(
    rf"{L}{_PATH}rollout\.n{IS}(\d+){R}|{L}n{SEP}samples{SEP}per{SEP}prompt{IS}(\d+){R}"
    rf"|{L}num{SEP}return{SEP}sequences{IS}(\d+){R}"
)
_MICRO_BATCH = rx.compile(
    rf"{L}{_PATH}(?:ppo{SEP})?micro{SEP}(?:train{SEP})?batch{SEP}size(?:{SEP}per{SEP}gpu)?{IS}(\d+){R}"
)
# verl data.train_batch_size: prompts per step over all GPUs (ppo_trainer.yaml), not a GPU's micro-batch
_TRAIN_BATCH = rx.compile(rf"(?<![a-z0-9_.])(?:data\.)?train{SEP}batch{SEP}size{IS}(\d+){R}")
MIN_LENGTH = 32  # tokens: a prompt or completion shorter than this is a count ("4 completions"), not a length


@dataclass(frozen=True)
class RlLengths:
    """What a question says about RL lengths and sampling (None: not said)."""

    prompt: int | None = None
    completion: int | None = None
    generations: int | None = None
    micro_batch: int | None = None
    train_batch: int | None = None


def _blank(text: str, m: re.Match[str]) -> str:
    return text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]


def rl_lengths(low: str) -> tuple[RlLengths, str]:
    """The RL lengths stated, and the text with those mentions blanked (so "回复长度 4096" is not a context length)."""
    found: dict[str, int] = {}
    rest = low
    for key, pattern, read in (
        ("prompt", _PROMPT, token_count),
        ("completion", _COMPLETION, token_count),
        ("generations", _GENERATIONS, int),
        ("micro_batch", _MICRO_BATCH, int),
        ("train_batch", _TRAIN_BATCH, int),
    ):
        m = pattern.search(rest)
        if m:
            value = read(next(g for g in m.groups() if g))
            if value and (key not in ("prompt", "completion") or value >= MIN_LENGTH):
                found[key] = value
                rest = _blank(rest, m)
    return RlLengths(**found), rest


def apply_rl_lengths(lengths: RlLengths, fields: Fields) -> FilledReason | None:
    """Set seq_len / max_new_tokens / num_generations / batch_size from `lengths`; the reason when a length was
    filled with TRL's default (RL tasks only), else None."""
    if lengths.generations:
        fields["num_generations"] = lengths.generations
    if lengths.micro_batch and "batch_size" not in fields:
        fields["batch_size"] = lengths.micro_batch
    if lengths.train_batch:
        fields["global_batch_size"] = lengths.train_batch
    prompt, completion = lengths.prompt, lengths.completion
    if completion:
        fields["max_new_tokens"] = completion
    if prompt is None and completion is None:
        return None
    if prompt and completion:
        fields["seq_len"] = prompt + completion
        return None
    if fields.get("task") not in RL_TASKS or "seq_len" in fields:
        if prompt and "seq_len" not in fields:
            fields["seq_len"] = prompt
        return None
    prompt = prompt or TRL_PROMPT_LEN
    completion = completion or TRL_COMPLETION_LEN
    fields["seq_len"] = prompt + completion
    fields.setdefault("max_new_tokens", completion)
    return FilledReason(
        code="rl_total_length",
        values={"prompt": prompt, "completion": completion, "total": prompt + completion},
    )
