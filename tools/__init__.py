"""VRAMwise estimator: pure, typed, deterministic GPU-memory model (no torch, no LLM).

Public API (import from the submodules; this package imports nothing heavy):
- tools.scenario.Scenario            -- input
- tools.result.Estimate              -- output
- tools.estimator.estimate(scenario) -- Scenario -> Estimate (with suggestions from the planner)
- tools.planner.plan(base_estimate) -- cheapest changes that make it fit (PlanResult)
- tools.catalog                      -- models and GPUs: find_model, find_gpu, list_models, list_gpus
- tools.errors.ScenarioError         -- the only exception for bad input

Layout, bottom to top:
- edges: scenario.py (input), result.py (output), errors.py, units.py
- the model: architecture.py, params.py (exact parameter counts), lora.py (trainable sets), catalog/
- rules, one frozen class per kind: precision.py (recipes), quant.py + gguf.py (weight formats),
  optimizers.py, parallel.py (layout, stages), phases.py (gradient lifetime, peak), kv_cache.py,
  activations.py, logits.py, overhead.py; calibration.py holds every measured constant with its source
- resolve.py: Scenario -> ResolvedScenario, its stages in resolution/ (model, task, layout, sizes,
  numerics, kernels, serving, checks)
- components/: one module per memory component family (weights, gradients, optimizer, activations,
  logits, KV cache, ZeRO-3 gathering, offload ...), composed in step order by footprint.py
- estimator.py: resolve -> footprint -> peak -> overhead -> verdict; on top of it rl.py (PPO/GRPO/DPO
  composed from footprints), serving.py (vLLM-style capacity), no_effect.py, planner.py, accuracy.py
- trace/: the tracer that measures the real model on fake tensors (optional torch)
"""
