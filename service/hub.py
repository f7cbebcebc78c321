"""Hugging Face Hub look-up: a model id the catalog lacks -> its architecture, exact count and stored dtype.

I/O lives here, never in `tools/`: this module fetches a repo's `config.json` (read by
`tools.catalog.hf_config.architecture_from_hf_config`), its safetensors headers (the exact parameter
count per stored dtype, the same sum the Hub's model page shows) and `quantization_config`
(GPTQ / AWQ / bitsandbytes / FP8 checkpoints), with `huggingface_hub`.

Settings are read from the environment at each call, as `huggingface_hub` names them:
- `HF_ENDPOINT` (a mirror, e.g. https://hf-mirror.com, how many users in China reach the Hub),
- `HF_TOKEN` (gated and private repos), `HF_HOME` / `HF_HUB_CACHE` (the disk cache),
- `HF_HUB_OFFLINE=1` (cache only), `VRAMWISE_HUB_TIMEOUT_S` (the whole look-up's time bound, default 10 s),
- `VRAMWISE_HUB_CACHE_TTL_S`, `VRAMWISE_HUB_MAX_LOOKUPS`: resolved repos kept, look-ups at once
  (service/hub_cache.py).
A look-up that cannot reach the Hub falls back to the disk cache, then to the catalog, then raises a
ScenarioError naming the setting to change (never a path of the server: its messages reach the user).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from service.agent.assumption_text import with_english_text  # the JSON keeps each reason in English
from service.hub_cache import DEFAULT_MAX_LOOKUPS, DEFAULT_TTL_S, RESOLVED, Resolved
from service.hub_repo_id import looks_like_repo_id, repo_id_problem
from service.spans import traced
from tools.errors import ScenarioError
from tools.estimator import add_plan, estimate
from tools.model.architecture import Architecture
from tools.result import Assumption, Estimate
from tools.scenario import Scenario

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT_S = 10.0
HUB_ACCEPTED = "a catalog model, or a Hugging Face repo id (org/name) the Hub serves (HF_ENDPOINT, HF_TOKEN)"
# a repo name that says it is a quantised copy: its quantization_config is worth a look-up even when the
# catalog knows the base model
_QUANT_TAG = re.compile(r"gptq|awq|fp8|int4|int8|bnb|4bit|8bit|nf4", re.IGNORECASE)
# safetensors dtype -> bytes per element (safetensors format spec)
_ST_BYTES = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2}
_ST_DTYPE = {"F32": "fp32", "F16": "fp16", "BF16": "bf16", "F8_E4M3": "fp8", "F8_E5M2": "fp8"}


@dataclass(frozen=True)
class HubSettings:
    """The Hub settings of one look-up, read from the environment (huggingface_hub's own variable names)."""

    endpoint: str
    token: str | None
    cache_dir: Path
    offline: bool
    timeout_s: float
    cache_ttl_s: float = DEFAULT_TTL_S
    max_lookups: int = DEFAULT_MAX_LOOKUPS

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> HubSettings:
        env = dict(os.environ if env is None else env)
        home = Path(env.get("HF_HOME") or Path.home() / ".cache" / "huggingface").expanduser()
        cache = Path(env.get("HF_HUB_CACHE") or home / "hub").expanduser()
        offline = (env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or "").lower() in (
            "1",
            "true",
            "yes",
        )
        timeout = _number(env, "VRAMWISE_HUB_TIMEOUT_S", DEFAULT_TIMEOUT_S)
        return cls(
            endpoint=(env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
            token=env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or None,
            cache_dir=cache,
            offline=offline,
            timeout_s=max(0.1, timeout),
            cache_ttl_s=max(0.0, _number(env, "VRAMWISE_HUB_CACHE_TTL_S", DEFAULT_TTL_S)),
            max_lookups=max(1, int(_number(env, "VRAMWISE_HUB_MAX_LOOKUPS", DEFAULT_MAX_LOOKUPS))),
        )


def _number(env: dict[str, str], name: str, default: float) -> float:
    try:
        value = float(env.get(name) or default)
    except ValueError:
        return default
    return value if math.isfinite(value) else default


@dataclass(frozen=True)
class HubModel:
    """What the Hub says about one repo."""

    repo_id: str
    revision: str | None  # the commit the files came from (None when unknown)
    config: dict[str, Any]
    architecture: Architecture
    safetensors_params: int | None  # exact, from the checkpoint headers; None when the repo has none
    params_by_dtype: dict[str, int]
    quantization: dict[str, Any] | None
    from_cache: bool

    @property
    def stored_dtype(self) -> str | None:
        """The dtype holding most parameters in the checkpoint (or config.json's torch_dtype)."""
        if self.params_by_dtype:
            top = max(self.params_by_dtype, key=lambda k: self.params_by_dtype[k])
            return _ST_DTYPE.get(top, top.lower())
        raw = str(self.config.get("torch_dtype") or self.config.get("dtype") or "")
        return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(raw)

    def scenario_fields(self) -> dict[str, Any]:
        """Scenario fields the checkpoint implies: its quantisation format (GPTQ/AWQ/bnb/FP8)."""
        q = self.quantization or {}
        method = str(q.get("quant_method") or "").lower()
        bits = q.get("bits") or q.get("w_bit")
        if method in ("gptq", "awq") and int(bits or 4) in (4, 8):
            dtype = "int4" if int(bits or 4) == 4 else "int8"
            return {
                "weight_dtype": dtype,
                "quant_method": method,
                "quant_group_size": q.get("group_size") or q.get("q_group_size"),
            }
        if method == "bitsandbytes":
            if q.get("load_in_4bit") or q.get("_load_in_4bit"):
                nf4 = str(q.get("bnb_4bit_quant_type") or "fp4") == "nf4"
                return {"weight_dtype": "nf4" if nf4 else "int4", "quant_method": "bnb"}
            return {"weight_dtype": "int8", "quant_method": "bnb"}
        if method in ("fp8", "compressed-tensors", "fbgemm_fp8") or self.stored_dtype == "fp8":
            return {"weight_dtype": "fp8"}
        return {}

    def source_values(self) -> dict[str, Any]:
        """Where the architecture came from, as an assumption's values (code model.hub / model.hub_cache)."""
        quant = str(self.quantization.get("quant_method", "unknown")) if self.quantization else None
        return {
            "repo": self.repo_id,
            "revision": self.revision[:12] if self.revision else None,
            "params": self.safetensors_params or None,
            "dtype": self.stored_dtype,
            "quant": quant,
        }


def _hub_error(message: str, *, code: str, values: dict[str, Any]) -> ScenarioError:
    return ScenarioError("model", message, accepted=HUB_ACCEPTED, code=code, values=values)


class _Unreachable(Exception):
    """The Hub did not answer (connection refused, DNS, timeout) and the cache has no copy."""


def _download(repo_id: str, filename: str, s: HubSettings, *, offline: bool) -> str:
    """The file's path in the HF cache: downloaded when the Hub answers, the cached copy when it does not."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if not offline:
        # one HEAD without retries first: hf_hub_download retries network errors with back-off (tens of
        # seconds) when the cache is empty; a Hub that does not answer falls back to the cache at once
        try:
            get_hf_file_metadata(
                hf_hub_url(repo_id, filename, endpoint=s.endpoint),
                token=s.token or False,
                timeout=s.timeout_s,
            )
        except HfHubHTTPError:
            raise  # the Hub answered: 401 gated, 404 not found
        except Exception as err:
            if not type(err).__module__.startswith(("httpx", "httpcore")) and not isinstance(err, OSError):
                raise
            offline = True  # no answer (refused, DNS, timeout): the cache, if it has the file
    try:
        return str(
            hf_hub_download(
                repo_id,
                filename,
                cache_dir=s.cache_dir,
                endpoint=s.endpoint,
                token=s.token or False,
                local_files_only=offline,
                etag_timeout=s.timeout_s,
            )
        )
    except LocalEntryNotFoundError:
        if offline and not s.offline:
            raise _Unreachable(s.endpoint) from None
        raise


def _revision_of(path: str) -> str | None:
    parts = Path(path).parts
    if "snapshots" in parts:
        i = parts.index("snapshots")
        if i + 1 < len(parts):
            return parts[i + 1]
    return None


def _summary_path(s: HubSettings, repo_id: str) -> Path:
    return s.cache_dir / "vramwise-safetensors" / (repo_id.replace("/", "--") + ".json")


def _count_headers(repo_id: str, s: HubSettings, revision: str | None) -> dict[str, int]:
    """Parameters per safetensors dtype, summed over every shard's header (range requests, no weights)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import EntryNotFoundError

    api = HfApi(endpoint=s.endpoint, token=s.token or False)
    try:
        index_path = _download(repo_id, "model.safetensors.index.json", s, offline=False)
        weight_map = json.loads(Path(index_path).read_text(encoding="utf-8")).get("weight_map") or {}
        shards = sorted(set(weight_map.values()))
    except EntryNotFoundError:
        shards = ["model.safetensors"]
    totals: dict[str, int] = {}
    for shard in shards:
        meta = api.parse_safetensors_file_metadata(repo_id, shard, revision=revision, timeout=s.timeout_s)
        for dtype, count in meta.parameter_count.items():
            totals[dtype] = totals.get(dtype, 0) + int(count)
    return totals


def _safetensors_counts(
    repo_id: str, s: HubSettings, revision: str | None, *, offline: bool
) -> dict[str, int]:
    """Per-dtype counts, cached on disk beside the Hub cache (keyed by the config's commit)."""
    from huggingface_hub.errors import EntryNotFoundError

    path = _summary_path(s, repo_id)
    if path.is_file():
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
            if offline or (revision and cached.get("revision") == revision):
                return {str(k): int(v) for k, v in (cached.get("params_by_dtype") or {}).items()}
        except (OSError, ValueError):
            pass
    if offline:
        return {}
    try:
        counts = _count_headers(repo_id, s, revision)
    except EntryNotFoundError:
        return {}  # no safetensors checkpoint (a .bin-only repo): the architecture's count stands
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"revision": revision, "params_by_dtype": counts}), encoding="utf-8")
    return counts


def _fetch(repo_id: str, s: HubSettings) -> HubModel:
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    offline = s.offline
    try:
        config_path = _download(repo_id, "config.json", s, offline=offline)
    except GatedRepoError:
        raise _hub_error(
            f"'{repo_id}' is a gated repo: accept its licence on the Hub and set HF_TOKEN to a token that may read it",
            code="hub_gated",
            values={"repo": repo_id},
        ) from None
    except RepositoryNotFoundError:
        raise _hub_error(
            f"no repo '{repo_id}' on {s.endpoint} (HF_ENDPOINT), or it is private (set HF_TOKEN)",
            code="hub_not_found",
            values={"repo": repo_id, "endpoint": s.endpoint},
        ) from None
    except (LocalEntryNotFoundError, _Unreachable):
        setting = "HF_HUB_OFFLINE is set" if offline else f"{s.endpoint} (HF_ENDPOINT) could not be reached"
        raise _hub_error(
            f"'{repo_id}' is not in the catalog, {setting} and its config.json is not in the Hub cache (HF_HOME)",
            code="hub_unreachable",
            values={"repo": repo_id, "endpoint": s.endpoint, "offline": offline},
        ) from None
    except EntryNotFoundError:
        raise _hub_error(
            f"'{repo_id}' has no config.json on {s.endpoint}",
            code="hub_no_config",
            values={"repo": repo_id},
        ) from None
    revision = _revision_of(config_path)
    try:
        config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else type(err).__name__
        raise ScenarioError(
            "architecture", f"{repo_id}/config.json is not valid JSON ({reason})", accepted=HUB_ACCEPTED
        ) from None
    if not isinstance(config, dict):
        raise ScenarioError(
            "architecture", f"{repo_id}/config.json is not a JSON object", accepted=HUB_ACCEPTED
        )
    _architecture(repo_id, config)  # a config that cannot be read is refused before its counts are fetched
    counts: dict[str, int] = {}
    try:
        counts = _safetensors_counts(repo_id, s, revision, offline=offline)
    except (
        OSError,
        ValueError,
        _Unreachable,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        GatedRepoError,
    ):
        counts = {}
    except Exception as err:  # a header we cannot read must not lose the config we have
        if type(err).__module__.startswith(("huggingface_hub", "httpx", "httpcore")):
            counts = {}
        else:
            raise
    return _model(repo_id, Resolved(revision, config, counts, time.time()), from_cache=offline)


def _architecture(repo_id: str, config: dict[str, Any]) -> Architecture:
    """config.json's architecture; a config that cannot be read (a 50,000-deep nesting, a list where a
    number belongs) is a ScenarioError, never a 500."""
    from tools.catalog.hf_config import architecture_from_hf_config

    # multimodal configs keep the language model under text_config (Qwen2-VL's are flat)
    arch_config = config
    if (
        "hidden_size" not in config
        and isinstance(config.get("text_config"), dict)
        and config.get("model_type") != "gemma3"
    ):
        arch_config = {**config["text_config"]}
    try:
        return architecture_from_hf_config(arch_config)
    except ScenarioError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError, RecursionError) as err:
        raise ScenarioError(
            "architecture",
            f"{repo_id}/config.json cannot be read as a model's architecture ({type(err).__name__})",
            accepted=HUB_ACCEPTED,
        ) from None


def _model(repo_id: str, resolved: Resolved, *, from_cache: bool) -> HubModel:
    quant = resolved.config.get("quantization_config")
    counts = resolved.params_by_dtype
    return HubModel(
        repo_id=repo_id,
        revision=resolved.revision,
        config=resolved.config,
        architecture=_architecture(repo_id, resolved.config),
        safetensors_params=sum(counts.values()) or None,
        params_by_dtype=counts,
        quantization=quant if isinstance(quant, dict) else None,
        from_cache=from_cache,
    )


def fetch_hub_model(repo_id: str, settings: HubSettings | None = None) -> HubModel:
    """The repo's architecture and counts: kept from an earlier look-up within the TTL, else from the Hub
    within `settings.timeout_s` and one of `settings.max_lookups` slots (service/hub_cache.py);
    ScenarioError naming the setting otherwise. A span `hub` where the process traces."""
    s = settings or HubSettings.from_env()
    with traced("hub", **{"hub.repo": repo_id, "hub.endpoint": s.endpoint}):
        return _fetch_within_time(repo_id.strip(), s)


def _fetch_within_time(repo_id: str, s: HubSettings) -> HubModel:
    if not s.offline:
        kept = RESOLVED.get(s.endpoint, s.cache_dir, repo_id, s.cache_ttl_s)
        if kept is not None:
            return _model(repo_id, kept, from_cache=False)
    slots = RESOLVED.slot(s.max_lookups)
    if slots is None:
        return _cached_or(
            repo_id,
            s,
            _hub_error(
                f"{s.max_lookups} Hub look-ups are already in progress (VRAMWISE_HUB_MAX_LOOKUPS); "
                f"try '{repo_id}' again in a few seconds",
                code="hub_busy",
                values={"repo": repo_id, "max_lookups": s.max_lookups},
            ),
        )
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def look_up() -> None:
        try:
            outcome["model"] = _fetch(repo_id, s)
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc
        finally:
            slots.release()  # only now: a Hub that never answers holds at most max_lookups threads
            done.set()

    threading.Thread(target=look_up, name=f"hub-{repo_id}"[:60], daemon=True).start()
    if not done.wait(s.timeout_s):
        return _cached_or(
            repo_id,
            s,
            _hub_error(
                f"{s.endpoint} (HF_ENDPOINT) did not answer for '{repo_id}' within {s.timeout_s:g} s "
                "(VRAMWISE_HUB_TIMEOUT_S); set HF_ENDPOINT to a reachable mirror or HF_HUB_OFFLINE=1 to use the cache",
                code="hub_timeout",
                values={"repo": repo_id, "endpoint": s.endpoint, "timeout_s": s.timeout_s},
            ),
        )
    if "error" in outcome:
        raise _readable(outcome["error"], repo_id, s)
    model: HubModel = outcome["model"]
    if not model.from_cache:
        resolved = Resolved(model.revision, model.config, model.params_by_dtype, time.time())
        RESOLVED.put(s.endpoint, s.cache_dir, repo_id, resolved)
    return model


def _cached_or(repo_id: str, s: HubSettings, error: ScenarioError) -> HubModel:
    """What the Hub's disk cache holds for `repo_id` (no request sent), else `error`."""
    if not s.offline:
        try:
            return _fetch(repo_id, replace(s, offline=True))
        except ScenarioError:
            pass
    raise error


def _readable(error: BaseException, repo_id: str, s: HubSettings) -> BaseException:
    """A look-up's failure as the user may see it: ScenarioErrors as they are; the Hub client's own errors
    (an answer it could not read) as a ScenarioError naming the endpoint; anything else unchanged."""
    if isinstance(error, ScenarioError) or not type(error).__module__.startswith(
        ("huggingface_hub", "httpx", "httpcore", "requests", "urllib3")
    ):
        return error
    return _hub_error(
        f"{s.endpoint} (HF_ENDPOINT) answered for '{repo_id}' in a way that cannot be read ({type(error).__name__})",
        code="hub_unreadable",
        values={"repo": repo_id, "endpoint": s.endpoint},
    )


def resolve_hub_scenario(
    scenario: Scenario, settings: HubSettings | None = None
) -> tuple[Scenario, Assumption | None]:
    """A scenario whose model is an `org/name` the catalog lacks -> the same scenario with the Hub's architecture.

    Catalog models, explicit architectures and non-repo names pass through unchanged (the estimator resolves them).
    """
    from tools.catalog.models import lookup_model

    name = (scenario.model or "").strip()
    if scenario.architecture is not None or not looks_like_repo_id(name):
        problem = None if scenario.architecture is not None else repo_id_problem(name)
        if problem is not None and lookup_model(name) is None:
            raise problem
        return scenario, None
    in_catalog = lookup_model(name) is not None
    if in_catalog and not _QUANT_TAG.search(name):
        return scenario, None
    try:
        hub = fetch_hub_model(name, settings)
    except ScenarioError:
        if in_catalog:  # a quantised copy of a catalog model: its quantization_config is on the Hub only
            return scenario, None
        raise
    changes: dict[str, Any] = {"architecture": hub.architecture}
    for key, value in hub.scenario_fields().items():
        if getattr(scenario, key) is None and value is not None:
            changes[key] = value
    implied = {k: v for k, v in changes.items() if k != "architecture"}
    code = "model.hub_cache" if hub.from_cache else "model.hub"
    said = Assumption(
        field="model", value=name, code=code, values={**hub.source_values(), "implied": implied or None}
    )
    return scenario.merged(**changes), said


def estimate_any_model(scenario: Scenario, plan: bool = True) -> Estimate:
    """`tools.estimator.estimate`, after a Hub look-up for `org/name` models the catalog lacks; the estimator
    and the planner are a span each where the process traces (`traced`)."""
    resolved, assumption = resolve_hub_scenario(scenario)
    with traced("estimator"):
        est = estimate(resolved, plan=plan, run_planner=False)
    if plan:
        with traced("planner"):
            est = add_plan(est)
    if assumption is not None:
        est = est.model_copy(update={"assumptions": [assumption, *est.assumptions]})
    return with_english_text(est)
