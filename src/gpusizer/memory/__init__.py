"""Memory: items and phases, per GPU under the sheet's placement.

``estimate.estimate_memory`` sizes each item by arithmetic (provenance ``estimated`` or
``declared``); ``simulate`` and ``measure`` arrive behind extras and produce the same items with
provenance ``simulated`` / ``measured``. One idea per module: ``weights``, ``kv_cache``,
``working_memory`` (prefill/decode activations and logits), ``non_torch`` (CUDA context, NCCL,
allocator slack), ``engines`` (each inference engine's rules and pool split: ``transformers``,
``vllm``), ``placement`` (per-GPU shares), ``card_rules``.
"""
