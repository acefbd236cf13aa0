"""GPTQ and AWQ int4 (``gptq-int4``, ``awq-int4``): 4-bit integer groups, calibrated offline.

Layouts, per linear of ``in`` inputs and ``out`` outputs with ``G = ⌈in / group_size⌉`` groups
(one group when ``group_size`` ≤ 0):

- gptq-int4: ``qweight`` int32 packs 8 values (0.5 B/value), ``scales`` fp16 [G, out],
  ``qzeros`` int32 [G, ⌈out/8⌉], ``g_idx`` int32 [in] (AutoGPTQ / GPTQModel ``QuantLinear``;
  Frantar et al. 2022).
- awq-int4: as GPTQ without ``g_idx`` (llm-awq / AutoAWQ ``WQLinear_GEMM``; Lin et al. 2023).

Only the ``nn.Linear`` layers of the decoder blocks are packed; embeddings, lm_head and norms
stay in the compute dtype. Both need a calibration pass offline: transformers cannot produce
them while loading a 16-bit checkpoint. Their kernels (exllama, marlin, AWQ GEMM) dequantize
tile by tile in registers: no whole-matrix transient.

Detected from ``quant_method: gptq`` / ``awq`` with ``bits`` (``w_bit``) 4.
"""

from __future__ import annotations

from .quant_config import QuantConfig, QuantParams, QuantSource
from .record import Matrices, Metadata, WeightFormat, ceil_div

__all__ = ["RECORDS"]

_PACKS = frozenset({"linear", "expert_linear"})
_PACK = 8
"""4-bit values per int32 (``qweight``, ``qzeros``)."""


def _packs(engine: str | None, stored: QuantConfig | None) -> frozenset[str]:
    return _PACKS


def _group_metadata(m: Matrices, quant: QuantParams, *, g_idx: bool) -> Metadata:
    size = quant.group_size

    def per_row(c: int) -> int:  # groups along one output row; <= 0: one group (per-channel)
        return 1 if size <= 0 else ceil_div(c, size)

    groups = m.per_matrix(lambda r, c: per_row(c) * r) \
        or ceil_div(m.values, size if size > 0 else max(1, m.hidden))
    zeros = m.per_matrix(lambda r, c: per_row(c) * ceil_div(r, _PACK)) or ceil_div(groups, _PACK)
    size_text = "per-channel" if size <= 0 else f"of {size}"
    meta = groups * 2 + zeros * 4
    text = f"{groups} groups {size_text} × (fp16 scale 2 B + int4 zero 0.5 B)"
    if g_idx:
        meta += m.cols * 4
        text += f" + {m.cols} input columns × int32 g_idx 4 B"
    return Metadata(meta, text)


def _gptq_metadata(m: Matrices, quant: QuantParams) -> Metadata:
    return _group_metadata(m, quant, g_idx=True)


def _awq_metadata(m: Matrices, quant: QuantParams) -> Metadata:
    return _group_metadata(m, quant, g_idx=False)


def detect(src: QuantSource) -> QuantConfig | None:
    """``quant_method`` gptq / awq; only 4-bit is sized."""
    if src.method not in ("gptq", "awq"):
        return None
    q = src.raw
    bits = q.get("bits", q.get("w_bit"))
    group = q.get("group_size", q.get("q_group_size"))
    group = group if isinstance(group, int) else None
    if bits != 4:
        return src.config(None, group_size=group, note=f"{src.method} with {bits} bits: only "
                          f"4-bit {src.method} is sized")
    return src.config(f"{src.method}-int4", group_size=group, kernel=_kernel(q),
                      act_order=q.get("desc_act") is True)


def _kernel(q) -> str | None:
    """The kernel a checkpoint's config asks for (``formats.int4_kernels``): AWQ ``version``
    (``exllama`` with ``exllama_config.version`` 2 is ``exllama_v2``), GPTQ ``exllama_v2``."""
    exl = q.get("exllama_config")
    v2 = isinstance(exl, dict) and exl.get("version") == 2
    version = q.get("version")
    if isinstance(version, str):
        version = version.lower()
        return "exllama_v2" if version == "exllama" and v2 else version
    return "exllama_v2" if v2 else None


def _record(name: str, layout: str, metadata) -> WeightFormat:
    return WeightFormat(
        name=name, family=name.split("-")[0], bits=4, layout=layout, packs=_packs,
        packs_text="linear", metadata=metadata, packed_at_rest=True, produced_at_load=False,
        detect=detect, sheet_keys=frozenset({"group_size"}),
        throughput="fused int4 kernels (exllama, marlin, AWQ GEMM)")


GPTQ = _record("gptq-int4", "int32 qweight (8 values per int32) + fp16 scales and int32 qzeros "
               "per group + int32 g_idx per input (AutoGPTQ QuantLinear)", _gptq_metadata)
AWQ = _record("awq-int4", "int32 qweight (8 values per int32) + fp16 scales and int32 qzeros "
              "per group (AutoAWQ WQLinear_GEMM)", _awq_metadata)

RECORDS = (GPTQ, AWQ)
