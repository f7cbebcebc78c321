"""VRAMwise estimator: pure, typed, deterministic GPU-memory model (no torch, no LLM).

Public API (import from the submodules; this package imports nothing heavy):
- tools.scenario.Scenario            -- input
- tools.result.Estimate              -- output
- tools.estimator.estimate(scenario) -- Scenario -> Estimate (with suggestions from the planner)
- tools.planner.plan(base_estimate) -- cheapest changes that make it fit (PlanResult)
- tools.catalog                      -- models and GPUs: find_model, find_gpu, list_models, list_gpus
- tools.errors.ScenarioError         -- the only exception for bad input
"""
