"""The workload sheet (R1): YAML → validated, typed :class:`Sheet`.

Keys and defaults follow ``CONTRACT.md`` ("The workload sheet"). Unknown keys are errors, so a typo
never falls back to a default. Memory sizes are strings with a unit (``"6 GiB"``) and become integer
bytes; a bare number is refused. Every error names the field path, the value and what was expected.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, InvalidOperation, localcontext
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, StrictBool,
                      ValidationError, WithJsonSchema, field_validator, model_validator)

from .bounds import (MAX_BYTES, MAX_COUNT, MAX_DAYS, MAX_PARAMETERS, MAX_USD, bounded_float,
                     bounded_int, first_unsafe_text)
from .errors import SheetError, listed, shown
from .formats import FORMATS, NAMES
from .input_files import read_input
from .sheet_presets import resolve_framework
from .stack import LIBRARIES, UnknownVersion, check_version
from .units import parse_bytes
from .yaml_reader import YamlProblem, decode_text, parse_yaml

__all__ = [
    "Sheet", "ModelRef", "Quantization", "Inference", "Training", "Lora", "Placement", "Quality",
    "Budget", "Requirements", "Measure", "Margin", "Stack", "FRAMEWORKS", "WEIGHT_FORMATS", "TRAINING_STRATEGIES",
    "EngineSheetRules", "ENGINE_SHEET_RULES", "load_sheet", "parse_sheet", "required_dimensions",
    "sheet_sha256", "canonical_json", "quality_sha256", "quality_criteria",
    "parse_sheet_text", "Checkpointing", "CHECKPOINTED_MODULES", "Variant", "campaign_sheets",
    "VARIANT_KEYS", "CAMPAIGN_KEYS", "BASE_VARIANT",
]

TRAINING_STRATEGIES = ("single", "ddp", "zero1", "zero2", "zero3", "fsdp")
"""Placements a training sheet is sized under (``memory.training``)."""
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
PositiveInt = bounded_int(minimum=1, maximum=MAX_COUNT)


class Margin(BaseModel):
    """Headroom kept free on a card: ``fits ⇔ device_peak_bytes + margin ≤ device_bytes``.

    Either ``percent`` of the card's device bytes (exact: a Decimal, never rounded) or an absolute
    ``bytes``. Exactly one is given; percent is in [0, 100), bytes in [0, MAX_BYTES].
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    percent: Decimal | None = None
    bytes: Annotated[int, Field(strict=True, ge=0, le=MAX_BYTES)] | None = None

    @model_validator(mode="after")
    def _one_bounded(self) -> "Margin":
        if (self.percent is None) == (self.bytes is None):
            raise ValueError("expected exactly one of a percentage or a size")
        if self.percent is not None and not (self.percent.is_finite()
                                             and 0 <= self.percent < 100):
            raise ValueError(f"expected a percentage in [0, 100), got {self.percent}")
        return self

    def of(self, device_bytes: int) -> int:
        """The margin in bytes for a card of ``device_bytes``: ``⌈percent × device_bytes / 100⌉``
        computed exactly (a % rounds up to whole bytes), or ``bytes``."""
        if self.bytes is not None:
            return self.bytes
        assert self.percent is not None
        with localcontext() as ctx:
            ctx.prec = len(str(device_bytes)) + len(str(self.percent)) + 10
            exact = self.percent * device_bytes / 100
            return int(exact.to_integral_value(rounding=ROUND_CEILING))

    def __str__(self) -> str:
        return f"{_percent_text(self.percent)}%" if self.percent is not None else f"{self.bytes} B"


def _percent_text(percent: Decimal) -> str:
    """``Decimal('5.0')`` → ``'5'``, ``Decimal('12.3456789')`` → ``'12.3456789'`` (every digit
    given, no exponent: the echo and the sheet hash tell two margins apart)."""
    return format(percent.normalize(), "f")


def _parse_margin(value: Any) -> Any:
    """The contract's string form only: ``'5%'`` (of the card's device bytes) or a size with a
    unit (``'2 GiB'``); a mapping, a bare number or a boolean is refused."""
    if isinstance(value, Margin):
        return value
    if not isinstance(value, str):
        raise ValueError("expected a percentage of the card's device bytes ('5%') or a memory "
                         f"size with a unit ('2 GiB'), got {type(value).__name__} {value!r:.60}")
    if value.strip().endswith("%"):
        number = value.strip()[:-1].strip()
        try:
            pct = Decimal(number)
        except InvalidOperation:
            raise ValueError(f"expected a percentage such as '5%', got {value!r}") from None
        if not pct.is_finite() or not 0 <= pct < 100 or not _DECIMAL_RE.match(number):
            raise ValueError(f"expected a percentage in [0, 100) such as '5%', got {value!r}")
        return Margin(percent=pct)
    try:
        return Margin(bytes=parse_bytes(value))
    except SheetError as exc:
        raise ValueError("expected a percentage of the card's device bytes ('5%') or "
                         f"{exc.reason[len('expected '):] if exc.reason.startswith('expected ') else exc.reason}") from None


_DECIMAL_RE = re.compile(r"^[0-9]+(\.[0-9]+)?$")
"""A percentage's number: plain decimal digits (no sign, exponent, NaN or infinity)."""

MarginField = Annotated[
    Margin, BeforeValidator(_parse_margin),
    PlainSerializer(lambda m: str(m) if m.percent is not None else m.bytes),
    WithJsonSchema({"type": "string", "description": "a percentage of the card's device bytes "
                    "('5%') or a memory size with a unit ('2 GiB')"}),
]


class _FieldProblem(ValueError):
    """A cross-field problem found by a model validator, tied to the field it concerns."""

    def __init__(self, field: str, value: Any, message: str) -> None:
        super().__init__(message)
        self.field, self.value, self.message = field, value, message


class _Block(BaseModel):
    # a docstring under each field is its description in `gpusizer schema` (pydantic >= 2.7)
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    HASHED_WHEN_SET: ClassVar[frozenset[str]] = frozenset()
    """Fields gpusizer added after a sheet's hash was first defined: left out of the canonical
    JSON (and so of ``sheet_sha256``) while the user has not set them, so the hash of every sheet
    written before they existed stays what it was (docs/contract-extensions.md)."""


class ModelRef(_Block):
    """``model``: exactly one of ``id`` (Hub id), ``path`` (folder with config.json) or
    ``parameters`` (a bare dense count, the seed's calculator)."""

    id: str | None = None
    """Hugging Face Hub id, e.g. meta-llama/Meta-Llama-3.1-8B (read from the bundled registry
    when it is known there)."""
    revision: str = Field("main", min_length=1)
    """Commit sha, tag or branch of the Hub repository; recorded on every output."""
    path: str | None = None
    """Folder holding config.json (and safetensors headers or index); a relative path is read
    from the sheet's folder."""
    parameters: (bounded_int(minimum=1, maximum=MAX_PARAMETERS)  # type: ignore[valid-type]
                 | None) = None
    """A bare dense parameter count (the seed's calculator: weights only, no architecture)."""
    trust_remote_code: StrictBool = False
    """Remote model code is never executed unless true (gpusizer itself counts families from
    config.json and never executes it)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> "ModelRef":
        given = [k for k in ("id", "path", "parameters") if getattr(self, k) is not None]
        if len(given) != 1:
            raise _FieldProblem("", {k: getattr(self, k) for k in given},
                                "expected exactly one of id, path, parameters; got "
                                + (", ".join(given) if given else "none"))
        return self


class Quantization(_Block):
    """``quantization``: how a quantized ``weights`` format is stored and computed."""

    prequantized: Literal["auto"] | StrictBool = "auto"
    """auto: true when config.json has a quantization_config; true: the checkpoint already stores
    `weights` (no conversion at load); false: the weights are converted while loading."""
    group_size: PositiveInt = 128
    """gptq-int4 / awq-int4: input values sharing one scale and zero point (values)."""
    double_quant: StrictBool = False
    """nf4 / fp4: the absmax scales are quantized again (bitsandbytes
    bnb_4bit_use_double_quant)."""
    compute_dtype: Literal["bf16", "fp16", "fp32"] = "bf16"
    """Quantized weights: the dtype matmuls, activations and the KV cache run in (16/32-bit
    weights compute in their own dtype)."""


MAX_IMAGES = 1024
"""Images one request may carry (a bound on untrusted input)."""
MAX_IMAGE_SIDE = 65536
"""Pixels of an image side (a bound on untrusted input)."""


class Images(_Block):
    """``inference.images``: the images each request carries (vision-language models); their
    tokens join the prompt's, by the model's processor rule (Gemma 3: 256 per image; Qwen2.5-VL:
    one per 28 × 28 pixels after resizing)."""

    per_request: bounded_int(minimum=0, maximum=MAX_IMAGES) = 0  # type: ignore[valid-type]
    """Images in one request (images); 0: text only."""
    width: bounded_int(minimum=0, maximum=MAX_IMAGE_SIDE) = 0  # type: ignore[valid-type]
    """Width of each image (pixels); required when per_request > 0."""
    height: bounded_int(minimum=0, maximum=MAX_IMAGE_SIDE) = 0  # type: ignore[valid-type]
    """Height of each image (pixels); required when per_request > 0."""

    @model_validator(mode="after")
    def _sized(self) -> "Images":
        if self.per_request and not (self.width and self.height):
            raise _FieldProblem("width" if not self.width else "height",
                                self.width if not self.width else self.height,
                                f"expected width and height >= 1 pixel for {self.per_request} "
                                "image(s) per request")
        return self


class Inference(_Block):
    """``inference``: the serving workload; absent, only "weights only" and the envelope are
    computed (no KV cache, no phase past load)."""

    engine: Literal["transformers", "vllm", "sglang"] = "transformers"
    """The serving engine: transformers (generate), vllm or sglang (a KV pool taken at
    start)."""
    prompt_tokens: PositiveInt
    """Tokens of one sequence's prompt (tokens)."""
    new_tokens: PositiveInt
    """Tokens generated per sequence (tokens); the KV cache holds prompt + new tokens."""
    concurrency: PositiveInt = 1
    """Sequences served at once (sequences)."""
    kv_cache_dtype: Literal["auto", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2"] = "auto"
    """dtype of the KV cache; auto: the compute dtype; fp8 (vLLM: E4M3), fp8_e4m3 and fp8_e5m2
    store one byte per value (the engines' own --kv-cache-dtype names)."""
    cache: Literal["dynamic", "static"] = "dynamic"
    """transformers only: dynamic grows the cache token by token; static allocates it whole
    before prefill."""
    logits: Literal["last", "all"] = "last"
    """Positions whose logits the forward keeps: last (generate) or all (a plain forward)."""
    length_negotiable: StrictBool = False
    """Whether an alternative may shorten the length (R10)."""
    gpu_memory_utilization: bounded_float(  # type: ignore[valid-type]
        minimum=0, exclusive_minimum=True, maximum=1) = 0.9
    """vllm only: fraction of the device total vLLM takes as its budget (0 < x <= 1)."""
    max_num_batched_tokens: PositiveInt = 8192
    """vllm only: tokens scheduled in one step, the profile run's token count (tokens; vLLM
    V1's default)."""
    max_num_seqs: PositiveInt = 256
    """vllm only: sequences the profile run samples (sequences; vLLM's default max_num_seqs)."""
    block_size: PositiveInt = 16
    """vllm only: tokens per KV block (tokens; vLLM's default)."""
    mem_fraction_static: Literal["auto"] | bounded_float(  # type: ignore[valid-type]
        minimum=0, exclusive_minimum=True, maximum=1) = "auto"
    """sglang only: fraction of the free memory at start SGLang keeps for weights and its KV
    pool (0 < x <= 1); auto: SGLang's own default for the card and TP size (stack.sglang)."""
    max_running_requests: Literal["auto"] | PositiveInt = "auto"  # type: ignore[valid-type]
    """sglang only: requests SGLang runs at once (requests); auto: SGLang's default, derived
    from its KV pool."""
    chunked_prefill_size: Literal["auto"] | PositiveInt = "auto"  # type: ignore[valid-type]
    """sglang only: prompt tokens one prefill step takes (tokens); auto: SGLang's default for
    the card's memory (stack.sglang)."""

    # issue 13 (vision-language models): the images a request carries
    images: Images = Images()
    """Images each request carries: {per_request, width, height} (vision-language models)."""

    HASHED_WHEN_SET = frozenset({"mem_fraction_static", "max_running_requests",
                                 "chunked_prefill_size", "images"})

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


PEFT_METHOD_NAMES = ("lora", "dora", "rslora", "ia3", "prompt", "prefix", "p-tuning", "loha",
                     "lokr", "oft", "boft", "vera", "adalora")
"""``training.peft`` values (CONTRACT.md); each is one entry of
``gpusizer.memory.training.peft_methods.PEFT_METHODS``."""
LORA_METHODS = ("lora", "dora", "rslora")
"""Methods that read ``training.lora`` (PEFT ``LoraConfig``, with use_dora / use_rslora)."""
PROMPT_METHODS = ("prompt", "prefix", "p-tuning")
"""Prompt-learning methods: no adapted module, nothing PEFT can merge into the weights."""


def _peft_options(value: Any) -> dict[str, Any]:
    """A mapping of PEFT option names to scalars or lists of scalars."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping of PEFT option names to values, got {value!r}")
    for key, v in value.items():
        items = v if isinstance(v, list) else [v]
        if not isinstance(key, str) or not all(isinstance(i, (str, int, float, bool))
                                               for i in items):
            raise ValueError(f"expected option name: scalar or list of scalars, got "
                             f"{key!r}: {v!r}")
    return value


def _modules_to_save(value: Any) -> list[str]:
    """A list of module names (PEFT ``modules_to_save``)."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"expected a list of module names such as [lm_head], got {value!r}")
    return value


class Lora(_Block):
    """``training.lora``: the LoRA adapters (Hu et al. 2021), PEFT's matching rules."""

    rank: PositiveInt = 16
    """Rank r of each adapter pair A (r × in), B (out × r)."""
    alpha: bounded_float(minimum=0, maximum=MAX_COUNT) = 0  # type: ignore[valid-type]
    """Scaling numerator (update × alpha / r); 0: 2 × rank. Does not change memory."""
    targets: Annotated[str | list[str], BeforeValidator(_lora_targets),
                       WithJsonSchema({"anyOf": [{"enum": ["default", "all-linear"]},
                                                 {"type": "array", "items": {"type": "string"},
                                                  "minItems": 1}]})] = "default"
    """Modules adapted: default (PEFT's default for the family), all-linear, or a list of module
    names such as [q_proj, v_proj]."""


@dataclass(frozen=True)
class EngineSheetRules:
    """What the sheet knows of one inference engine: the ``inference`` keys only it reads (the
    sheet refuses them under another engine) and what it refuses that needs no model facts.
    The engine's memory rules live in ``memory/engines/<name>.py``, whose ``KEYS`` are these.

    Attributes:
        keys: the ``inference`` keys only this engine reads.
        refuse: (inference block, placement) → (field path, value, what was expected), or None.
    """

    keys: frozenset[str]
    refuse: Callable[["Inference", "Placement"], tuple[str, Any, str] | None]


def _transformers_refuses(inf: "Inference", placement: "Placement"):
    return None


def _paged_refuses(inf: "Inference", placement: "Placement", label: str):
    """A serving engine's cache (vLLM, SGLang) is always paged, its logits are the last
    position's, and it splits a model with tensor parallelism (vLLM docs, "Distributed inference
    and serving")."""
    if "cache" in inf.model_fields_set:
        return ("inference.cache", inf.cache, f"{label}'s KV cache is always paged; cache "
                "applies to engine transformers")
    if inf.logits == "all":
        return ("inference.logits", "all", f"{label} computes logits for the last position of "
                "each sequence; 'all' is a plain transformers forward")
    if placement.strategy == "device-map" and placement.gpus > 1:
        return ("placement.strategy", placement.strategy, "device-map is accelerate's layer "
                f"placement for transformers; {label} splits a model with tensor-parallel (or "
                "pipeline parallelism, not sized here)")
    return None


def _vllm_refuses(inf: "Inference", placement: "Placement"):
    """:func:`_paged_refuses`, and vLLM's own check of its scheduler's limits (vllm config.py
    ``SchedulerConfig._verify_args``), in its words."""
    if inf.max_num_batched_tokens < inf.max_num_seqs:
        return ("inference.max_num_batched_tokens", inf.max_num_batched_tokens,
                f"vLLM refuses to start: max_num_batched_tokens ({inf.max_num_batched_tokens}) "
                f"must be greater than or equal to max_num_seqs ({inf.max_num_seqs})")
    return _paged_refuses(inf, placement, "vLLM")


def _sglang_refuses(inf: "Inference", placement: "Placement"):
    """SGLang's cache is paged, its logits are the last position's, it splits a model with
    tensor parallelism, and its ``--kv-cache-dtype`` names fp8 as fp8_e4m3 / fp8_e5m2
    (SGLang server_args.py ``--kv-cache-dtype`` choices)."""
    if inf.kv_cache_dtype == "fp8":
        return ("inference.kv_cache_dtype", "fp8", "SGLang's --kv-cache-dtype takes fp8_e4m3 or "
                "fp8_e5m2 (no bare fp8)")
    if inf.kv_cache_dtype in ("fp16", "bf16"):
        return ("inference.kv_cache_dtype", inf.kv_cache_dtype, "auto (the model dtype), "
                "fp8_e4m3 or fp8_e5m2 with engine sglang")
    return _paged_refuses(inf, placement, "SGLang")


ENGINE_SHEET_RULES: dict[str, EngineSheetRules] = {
    "transformers": EngineSheetRules(frozenset({"cache"}), _transformers_refuses),
    "vllm": EngineSheetRules(frozenset({"gpu_memory_utilization", "max_num_batched_tokens",
                                        "max_num_seqs", "block_size"}), _vllm_refuses),
    "sglang": EngineSheetRules(frozenset({"mem_fraction_static", "max_running_requests",
                                          "chunked_prefill_size"}), _sglang_refuses),
}
"""``inference.engine`` → its sheet rules; one line per engine, beside the ``engine`` Literal."""


CHECKPOINTED_MODULES = ("attention", "mlp")
"""``training.checkpointing.modules`` values: the sub-blocks of a decoder layer that selective
checkpointing wraps (recomputed in backward; each keeps only its input)."""


class Checkpointing(_Block):
    """``training.checkpointing``: activation checkpointing beyond transformers' default
    (CONTRACT.md; ``gradient_checkpointing: true`` is the same as ``{mode: full}``)."""

    mode: Literal["full", "selective"] | None = None
    """full: every checkpointed decoder layer keeps only its input and is recomputed in
    backward; selective: only the sub-blocks named in modules are; unset: follows
    gradient_checkpointing."""
    modules: list[Literal[CHECKPOINTED_MODULES]] = []  # type: ignore[valid-type]
    """selective only: the sub-blocks checkpointed (attention, mlp); the rest keep their
    activations."""
    every: PositiveInt = 1
    """Checkpoint every k-th decoder layer (transformers every_n_layers: layers 1, k + 1, …;
    torchtune ac_option: layers k, 2k, …); the others keep their activations."""
    offload: StrictBool = False
    """Move what the forward keeps for backward (the checkpointed inputs, or every saved
    activation without checkpointing) to pinned host memory, and back before its layer's
    backward."""

    @model_validator(mode="after")
    def _modules_with_selective(self) -> "Checkpointing":
        if self.mode == "selective" and not self.modules:
            raise _FieldProblem("modules", [], "selective checkpointing needs the sub-blocks "
                                f"it wraps: one or more of {', '.join(CHECKPOINTED_MODULES)}")
        if self.modules and self.mode != "selective":
            raise _FieldProblem("modules", self.modules, "applies to mode selective, not "
                                f"{self.mode or 'unset'}")
        return self


class Training(_Block):
    """``training``: the fine-tuning workload (required for lora, qlora and full)."""

    sequence_length: PositiveInt
    """Tokens per training sequence (tokens)."""
    microbatch: PositiveInt
    """Sequences in one forward and backward per GPU (sequences)."""
    gradient_accumulation: PositiveInt = 1
    """Microbatches whose gradients add up before one optimizer step (> 1 keeps the gradients
    between microbatches)."""
    gradient_checkpointing: StrictBool = False
    """Keep only each decoder layer's input and recompute the layer in backward."""
    precision: Literal["pure", "amp", "master"] = "pure"
    """pure: trained parameters, their gradients and optimizer states in the compute dtype; amp:
    fp32 copies of those, matmuls in the compute dtype (torch autocast); master: 16-bit
    parameters and gradients beside an fp32 master copy and fp32 optimizer states (DeepSpeed,
    Megatron, FSDP mixed precision; docs/training-sharding.md)."""
    optimizer: Literal["adamw", "adamw-8bit", "paged-adamw-8bit", "paged-adamw-32bit", "sgd",
                       "sgd-momentum", "adafactor"] = "adamw"
    """The optimizer, which sets the state bytes per trained parameter (torch.optim,
    bitsandbytes, transformers Adafactor)."""
    optimizer_impl: Literal["foreach", "fused", "for-loop"] = "foreach"
    """torch.optim implementation, which sets the optimizer step's temporary memory."""
    validation_microbatch: bounded_int(minimum=0, maximum=MAX_COUNT) = 0  # type: ignore[valid-type]
    """Sequences in one validation forward (sequences); 0: the same as microbatch."""
    export: Literal["none", "adapter", "merged", "full"] = "none"
    """What is saved at the end: none; adapter or merged (LoRA: the adapters, or the base with
    them merged in); full (task full: the trained weights)."""
    lora: Lora = Lora()
    """The LoRA adapters (task lora or qlora only)."""
    HASHED_WHEN_SET = frozenset({"prepare_kbit_training", "loss", "packing", "checkpointing"})

    prepare_kbit_training: StrictBool | None = None
    """qlora only: PEFT's prepare_model_for_kbit_training runs (kept modules cast to fp32, fp32
    residual stream); unset means true; false for stacks that skip it."""
    loss: Literal["standard", "chunked", "fused-linear"] = "standard"
    """standard: the full-vocabulary fp32 cross-entropy (transformers ForCausalLMLoss); chunked:
    cross-entropy chunk by chunk of tokens (torchtune, LitGPT); fused-linear: lm_head and loss
    fused, the logits never materialized (Liger Kernel, Unsloth)."""
    packing: StrictBool = False
    """Sequences packed without padding: sequence_length × microbatch tokens per microbatch,
    attention restricted to each document."""
    checkpointing: Checkpointing = Checkpointing()
    """Activation checkpointing: {mode: full | selective, modules, every, offload}; empty:
    gradient_checkpointing alone decides."""

    @model_validator(mode="after")
    def _one_checkpointing(self) -> "Training":
        mode, flag = self.checkpointing.mode, self.gradient_checkpointing
        set_flag = "gradient_checkpointing" in self.model_fields_set
        if (flag and mode == "selective") or (set_flag and not flag and mode is not None):
            raise _FieldProblem("checkpointing.mode", mode, f"contradicts gradient_checkpointing: "
                                f"{str(flag).lower()} (true is the same as mode full); set one")
        ckpt = self.checkpointing.model_fields_set - {"mode", "offload"}
        if self.checkpoint_mode == "none" and ckpt:
            key = sorted(ckpt)[0]
            raise _FieldProblem(f"checkpointing.{key}", getattr(self.checkpointing, key),
                                "needs checkpointing on (mode full or selective, or "
                                "gradient_checkpointing: true)")
        return self

    @property
    def checkpoint_mode(self) -> str:
        """The checkpointing that runs: ``none``, ``full`` or ``selective``
        (``gradient_checkpointing: true`` is ``full``)."""
        if self.gradient_checkpointing:
            return "full"
        return self.checkpointing.mode or "none"

    # the duration bound (issue 17 point 2; decision.throughput): one contiguous place
    HASHED_WHEN_SET = HASHED_WHEN_SET | {"dataset_tokens", "epochs", "mfu"}
    dataset_tokens: bounded_int(minimum=0, maximum=10**15) = 0  # type: ignore[valid-type]
    """Tokens in one epoch of the training data (tokens); 0: no dataset declared (the duration
    stays the budget's days, hypothetical)."""
    epochs: bounded_float(minimum=0, exclusive_minimum=True,  # type: ignore[valid-type]
                          maximum=10**4) = 1
    """Passes over the dataset (epochs; a fraction is a partial pass)."""
    mfu: bounded_float(minimum=0, maximum=1) = 0  # type: ignore[valid-type]
    """Model-FLOPs utilization the user states for the duration bound (0 < mfu <= 1; 0: none),
    as a fraction of the card's peak dense throughput."""

    # -- PEFT methods (issue 14 point 3): training.peft, peft_options, modules_to_save --
    peft: Literal[PEFT_METHOD_NAMES] = "lora"  # type: ignore[valid-type]
    """The PEFT method (lora | dora | rslora | ia3 | prompt | prefix | p-tuning | loha | lokr |
    oft | boft | vera | adalora); lora, dora and rslora read training.lora, the others
    peft_options (docs/peft-methods.md)."""
    peft_options: Annotated[dict[str, Any], BeforeValidator(_peft_options)] = {}
    """The method's options under PEFT's own key names (num_virtual_tokens, r,
    target_modules, feedforward_modules, oft_block_size, ...); unset keys take PEFT's
    defaults. Which keys a method reads is checked with the model (docs/peft-methods.md)."""
    modules_to_save: Annotated[list[str], BeforeValidator(_modules_to_save)] = []
    """PEFT's modules_to_save: modules trained in full beside the adapters (a trained copy
    of each), e.g. [lm_head] or [embed_tokens, lm_head]."""
    HASHED_WHEN_SET = HASHED_WHEN_SET | {"peft", "peft_options", "modules_to_save"}

    @model_validator(mode="after")
    def _peft_reads_its_block(self) -> "Training":
        if self.peft not in LORA_METHODS and "lora" in self.model_fields_set:
            raise _FieldProblem("lora", self.lora.model_dump(), f"is read by peft lora, dora "
                                f"or rslora; peft {self.peft} takes its options from "
                                "training.peft_options")
        return self


def _check_peft(task: str, tr: Training) -> None:
    """PEFT keys with task full, and a merged export of a prompt-learning method."""
    peft_keys = sorted(tr.model_fields_set & {"peft", "peft_options", "modules_to_save"})
    if task == "full" and peft_keys:
        raise _FieldProblem(f"training.{peft_keys[0]}", getattr(tr, peft_keys[0]),
                            "applies to task lora or qlora (PEFT adapters), not full")
    if tr.peft in PROMPT_METHODS and tr.export == "merged":
        raise _FieldProblem("training.export", tr.export, f"peft {tr.peft} adds virtual tokens, "
                            "not weights: PEFT cannot merge it; use 'adapter' or 'none'")


class Placement(_Block):
    """``placement``: how the workload spreads over GPUs; every memory figure is per GPU."""

    gpus: PositiveInt = 1
    """GPUs the workload runs on, over all its nodes (GPUs)."""
    strategy: Literal["single", "ddp", "zero1", "zero2", "zero3", "fsdp", "tensor-parallel",
                      "device-map"] = "single"
    """single (one GPU); ddp (a full copy per GPU); zero1 / zero2 / zero3 (training: DeepSpeed
    ZeRO, optimizer states / + gradients / + parameters sharded); fsdp (training: PyTorch FSDP,
    see fsdp_sharding); tensor-parallel (inference: linears and heads split); device-map
    (inference with transformers: whole decoder layers per GPU)."""
    HASHED_WHEN_SET = frozenset({"nodes", "fsdp_sharding", "offload"})

    nodes: PositiveInt = 1
    """Nodes the GPUs are spread over, evenly (gpus ÷ nodes per node); host RAM is per node."""
    fsdp_sharding: Literal["full", "grad-op", "hybrid"] = "full"
    """fsdp only: full (FULL_SHARD: parameters, gradients and states sharded over every GPU);
    grad-op (SHARD_GRAD_OP: parameters stay gathered from forward to the end of backward);
    hybrid (HYBRID_SHARD: full shard inside a node, replicated across nodes)."""
    offload: Literal["none", "optimizer", "optimizer+params"] = "none"
    """zero1/zero2/zero3/fsdp: what moves to host RAM. optimizer (ZeRO-Offload: fp32 master
    copy, fp32 gradients and optimizer states; not fsdp); optimizer+params (zero3: also the
    16-bit parameter shards; fsdp: CPUOffload(offload_params=True), parameters, gradients and
    states)."""

    @model_validator(mode="after")
    def _single_is_one(self) -> "Placement":
        if self.strategy == "single" and self.gpus != 1:
            raise _FieldProblem("gpus", self.gpus,
                                f"strategy 'single' runs on 1 GPU, got gpus={self.gpus}; choose "
                                "ddp, zero2, fsdp, tensor-parallel or device-map")
        self._check_nodes_and_sharding()
        return self

    def _check_nodes_and_sharding(self) -> None:
        """nodes divide the GPUs; fsdp_sharding and offload only where the strategy has them."""
        if self.gpus % self.nodes:
            raise _FieldProblem("nodes", self.nodes, f"gpus {self.gpus} must spread "
                                f"evenly over the nodes: expected a divisor of {self.gpus}")
        if "fsdp_sharding" in self.model_fields_set and self.strategy != "fsdp":
            raise _FieldProblem("fsdp_sharding", self.fsdp_sharding,
                                f"applies to strategy fsdp, not {self.strategy}")
        if self.offload == "none":
            return
        if self.strategy not in ("zero1", "zero2", "zero3", "fsdp"):
            raise _FieldProblem("offload", self.offload, "applies to strategies "
                                f"zero1, zero2, zero3 and fsdp, not {self.strategy}")
        if self.strategy == "fsdp" and self.offload == "optimizer":
            raise _FieldProblem("offload", self.offload, "FSDP offloads parameters, "
                                "gradients and optimizer states together (CPUOffload("
                                "offload_params=True)): expected optimizer+params")
        if self.strategy in ("zero1", "zero2") and self.offload == "optimizer+params":
            raise _FieldProblem("offload", self.offload, "DeepSpeed offloads "
                                "parameters with ZeRO stage 3 only (offload_param): expected "
                                "optimizer, or strategy zero3")


class Quality(_Block):
    """``quality``: the criteria a weight format's quality is judged on (absent: the quality
    criterion stays to_confirm)."""

    corpus: str
    """The frozen evaluation corpus (a JSONL file, relative to the sheet's folder)."""
    metric: str = "perplexity"
    """perplexity (lower is better), exact_match or lm_eval:<task>/<metric> (higher is better)."""
    reference: str = "auto"
    """The format the candidate is compared with; auto: the checkpoint's stored format."""
    max_regression: bounded_float(minimum=0, maximum=1) = 0.02  # type: ignore[valid-type]
    """Largest allowed regression, relative, in the metric's worse direction (0.02 = 2 %)."""

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        if v in ("perplexity", "exact_match") or (v.startswith("lm_eval:") and "/" in v):
            return v
        raise ValueError("expected perplexity, exact_match or lm_eval:<task>/<metric>")


class Budget(_Block):
    """``budget``: the money and schedule limits (absent: the budget criterion stays
    to_confirm)."""

    max_usd: bounded_float(minimum=0, exclusive_minimum=True,  # type: ignore[valid-type]
                           maximum=MAX_USD) | None = None
    """Most the campaign may cost, all offers' prices included (USD)."""
    days: bounded_float(minimum=0, exclusive_minimum=True,  # type: ignore[valid-type]
                        maximum=MAX_DAYS) | None = None
    """Days of use the campaign needs (days); hourly prices are multiplied by 24 × days."""
    deadline: dt.date | None = None
    """Last day the work may end (YYYY-MM-DD)."""


class Requirements(_Block):
    """``requirements``: what an offer's documents must prove beside the GPUs."""

    host_ram: MemoryBytes | None = None
    """Host RAM the workload needs (a size with a unit, e.g. 64 GB)."""
    storage: MemoryBytes | None = None
    """Disk the workload needs (a size with a unit, e.g. 200 GB)."""
    interconnect: str | None = None
    """GPU interconnect needed, e.g. nvlink."""
    software: list[str] = []
    """Software the environment must provide, e.g. ["torch>=2.4", "cuda>=12.1"]."""


class Typical(_Block):
    """``measure.typical``: the middle rung's dimensions (R9), each at most the sheet's own."""

    prompt_tokens: PositiveInt | None = None
    """Inference: prompt tokens of the middle rung (tokens)."""
    new_tokens: PositiveInt | None = None
    """Inference: new tokens of the middle rung (tokens)."""
    concurrency: PositiveInt | None = None
    """Inference: sequences at once in the middle rung (sequences)."""
    sequence_length: PositiveInt | None = None
    """Training: sequence length of the middle rung (tokens)."""
    microbatch: PositiveInt | None = None
    """Training: microbatch of the middle rung (sequences)."""


class Measure(_Block):
    """``measure``: the measurement ladder (short, typical, limit; R9)."""

    typical: Typical = Typical()
    """The middle rung; empty: no middle rung."""


_VERSION = r"^[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?((\.post|rc|a|b)[0-9]{1,4})?$"
"""A library version as its project releases them: "X.Y", "X.Y.Z", optional ".postN" / "rcN"."""



def _version(value: Any) -> str:
    """``auto`` or a release number (:data:`_VERSION`); YAML's 4.57 (a float) is refused with a
    hint, since 4.50 would read as 4.5."""
    if isinstance(value, str) and (value == "auto" or re.fullmatch(_VERSION, value)):
        return value
    hint = " (quote it: YAML reads 4.50 as the number 4.5)" if isinstance(value, float) else ""
    raise ValueError(f"expected 'auto' or a version such as \"4.57.1\" or \"0.6.3.post1\", "
                     f"got {value!r}{hint}")


Version = Annotated[str, BeforeValidator(_version),
                    WithJsonSchema({"type": "string", "pattern": f"^auto$|{_VERSION}"})]

FRAMEWORKS = ("auto", "trl-sft", "unsloth", "axolotl", "torchtune", "litgpt", "deepspeed")
"""``stack.framework`` values (CONTRACT.md)."""


class Stack(_Block):
    """The software the workload runs on (CONTRACT.md ``stack``): rules that changed between
    library versions follow it. ``auto`` is the version gpusizer's rules were written for."""

    transformers: Version = "auto"
    """transformers' version ("X.Y.Z" or "X.Y"), or auto."""
    peft: Version = "auto"
    """PEFT's version, or auto."""
    bitsandbytes: Version = "auto"
    """bitsandbytes' version, or auto."""
    trl: Version = "auto"
    """TRL's version, or auto."""
    deepspeed: Version = "auto"
    """DeepSpeed's version, or auto."""
    vllm: Version = "auto"
    """vLLM's version (e.g. "0.10.1" or "0.6.3.post1"), or auto."""
    sglang: Version = "auto"
    """SGLang's version, or auto."""
    framework: Literal[FRAMEWORKS] = "auto"  # type: ignore[valid-type]
    """A training stack whose documented defaults fill the keys the sheet leaves unset
    (explicit keys win)."""

    @model_validator(mode="after")
    def _known_versions(self) -> "Stack":
        # a version no rule table knows is refused, listing those known (gpusizer.stack)
        for name in LIBRARIES:
            value = getattr(self, name, "auto")
            try:
                check_version(name, value)
            except UnknownVersion as exc:
                raise _FieldProblem(name, value, str(exc)) from None
        return self


# --- campaigns (CONTRACT.md `variants`, R15): one contiguous place -------------------------
VARIANT_KEYS = ("task", "weights", "quantization", "attention", "inference", "training",
                "placement", "stack")
"""The top-level keys a variant may override (CONTRACT.md ``variants``)."""
CAMPAIGN_KEYS = ("model", "quality", "budget", "requirements")
"""The keys that are the campaign's: every variant shares them; a variant overriding one is
refused."""
BASE_VARIANT = "base"
"""The name of the sheet's own workload among a campaign's variants (reserved)."""
MAX_VARIANTS = 1000
"""Variants a campaign may hold (a typo guard; the scale goal is 100, issue 17)."""
_VARIANT_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class Variant(_Block):
    """One variant of a campaign: a name and overrides of any of :data:`VARIANT_KEYS`
    (mappings merged deeply into the sheet's own, lists replaced, a block set to null
    dropped). Each variant is judged as a whole sheet (:func:`campaign_sheets`)."""

    name: str
    """The variant's name: letters, digits, '.', '_' or '-' (at most 64; 'base' is the sheet's
    own workload)."""
    task: Literal["inference", "lora", "qlora", "full"] | None = None
    """Overrides the sheet's task."""
    weights: WeightFormat | None = None
    """Overrides the sheet's weight format."""
    quantization: dict[str, Any] | None = None
    """Keys merged into the sheet's quantization block."""
    attention: Literal["sdpa", "flash", "eager"] | None = None
    """Overrides the sheet's attention kernel."""
    inference: dict[str, Any] | None = None
    """Keys merged into the sheet's inference block (null: no inference block)."""
    training: dict[str, Any] | None = None
    """Keys merged into the sheet's training block (null: no training block)."""
    placement: dict[str, Any] | None = None
    """Keys merged into the sheet's placement block."""
    stack: dict[str, Any] | None = None
    """Keys merged into the sheet's stack block."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.fullmatch(_VARIANT_NAME, value):
            raise ValueError("expected a name of letters, digits, '.', '_' or '-' (at most 64, "
                             f"starting with a letter or digit), got {shown(value)}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _own_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if key in CAMPAIGN_KEYS:
                    raise _FieldProblem(str(key), data[key], "is the campaign's: a variant may "
                                        f"not override it (it overrides {', '.join(VARIANT_KEYS)})")
                if key != "name" and key not in VARIANT_KEYS:
                    raise _FieldProblem(str(key)[:40], data[key], "is not a key a variant "
                                        f"overrides (expected name and any of "
                                        f"{', '.join(VARIANT_KEYS)})")
        return data


def _merged(base: Any, override: Any) -> Any:
    """``override`` merged into ``base``: mappings deeply, anything else (lists included)
    replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            out[key] = _merged(base[key], value) if key in base else value
        return out
    return override


def _variant_input(sheet: "Sheet", variant: Variant) -> dict[str, Any]:
    """The mapping a variant's whole sheet is validated from: the sheet's keys as the user set
    them (validated blocks passed as they are; the reserve as exact bytes), each overridden key
    merged."""
    data: dict[str, Any] = {}
    for key in sheet.model_fields_set - {"variants"}:
        value = getattr(sheet, key)
        data[key] = f"{value} B" if key == "reserve" else value
    for key in variant.model_fields_set - {"name"}:
        value = getattr(variant, key)
        if value is None:
            data.pop(key, None)  # `inference: null`: the variant has no such block
            continue
        base = data.get(key)
        if isinstance(base, BaseModel):
            base = base.model_dump(exclude_unset=True)
        data[key] = _merged(base, value) if isinstance(value, dict) else value
    return data


class Sheet(_Block):
    """One workload sheet (R1). It stays fixed while offers are compared."""

    model: ModelRef
    """The model: exactly one of id, path or parameters."""
    task: Literal["inference", "lora", "qlora", "full"]
    """inference (serving); lora (adapters on a frozen base); qlora (adapters on a 4-bit
    bitsandbytes base); full (every weight trained)."""
    weights: WeightFormat = "auto"
    """The weight format on the GPU; auto: the checkpoint's stored format (required with
    model.parameters)."""
    quantization: Quantization = Quantization()
    """How a quantized format is stored and computed."""
    attention: Literal["sdpa", "flash", "eager"] = "sdpa"
    """Attention kernel asked (the card's rules may change it; eager keeps s × s matrices)."""
    reserve: MemoryBytes = 0
    """The user's declared reserve (a size with a unit); envelope = weights + reserve, never
    added to a peak."""
    margin: MarginField = Margin(percent=Decimal(5))
    """Headroom kept free on a card: fits ⇔ device_peak_bytes + margin ≤ device_bytes; a % is of
    the card's device bytes."""
    inference: Inference | None = None
    """The serving workload (task inference)."""
    training: Training | None = None
    """The fine-tuning workload (required for lora, qlora and full)."""
    placement: Placement = Placement()
    """How the workload spreads over GPUs."""
    quality: Quality | None = None
    """Quality criteria (absent: quality stays to_confirm)."""
    budget: Budget | None = None
    """Money and schedule limits (absent: budget stays to_confirm)."""
    requirements: Requirements = Requirements()
    """What an offer's documents must prove beside the GPUs."""
    measure: Measure = Measure()
    """The measurement ladder's middle rung."""
    stack: Stack = Stack()
    """The software versions and training framework the workload runs on."""
    variants: Annotated[list[Variant], Field(max_length=MAX_VARIANTS)] = []
    """A campaign (R15): workloads that differ from this sheet in the keys each variant names;
    model, quality, budget and requirements are the campaign's. Never part of sheet_sha256:
    each variant has its own (:func:`campaign_sheets`)."""

    HASHED_WHEN_SET = frozenset({"stack"})

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
        self._check_placement()
        if tr is not None:
            self._check_training(tr)
        self._check_set_but_unused()
        self._check_typical()
        return self

    def _check_placement(self) -> None:
        """Strategies the task cannot use (sized in ``memory.placement`` and ``memory.training``).
        """
        strategy, gpus = self.placement.strategy, self.placement.gpus
        if self.task != "inference" and strategy not in TRAINING_STRATEGIES:
            raise _FieldProblem("placement.strategy", strategy, "is not sized for training: "
                                f"expected {', '.join(TRAINING_STRATEGIES[:-1])} or "
                                f"{TRAINING_STRATEGIES[-1]}")
        if self.task == "inference" and strategy in ("zero1", "zero2", "zero3", "fsdp") \
                and gpus > 1:
            raise _FieldProblem("placement.strategy", strategy, "shards training state; for "
                                "inference choose tensor-parallel, device-map or ddp")
        if self.task == "inference" and self.placement.nodes > 1:
            raise _FieldProblem("placement.nodes", self.placement.nodes, "several nodes are "
                                "sized for training (ddp, zero1-3, fsdp); serve within one node")

    def _check_training(self, tr: Training) -> None:
        """What a lora / qlora / full sheet cannot ask, whatever the model."""
        if self.task == "full" and "lora" in tr.model_fields_set:
            raise _FieldProblem("training.lora", tr.lora.model_dump(),
                                "applies to task lora or qlora, not full")
        if self.task == "full" and tr.export in ("adapter", "merged"):
            raise _FieldProblem("training.export", tr.export, "needs LoRA adapters (task lora "
                                "or qlora); full fine-tuning exports 'full' or 'none'")
        _check_peft(self.task, tr)
        if self.task != "full" and tr.export == "full":
            raise _FieldProblem("training.export", tr.export, "writes a fully trained model "
                                "(task full); with LoRA use 'adapter', 'merged' or 'none'")

    def _check_set_but_unused(self) -> None:
        """A key the user set that this sheet would ignore is an error, never dropped silently."""
        inf = self.inference
        if inf is not None:
            rules = ENGINE_SHEET_RULES[inf.engine]
            problem = rules.refuse(inf, self.placement)
            if problem is not None:
                raise _FieldProblem(*problem)
            foreign = sorted((key, name) for name, other in ENGINE_SHEET_RULES.items()
                             for key in inf.model_fields_set & (other.keys - rules.keys))
            if foreign:
                key, owner = foreign[0]
                raise _FieldProblem(f"inference.{key}", getattr(inf, key),
                                    f"applies to engine {owner} only; this sheet uses "
                                    f"engine {inf.engine}")
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
        SheetError: an invalid field, naming its dotted path, the value and the expectation
            (``field`` and ``value`` are set when there is one problem; all problems are listed
            in the message).
    """
    if not isinstance(data, dict):
        raise SheetError(f"expected a mapping of sheet keys, got {type(data).__name__}",
                         file=file, value=data)
    unsafe = first_unsafe_text(data)
    if unsafe is not None:  # an ANSI escape, a newline or a bidi override in a text field
        raise SheetError(f"{unsafe[1]} in {shown(unsafe[2])}: text may not hold "
                         "control or bidi characters", field=unsafe[0], file=file)
    data = resolve_framework(data)   # stack.framework's documented defaults (sheet_presets)
    try:
        sheet = Sheet.model_validate(data)
        campaign_sheets(sheet, file=file)  # each variant is a whole sheet: refused here
        return sheet
    except ValidationError as exc:
        errors = exc.errors()
        problems = []   # (dotted path, what is wrong with the value shown, value)
        for err in errors:
            inner = (err.get("ctx") or {}).get("error")
            if isinstance(inner, _FieldProblem):
                path = ".".join(p for p in (_loc(err["loc"]) if err["loc"] else "", inner.field) if p)
                got = "" if inner.value in (None, "(block)") else f" (got {shown(inner.value)})"
                problems.append((path or "sheet", inner.message + got, inner.value))
                continue
            value = err.get("input")
            explained = _explain(err)
            got = ("" if err.get("type") == "missing" or "got" in explained
                   else f" (got {shown(value)})")
            problems.append((_loc(err["loc"]), explained + got, value))
        if len(problems) == 1:
            path, reason, value = problems[0]
            raise SheetError(reason, file=file, field=path, value=value) from None
        raise SheetError(listed([f"{path}: {reason}" for path, reason, _ in problems],
                                names=[path for path, _, _ in problems]),
                         file=file, value=errors[0].get("input")) from None


def load_sheet(path: str | Path) -> Sheet:
    """Read and validate a YAML workload sheet.

    Raises:
        SheetError: unreadable file, not a regular file, over 1 MiB
            (:data:`gpusizer.input_files.SIZE_CAPS`), invalid YAML, or an invalid field.
    """
    p = Path(path)
    try:
        text = decode_text(read_input(p, "sheet", SheetError))
    except YamlProblem as exc:
        raise SheetError(str(exc), file=str(p)) from None
    return parse_sheet_text(text, file=str(p))


def parse_sheet_text(text: str, *, file: str | None = None) -> Sheet:
    """Validate a workload sheet given as YAML text (``file`` names it in messages, if any).

    Raises:
        SheetError: invalid YAML, an empty text, or an invalid field.
    """
    try:
        data = parse_yaml(text)
    except YamlProblem as exc:
        raise SheetError(str(exc), file=file) from None
    if data is None:
        raise SheetError("the sheet is empty: expected a mapping with at least model and task",
                         file=file)
    if isinstance(data, dict):
        for key in _OPTIONAL_BLOCKS:
            # `inference:` with nothing under it (not an explicit `null`): a block left empty
            if data.get(key, ...) is None and re.search(rf"^{key}[ \t]*:[ \t]*(#.*)?$", text,
                                                         re.MULTILINE):
                raise SheetError(f"the {key} block is empty: give its keys (see `gpusizer "
                                 "schema`) or leave the key out", file=file, field=key)
    return parse_sheet(data, file=file)


_OPTIONAL_BLOCKS = ("inference", "training", "quality", "budget")
"""Blocks whose absence means something (no workload, no criteria): a key written with nothing
under it is refused rather than read as "absent" (``null`` written out still means absent)."""


def canonical_json(sheet: Sheet) -> str:
    """The validated sheet as canonical JSON: defaults filled in, memory sizes as integer bytes,
    sorted keys, no spaces (CONTRACT.md, evidence files)."""
    data = _hashed(sheet)
    data.pop("variants", None)  # a campaign's variants each hash as their own sheet
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _hashed(block: BaseModel) -> dict:
    """``block`` dumped as JSON values, less each :attr:`_Block.HASHED_WHEN_SET` field whose value
    is its default (recursively), so a sheet that does not use a newer key hashes as before."""
    data = block.model_dump(mode="json")
    _prune(block, data)
    return data


def _prune(block: BaseModel, data: dict) -> None:
    fields = type(block).model_fields
    for name in getattr(block, "HASHED_WHEN_SET", ()):
        field = fields[name]
        default = field.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            default = default.model_dump(mode="json")
        if data.get(name) == default:
            data.pop(name, None)
    for name, value in data.items():
        child = getattr(block, name)
        if isinstance(child, BaseModel) and isinstance(value, dict):
            _prune(child, value)
        elif isinstance(child, (list, tuple)) and isinstance(value, list):
            for c, v in zip(child, value):
                if isinstance(c, BaseModel) and isinstance(v, dict):
                    _prune(c, v)


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


def required_dimensions(sheet: Sheet) -> dict[str, int]:
    """The dimensions a run must execute to cover the workload (R1, R9)."""
    if sheet.inference is not None:
        i = sheet.inference
        return {"prompt_tokens": i.prompt_tokens, "new_tokens": i.new_tokens,
                "concurrency": i.concurrency}
    if sheet.training is not None:
        t = sheet.training
        return {"sequence_length": t.sequence_length, "microbatch": t.microbatch}
    return {}


def campaign_sheets(sheet: Sheet, *, file: str | None = None) -> list[tuple[str, Sheet]]:
    """A campaign's workloads as whole sheets (CONTRACT.md ``variants``, R15):
    ``[("base", the sheet without its variants), (name, merged sheet), ...]`` in the sheet's
    order; ``[("base", sheet)]`` without variants. Each is validated with every rule of a
    sheet, so each has its own :func:`sheet_sha256` (evidence counts per variant).

    Raises:
        SheetError: a duplicate or reserved name, or a variant whose merged sheet is invalid
            (the field is ``variants.<name>.<field>``).
    """
    base = sheet.model_copy(update={"variants": []}) if sheet.variants else sheet
    out: list[tuple[str, Sheet]] = [(BASE_VARIANT, base)]
    seen = {BASE_VARIANT}
    for v in sheet.variants:
        where = f"variants.{v.name}"
        if v.name in seen:
            raise SheetError("each variant needs its own name ('base' is the sheet's own "
                             "workload)", file=file, field=f"{where}.name", value=v.name)
        seen.add(v.name)
        try:
            merged = parse_sheet(_variant_input(base, v), file=file)
        except SheetError as exc:
            raise SheetError(exc.reason, file=file,
                             field=f"{where}.{exc.field}" if exc.field else where,
                             value=exc.value) from None
        out.append((v.name, merged))
    return out
