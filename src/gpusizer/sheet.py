"""The workload sheet (R1): YAML → validated, typed :class:`Sheet`.

Keys and defaults follow ``CONTRACT.md`` ("The workload sheet"). Unknown keys are errors, so a typo
never falls back to a default. Memory sizes are strings with a unit (``"6 GiB"``) and become integer
bytes; a bare number is refused. Every error names the field path, the value and what was expected.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, StrictBool,
                      ValidationError, WithJsonSchema, field_validator, model_validator)

from .errors import SheetError
from .formats import FORMATS, NAMES
from .units import parse_bytes
from .yaml_reader import YamlProblem, decode_text, parse_yaml

__all__ = [
    "Sheet", "ModelRef", "Quantization", "Inference", "Training", "Lora", "Placement", "Quality",
    "Budget", "Requirements", "Measure", "Margin", "WEIGHT_FORMATS", "load_sheet", "parse_sheet",
    "sheet_sha256", "canonical_json", "quality_sha256", "quality_criteria",
]

WEIGHT_FORMATS = NAMES
"""The ``weights`` values besides ``auto``: the registry's names (``gpusizer.formats``)."""
WeightFormat = Literal[("auto", *NAMES)]  # type: ignore[valid-type]


def _formats_with(flag: str) -> tuple[str, ...]:
    return tuple(n for n, r in FORMATS.items() if getattr(r, flag))


def _accepting(key: str) -> tuple[str, ...]:
    return tuple(n for n, r in FORMATS.items() if key in r.sheet_keys)

_MEMORY_SCHEMA = {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$",
                  "description": "memory size with a unit: B, KB, MB, GB, TB (10^3n) or KiB, MiB, "
                                 "GiB, TiB (2^10n); a bare number is refused"}


def _parse_memory(value: Any) -> int:
    try:
        return parse_bytes(value)
    except SheetError as exc:  # re-raised as ValueError so pydantic adds the field path
        raise ValueError(exc.reason) from None


MemoryBytes = Annotated[int, BeforeValidator(_parse_memory), WithJsonSchema(_MEMORY_SCHEMA)]
# Counts (tokens, sequences, ranks, GPUs) are at most 2**31 - 1: CUDA kernels index with 32-bit
# integers in places, and no real workload comes near; a larger value is a typo, refused.
PositiveInt = Annotated[int, Field(strict=True, ge=1, le=2**31 - 1)]


class Margin(BaseModel):
    """Headroom kept free on a card: ``fits ⇔ device_peak_bytes + margin ≤ device_bytes``.

    Either ``percent`` of the card's device bytes or an absolute ``bytes``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    percent: float | None = None
    bytes: int | None = None

    def of(self, device_bytes: int) -> int:
        """The margin in bytes for a card of ``device_bytes`` (a % rounds up to whole bytes)."""
        if self.bytes is not None:
            return self.bytes
        assert self.percent is not None
        return -(-int(round(self.percent * 1_000_000)) * device_bytes // 100_000_000)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else f"{self.bytes} B"


def _parse_margin(value: Any) -> Any:
    if isinstance(value, Margin) or isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip().endswith("%"):
        number = value.strip()[:-1].strip()
        try:
            pct = float(number)
        except ValueError:
            raise ValueError(f"expected a percentage such as '5%', got {value!r}") from None
        if not 0 <= pct < 100:
            raise ValueError(f"expected a percentage in [0, 100), got {value!r}")
        return Margin(percent=pct)
    try:
        return Margin(bytes=parse_bytes(value))
    except SheetError as exc:
        raise ValueError("expected a percentage of the card's device bytes ('5%') or "
                         f"{exc.reason[len('expected '):] if exc.reason.startswith('expected ') else exc.reason}") from None


MarginField = Annotated[
    Margin, BeforeValidator(_parse_margin),
    PlainSerializer(lambda m: f"{m.percent:g}%" if m.percent is not None else m.bytes),
    WithJsonSchema({"type": "string", "description": "a percentage of the card's device bytes "
                    "('5%') or a memory size with a unit ('2 GiB')"}),
]


class _FieldProblem(ValueError):
    """A cross-field problem found by a model validator, tied to the field it concerns."""

    def __init__(self, field: str, value: Any, message: str) -> None:
        super().__init__(message)
        self.field, self.value, self.message = field, value, message


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelRef(_Block):
    """``model``: exactly one of ``id`` (Hub id), ``path`` (folder with config.json) or
    ``parameters`` (a bare dense count, the seed's calculator)."""

    id: str | None = Field(None, description="Hub id, e.g. meta-llama/Meta-Llama-3.1-8B")
    revision: str = Field("main", min_length=1,
                          description="commit sha, tag or branch; recorded on every output")
    path: str | None = Field(None, description="folder holding config.json (+ safetensors)")
    parameters: Annotated[int, Field(strict=True, ge=1)] | None = Field(
        None, description="bare dense parameter count")
    trust_remote_code: StrictBool = Field(False, description="never execute remote model code unless true")

    @model_validator(mode="after")
    def _exactly_one(self) -> "ModelRef":
        given = [k for k in ("id", "path", "parameters") if getattr(self, k) is not None]
        if len(given) != 1:
            raise _FieldProblem("", {k: getattr(self, k) for k in given},
                                "expected exactly one of id, path, parameters; got "
                                + (", ".join(given) if given else "none"))
        return self


class Quantization(_Block):
    prequantized: Literal["auto", True, False] = "auto"
    group_size: PositiveInt = 128
    double_quant: StrictBool = False
    compute_dtype: Literal["bf16", "fp16", "fp32"] = "bf16"


class Inference(_Block):
    engine: Literal["transformers", "vllm"] = "transformers"
    prompt_tokens: PositiveInt
    new_tokens: PositiveInt
    concurrency: PositiveInt = 1
    kv_cache_dtype: Literal["auto", "fp16", "bf16", "fp8"] = "auto"
    cache: Literal["dynamic", "static"] = "dynamic"
    logits: Literal["last", "all"] = "last"
    length_negotiable: StrictBool = False
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    max_num_batched_tokens: PositiveInt = 8192
    max_num_seqs: PositiveInt = Field(256, description="vllm only: sequences the profile run samples "
                                                       "(vLLM's default max_num_seqs)")
    block_size: PositiveInt = Field(16, description="vllm only: tokens per KV block (vLLM default)")

    @property
    def tokens_per_sequence(self) -> int:
        """KV capacity one sequence needs: prompt_tokens + new_tokens (CONTRACT.md)."""
        return self.prompt_tokens + self.new_tokens


def _lora_targets(value: Any) -> str | list[str]:
    """``default``, ``all-linear`` or a non-empty list of module names (PEFT refuses none)."""
    if isinstance(value, str):
        if value in ("default", "all-linear"):
            return value
        raise ValueError(f"expected 'default', 'all-linear' or a list of module names such as "
                         f"[q_proj, v_proj], got {value!r}")
    if isinstance(value, list):
        if not value:
            raise ValueError("expected at least one module name (PEFT adapts nothing with an "
                             "empty list), got []")
        bad = [v for v in value if not isinstance(v, str) or not v.strip()]
        if bad:
            raise ValueError(f"expected module names (strings), got {bad[0]!r}")
        return value
    raise ValueError(f"expected 'default', 'all-linear' or a list of module names, got {value!r}")


class Lora(_Block):
    rank: PositiveInt = 16
    alpha: Annotated[float, Field(ge=0)] = 0
    targets: Annotated[str | list[str], BeforeValidator(_lora_targets),
                       WithJsonSchema({"anyOf": [{"enum": ["default", "all-linear"]},
                                                 {"type": "array", "items": {"type": "string"},
                                                  "minItems": 1}]})] = "default"


class Training(_Block):
    sequence_length: PositiveInt
    microbatch: PositiveInt
    gradient_accumulation: PositiveInt = 1
    gradient_checkpointing: StrictBool = False
    precision: Literal["pure", "amp"] = "pure"
    optimizer: Literal["adamw", "adamw-8bit", "paged-adamw-8bit", "paged-adamw-32bit", "sgd",
                       "sgd-momentum", "adafactor"] = "adamw"
    optimizer_impl: Literal["foreach", "fused", "for-loop"] = "foreach"
    validation_microbatch: Annotated[int, Field(strict=True, ge=0)] = 0
    export: Literal["none", "adapter", "merged", "full"] = "none"
    lora: Lora = Lora()
    prepare_kbit_training: StrictBool | None = None


class Placement(_Block):
    gpus: PositiveInt = 1
    strategy: Literal["single", "ddp", "zero2", "fsdp", "tensor-parallel", "device-map"] = "single"

    @model_validator(mode="after")
    def _single_is_one(self) -> "Placement":
        if self.strategy == "single" and self.gpus != 1:
            raise _FieldProblem("gpus", self.gpus,
                                f"strategy 'single' runs on 1 GPU, got gpus={self.gpus}; choose "
                                "ddp, zero2, fsdp, tensor-parallel or device-map")
        return self


class Quality(_Block):
    corpus: str
    metric: str = "perplexity"
    reference: str = "auto"
    max_regression: Annotated[float, Field(ge=0)] = 0.02

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        if v in ("perplexity", "exact_match") or (v.startswith("lm_eval:") and "/" in v):
            return v
        raise ValueError("expected perplexity, exact_match or lm_eval:<task>/<metric>")


class Budget(_Block):
    max_usd: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    days: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    deadline: dt.date | None = None


class Requirements(_Block):
    host_ram: MemoryBytes | None = None
    storage: MemoryBytes | None = None
    interconnect: str | None = None
    software: list[str] = []


class Typical(_Block):
    prompt_tokens: PositiveInt | None = None
    new_tokens: PositiveInt | None = None
    concurrency: PositiveInt | None = None
    sequence_length: PositiveInt | None = None
    microbatch: PositiveInt | None = None


class Measure(_Block):
    typical: Typical = Typical()


class Sheet(_Block):
    """One workload sheet (R1). It stays fixed while offers are compared."""

    model: ModelRef
    task: Literal["inference", "lora", "qlora", "full"]
    weights: WeightFormat = "auto"
    quantization: Quantization = Quantization()
    attention: Literal["sdpa", "flash", "eager"] = "sdpa"
    reserve: MemoryBytes = 0
    margin: MarginField = Margin(percent=5.0)
    inference: Inference | None = None
    training: Training | None = None
    placement: Placement = Placement()
    quality: Quality | None = None
    budget: Budget | None = None
    requirements: Requirements = Requirements()
    measure: Measure = Measure()

    @model_validator(mode="after")
    def _task_blocks(self) -> "Sheet":
        if self.model.parameters is not None and self.weights == "auto":
            raise _FieldProblem("weights", "auto", "'auto' needs a checkpoint to read; with "
                                f"model.parameters give one of {', '.join(WEIGHT_FORMATS)}")
        if self.task == "inference" and self.training is not None:
            raise _FieldProblem("training", "(block)",
                                "a training block needs task lora, qlora or full, got inference")
        if self.task != "inference":
            if self.training is None:
                raise _FieldProblem("training", None, f"required for task {self.task}")
            if self.inference is not None:
                raise _FieldProblem("inference", "(block)", "an inference block needs task "
                                    f"inference, got task {self.task}")
        tr = self.training
        if tr is not None and tr.prepare_kbit_training is not None and self.task != "qlora":
            raise _FieldProblem("training.prepare_kbit_training", tr.prepare_kbit_training,
                                "applies to task qlora (PEFT's prepare_model_for_kbit_training "
                                f"on a quantized base), not {self.task}")
        if self.task == "qlora" and self.weights not in ("auto", *_formats_with("qlora_base")):
            raise _FieldProblem("weights", self.weights, "qlora trains on a 4-bit bitsandbytes "
                                f"base: expected {' or '.join(_formats_with('qlora_base'))}")
        self._check_set_but_unused()
        self._check_typical()
        return self

    def _check_set_but_unused(self) -> None:
        """A key the user set that this sheet would ignore is an error, never dropped silently."""
        inf = self.inference
        if inf is not None:
            given = inf.model_fields_set
            vllm_only = sorted(given & {"gpu_memory_utilization", "max_num_batched_tokens",
                                        "max_num_seqs", "block_size"})
            if inf.engine != "vllm" and vllm_only:
                raise _FieldProblem(f"inference.{vllm_only[0]}", getattr(inf, vllm_only[0]),
                                    "applies to engine vllm only; this sheet uses "
                                    f"engine {inf.engine}")
            if inf.engine == "vllm" and "cache" in given:
                raise _FieldProblem("inference.cache", inf.cache, "vLLM's KV cache is always "
                                    "paged; cache applies to engine transformers")
            if inf.engine == "vllm" and inf.logits == "all":
                raise _FieldProblem("inference.logits", "all", "vLLM computes logits for the "
                                    "last position of each sequence; 'all' is a plain "
                                    "transformers forward")
        q, w = self.quantization.model_fields_set, self.weights
        for key in ("double_quant", "group_size"):
            if key in q and w not in ("auto", *_accepting(key)):
                raise _FieldProblem(f"quantization.{key}", getattr(self.quantization, key),
                                    f"applies to {'/'.join(_accepting(key))} weights, not {w}")
        if "compute_dtype" in q and w != "auto" and FORMATS[w].dense \
                and self.quantization.compute_dtype != w:
            raise _FieldProblem("quantization.compute_dtype", self.quantization.compute_dtype,
                                f"applies to quantized weights; {w} computes in {w}")

    def _check_typical(self) -> None:
        """The middle rung (R9) uses the task's own dimensions, at most the limit's."""
        t = self.measure.typical
        block = self.inference if self.task == "inference" else self.training
        for key in sorted(t.model_fields_set):
            value = getattr(t, key)
            if value is None:
                continue
            if block is None or key not in type(block).model_fields:
                raise _FieldProblem(f"measure.typical.{key}", value,
                                    f"is not a dimension of this {self.task} sheet")
            limit = getattr(block, key)
            if value > limit:
                raise _FieldProblem(f"measure.typical.{key}", value,
                                    f"the typical rung must not exceed the limit {limit}")


def _loc(loc: tuple) -> str:
    parts = [str(p) for p in loc if not (isinstance(p, str) and p.startswith(("function-", "tagged-")))]
    return ".".join(parts) or "sheet"


def _explain(err: dict) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "unknown key (not in the sheet's schema; see `gpusizer schema`)"
    if kind == "missing":
        return "required key is missing"
    ctx = err.get("ctx") or {}
    bounds = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"),
              "less_than_equal": ("<=", "le"), "less_than": ("<", "lt")}
    if kind in bounds:
        op, key = bounds[kind]
        noun = "an integer" if isinstance(ctx.get(key), int) else "a number"
        return f"expected {noun} {op} {ctx.get(key)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "expected an integer"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return "expected a mapping (key: value pairs)"
    if kind in ("bool_type", "bool_parsing"):
        return "expected true or false"
    if kind in ("string_type",):
        return "expected a string"
    if kind.startswith("date"):
        return "expected a date YYYY-MM-DD"
    if kind == "string_too_short":
        return "expected a non-empty string"
    if kind in ("float_type", "float_parsing"):
        return "expected a number"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}"
    msg = err.get("msg", "invalid value")
    return msg.removeprefix("Value error, ")


def parse_sheet(data: Any, *, file: str | None = None) -> Sheet:
    """Validate a parsed YAML mapping into a :class:`Sheet`.

    Raises:
        SheetError: on the first invalid field, naming its dotted path, the value and the
            expectation (all problems are listed in the message).
    """
    if not isinstance(data, dict):
        raise SheetError(f"expected a mapping of sheet keys, got {type(data).__name__}",
                         file=file, value=data)
    try:
        return Sheet.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        lines = []
        for err in errors:
            inner = (err.get("ctx") or {}).get("error")
            if isinstance(inner, _FieldProblem):
                path = ".".join(p for p in (_loc(err["loc"]) if err["loc"] else "", inner.field) if p)
                shown = "" if inner.value in (None, "(block)") else f" (got {inner.value!r})"
                lines.append(f"{path or 'sheet'}: {inner.message}{shown}")
                continue
            value = err.get("input")
            explained = _explain(err)
            shown = "" if err.get("type") == "missing" or "got" in explained else f" (got {value!r})"
            lines.append(f"{_loc(err['loc'])}: {explained}{shown}")
        first = errors[0]
        raise SheetError("; ".join(lines), file=file, field=None, value=first.get("input")) from None


def load_sheet(path: str | Path) -> Sheet:
    """Read and validate a YAML workload sheet.

    Raises:
        SheetError: unreadable file, invalid YAML, or an invalid field.
    """
    p = Path(path)
    try:
        data = parse_yaml(decode_text(p.read_bytes()))
    except OSError as exc:
        raise SheetError(f"cannot read the sheet: {exc.strerror}", file=str(p)) from None
    except YamlProblem as exc:
        raise SheetError(str(exc), file=str(p)) from None
    if data is None:
        raise SheetError("the sheet is empty: expected a mapping with at least model and task",
                         file=str(p))
    return parse_sheet(data, file=str(p))


def canonical_json(sheet: Sheet) -> str:
    """The validated sheet as canonical JSON: defaults filled in, memory sizes as integer bytes,
    sorted keys, no spaces (CONTRACT.md, evidence files)."""
    data = sheet.model_dump(mode="json")
    # keys gpusizer added to CONTRACT.md's sheet are left out while unset, so the hash of every
    # sheet written against the contract stays what it was (docs/contract-extensions.md)
    training = data.get("training")
    if training is not None and training.get("prepare_kbit_training") is None:
        del training["prepare_kbit_training"]
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def quality_criteria(sheet: Sheet) -> dict | None:
    """The quality criteria quality evidence is judged on: the model (id / path / parameters and
    revision: a result on another model proves nothing here) and the quality block, defaults
    filled in; None without a quality block. The weight format is not part of it: the criteria
    stay fixed while candidate formats are compared."""
    if sheet.quality is None:
        return None
    return {"model": sheet.model.model_dump(mode="json"),
            "quality": sheet.quality.model_dump(mode="json")}


def quality_sha256(sheet: Sheet) -> str | None:
    """SHA-256 of :func:`quality_criteria` as canonical JSON (sorted keys, no spaces): the hash
    quality evidence must carry as ``criteria_sha256``; None without a quality block."""
    criteria = quality_criteria(sheet)
    if criteria is None:
        return None
    data = json.dumps(criteria, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def sheet_sha256(sheet: Sheet) -> str:
    """SHA-256 (hex) of :func:`canonical_json`; evidence counts only when it matches."""
    return hashlib.sha256(canonical_json(sheet).encode("utf-8")).hexdigest()
