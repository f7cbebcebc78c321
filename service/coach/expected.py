"""The expected answer of a question: the estimator's figure for the asked quantity, and its tolerance.

Quantities (the contract's names): `per_gpu.total_bytes`, `per_gpu.tensor_peak_bytes`,
`component:<name>[+<name>...]` (summed over every model on the GPU: PPO's actor, critic,
reference and reward), `fits`, `min_gpus`, `serving.<field>` of ServingCapacity, `concept`.
"""

from __future__ import annotations

from typing import Any

from tools.catalog.models import find_model
from tools.estimator import estimate
from tools.model.architecture import Architecture
from tools.result import Component, Estimate
from tools.scenario import Scenario

# relative tolerance at difficulty 1; difficulty d multiplies it by TOLERANCE_GROWTH[d]
EXACT_TOLERANCE = 0.05  # weights, gradients, optimizer states, KV cache: formula figures
TOTAL_TOLERANCE = 0.10  # totals: overhead and activations make them estimates of estimates
ACTIVATION_TOLERANCE = 0.15  # activations depend on the implementation's saved tensors
COUNT_TOLERANCE = 0.10  # concurrent sequences (relative, like a total)
TOLERANCE_GROWTH = {1: 1.0, 2: 1.5, 3: 2.0}


def scenario_of(data: dict[str, Any]) -> Scenario:
    return Scenario.model_validate(data)


def estimate_for(data: dict[str, Any], quantity: str) -> Estimate:
    """The estimate a question is graded against (the planner only when the fewest GPUs is asked)."""
    return estimate(scenario_of(data), plan=quantity == "min_gpus")


def component_names(quantity: str) -> list[str]:
    return quantity.removeprefix("component:").split("+") if quantity.startswith("component:") else []


def components_for(est: Estimate, quantity: str) -> list[Component]:
    """The components that make up the asked figure (all of them for a total)."""
    names = component_names(quantity)
    if names:
        return [c for c in est.components if c.name in names]
    if quantity == "per_gpu.tensor_peak_bytes":
        return [c for c in est.components if c.kind == "tensor"]
    return list(est.components)


def expected_value(est: Estimate, quantity: str) -> dict[str, Any]:
    """{"bytes": int} | {"fits": bool} | {"count": int}: what the contract's `expected` holds."""
    if quantity == "per_gpu.total_bytes":
        return {"bytes": est.per_gpu.total_bytes}
    if quantity == "per_gpu.tensor_peak_bytes":
        return {"bytes": est.per_gpu.tensor_peak_bytes}
    if quantity.startswith("component:"):
        return {"bytes": sum(c.bytes for c in components_for(est, quantity))}
    if quantity == "fits":
        return {"fits": est.fits}
    if quantity == "min_gpus":
        return {"count": est.min_gpus}
    if quantity.startswith("serving."):
        if est.serving is None:
            raise ValueError(f"{quantity}: the estimate has no serving capacity (not an inference job)")
        value = getattr(est.serving, quantity.removeprefix("serving."))
        return {"bytes": value} if quantity.endswith("_bytes_per_token") else {"count": value}
    raise ValueError(f"unknown quantity {quantity!r}")


def tolerance(quantity: str, difficulty: int) -> float:
    """Relative tolerance for a figure; 0 for a verdict or the fewest GPUs (exact)."""
    growth = TOLERANCE_GROWTH.get(difficulty, 2.0)
    if quantity in ("fits", "min_gpus", "concept"):
        return 0.0
    if quantity == "serving.max_concurrent_sequences":
        return COUNT_TOLERANCE * growth
    names = component_names(quantity)
    if names == ["activations"]:
        return ACTIVATION_TOLERANCE * growth
    if names or quantity == "serving.kv_bytes_per_token":
        return EXACT_TOLERANCE * growth
    return TOTAL_TOLERANCE * growth


def arch_of(est: Estimate) -> Architecture:
    """The model's architecture: the scenario's own, else the catalog's."""
    if est.scenario.architecture is not None:
        return est.scenario.architecture
    return find_model(est.scenario.model or "").architecture
