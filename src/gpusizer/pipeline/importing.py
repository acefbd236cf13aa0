"""``gpusizer import vllm-log|sglang-log LOG --sheet SHEET --card NAME --out DIR``: an engine's
own start-up log becomes evidence of kind ``engine_log`` for that card (CONTRACT.md; the rule
that judges it is in docs/evidence.md and ``evidence.engine_log.log_proof``).

The log is read through the bounded reader (``input_files.read_input``, kind ``engine log``),
matched against the line-kind table and never executed. It must document the sheet's workload:
every setting the log states (engine, model, tensor-parallel size, memory fraction, KV dtype,
block size, the card's total) must be the sheet's and the card's, or the import is refused with
one line (exit 2). Settings the log does not state are recorded as such (``settings_unstated``):
the evidence then stands on the importer's word that the log is of this sheet's run, as
``gpusizer measure``'s evidence stands on its ``sheet_sha256``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .. import SCHEMA_VERSION, __version__
from ..catalog.types import Card
from ..errors import EngineLogError
from ..evidence.engine_log import LOG_KINDS, check_engine_log, model_matches, parse_engine_log
from ..input_files import read_input
from ..sheet import Sheet, sheet_sha256

__all__ = ["import_engine_log", "engine_log_evidence", "CUDA_TOTAL_BELOW_DEVICE_BYTES"]

GIB = 1 << 30
CUDA_TOTAL_BELOW_DEVICE_BYTES = 2 * GIB
"""How far below nvidia-smi's total the CUDA-visible total may lie when the card table has no
logged CUDA total: 0.42 GiB on an RTX 3090 (24.00 vs 23.58 GiB, vllm#10517) and 0.50 GiB on an
H100 80GB (79.65 vs 79.15 GiB, vllm#13061); 2 GiB leaves room for ECC and larger contexts."""


_MEMORY_SETTING = {"vllm-log": "gpu_memory_utilization", "sglang-log": "mem_fraction_static"}
"""The key that sizes each engine's pool (the sheet's ``inference`` key of the same name)."""
_PAGED = {"vllm-log": True, "sglang-log": False}
"""Whether the engine's KV pool is paged in blocks (vLLM) or a token pool (SGLang)."""


def _fail(what: str, log: Path) -> EngineLogError:
    return EngineLogError(what, file=str(log))


def _tp(sheet: Sheet) -> int:
    """The tensor-parallel size the sheet's placement runs (1 unless tensor-parallel)."""
    p = sheet.placement
    return p.gpus if p.strategy == "tensor-parallel" else 1


def _check_against(facts: dict[str, Any], sheet: Sheet, card: Card, log: Path) -> list[str]:
    """Refuse a log whose stated settings are not the sheet's or the card's; return the
    settings it does not state."""
    inf = sheet.inference
    assert inf is not None
    unstated = []
    model = sheet.model.id or (sheet.model.path and str(sheet.model.path))
    if facts["model"] is None:
        unstated.append("model")
    elif model and not model_matches(facts["model"], model):
        raise _fail(f"the log served model {facts['model']!r}; the sheet names {model!r}: it "
                    "documents another model", log)
    tp = facts["tensor_parallel_size"]
    if tp is None:
        unstated.append("tensor_parallel_size")
    elif tp != _tp(sheet):
        raise _fail(f"the log ran tensor-parallel size {tp}; the sheet's placement runs "
                    f"{_tp(sheet)} ({sheet.placement.strategy}, {sheet.placement.gpus} GPUs)", log)
    key = _MEMORY_SETTING[facts["log_kind"]]
    logged, wanted = facts.get(key), getattr(inf, key, None)
    if logged is None:
        unstated.append(key)
    elif isinstance(wanted, float) and abs(logged - wanted) > 1e-9:
        raise _fail(f"the log ran {key} {logged}; the sheet asks {wanted}: its pool is another "
                    "size", log)
    kv = facts["kv_cache_dtype"]
    if kv is None:
        unstated.append("kv_cache_dtype")
    elif kv != inf.kv_cache_dtype and not (kv in ("bfloat16", "float16")
                                           and inf.kv_cache_dtype == "auto"):
        raise _fail(f"the log ran kv_cache_dtype {kv}; the sheet asks {inf.kv_cache_dtype}", log)
    block = facts["block_size"]
    if _PAGED[facts["log_kind"]]:
        if block is None:
            facts["block_size"] = inf.block_size
            facts["block_size_source"] = "the sheet's inference.block_size (not in the log)"
            if facts.get("kv_tokens_from_blocks") and facts["kv_blocks"] is not None:
                facts["kv_tokens"] = facts["kv_blocks"] * inf.block_size
            unstated.append("block_size")
        elif block != inf.block_size:
            raise _fail(f"the log's KV blocks hold {block} tokens; the sheet's block_size is "
                        f"{inf.block_size}", log)
    total = facts.get("total_bytes")
    if total is not None:
        cuda = card.cuda_total_bytes.value
        rounding = facts["gib_rounding_bytes"]
        device = card.device_bytes.value
        if cuda:
            ok = abs(total - int(cuda)) <= 2 * rounding + GIB // 100
            expected = f"{int(cuda) / GIB:.2f} GiB CUDA total in the card table"
        else:
            ok = device - CUDA_TOTAL_BELOW_DEVICE_BYTES <= total <= device + rounding
            expected = f"device total {device / GIB:.2f} GiB"
        if not ok:
            raise _fail(f"the log ran on a GPU with {total / GIB:.2f} GiB; --card {card.name} has "
                        f"{expected}: another card", log)
    return unstated


def engine_log_evidence(text: str, kind: str, sheet: Sheet, card: Card, *, document: str,
                        date: dt.date | None = None) -> dict[str, Any]:
    """The ``engine_log`` evidence document for a log's text (no I/O).

    Args:
        text: the log, decoded.
        kind: ``vllm-log`` or ``sglang-log`` (``LOG_KINDS``); the sheet must serve with the
            engine it names.
        sheet: the workload the log documents; card: the card it ran on.
        document: how the evidence names the log (its path).

    Raises:
        EngineLogError: the sheet serves through another engine or has no inference block; the
            log is foreign, truncated or contradictory (``check_engine_log``); or a setting it
            states is not the sheet's or the card's.
    """
    log = Path(document)
    if kind not in LOG_KINDS:
        raise _fail(f"expected a log kind of {', '.join(LOG_KINDS)}, got {kind!r}", log)
    name, engine = LOG_KINDS[kind], kind.removesuffix("-log")
    if sheet.inference is None:
        raise _fail("the sheet has no inference block: a start-up log documents serving", log)
    if sheet.inference.engine != engine:
        raise _fail(f"a {name} log documents inference.engine {engine}; the sheet serves with "
                    f"{sheet.inference.engine}", log)
    try:
        facts = check_engine_log(parse_engine_log(text, kind))  # type: ignore[arg-type]
    except EngineLogError as exc:
        raise _fail(exc.reason, log) from None
    unstated = _check_against(facts, sheet, card, log)
    version = facts["engine_version"]
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "engine_log",
        "document": document,
        "version": f"{name} {version}" if version else f"{name} (version not in the log)",
        "date": (date or dt.datetime.now(dt.timezone.utc).date()).isoformat(),
        "scope": {"offer_id": None, "provider": None, "card": card.name,
                  "device_bytes": card.device_bytes.value,
                  "environment": {engine: version}},
        "sheet_sha256": sheet_sha256(sheet),
        "log_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "imported_by": f"gpusizer {__version__} import {kind}",
        **facts,
        "settings_unstated": unstated,
        "proves": "capacity at start (weights, KV pool, concurrency at max_model_len); no "
                  "request was run: never the workload",
    }


def kv_layout_check(doc: dict[str, Any], sheet: Sheet, card: Card, *,
                    base_dir: str | Path | None, log: Path) -> str:
    """Check the log's pool against the sheet's model: a paged pool of ``kv_tokens`` tokens of
    the model's layout (vLLM's block bytes / block size per GPU, from the estimate on this
    card) cannot need more bytes than the KV memory the log reports (+ its rounding). Returns
    what was checked, or why it could not be.

    Raises:
        EngineLogError: the log's tokens need more bytes than it reports: its model's KV
            layout is not the sheet's (another model, dtype or TP size).
    """
    from ..errors import GpusizerError
    from ..memory.estimate import estimate_memory
    from ..model.resolve import facts_for_sheet
    tokens, kv = doc.get("kv_tokens"), doc.get("kv_cache_bytes")
    if tokens is None or kv is None or not doc.get("started"):
        return "not made: the log gives no KV tokens and KV bytes of a started pool"
    try:
        facts = facts_for_sheet(sheet, base_dir=Path(base_dir) if base_dir else None)
        pool = estimate_memory(sheet, facts, card=card).pool if facts is not None else None
    except GpusizerError as exc:
        return f"not made: the sheet's model could not be sized ({exc.reason})"
    if pool is None or not pool.block_bytes or pool.engine != doc.get("engine"):
        return "not made: no paged pool of this engine in the estimate"
    block = sheet.inference.block_size if sheet.inference is not None else 1
    per_token = pool.block_bytes / block
    need = tokens * per_token
    if need > kv + doc["gib_rounding_bytes"]:
        raise _fail(f"the log's {tokens:,} KV tokens need {need / GIB:.2f} GiB at the sheet "
                    f"model's {per_token:,.0f} B per token on one GPU, more than the {kv / GIB:.2f}"
                    " GiB it reports: its model, KV dtype or TP size is not the sheet's", log)
    return (f"{tokens:,} tokens × {per_token:,.0f} B per token (the sheet's model, per GPU) = "
            f"{need / GIB:.2f} GiB <= the {kv / GIB:.2f} GiB the log reports")


def import_engine_log(kind: str, log: str | Path, sheet: Sheet, *, card: Card,
                      out: str | Path, date: dt.date | None = None,
                      base_dir: str | Path | None = None) -> tuple[dict, Path]:
    """Read ``log`` (bounded), build its evidence (:func:`engine_log_evidence`) and write it to
    ``out/<log stem>.engine-log.json``.

    Returns:
        The document and the file written.

    Raises:
        EngineLogError: as :func:`engine_log_evidence` and :func:`kv_layout_check`, or the log
            is not a regular file, is over 64 MiB, or cannot be read; the output folder cannot
            be written.
    """
    path = Path(log)
    data = read_input(path, "engine log", EngineLogError)
    doc = engine_log_evidence(data.decode("utf-8", errors="replace"), kind, sheet, card,
                              document=str(path), date=date)
    doc["kv_layout_check"] = kv_layout_check(doc, sheet, card, base_dir=base_dir, log=path)
    out_dir = Path(out)
    target = out_dir / f"{path.stem}.engine-log.json"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        raise EngineLogError(f"cannot write the evidence: {exc.strerror or exc}",
                             field="--out", value=str(out_dir)) from None
    return doc, target
