"""The stages of `tools.resolve.resolve` (Scenario -> ResolvedScenario), one module each, in order:

- model.py     model look-up: catalog id, bare size, explicit architecture or a parameter count -> ModelRef
- task.py      the task, and the trained model's trainable set (LoRA adapters, frozen layers, full)
- layout.py    the GPU, the parallel layout (TP/PP/CP/EP, data parallelism, ZeRO, offload, micro-batches)
- sizes.py     micro-batch and sequence length
- numerics.py  weight storage (dtype, quantisation format) and the training rules (recipe, optimizer)
- kernels.py   recompute strategy and the attention kernel the GPU runs
- serving.py   KV dtype, the vLLM-style memory reservation and the safety margin
- checks.py    the cross-field checks: each raises the ScenarioError that says what is accepted
Each stage reads the scenario and what earlier stages chose, records every default it fills in a
`Filled` (defaults.py: field, value, and why as a code with values) and its warnings as notes.
"""
