"""The model being estimated, exactly: its architecture and what it counts.

- architecture.py  the HF-style config subset the estimator reads (`Architecture`, validated)
- params.py        exact parameter counts per tensor family, per layer, per pipeline stage
- lora.py          the trainable set of full, freeze, LoRA and DoRA fine-tuning, exactly
The catalog of known models and cards (tools/catalog/) builds these; everything above reads them.
"""
