"""The rules of the memory model, one frozen class (or small pure function) per kind, each with its source.

- precision.py    precision recipes: bytes per parameter of weights, gradients, master copy, states
- quant.py        weight storage formats and their quantisation metadata; gguf.py: llama.cpp GGUF, EXL2
- optimizers.py   optimizer states and step temporaries, one class per optimizer
- parallel.py     the parallel layout: which slice of the model, its states and micro-batches one GPU holds
- phases.py       the moments of a step, gradient lifetime, and the peak over them
- kv_cache.py     KV-cache bytes, one class per attention kind
- activations.py  what autograd saves for backward, per layer and per pipeline stage; the forward transient
- logits.py       logits and loss tensors
- overhead.py     runtime memory no tensor accounts for: CUDA context, allocator slack, NCCL
The resolution stages (tools/resolution/) pick the rules for a scenario; the components
(tools/components/) apply them.
"""
