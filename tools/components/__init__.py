"""The memory components of one model on its most loaded GPU, one module per family.

Each family answers the same question for itself -- which bytes it holds at each phase, with the formula,
the substituted figures and its source (a `PhasedComponent`, tools/components/phased.py) -- and
tools/footprint.py composes them in step order. Inputs: a `ModelStep` / `TrainStep`
(tools/components/step.py: the resolved job, the model, its pipeline stage, its local parameters).

Training (phases end_of_forward, backward, optimizer_step):
- weights.py          weights (or frozen base + adapters) and quantisation metadata, / N under ZeRO-3
- gradients.py        gradients of the trainable parameters (lifetime: tools/rules/phases.py), / N under ZeRO-2/3
- optimizer.py        fp32 master weights, optimizer states (/ N under ZeRO-1/2/3), step temporaries
- autocast.py         16-bit autocast copies of fp32 weights (amp recipes)
- zero3.py            ZeRO-3 gathered layer + prefetch bucket (+ its unreduced gradients in backward)
- dequant.py          bitsandbytes dequantisation workspace of the running linear
- activations.py      saved activations of this stage's layers (+ the final norm), recompute moments
- logits.py           logits and loss in fp32 (last stage)
- end_of_backward.py  the first layer's activations or the embedding gradient at the end of backward
- offload.py          what ZeRO-Offload / parameter offload moves off the GPU
Generation (prefill, decode): weights.py, kv_cache.py, activations.py (forward transient), dequant.py,
logits.py (last position). Frozen forward (forward): weights, forward transient, every position's logits.

Not counted: CUDA graphs, DDP gradient buckets when gradient_as_bucket_view=False, DeepSpeed reduce
buckets, LoRA dropout copies (p = 0 default). Runtime overhead (CUDA context, allocator slack, NCCL) is
added once per GPU by tools/rules/overhead.py, never per model.
"""
