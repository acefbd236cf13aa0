"""Hypothesis strategies derived from the project's schemas and file shapes.

- sheets: from ``Sheet.model_json_schema()`` (types, enums, bounds), field by field, and
  mutated (wrong types, out of range, unknown keys, NaN / infinity, booleans for numbers);
- catalog rows: the YAML row shape of ``gpusizer.catalog.offer_row`` (CONTRACT "Catalog files");
- config.json variants: a real small config (shared/data/models/Qwen--Qwen3-0.6B) with mutated
  fields; safetensors headers: 8-byte little-endian length + JSON header, valid and mutated;
- evidence documents (docs/evidence.md): measurement, compatibility, quality, placement,
  commercial, built to match a sheet's ``sheet_sha256`` and an offer's scope so that criteria
  can reach ``acceptable``, and perturbed copies that should not.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from gpusizer.sheet import Sheet

SCHEMA = Sheet.model_json_schema()
DEFS = SCHEMA["$defs"]
QWEN_CONFIG = Path(__file__).resolve().parents[3] / "shared" / "data" / "models" / \
    "Qwen--Qwen3-0.6B" / "config.json"

# Cards the catalog rows name, with the nvidia-smi totals of the card table (CONTRACT:
# device_bytes = MiB × 2^20 from the card table); "Mystery X1" is unknown to the table.
CARDS: dict[str, tuple[str | None, int | None]] = {
    "RTX 4090": ("RTX 4090", 25757220864),
    "NVIDIA RTX 6000 Ada Generation": ("RTX 6000 Ada", 51527024640),
    "H100-SXM": ("H100 SXM", 85520809984),
    "H200": ("H200", 150754820096),
    "L4": ("L4", 24152899584),
    "Mystery X1": (None, None),
}
PROVIDERS = ["acme", "bolt", "cirrus"]
IMAGES = ["acme/pytorch:2.5-cuda12.4", "nvcr.io/nvidia/pytorch:24.10-py3"]
UNITS = ["B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"]
UNIT_BYTES = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
              "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def enum(block: str | None, field: str) -> list[Any]:
    """The enum of a sheet field, read from the JSON Schema (top level when block is None)."""
    props = SCHEMA["properties"] if block is None else DEFS[block]["properties"]
    spec = props[field]
    for alt in [spec, *spec.get("anyOf", [])]:
        if "enum" in alt:
            return list(alt["enum"])
    raise KeyError(field)


def bounds(block: str, field: str) -> tuple[int, int]:
    spec = DEFS[block]["properties"][field]
    for alt in [spec, *spec.get("anyOf", [])]:
        if alt.get("type") == "integer":
            return alt.get("minimum", 0), alt.get("maximum", 2**31 - 1)
    raise KeyError(field)


def small_int(block: str, field: str, cap: int) -> st.SearchStrategy[int]:
    """Integers within the schema's bounds, mostly small (``cap``), sometimes the bounds."""
    lo, hi = bounds(block, field)
    return st.one_of(st.integers(lo, min(hi, cap)), st.sampled_from([lo, hi]))


# --- sizes ----------------------------------------------------------------------------------

sizes = st.builds(lambda n, u: (f"{n} {u}", n * UNIT_BYTES[u]),
                  st.integers(0, 512), st.sampled_from(UNITS))
"""A size with a unit, and its bytes (CONTRACT: sizes with units leave as integer bytes)."""


# --- sheets ---------------------------------------------------------------------------------

@st.composite
def valid_sheets(draw, *, quality: bool | None = None, budget: bool | None = None
                 ) -> dict[str, Any]:
    """A valid inference or adaptation sheet on a bare parameter count, its fields drawn from the
    schema's enums and bounds; optional keys are left out or given."""
    task = draw(st.sampled_from(enum(None, "task")))
    weights = draw(st.sampled_from([w for w in enum(None, "weights") if w != "auto"]))
    if task == "qlora":
        weights = draw(st.sampled_from(["nf4", "fp4"]))
    elif task in ("lora", "full"):
        weights = draw(st.sampled_from(["bf16", "fp16", "fp32"]))
    ids = ["meta-llama/Meta-Llama-3.1-8B", "Qwen/Qwen3-0.6B"]
    if task == "inference" and draw(st.booleans()):
        model: dict[str, Any] = {"parameters": draw(st.integers(10**6, 2 * 10**10))}
    else:  # training needs the architecture: a hub id the bundled registry resolves offline
        model = {"id": draw(st.sampled_from(ids))}
    sheet: dict[str, Any] = {"model": model, "task": task, "weights": weights}
    if draw(st.booleans()):
        sheet["attention"] = draw(st.sampled_from(enum(None, "attention")))
    if draw(st.booleans()):
        sheet["reserve"] = draw(sizes)[0]
    if draw(st.booleans()):
        sheet["margin"] = draw(st.sampled_from(["5%", "10%", "0%", "1 GiB", "512 MiB"]))
    if task == "inference":
        inf = {"prompt_tokens": draw(small_int("Inference", "prompt_tokens", 8192)),
               "new_tokens": draw(small_int("Inference", "new_tokens", 2048))}
        if draw(st.booleans()):
            inf["concurrency"] = draw(small_int("Inference", "concurrency", 16))
        for key in ("kv_cache_dtype", "cache", "logits"):
            if draw(st.booleans()):
                inf[key] = draw(st.sampled_from(enum("Inference", key)))
        sheet["inference"] = inf
    else:
        tr = {"sequence_length": draw(small_int("Training", "sequence_length", 8192)),
              "microbatch": draw(small_int("Training", "microbatch", 16))}
        if draw(st.booleans()):
            tr["gradient_checkpointing"] = draw(st.booleans())
        if draw(st.booleans()):
            tr["optimizer"] = draw(st.sampled_from(enum("Training", "optimizer")))
        sheet["training"] = tr
    if quality if quality is not None else draw(st.booleans()):
        sheet["quality"] = {"corpus": "eval/frozen.jsonl"}
        if draw(st.booleans()):
            sheet["quality"]["max_regression"] = draw(st.sampled_from([0.01, 0.02, 0.1]))
    if budget if budget is not None else draw(st.booleans()):
        sheet["budget"] = {"max_usd": draw(st.sampled_from([10, 100, 1000, 10**5])),
                           "days": draw(st.integers(1, 10))}
        if draw(st.booleans()):
            sheet["budget"]["deadline"] = draw(st.sampled_from(["2026-12-20", "2026-12-02"]))
    if draw(st.booleans()):
        req: dict[str, Any] = {}
        if draw(st.booleans()):
            req["host_ram"] = draw(sizes)[0]
        if draw(st.booleans()):
            req["storage"] = draw(sizes)[0]
        if draw(st.booleans()):
            req["interconnect"] = draw(st.sampled_from(["pcie", "nvlink"]))
        sheet["requirements"] = req
    return sheet


def _schema_value(spec: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Any value of a JSON Schema node (generic: enums, bounded integers, numbers, strings,
    booleans, arrays, nested objects through $ref)."""
    if "$ref" in spec:
        return schema_object(spec["$ref"].rsplit("/", 1)[1])
    if "enum" in spec:
        return st.sampled_from(spec["enum"])
    if "anyOf" in spec:
        return st.one_of([_schema_value(a) for a in spec["anyOf"]])
    kind = spec.get("type")
    if kind == "integer":
        lo, hi = spec.get("minimum", -2**40), spec.get("maximum", 2**40)
        return st.one_of(st.integers(lo, min(hi, lo + 10**5)), st.sampled_from([lo, hi]))
    if kind == "number":
        return st.floats(spec.get("minimum"), spec.get("maximum"), allow_nan=False,
                         allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        return st.one_of(st.sampled_from(["auto", "5%", "1 GiB", "2026-12-20", "x"]),
                         st.text(max_size=12))
    if kind == "array":
        return st.lists(_schema_value(spec.get("items", {"type": "string"})), max_size=3)
    if kind == "null":
        return st.none()
    if kind == "object":
        return st.dictionaries(st.text(max_size=6), st.integers(0, 9), max_size=2)
    return st.none()


def schema_object(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """An object of a schema $def: its required keys and a drawn subset of the others."""
    d = DEFS[name]
    props = d.get("properties", {})
    required = set(d.get("required", []))
    return st.fixed_dictionaries(
        {k: _schema_value(v) for k, v in props.items() if k in required},
        optional={k: _schema_value(v) for k, v in props.items() if k not in required})


def schema_sheets() -> st.SearchStrategy[dict[str, Any]]:
    """Sheets drawn generically from the whole schema (most are invalid combinations)."""
    props = SCHEMA["properties"]
    required = set(SCHEMA.get("required", []))
    return st.fixed_dictionaries(
        {k: _schema_value(v) for k, v in props.items() if k in required},
        optional={k: _schema_value(v) for k, v in props.items() if k not in required})


BAD_VALUES = st.sampled_from([math.nan, math.inf, -math.inf, True, False, None, -1, 0, 2**64,
                              10**400, "", "many", [], {}, 1.5, "1e999", "NaN"])


@st.composite
def mutated(draw, base: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A document with one value replaced (wrong type, out of range, NaN/inf, bool), one key
    removed, or one unknown key added, at any depth."""
    doc = json.loads(json.dumps(draw(base), default=str))
    paths: list[tuple[list[Any], Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((path, k))
                walk(v, path + [k])
    walk(doc, [])
    op = draw(st.sampled_from(["replace", "drop", "unknown"]))
    if not paths:
        return {"unknown_key": 1}
    path, key = draw(st.sampled_from(paths))
    parent = doc
    for p in path:
        parent = parent[p]
    if op == "replace":
        parent[key] = draw(BAD_VALUES)
    elif op == "drop":
        del parent[key]
    else:
        parent[draw(st.sampled_from(["colour", "promptTokens", "x"]))] = 1
    return doc


# --- catalog rows ---------------------------------------------------------------------------

@st.composite
def catalog_rows(draw, *, cards: list[str] | None = None) -> dict[str, Any]:
    """A contract catalog row (id, provider, card, cards, prices, window, sizes with units)."""
    card = draw(st.sampled_from(cards or list(CARDS)))
    row: dict[str, Any] = {"id": f"o{draw(st.integers(0, 10**6))}",
                           "provider": draw(st.sampled_from(PROVIDERS)), "card": card,
                           "cards": draw(st.sampled_from([1, 1, 2, 8]))}
    if draw(st.booleans()):
        row["days"] = draw(st.integers(1, 10))
    price = draw(st.sampled_from(["total", "hourly", "none"]))
    if price == "total":
        row["total_usd"] = draw(st.sampled_from([0.0, 5.5, 55.71, 500.0, 20000.0]))
    elif price == "hourly":
        row["usd_per_hour"] = draw(st.sampled_from([0.39, 2.5, 30.0]))
    if draw(st.booleans()):
        row["available_from"] = draw(st.sampled_from(["2026-11-01", "2026-12-01", "2026-12-19"]))
        row["available_until"] = draw(st.sampled_from(
            [u for u in ("2026-12-10", "2026-12-31") if u >= row["available_from"]]))
    for key in ("host_ram", "storage"):
        if draw(st.booleans()):
            row[key] = draw(sizes)[0]
    if draw(st.booleans()):
        row["interconnect"] = draw(st.sampled_from(["pcie", "nvlink", "infiniband"]))
    if draw(st.booleans()):
        row["environment"] = draw(st.sampled_from(IMAGES))
    if draw(st.booleans()):
        row["spot"] = draw(st.booleans())
    if draw(st.booleans()):
        row["document"], row["version"] = "quote 42", "2026-11-29"
    return row


# --- config.json and safetensors ------------------------------------------------------------

def qwen_config() -> dict[str, Any]:
    return json.loads(QWEN_CONFIG.read_text())


CONFIG_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "intermediate_size", "vocab_size", "max_position_embeddings", "head_dim",
               "torch_dtype", "tie_word_embeddings", "model_type", "architectures",
               "rope_scaling", "quantization_config"]


@st.composite
def config_variants(draw) -> dict[str, Any]:
    """The real Qwen3-0.6B config.json, with zero to three fields mutated or dropped."""
    cfg = qwen_config()
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(CONFIG_KEYS))
        op = draw(st.sampled_from(["replace", "drop", "scale"]))
        if op == "drop":
            cfg.pop(key, None)
        elif op == "scale" and isinstance(cfg.get(key), int) and not isinstance(cfg[key], bool):
            cfg[key] = cfg[key] * draw(st.sampled_from([2, 3])) // draw(st.sampled_from([1, 2]))
        else:
            cfg[key] = draw(st.one_of(BAD_VALUES, st.sampled_from(
                ["bfloat16", "float16", "qwen3", ["Qwen3ForCausalLM"], {"quant_method": "gptq"},
                 {"rope_type": "yarn", "factor": 4.0}])))
    return cfg


def safetensors_bytes(header: Any, data_bytes: int, *, length: int | None = None) -> bytes:
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    n = len(raw) if length is None else length
    return struct.pack("<Q", n) + raw + b"\0" * data_bytes


@st.composite
def safetensors_files(draw, cfg: dict[str, Any]) -> bytes:
    """A small safetensors file for the config's embedding (valid), or a mutated one: a length
    past the file, a header that is not JSON or not a mapping, offsets past the data, bad
    dtypes or shapes, NaN in a shape."""
    hidden, vocab = 1024, 151936
    rows = draw(st.sampled_from([2, 4]))
    nbytes = rows * hidden * 2
    header: Any = {"__metadata__": {"format": "pt"},
                   "model.embed_tokens.weight": {"dtype": "BF16", "shape": [rows, hidden],
                                                 "data_offsets": [0, nbytes]}}
    kind = draw(st.sampled_from(["valid", "valid", "length", "not_json", "list", "offsets",
                                 "dtype", "shape"]))
    t = header["model.embed_tokens.weight"]
    if kind == "length":
        return safetensors_bytes(header, nbytes, length=draw(st.sampled_from([2**63, 10**9, 3])))
    if kind == "not_json":
        return safetensors_bytes(b"{not json", nbytes)
    if kind == "list":
        header = [1, 2, 3]
    elif kind == "offsets":
        t["data_offsets"] = draw(st.sampled_from([[0, 10**15], [5, 1], [-1, 4], [0, "x"]]))
    elif kind == "dtype":
        t["dtype"] = draw(st.sampled_from(["Q9", 7, None]))
    elif kind == "shape":
        t["shape"] = draw(st.sampled_from([[-1, hidden], [10**12, 10**12], ["a"], None]))
    del vocab
    return safetensors_bytes(header, nbytes)


# --- evidence documents ---------------------------------------------------------------------

def phases_of(sheet: dict[str, Any]) -> list[str]:
    """The task's full cycle (docs/evidence.md)."""
    if sheet["task"] == "inference":
        return ["load", "prefill", "decode"]
    return ["load", "forward", "backward", "optimizer_step", "validation"]


def required_dims(sheet: dict[str, Any]) -> dict[str, int]:
    """The dimensions the limit rung must execute (CONTRACT defaults filled)."""
    if sheet["task"] == "inference":
        inf = sheet["inference"]
        return {"prompt_tokens": inf["prompt_tokens"], "new_tokens": inf["new_tokens"],
                "concurrency": inf.get("concurrency", 1)}
    tr = sheet["training"]
    return {"sequence_length": tr["sequence_length"], "microbatch": tr["microbatch"]}


@st.composite
def evidence_docs(draw, sheet: dict[str, Any], sha: str, offer: dict[str, Any]
                  ) -> list[dict[str, Any]]:
    """One to three evidence documents for the sheet (hash ``sha``) and the offer's scope;
    each may be perturbed (another hash, card, device bytes, provider, image, fewer executed
    tokens, a missing phase, a failed or oom rung, no non-PyTorch bytes, a too large peak)."""
    card, device = CARDS[offer["card"]]
    docs = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["measurement", "measurement", "compatibility", "placement",
                                     "quality", "commercial"]))
        perturb = draw(st.sampled_from(["none", "none", "none", "sha", "card", "device",
                                        "provider", "image", "executed", "phase", "result",
                                        "non_torch", "peak", "offer_id", "fault"]))
        env = {"image": offer.get("environment", IMAGES[0])}
        scope: dict[str, Any] = {"provider": offer["provider"], "card": card or offer["card"],
                                 "device_bytes": device, "environment": env}
        if draw(st.booleans()):
            scope["offer_id"] = offer["id"]
        doc: dict[str, Any] = {"kind": kind, "document": f"ev/{kind}.log", "version": "1",
                               "date": "2026-11-29", "scope": scope, "sheet_sha256": sha}
        if kind == "measurement":
            frac = draw(st.sampled_from([0.3, 0.6, 0.9, 1.2]))
            reserved = int((device or 24 * 2**30) * frac)
            executed = required_dims(sheet)
            doc["rungs"] = [{"name": "limit", "result": "passed", "executed": dict(executed),
                             "failed_phase": None,
                             "phases": [{"name": p, "max_memory_allocated_bytes": reserved // 2,
                                         "max_memory_reserved_bytes": reserved,
                                         "non_torch_bytes": 600 * 2**20}
                                        for p in phases_of(sheet)]}]
        elif kind in ("compatibility", "placement"):
            doc["result"] = "passed"
        elif kind == "quality":
            doc.update({"criteria_sha256": sha, "metric": "perplexity", "direction": "lower",
                        "reference_format": "bf16", "candidate_format": sheet["weights"],
                        "candidate_implementation": "x", "reference_value": 10.0,
                        "candidate_value": 10.1, "regression": (10.1 - 10.0) / 10.0,
                        "max_regression": 0.02, "passed": True})
        rung = doc.get("rungs", [{}])[0]
        if perturb == "sha":
            doc["sheet_sha256"] = "0" * 64
        elif perturb == "card":
            scope["card"] = "H200" if scope["card"] != "H200" else "L4"
        elif perturb == "device":
            scope["device_bytes"] = (device or 0) + 2**20
        elif perturb == "provider":
            scope["provider"] = "elsewhere"
            scope.pop("offer_id", None)
        elif perturb == "image":
            env["image"] = "other/image:1"
            scope.pop("offer_id", None)
        elif perturb == "offer_id":
            scope["offer_id"] = "another-offer"
        elif perturb == "fault":
            doc["injected_fault"] = "oom at prefill"
        elif kind == "measurement" and perturb == "executed":
            k = draw(st.sampled_from(sorted(rung["executed"])))
            if rung["executed"][k] > 1:
                rung["executed"][k] -= 1
            else:
                del rung["executed"][k]
        elif kind == "measurement" and perturb == "phase":
            rung["phases"].pop(draw(st.integers(0, len(rung["phases"]) - 1)))
        elif kind == "measurement" and perturb == "result":
            rung["result"] = draw(st.sampled_from(["oom", "failed", "truncated"]))
        elif kind == "measurement" and perturb == "non_torch":
            for p in rung["phases"]:
                p.pop("non_torch_bytes")
        elif kind == "measurement" and perturb == "peak":
            rung["phases"][0]["max_memory_reserved_bytes"] = (device or 2**35) * 2
        elif kind in ("compatibility", "placement") and perturb == "result":
            doc["result"] = "failed"
        docs.append(doc)
    return docs
