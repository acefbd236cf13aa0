"""Exact stored tensor bytes of a checkpoint, from safetensors headers (no tensor data is read).

Format (https://huggingface.co/docs/safetensors/index#format): an 8-byte little-endian header
length N, then N bytes of JSON mapping each tensor name to ``dtype``, ``shape`` and
``data_offsets`` [begin, end) into the data section (optionally ``__metadata__``). A tensor's bytes
are ``end - begin``, exact for every dtype including packed ones. The header is parsed with plain
``json``: ``safetensors.safe_open`` exposes dtype and shape only through a framework, and its
``numpy`` framework imports numpy, which gpusizer does not depend on (checked with
safetensors 0.8.0).

Hub reads go through ``huggingface_hub.get_safetensors_metadata``, which fetches only headers and
bypasses the Hub file cache, so its answer is kept in gpusizer's own JSON cache.
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..errors import HubError, ModelError
from ..input_files import SIZE_CAPS, check_regular, parse_json, read_input
from .hub_access import hub_failures, hub_offline

__all__ = ["StoredTensors", "read_header", "local_stored_tensors", "hub_stored_tensors",
           "cache_file"]

INDEX_NAME = "model.safetensors.index.json"
MAX_HEADER_BYTES = SIZE_CAPS["safetensors header"]
"""Largest header the reference implementation accepts (safetensors ``MAX_HEADER_SIZE``)."""


@dataclass(frozen=True)
class StoredTensors:
    """Tensor bytes of one checkpoint.

    Attributes:
        total_bytes: bytes of all tensors (headers excluded).
        bytes_by_dtype: ``(dtype, bytes)`` pairs as safetensors names dtypes (``BF16``, ``F8_E4M3``,
            ``U8``…), sorted; empty when only an index total was available.
        tensor_count: tensors in the checkpoint, or None when unknown.
        source: where ``total_bytes`` came from, in words.
    """

    total_bytes: int
    bytes_by_dtype: tuple[tuple[str, int], ...]
    tensor_count: int | None
    source: str


def read_header(path: Path) -> dict[str, dict]:
    """The JSON header of one ``.safetensors`` file, without ``__metadata__``.

    Raises:
        ModelError: not a regular file, too short, the header length is out of range or past the
            file's end, the header is not JSON (or too deep), an entry lacks ``dtype`` /
            ``data_offsets``, or the tensors' byte ranges overlap, leave gaps or end past the
            file (the checks ``safetensors`` makes when it loads).
    """
    file_size = check_regular(path, "safetensors file", ModelError, sized=False).st_size
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise ModelError("not a safetensors file: shorter than the 8-byte header length",
                             file=str(path))
        (size,) = struct.unpack("<Q", prefix)
        if size > MAX_HEADER_BYTES:
            raise ModelError(f"header length {size} exceeds {MAX_HEADER_BYTES} bytes",
                             file=str(path))
        raw = f.read(size)
    if len(raw) != size:
        raise ModelError(f"truncated header: {len(raw)} of {size} bytes", file=str(path))
    header = parse_json(raw, "safetensors header", ModelError, file=str(path))
    if not isinstance(header, dict):
        raise ModelError("header is not a JSON object", file=str(path))
    header.pop("__metadata__", None)
    for name, entry in header.items():
        if not _valid_entry(entry):
            raise ModelError("expected dtype and data_offsets [begin, end]", field=name,
                             value=entry, file=str(path))
        _check_consistent(name, entry, path)
    _check_data_section(header, file_size - 8 - size, path)
    return header


def _check_data_section(header: dict[str, dict], data_bytes: int, path: Path) -> None:
    """The byte ranges tile the data section: sorted by start, each begins where the previous
    ended, from 0 to the end of the file (safetensors ``Metadata::validate``; issue 11 F22)."""
    expected = 0
    for name, entry in sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        begin, end = entry["data_offsets"]
        if begin != expected:
            what = "overlaps the previous tensor" if begin < expected else "leaves a gap"
            raise ModelError(f"data_offsets start at {begin}, expected {expected}: the tensor "
                             f"{what}", field=name, value=entry["data_offsets"], file=str(path))
        expected = end
    if expected != data_bytes:
        raise ModelError(f"the tensors span {expected} B but the file holds {data_bytes} B of "
                         "data after its header", file=str(path))


# Bits per element of each safetensors dtype (huggingface/safetensors ``Dtype`` enum; F4 and the
# 6-bit floats are packed sub-byte types).
DTYPE_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16,
              "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "F64": 64,
              "I64": 64, "U64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "C64": 64}


def _valid_entry(entry: object) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str):
        return False
    offsets = entry.get("data_offsets")
    return (isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            and 0 <= offsets[0] <= offsets[1])


def _check_consistent(name: str, entry: dict, path: Path) -> None:
    """The dtype is known, the shape is a list of non-negative integers, and the byte range
    equals elements × bits / 8 (what ``safetensors`` itself checks when it loads)."""
    bits = DTYPE_BITS.get(entry["dtype"])
    if bits is None:
        raise ModelError(f"unknown safetensors dtype {entry['dtype']!r}; expected one of "
                         f"{', '.join(DTYPE_BITS)}", field=name, value=entry["dtype"],
                         file=str(path))
    shape = entry.get("shape")
    if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool)
                                            and d >= 0 for d in shape)):
        raise ModelError("expected shape: a list of non-negative integers", field=name,
                         value=shape, file=str(path))
    elements = 1
    for d in shape:
        elements *= d
    begin, end = entry["data_offsets"]
    if (end - begin) * 8 != elements * bits:
        raise ModelError(f"data_offsets span {end - begin} B but shape {shape} of "
                         f"{entry['dtype']} needs {elements * bits // 8} B", field=name,
                         value=entry["data_offsets"], file=str(path))


def _by_dtype(headers: list[dict[str, dict]]) -> Counter:
    totals: Counter = Counter()
    for header in headers:
        for entry in header.values():
            begin, end = entry["data_offsets"]
            totals[entry["dtype"]] += end - begin
    return totals


def local_stored_tensors(folder: Path) -> StoredTensors | None:
    """Stored tensor bytes of a local checkpoint folder, or None when it holds no safetensors.

    With ``model.safetensors.index.json``, ``total_bytes`` is its ``metadata.total_size`` (what
    ``save_pretrained`` wrote) and per-dtype bytes come from the shards present; without an index,
    the sum of every ``*.safetensors`` header.

    When every shard is present, their headers must add up to ``total_size``.

    Raises:
        ModelError: an unreadable index or header; an index with an empty ``weight_map``, a
            shard name that is not a file name in the folder (``../x``, ``/etc/passwd``), or a
            ``total_size`` the shards' headers contradict (issue 11 F22, S-a).
    """
    index = folder / INDEX_NAME
    shards = sorted(folder.glob("*.safetensors"))
    if index.is_file():
        data = parse_json(read_input(index, "safetensors index", ModelError),
                          "safetensors index", ModelError, file=str(index))
        try:
            total = data["metadata"]["total_size"]  # type: ignore[index]
            weight_map = data.get("weight_map", {})  # type: ignore[union-attr]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ModelError(f"cannot read metadata.total_size: {exc}", file=str(index)) from None
        if isinstance(total, bool) or not isinstance(total, int) or total < 0:
            raise ModelError("expected an integer metadata.total_size", field="total_size",
                             value=total, file=str(index))
        if not isinstance(weight_map, dict) or not weight_map:
            raise ModelError("expected a non-empty weight_map (tensor name → shard file)",
                             field="weight_map", value=weight_map, file=str(index))
        names = sorted(set(weight_map.values()))
        for n in names:
            if not isinstance(n, str) or Path(n).name != n or n in ("", ".", ".."):
                raise ModelError("expected a shard file name in the index's folder",
                                 field="weight_map", value=n, file=str(index))
        present = [folder / n for n in names if (folder / n).is_file()]
        complete = len(present) == len(names)
        dtypes = _by_dtype([read_header(p) for p in present]) if complete else Counter()
        if complete and sum(dtypes.values()) != total:
            raise ModelError(f"metadata.total_size is {total} B but the shards' headers hold "
                             f"{sum(dtypes.values())} B of tensors", field="total_size",
                             value=total, file=str(index))
        return StoredTensors(total, tuple(sorted(dtypes.items())), len(weight_map),
                             f"{index} metadata.total_size")
    if not shards:
        return None
    headers = [read_header(p) for p in shards]
    dtypes = _by_dtype(headers)
    return StoredTensors(sum(dtypes.values()), tuple(sorted(dtypes.items())),
                         sum(len(h) for h in headers),
                         f"sum of tensor bytes in {len(shards)} safetensors header(s) in {folder}")


def cache_file(repo_id: str, revision: str | None) -> Path:
    """``$GPUSIZER_CACHE/safetensors/<repo>/<revision>.json`` (default root ``~/.cache/gpusizer``).

    A branch name (``main``) is cached as first seen; pass a commit sha for a fixed answer.
    """
    root = Path(os.environ.get("GPUSIZER_CACHE") or Path.home() / ".cache" / "gpusizer")
    return root / "safetensors" / repo_id / f"{quote(revision or 'main', safe='')}.json"


def _cached(path: Path) -> StoredTensors | None:
    """A cache entry, validated on read (issue 11 point 4): non-negative integer byte counts,
    known dtypes, a tensor count, and a short printable source; None (refetched) otherwise."""
    try:
        d = parse_json(read_input(path, "header cache entry", ModelError),
                       "header cache entry", ModelError, file=str(path))
        total, pairs = d["total_bytes"], d["bytes_by_dtype"]  # type: ignore[index]
        count, source = d["tensor_count"], d["source"]  # type: ignore[index]
        by_dtype = tuple((k, v) for k, v in pairs)
    except (ModelError, KeyError, TypeError, ValueError):
        return None

    def count_ok(n: object) -> bool:
        return isinstance(n, int) and not isinstance(n, bool) and n >= 0

    if not (count_ok(total) and (count is None or count_ok(count))
            and all(k in DTYPE_BITS and count_ok(v) for k, v in by_dtype)
            and isinstance(source, str) and len(source) <= 300 and source.isprintable()
            and not any(ch in source for ch in "<>")):
        return None
    return StoredTensors(total, by_dtype, count, source + f" (cached in {path})")


def hub_stored_tensors(repo_id: str, revision: str | None) -> StoredTensors:
    """Stored tensor bytes of a Hub repo from its safetensors headers, cached on disk.

    Raises:
        HubError: not cached and the Hub is offline (``HF_HUB_OFFLINE``) or cannot answer
            (no safetensors, gated, not found, network).
    """
    path = cache_file(repo_id, revision)
    if path.is_file():
        cached = _cached(path)
        if cached is not None:
            return cached
    if hub_offline():
        raise HubError(f"{repo_id}: safetensors headers are not cached and HF_HUB_OFFLINE is set")
    from huggingface_hub import get_safetensors_metadata

    try:
        meta = get_safetensors_metadata(repo_id, revision=revision)
    except hub_failures() as exc:
        raise HubError(f"{repo_id}@{revision or 'main'}: cannot read safetensors headers: "
                       f"{exc}") from exc
    dtypes: Counter = Counter()
    for file_meta in meta.files_metadata.values():
        for info in file_meta.tensors.values():
            begin, end = info.data_offsets
            dtypes[info.dtype] += end - begin
    index_total = (meta.metadata or {}).get("total_size")
    where = f"https://huggingface.co/{repo_id} @ {revision or 'main'}"
    total, source = ((index_total, f"{INDEX_NAME} metadata.total_size, {where}")
                     if isinstance(index_total, int) else
                     (sum(dtypes.values()), f"sum of safetensors header tensor bytes, {where}"))
    result = StoredTensors(total, tuple(sorted(dtypes.items())), len(meta.weight_map), source)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"total_bytes": result.total_bytes,
                                "bytes_by_dtype": [list(p) for p in result.bytes_by_dtype],
                                "tensor_count": result.tensor_count, "source": source},
                               indent=1), encoding="utf-8")
    return result
