"""Every PEFT method × every registry family at full size: gpusizer's trainable count against
PEFT's own ``get_peft_model`` (issue 14, point 3).

For each ``model_type`` of the bundled registry, its first entry's config.json (whole, as the
Hub serves it) is built at full size on the meta device with transformers'
``AutoModelForCausalLM.from_config`` (no weights, no GPU) and wrapped by ``peft.get_peft_model``
for each method of ``training.peft``; PEFT's count of parameters with ``requires_grad`` is printed
beside ``gpusizer.memory.training.peft_methods.peft_adapters``'s. Options: PEFT's defaults
(prompt methods: 20 virtual tokens); a family PEFT has no default targets for gets its attention
projections (and, for IA3, the attention output as the feedforward module) on both sides. A
case both sides refuse prints both reasons; one side refusing is a mismatch.

Run: ``python benchmarks/peft_methods.py [--only MODEL_TYPE ...] [--methods lora ia3 ...]``
(minutes on two CPU cores; needs torch, transformers, peft). No network, no remote code.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings


def _explicit(facts, method: str) -> dict:
    """Targets for a family PEFT has no default for: its attention projections."""
    mods = [m for m in facts.architecture.modules if not m.experts]
    attention = sorted({m.name for m in mods if m.role == "attention_in"})
    out = sorted({m.name for m in mods if m.role == "attention_out"})
    if method in ("lora", "dora", "rslora"):
        return {"lora": {"targets": attention}}
    if method == "ia3":
        return {"peft_options": {"target_modules": attention + out,
                                 "feedforward_modules": out}}
    return {"peft_options": {"target_modules": attention}}


def _sheet(method: str, extra: dict):
    from gpusizer.memory.training.peft_methods import PEFT_METHODS
    from gpusizer.sheet import parse_sheet
    training = {"sequence_length": 512, "microbatch": 1, "peft": method}
    if PEFT_METHODS[method].prompt:
        training["peft_options"] = {"num_virtual_tokens": 20}
    training.update(extra)
    return parse_sheet({"model": {"id": "benchmark/model"}, "task": "lora", "weights": "bf16",
                        "training": training})


def _ours(sheet, facts):
    from gpusizer.errors import SheetError
    from gpusizer.memory.training.peft_methods import peft_adapters
    try:
        return peft_adapters(sheet.training, facts).parameters, ""
    except SheetError as exc:
        return None, str(exc)


def _peft(config: dict, sheet) -> tuple[int | None, str]:
    import peft
    import torch
    import transformers

    from gpusizer.memory.training.peft_methods import peft_config_kwargs
    cfg = transformers.AutoConfig.for_model(**{k: v for k, v in config.items()
                                               if k not in ("auto_map", "quantization_config")})
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    name, kw = peft_config_kwargs(sheet.training)
    # BOFT makes an (in × in) permutation buffer per adapted module on the default device
    # (peft/tuners/boft/layer.py ``update_layer``, ``perm2mat``): tens of GB at full size. It is
    # no parameter: on the meta device, with perm2mat's fill (``.item()``) skipped, the
    # trainable tensors PEFT makes are the same
    device = contextlib.nullcontext()
    if name == "BOFTConfig":
        from unittest import mock

        from peft.tuners.boft.layer import BOFTLayer
        device = contextlib.ExitStack()
        device.enter_context(torch.device("meta"))
        device.enter_context(mock.patch.object(
            BOFTLayer, "perm2mat", lambda self, indices: torch.zeros(len(indices),
                                                                     len(indices))))
    try:
        with device:
            wrapped = peft.get_peft_model(model, getattr(peft, name)(task_type="CAUSAL_LM",
                                                                     **kw))
    except (ValueError, TypeError, KeyError, RuntimeError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return sum(p.numel() for p in wrapped.parameters() if p.requires_grad), ""


def main() -> None:
    from gpusizer.model.registry import facts_from_entry, registry_entries
    from gpusizer.sheet import PEFT_METHOD_NAMES
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", help="model types to run (default: all)")
    parser.add_argument("--methods", nargs="*", help="methods to run (default: all)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    firsts: dict[str, object] = {}
    for entry in registry_entries():
        firsts.setdefault(entry.config.get("model_type"), entry)
    methods = args.methods or list(PEFT_METHOD_NAMES)
    print(f"{'model_type':14} {'model':38} {'method':9} {'gpusizer':>14} {'peft':>14}  result")
    same = differ = refused = 0
    for model_type, entry in sorted(firsts.items()):
        if args.only and model_type not in args.only:
            continue
        facts = facts_from_entry(entry)
        for method in methods:
            started = time.perf_counter()
            sheet = _sheet(method, {})
            ours, why = _ours(sheet, facts)
            if ours is None and "no default" in why:
                sheet = _sheet(method, _explicit(facts, method))
                ours, why = _ours(sheet, facts)
            theirs, their_why = _peft(entry.config, sheet)
            if ours is not None and ours == theirs:
                result, same = "same", same + 1
            elif ours is None and theirs is None:
                result, refused = f"both refuse: {why[:60]} | {their_why[:60]}", refused + 1
            else:
                result, differ = f"DIFFERS {why[:60]}{their_why[:60]}", differ + 1
            print(f"{model_type:14} {entry.model_id[:38]:38} {method:9} {str(ours):>14} "
                  f"{str(theirs):>14}  {result} ({time.perf_counter() - started:.1f} s)",
                  flush=True)
    print(f"\n{same} same, {refused} refused by both, {differ} differ")


if __name__ == "__main__":
    main()
