"""``gpusizer simulate`` on every model_type the pinned transformers ships (issue 13 point 1).

For each ``model_type`` of transformers' causal-LM mapping (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``)
and image-text-to-text mapping (``MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES``), a scaled-down
config is made from the library's own defaults (``AutoConfig.for_model(model_type)``, then
:func:`tiny_config`: two layers, small widths, heads, vocabulary and experts; composite configs
shrink their ``text_config`` / ``vision_config`` …), written to a temporary folder as
config.json, and three sheets whose ``model.path`` points there run through the CLI's entry
(``pipeline.run_simulate``): prefill + decode, and one LoRA (``all-linear``) step. It prints, per
mapping, how many model types ran and each refusal with its reason (grouped). Goal: at least
90 % of each mapping.

    nice -n 10 env PYTHONPATH=src HF_HUB_OFFLINE=1 python benchmarks/simulate_any.py \
        [--only TYPE ...] [--json out.json]

Model types run in a worker process; one whose code crashes the interpreter is recorded as
refused and a new worker goes on with the next type.

A shrink that transformers' own constructors refuse (a width one of the model's rules does not
divide) is retried one level larger (:data:`LEVELS`), then with the library's widths and two
layers, then with the library's default config as it is; fake tensors cost the same at any
width, only the layer count costs time. A model type whose default config builds at no level
(the library's defaults are incomplete: a real checkpoint's config.json supplies the rest) is
reported as such.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path

LEVELS = (
    {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "intermediate": 128,
     "vocab": 512, "experts": 4, "top_k": 2},
    {"hidden": 256, "heads": 8, "kv_heads": 4, "head_dim": 32, "intermediate": 512,
     "vocab": 1024, "experts": 4, "top_k": 2},
    None,  # the library's widths, layers only
    "as is",  # the library's default config untouched (every layer)
)
"""Shrink levels, tried in order until transformers builds and runs the model."""

LAYERS = 2

_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_decoder_layers",
               "decoder_layers", "encoder_layers")
_HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model")
_HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
_KV_KEYS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
            "n_kv_heads")
_INTER_KEYS = ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size")
_EXPERT_INTER_KEYS = ("moe_intermediate_size", "shared_expert_intermediate_size",
                      "expert_intermediate_size")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "top_k", "moe_topk", "num_experts_per_token", "moe_k",
               "top_k_experts")
_SUB_CONFIGS = ("text_config", "language_config", "llm_config", "decoder_config",
                "vision_config", "audio_config", "vq_config", "perceiver_config")
_VISION_SUB = ("vision_config", "audio_config", "vq_config", "perceiver_config")


def mapping_types() -> dict[str, list[str]]:
    """``{"causal-lm": [...], "image-text-to-text": [...]}``: the pinned transformers' model
    types per mapping, sorted."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)
    return {"causal-lm": sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES),
            "image-text-to-text": sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)}


def _layer_count(d: dict) -> tuple[str | None, int | None]:
    for k in _LAYER_KEYS:
        if isinstance(d.get(k), int) and d[k] > 0:
            return k, d[k]
    return None, None


def _shrink_layer_lists(d: dict, old: int, layers: int) -> int:
    """Per-layer lists and pattern strings (``layer_types``, ``layers_block_type``,
    ``hybrid_override_pattern`` …) cut to the first layer of each kind, in order, so a hybrid
    keeps every kind of layer; returns the new layer count."""
    seq_keys = [k for k, v in d.items() if isinstance(v, (list, str)) and len(v) == old
                and old > 1 and k not in ("architectures", "model_type")
                and not k.endswith(("_token_id", "_token"))]
    if not seq_keys:
        picks = list(range(min(layers, old)))
        _remap_layer_indices(d, old, picks)
        return len(picks)
    picks: list[int] = []
    for k in seq_keys:  # the first layer of each kind, in every per-layer list
        seen: set = set()
        for i, v in enumerate(d[k]):
            kind = json.dumps(v, sort_keys=True)
            if kind not in seen:
                seen.add(kind)
                if i not in picks:
                    picks.append(i)
    i = 0
    while len(picks) < layers and i < old:
        if i not in picks:
            picks.append(i)
        i += 1
    picks.sort()
    for k in seq_keys:
        v = d[k]
        cut = [v[i] for i in picks]
        d[k] = "".join(cut) if isinstance(v, str) else cut
    _remap_layer_indices(d, old, picks)
    return len(picks)


def _remap_layer_indices(d: dict, old: int, picks: list[int]) -> None:
    """Keys that name layers by index follow the kept layers: lists of indices
    (``*_layer_indices``, ``*_layers``), dicts keyed by index (``per_layer_config``), and a
    period / offset pair (one layer in ``period`` is of the other kind)."""
    new = {o: n for n, o in enumerate(picks)}
    for k, v in list(d.items()):
        if isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool)
                                             for x in v) and ("layer" in k or "idx" in k) \
                and max(v) < old and len(v) != old:
            kept = [new[x] for x in v if x in new]
            d[k] = kept or [len(picks) - 1]
        elif isinstance(v, dict) and v and all(isinstance(x, str) and x.isdigit() for x in v):
            d[k] = {f"{new[int(x)]:0{len(x)}d}": c for x, c in v.items() if int(x) in new}
    for k, v in list(d.items()):
        if v is None and "attn" in k and k.endswith(("layer_indices", "_layers")):
            d[k] = [len(picks) - 1]  # a hybrid's default without attention layers: one
    for period in [k for k in d if k.endswith("_period") and isinstance(d[k], int)]:
        offset = period.replace("_period", "_offset")
        if isinstance(d.get(offset), int) and d[period] > len(picks):
            d[period], d[offset] = len(picks), len(picks) - 1


def _shrink_one(d: dict, lv: dict | None, *, vision: bool = False) -> None:
    """Shrink one (sub-)config dict in place."""
    key, old = _layer_count(d)
    if key is not None:
        layers = _shrink_layer_lists(d, old, LAYERS if not vision else 1)
        d[key] = min(old, layers)
        for other, v in list(d.items()):  # every stack (a decoder, a stack's own count)
            if other != key and "layers" in other and isinstance(v, int) \
                    and not isinstance(v, bool) and v > d[key]:
                d[other] = d[key]
    if lv is None:
        return
    heads_old = next((d[k] for k in _HEAD_KEYS if isinstance(d.get(k), int)), None)
    hidden_old = next((d[k] for k in _HIDDEN_KEYS if isinstance(d.get(k), int)), None)
    for k in _HIDDEN_KEYS:
        if isinstance(d.get(k), int):
            d[k] = lv["hidden"]
    for k in _HEAD_KEYS:
        if isinstance(d.get(k), int):
            d[k] = lv["heads"]
    for k in _KV_KEYS:
        v = d.get(k)
        if isinstance(v, int) and v > 0:
            d[k] = 1 if v == 1 else (lv["heads"] if heads_old and v >= heads_old
                                     else lv["kv_heads"])
    if isinstance(d.get("head_dim"), int):
        d["head_dim"] = lv["head_dim"]
    for k in _INTER_KEYS:
        if isinstance(d.get(k), int):
            d[k] = lv["intermediate"]
    for k in _EXPERT_INTER_KEYS:
        if isinstance(d.get(k), int):
            d[k] = lv["intermediate"] // 2
    if isinstance(d.get("vocab_size"), int) and not vision:
        d["vocab_size"] = vocab = max(lv["vocab"], 0)
        for k, v in list(d.items()):
            if k.endswith("_token_id") or k.endswith("_token_index"):
                if isinstance(v, int) and v >= vocab:
                    d[k] = vocab - 1 - (hash(k) % 16)
                elif isinstance(v, list):
                    d[k] = [x if not isinstance(x, int) or x < vocab else vocab - 1
                            for x in v]
    experts = None
    for k in _EXPERT_KEYS:
        if isinstance(d.get(k), int) and d[k] > 1:
            experts = d[k] = min(d[k], lv["experts"])
    for k in _TOP_K_KEYS:
        if isinstance(d.get(k), int) and d[k] > 1:
            d[k] = min(d[k], lv["top_k"], experts or lv["top_k"])
        elif k in d and d[k] is None and experts:
            d[k] = min(lv["top_k"], experts)
    for k in ("n_group", "topk_group"):
        if isinstance(d.get(k), int):
            d[k] = 1
    _keep_products(d, lv, heads_old, hidden_old)


def _keep_products(d: dict, lv: dict, heads_old: int | None, hidden_old: int | None) -> None:
    """Widths the model checks against each other after the shrink: Mamba heads × head width
    = expand × hidden; rotary sections (``mrope_section``) sum to the rotary half-width."""
    hidden = next((d[k] for k in _HIDDEN_KEYS if isinstance(d.get(k), int)), None)
    if isinstance(d.get("rotary_dim"), int) and heads_old and hidden_old and hidden:
        # a rotary width given in dimensions (GPT-J, CodeGen): the same share of the head
        d["rotary_dim"] = max(2, d["rotary_dim"] * hidden * heads_old
                              // (hidden_old * lv["heads"]) // 2 * 2)
    for heads, width, expand in (("mamba_n_heads", "mamba_d_head", "mamba_expand"),
                                 ("num_heads", "head_dim", "expand")):
        if hidden and all(isinstance(d.get(k), int) for k in (heads, width, expand)):
            d[width] = max(1, d[expand] * hidden // d[heads])
    for key in ("rope_parameters", "rope_scaling"):
        rope = d.get(key)
        sections = rope.get("mrope_section") if isinstance(rope, dict) else None
        if isinstance(sections, list) and sections and heads_old and lv["heads"]:
            head_dim = d.get("head_dim") if isinstance(d.get("head_dim"), int) else \
                (hidden or 0) // lv["heads"]
            target = head_dim * rope.get("partial_rotary_factor", 1.0) // 2
            total = sum(sections)
            new = [max(1, int(x * target // total)) for x in sections]
            new[-1] += int(target) - sum(new)
            rope["mrope_section"] = new


def _complete(d: dict, model_type: str) -> None:
    """Fill what every real checkpoint's config.json states but a library default leaves
    ``None`` (the model's code then fails on ``None``): ``head_dim`` = hidden ÷ heads (what the
    models compute when the key is absent), ``num_key_value_heads`` = the heads (no GQA), a
    missing ``layer_types`` = every layer full attention; ``is_decoder`` for a model the
    causal-LM mapping runs as a decoder (Reformer asserts it); X-MOD's ``default_language`` =
    its first language. Nothing else is invented."""
    hidden = next((d[k] for k in _HIDDEN_KEYS if isinstance(d.get(k), int)), None)
    heads = next((d[k] for k in _HEAD_KEYS if isinstance(d.get(k), int)), None)
    if "head_dim" in d and d["head_dim"] is None and hidden and heads:
        d["head_dim"] = hidden // heads
    if "num_key_value_heads" in d and d["num_key_value_heads"] is None and heads:
        d["num_key_value_heads"] = heads
    key, layers = _layer_count(d)
    if "layer_types" in d and d["layer_types"] is None and layers:
        d["layer_types"] = ["full_attention"] * layers
    if model_type == "reformer":
        d["is_decoder"] = True
    if d.get("default_language") is None and isinstance(d.get("languages"), list) \
            and d["languages"]:  # X-MOD: the adapter a forward without lang_ids uses
        d["default_language"] = d["languages"][0]


def tiny_config(model_type: str, level: int = 0) -> dict:
    """config.json of a scaled-down ``model_type``: ``AutoConfig.for_model(model_type)``'s
    defaults with two layers and the widths of ``LEVELS[level]`` (sub-configs too), in bf16.

    Raises:
        ValueError: transformers does not know ``model_type``.
    """
    from transformers import AutoConfig
    d = AutoConfig.for_model(model_type).to_dict()
    lv = LEVELS[level]
    if lv != "as is":
        _shrink_one(d, lv)
        for sub in _SUB_CONFIGS:
            if isinstance(d.get(sub), dict):
                _shrink_one(d[sub], lv, vision=sub in _VISION_SUB)
    _complete(d, model_type)
    for sub in _SUB_CONFIGS:
        if isinstance(d.get(sub), dict):
            _complete(d[sub], model_type)
    d["torch_dtype"] = "bfloat16"
    d.pop("dtype", None)
    d.pop("auto_map", None)
    d.pop("quantization_config", None)
    d.setdefault("model_type", model_type)
    return d


def builds(cfg: dict) -> None:
    """Instantiate the model on the meta device (transformers' constructors check the widths).

    Raises:
        Exception: whatever transformers raises.
    """
    import torch
    from transformers import AutoConfig

    from gpusizer.simulate.build import model_class_for
    auto, _ = model_class_for(cfg["model_type"])
    c = AutoConfig.for_model(**{k: v for k, v in cfg.items()})
    with torch.device("meta"):
        auto.from_config(c)


SHEETS = {
    "inference": {"task": "inference", "weights": "bf16",
                  "inference": {"prompt_tokens": 32, "new_tokens": 8, "concurrency": 1}},
    "lora": {"task": "lora", "weights": "bf16",
             "training": {"sequence_length": 32, "microbatch": 1,
                          "lora": {"rank": 8, "targets": "all-linear"}}},
}
"""The runs of each model type: prefill + decode, and one LoRA (all-linear) step."""


def _peft_refused(exc: BaseException) -> bool:
    """PEFT refused the targets (gpusizer's SimulationError quoting it) or failed in its own
    layer code (e.g. wrapping an ``nn.Linear`` subclass whose forward returns a tuple)."""
    if "PEFT cannot place" in str(exc):
        return True
    return any("/peft/" in f.filename for f in traceback.extract_tb(exc.__traceback__))


def _plain_linear_names(cfg: dict, exc: BaseException) -> list[str]:
    """The LoRA targets a user gives when PEFT refuses all-linear: the names of the model's
    plain ``nn.Linear`` layers (a subclass with its own forward, such as a router returning a
    tuple, left out), less the output layer and a module PEFT names as incompatible."""
    import re

    import torch
    from transformers import AutoConfig

    from gpusizer.simulate.build import model_class_for
    auto, _ = model_class_for(cfg["model_type"])
    with torch.device("meta"):
        model = auto.from_config(AutoConfig.for_model(**cfg))
    out = model.get_output_embeddings()
    refused = set(re.findall(r"Module '([\w.]+)' is incompatible", str(exc)))
    names = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                    if type(m) is torch.nn.Linear and m is not out} - refused)
    if not names:
        raise RuntimeError("no plain linear layer to adapt") from exc
    return names


def _with_targets(body: dict, targets) -> dict:
    training = {**body["training"], "lora": {**body["training"]["lora"], "targets": targets}}
    return {**body, "training": training}


def run_type(model_type: str, folder: Path, level: int | None = None) -> dict:
    """Simulate ``model_type``'s runs (:data:`SHEETS`); returns ``{"ok", "level", "runs",
    "reason"}``."""
    from gpusizer.pipeline import run_simulate
    from gpusizer.sheet import parse_sheet
    levels = range(len(LEVELS)) if level is None else [level]
    reason = run_reason = None
    for lvl in levels:
        try:
            cfg = tiny_config(model_type, lvl)
            builds(cfg)
        except Exception as exc:  # noqa: BLE001 (a benchmark reports every refusal)
            reason = reason or f"config: {_reason(exc)}"  # the smallest level's reason
            continue
        path = folder / f"{model_type}-{lvl}"
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.json").write_text(json.dumps(cfg))
        runs = {}
        try:
            for name, body in SHEETS.items():
                t0 = time.perf_counter()
                try:
                    r = run_simulate(parse_sheet({"model": {"path": str(path)}, **body}))
                    fallback = None
                except Exception as exc:  # noqa: BLE001
                    if name != "lora" or not _peft_refused(exc):
                        raise
                    # PEFT itself refuses or fails on all-linear for this model (a real run
                    # fails the same way): the LoRA step runs on PEFT's default targets
                    fallback = f"all-linear: {_reason(exc)}"
                    targets = _plain_linear_names(cfg, exc)
                    r = run_simulate(parse_sheet({"model": {"path": str(path)},
                                                  **_with_targets(body, targets)}))
                runs[name] = {"seconds": round(time.perf_counter() - t0, 2),
                              "peak_bytes": r.memory.peak_bytes,
                              "weights_bytes": r.memory.weights_bytes,
                              "model_class": r.model_class,
                              **({"targets": targets, "all_linear_refused": fallback}
                                 if fallback else {})}
        except Exception as exc:  # noqa: BLE001
            # the largest level that built ran furthest: its reason is the telling one
            run_reason = f"{name}: {_reason(exc)}"
            continue
        return {"ok": True, "level": lvl, "runs": runs, "reason": None}
    if run_reason is None:  # no level built: does the library's own default config build?
        reason = "transformers' own default config does not build its model: " + \
            reason.removeprefix("config: ")
    return {"ok": False, "level": None, "runs": {}, "reason": run_reason or reason}


REFUSAL_KINDS = (
    ("transformers' own default config does not build", "the library's default config does "
     "not build its own model (transformers itself)"),
    ("ImportError", "a package the model needs is not installed (transformers itself)"),
    ("ModuleNotFoundError", "a package the model needs is not installed (transformers itself)"),
    ("pixel_values", "the forward needs images (not simulated yet)"),
    ("image_embeds", "the forward needs images (not simulated yet)"),
    ("PEFT cannot place", "PEFT refuses all-linear on this model"),
)
"""Substring of a refusal's reason → its kind, first match wins; the rest: 'the model's code
fails under the simulation'."""


def refusal_kind(reason: str) -> str:
    """The kind of a refusal (:data:`REFUSAL_KINDS`)."""
    return next((kind for key, kind in REFUSAL_KINDS if key in reason),
                "the model's code fails under the simulation")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    tb = traceback.extract_tb(exc.__traceback__)
    where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb)
                  if "transformers" in f.filename or "gpusizer" in f.filename), "")
    return f"{type(exc).__name__}: {text[:160]}" + (f" ({where})" if where else "")


def _worker(types: list[str]) -> None:
    """Run ``types`` in this process, one JSON line per type on stdout (``{"start": t}`` before
    each, so the parent knows which one a native crash took down)."""
    import torch
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        for mt in types:
            print(json.dumps({"start": mt}), flush=True)
            print(json.dumps({"type": mt, **run_type(mt, Path(tmp))}), flush=True)


def run_all(types: list[str]) -> dict[str, dict]:
    """Every type's result, in worker processes: a model whose code crashes the interpreter
    (a native abort) is recorded as refused, and a new worker goes on with the next type."""
    import subprocess
    results: dict[str, dict] = {}
    todo = list(types)
    while todo:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", *todo],
                                stdout=subprocess.PIPE, text=True)
        current = None
        for line in proc.stdout:
            try:  # a model's own print() lands here too
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "start" in msg:
                current = msg["start"]
                continue
            mt = msg.pop("type")
            results[mt] = msg
            state = "ok" if msg["ok"] else "REFUSED " + msg["reason"]
            print(f"{mt}: {state}", file=sys.stderr, flush=True)
            current = None
        code = proc.wait()
        todo = [t for t in todo if t not in results]
        if current is not None and todo:
            results[current] = {"ok": False, "level": None, "runs": {},
                                "reason": f"the interpreter crashed (exit {code}) running it"}
            print(f"{current}: REFUSED crashed ({code})", file=sys.stderr, flush=True)
            todo.remove(current)
        elif todo:
            raise RuntimeError(f"worker stopped with exit {code} before {todo[0]}")
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="model types to run (default: every one)")
    ap.add_argument("--json", type=Path, help="write the per-type results there")
    ap.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        _worker(args.worker)
        return
    import torch
    import transformers
    mappings = mapping_types()
    t0 = time.perf_counter()
    types = sorted({t for ts in mappings.values() for t in ts
                    if not args.only or t in args.only})
    results = run_all(types)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; "
          f"{time.perf_counter() - t0:.0f} s")
    for name, types in mappings.items():
        done = [t for t in types if t in results]
        ran = [t for t in done if results[t]["ok"]]
        print(f"\n{name}: {len(ran)} / {len(done)} ran "
              f"({100 * len(ran) / max(1, len(done)):.1f} %)")
        groups: dict[str, list[str]] = defaultdict(list)
        for t in done:
            if not results[t]["ok"]:
                groups[refusal_kind(results[t]["reason"])].append(t)
        for kind, ts in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  refused, {kind} ({len(ts)}):")
            for t in ts:
                print(f"    {t}: {results[t]['reason']}")
    if args.json:
        args.json.write_text(json.dumps({"transformers": transformers.__version__,
                                         "mappings": mappings, "results": results}, indent=1))


if __name__ == "__main__":
    main()
