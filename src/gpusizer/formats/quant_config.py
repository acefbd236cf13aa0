"""A checkpoint's quantization, parsed once, and the one set of defaults every stage uses.

:class:`QuantConfig` is what config.json's ``quantization_config`` (or a side file such as
ModelOpt's ``hf_quant_config.json``) says, as the family detectors read it. :func:`quant_params`
turns it, the sheet's ``quantization`` block and the running format into the
:class:`QuantParams` that estimate, simulate and the checkpoint arithmetic all use: the
checkpoint's own values win, then the sheet's, then the defaults below.

Defaults, each the library's own:

- ``DEFAULT_GROUP_SIZE = 128``: AutoGPTQ ``BaseQuantizeConfig.group_size`` and transformers
  ``GPTQConfig``/``AwqConfig`` ``group_size`` default; the sheet's ``quantization.group_size``.
- ``FP8_DEFAULT_BLOCK = (128, 128)``: transformers ``FineGrainedFP8Config.weight_block_size``
  default (``utils/quantization_config.py``, transformers 5.24). It is what transformers uses
  both when it converts a 16-bit checkpoint to fp8 at load (``FineGrainedFP8Config()``) and when
  a pre-quantized fp8 config.json has no ``weight_block_size`` key (``from_dict`` calls
  ``cls(**config_dict)``, so the constructor default applies): ``FP8Linear`` then holds a
  ``weight_scale_inv`` of ``⌈out/128⌉ × ⌈in/128⌉`` fp32 (``integrations/finegrained_fp8.py``).
  Only an explicit ``weight_block_size: null`` gives one fp32 scale per matrix. estimate and
  simulate both size with it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol


__all__ = ["QuantConfig", "QuantParams", "QuantSource", "SheetQuantization",
           "DEFAULT_GROUP_SIZE", "FP8_DEFAULT_BLOCK", "PER_TENSOR", "PER_ROW",
           "module_excluded"]

DEFAULT_GROUP_SIZE = 128
"""GPTQ / AWQ inputs per scale when neither the checkpoint nor the sheet says (see module doc)."""

FP8_DEFAULT_BLOCK: tuple[int, int] = (128, 128)
"""fp8 scale block (output rows, input columns) when the config has no ``weight_block_size``:
transformers ``FineGrainedFP8Config`` default (see module doc)."""

PER_TENSOR: tuple[int, int] = (0, 0)
"""A scale block spanning the whole matrix (0 = the whole dimension): one scale per tensor."""

PER_ROW: tuple[int, int] = (1, 0)
"""One scale per output row (fbgemm fp8, compressed-tensors ``strategy: channel``)."""


@dataclass(frozen=True)
class QuantConfig:
    """What a checkpoint's quantization config says, read once by its family's detector.

    Attributes:
        fmt: the stored weight format (a registry name), or None when gpusizer does not size
            it (``note`` says why).
        method: ``quant_method`` as written (``bitsandbytes`` for the legacy ``load_in_*``
            configs), or None.
        group_size: inputs per scale as the checkpoint states it (GPTQ / AWQ; ``-1``: one group
            per row; NVFP4: 16), or None when not stated.
        double_quant: bitsandbytes nested absmax quantization, or None when not stated.
        block: the scale block ``(rows, cols)`` of an fp8 checkpoint (0 = the whole dimension),
            or None when not stated (then :data:`FP8_DEFAULT_BLOCK` applies).
        excluded: module names or patterns the checkpoint keeps unquantized
            (``modules_to_not_convert``, ``ignore``, ``exclude_modules``): ``re:`` prefixes are
            regular expressions (compressed-tensors), ``*`` wildcards fnmatch (ModelOpt).
        source: the file and key it was read from.
        note: why ``fmt`` is None, or what was assumed; None when nothing needs saying.
        kernel: the kernel the checkpoint asks for (AWQ ``version``: gemm, gemv, exllama,
            exllama_v2; GPTQ ``exllama_v2`` from ``exllama_config.version``), or None
            (``formats.int4_kernels``).
        act_order: GPTQ ``desc_act`` (exllama v1's ``temp_state`` buffer).
    """

    fmt: str | None
    method: str | None
    group_size: int | None = None
    double_quant: bool | None = None
    block: tuple[int, int] | None = None
    excluded: tuple[str, ...] = ()
    source: str = "config.json quantization_config"
    note: str | None = None
    kernel: str | None = None
    act_order: bool = False

    def excludes(self, module: str) -> bool:
        """True when ``module`` (a full name: ``model.layers.3.self_attn.q_proj``,
        ``lm_head``) is kept unquantized by this checkpoint."""
        return module_excluded(module, self.excluded)


def module_excluded(module: str, patterns: Iterable[str]) -> bool:
    """True when one of ``patterns`` names ``module``.

    A pattern is a regular expression after ``re:`` (compressed-tensors ``ignore``, matched
    from the start as ``re.match``), an fnmatch wildcard when it has ``*`` or ``?`` (ModelOpt
    ``exclude_modules``, as vLLM's ``ModelOptQuantConfigBase.is_layer_excluded``), else a module
    name matched whole or as the last components (``lm_head``, ``mlp.gate``).
    """
    for p in patterns:
        if p.startswith("re:"):
            if re.match(p[3:], module):
                return True
        elif any(ch in p for ch in "*?["):
            if fnmatch.fnmatchcase(module, p):
                return True
        elif module == p or module.endswith("." + p):
            return True
    return False


@dataclass(frozen=True)
class QuantSource:
    """A ``quantization_config`` mapping as handed to the family detectors.

    Attributes:
        raw: the mapping as read.
        method: ``quant_method`` lower-cased, ``bitsandbytes`` for a legacy config that has
            ``load_in_8bit``/``load_in_4bit`` and no method, else None.
        where: the file and key it came from.
    """

    raw: Mapping
    method: str | None
    where: str

    @classmethod
    def of(cls, raw: Mapping, where: str) -> "QuantSource":
        """Wrap ``raw`` with its method resolved."""
        method = raw.get("quant_method")
        if method is None and ("load_in_8bit" in raw or "load_in_4bit" in raw):
            method = "bitsandbytes"
        return cls(raw, str(method).lower() if method is not None else None, where)

    def config(self, fmt: str | None, **kw) -> QuantConfig:
        """A :class:`QuantConfig` for this source (``fmt`` None with ``note=`` the reason)."""
        return QuantConfig(fmt, self.method, source=self.where, **kw)

    def compressed_tensors_weights(self) -> tuple[Mapping | None, str | None]:
        """The one weights scheme of a compressed-tensors config, or (None, why not).

        compressed-tensors (``compressed_tensors/quantization/quant_config.py``) lists
        ``config_groups``, each a scheme with ``weights`` ``QuantizationArgs`` (``num_bits``,
        ``type``, ``strategy``, ``group_size``, ``block_structure``); one group with one weights
        scheme maps to a format, anything richer is not sized.
        """
        groups = self.raw.get("config_groups")
        if not isinstance(groups, Mapping) or len(groups) != 1:
            return None, "compressed-tensors with several (or no) config_groups is not sized"
        group = next(iter(groups.values()))
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping):
            return None, "compressed-tensors group without a weights scheme"
        return weights, None

    def compressed_tensors_kind(self) -> tuple[object, object] | None:
        """``(num_bits, type)`` of a compressed-tensors config's one weights scheme, or None
        (another method, or no single scheme)."""
        if self.method != "compressed-tensors":
            return None
        weights, _ = self.compressed_tensors_weights()
        return None if weights is None else (weights.get("num_bits"), weights.get("type"))

    def ignored(self) -> tuple[str, ...]:
        """The modules kept unquantized, from whichever key this producer writes."""
        inner = self.raw.get("quantization")
        for source in (self.raw, inner if isinstance(inner, Mapping) else {}):
            for key in ("ignore", "exclude_modules", "modules_to_not_convert"):
                value = source.get(key)
                if isinstance(value, list):
                    return tuple(str(v) for v in value)
        return ()


@dataclass(frozen=True)
class QuantParams:
    """The quantization parameters a stage sizes the running format with.

    Attributes:
        group_size: GPTQ / AWQ inputs per scale (≤ 0: one group per output row).
        double_quant: bitsandbytes nested absmax.
        block: fp8 scale block ``(rows, cols)``, 0 = the whole dimension.
    """

    group_size: int = DEFAULT_GROUP_SIZE
    double_quant: bool = False
    block: tuple[int, int] = FP8_DEFAULT_BLOCK


class SheetQuantization(Protocol):
    """The sheet's ``quantization`` block as :func:`quant_params` reads it."""

    group_size: int
    double_quant: bool
    model_fields_set: set[str]
