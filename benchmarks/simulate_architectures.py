"""Which architectures of the pinned transformers ``gpusizer simulate`` runs, with no family module.

For every ``model_type`` of transformers' causal-LM mapping (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``,
196 types in 5.24) and image-text-to-text mapping (``MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES``,
100), a scaled-down config is built from the library's own defaults (``AutoConfig.for_model``,
every ``num_hidden_layers`` found, nested ``text_config`` / ``vision_config`` included, set to 2)
and run under simulate's phase runner (``gpusizer.simulate.phases.run_phases``: fake tensors,
the tracker, the GPU rules of an sm80 card): inference prefill + decode (64 + 4 tokens, 1
sequence), and one LoRA step (``targets: all-linear``, rank 8, 64 tokens). No weights, no network,
no remote code.

It prints, per mapping, how many types run both, and each refusal with its reason (the first line
of the error), so the issue 13 point 1 goal (at least 90 % of each mapping) can be tracked.
Groundwork: this measures simulate as it stands (``AutoModelForCausalLM`` only); it changes no
product code. Run: ``python benchmarks/simulate_architectures.py [--only TYPE ...] [--json OUT]``
(a full pass takes minutes on two CPU cores).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

INFERENCE = {"model": {"path": "scaled-default-config"}, "task": "inference", "weights": "bf16",
             "inference": {"prompt_tokens": 64, "new_tokens": 4, "concurrency": 1}}
LORA = {"model": {"path": "scaled-default-config"}, "task": "lora", "weights": "bf16",
        "training": {"sequence_length": 64, "microbatch": 1,
                     "lora": {"rank": 8, "targets": "all-linear"}}}


def scaled_config(model_type: str) -> dict:
    """The library's default config for ``model_type`` cut to two layers (or one of each kind).

    The kept layers are the first of each kind of the per-layer pattern (``layer_types``,
    ``layers_block_type``, ``mlp_layer_types``…; every list as long as the layer count), in order
    of first appearance, or layers 0 and 1 when every layer is alike; every such list, and the
    layer count, are cut to the kept layers, so a hybrid keeps its attention and its linear /
    state-space layers. Nested configs (``text_config``, ``vision_config``) are cut alike.

    Raises:
        Exception: whatever transformers raises for a type it cannot configure.
    """
    from transformers import AutoConfig

    cfg = AutoConfig.for_model(model_type).to_dict()
    count_keys = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")

    def shrink(d: dict) -> None:
        total = next((d[k] for k in count_keys if isinstance(d.get(k), int)), None)
        if total is not None and total > 2:
            per_layer = [k for k, v in d.items() if isinstance(v, list) and len(v) == total]
            kept: list[int] = []
            for key in per_layer:
                seen = {}
                for i, kind in enumerate(map(str, d[key])):
                    seen.setdefault(kind, i)
                kept = sorted(set(kept) | set(seen.values()))
            if len(kept) < 2:
                kept = sorted(set(kept) | {0, 1})
            for key in per_layer:
                d[key] = [d[key][i] for i in kept]
            for key in count_keys:
                if d.get(key) == total:
                    d[key] = len(kept)
        for value in d.values():
            if isinstance(value, dict):
                shrink(value)

    shrink(cfg)
    cfg["model_type"] = model_type
    return cfg


def run_one(model_type: str) -> tuple[bool, str]:
    """(ran, reason): inference then one LoRA step of the scaled config under run_phases."""
    from gpusizer.sheet import Sheet
    from gpusizer.simulate.gpu_rules import DEFAULT_COMPUTE_CAPABILITY
    from gpusizer.simulate.phases import run_phases

    try:
        cfg = scaled_config(model_type)
    except Exception as exc:  # noqa: BLE001 - a benchmark reports every refusal
        return False, f"config: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    for what, sheet in (("inference", INFERENCE), ("lora", LORA)):
        try:
            run_phases(Sheet.model_validate(sheet), cfg, dtype="bf16",
                       compute_capability=DEFAULT_COMPUTE_CAPABILITY)
        except Exception as exc:  # noqa: BLE001
            first = (str(exc).splitlines() or [""])[0][:160]
            return False, f"{what}: {type(exc).__name__}: {first}"
    return True, ""


def main() -> None:
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="model_type values to run (default: all)")
    parser.add_argument("--json", help="write {mapping: {model_type: reason or ''}} here")
    args = parser.parse_args()
    mappings = {"causal-lm": sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES),
                "image-text-to-text": sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)}
    done: dict[str, tuple[bool, str]] = {}
    report: dict[str, dict[str, str]] = {}
    for name, types in mappings.items():
        if args.only:
            types = [t for t in types if t in args.only]
        ran, refused = 0, Counter()
        report[name] = {}
        started = time.perf_counter()
        for model_type in types:
            if model_type not in done:
                done[model_type] = run_one(model_type)
            ok, reason = done[model_type]
            report[name][model_type] = reason
            ran += ok
            if not ok:
                refused[reason.split(":")[0]] += 1
                print(f"  refused {name} {model_type}: {reason}", flush=True)
        share = 100 * ran / len(types) if types else 0.0
        print(f"{name}: {ran} of {len(types)} model types run ({share:.0f} %), refused by step "
              f"{dict(refused)}, {time.perf_counter() - started:.0f} s", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
