"""VRAMwise estimator: pure, typed, deterministic GPU-memory model (no torch, no LLM).

Public API (import from the submodules; this package imports nothing heavy):
- tools.scenario.Scenario            -- input
- tools.result.Estimate              -- output
- tools.estimator.estimate(scenario) -- Scenario -> Estimate (with suggestions from the planner)
- tools.planner.plan(base_estimate) -- cheapest changes that make it fit (PlanResult)
- tools.catalog                      -- models and GPUs: find_model, find_gpu, list_models, list_gpus
- tools.errors.ScenarioError         -- the only exception for bad input

Layout, bottom to top:
- edges: scenario.py (input), result.py (output), errors.py, units.py; notes.py, assumptions.py and
  labels.py: the codes (+ values) of notes, assumptions and component labels, whose words are prompts/'s
- model/: architecture.py, params.py (exact parameter counts), lora.py (trainable sets); catalog/ (models, GPUs)
- rules/: one frozen class per kind of rule (precision recipes, weight formats incl. GGUF, optimizers,
  parallel layout, phases and the peak, KV cache kinds and each engine's KV cells, activations, logits,
  runtime overhead);
  calibration.py holds every measured constant with its source
- resolve.py: Scenario -> ResolvedScenario, its stages in resolution/ (model, task, layout, sizes,
  numerics, kernels, serving, checks)
- components/: one module per memory component family (weights, gradients, optimizer, activations,
  logits, KV cache, ZeRO-3 gathering, offload ...), composed in step order by footprint.py
- estimator.py: resolve -> footprint -> peak -> overhead -> verdict; on top of it rl.py (PPO/GRPO/DPO
  composed from footprints), engines/ (vLLM, SGLang, llama.cpp and ollama memory models; serving.py and
  serving_answer.py put them and vLLM's capacity into an inference Estimate), no_effect.py,
  planner.py (call_memo.py: one RL estimate's shared footprints), accuracy.py
- trace/: the tracer that measures the real model on fake tensors (optional torch)
"""
