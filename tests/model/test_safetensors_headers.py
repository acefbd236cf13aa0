"""Stored bytes from safetensors headers (written by hand here) and the Hub metadata cache."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest

from gpusizer.errors import HubError, ModelError
from gpusizer.model.safetensors_headers import (cache_file, hub_stored_tensors,
                                                local_stored_tensors, read_header)


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> int:
    """Write a safetensors file by hand: 8-byte little-endian header length, JSON header, data.

    ``tensors`` maps name → (dtype, shape, bytes per element); returns the data bytes written.
    Format: https://huggingface.co/docs/safetensors/index#format
    """
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, itemsize) in tensors.items():
        size = itemsize
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return offset


def test_single_file_sums_tensor_bytes(tmp_path: Path) -> None:
    data = write_safetensors(tmp_path / "model.safetensors", {
        "embed.weight": ("BF16", [10, 4], 2), "norm.weight": ("F32", [4], 4)})
    stored = local_stored_tensors(tmp_path)
    assert data == 96 and stored.total_bytes == 10 * 4 * 2 + 4 * 4
    assert stored.bytes_by_dtype == (("BF16", 80), ("F32", 16))
    assert stored.tensor_count == 2 and "1 safetensors header" in stored.source


def test_shards_without_index_are_summed(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "a.safetensors", {"x": ("F8_E4M3", [128, 128], 1)})
    write_safetensors(tmp_path / "b.safetensors", {"y": ("BF16", [3], 2), "z": ("U8", [7], 1)})
    stored = local_stored_tensors(tmp_path)
    assert stored.total_bytes == 16384 + 6 + 7 and stored.tensor_count == 3


def test_index_total_size_wins(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {"total_size": 16060522496},
        "weight_map": {"a": "model-00001-of-00002.safetensors",
                       "b": "model-00002-of-00002.safetensors"}}))
    stored = local_stored_tensors(tmp_path)  # shards absent: the index alone answers
    assert stored.total_bytes == 16060522496 and stored.bytes_by_dtype == ()
    assert "metadata.total_size" in stored.source and stored.tensor_count == 2


def test_index_with_shards_present_gives_dtypes(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "s1.safetensors", {"a": ("BF16", [4], 2)})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {"total_size": 8}, "weight_map": {"a": "s1.safetensors"}}))
    assert local_stored_tensors(tmp_path).bytes_by_dtype == (("BF16", 8),)


def test_folder_without_safetensors(tmp_path: Path) -> None:
    assert local_stored_tensors(tmp_path) is None


@pytest.mark.parametrize("payload", [b"\x01\x00", struct.pack("<Q", 50) + b"{}",
                                     struct.pack("<Q", 3) + b"{x}",
                                     struct.pack("<Q", 21) + b'{"a": {"dtype": "F32"}}'])
def test_bad_header_names_the_file(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(payload)
    with pytest.raises(ModelError, match="bad.safetensors"):
        read_header(path)


def test_bad_index_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {}}')
    with pytest.raises(ModelError, match="model.safetensors.index.json"):
        local_stored_tensors(tmp_path)


def fake_metadata() -> SimpleNamespace:
    """What ``get_safetensors_metadata`` returns for a two-shard repo (only fields we read)."""
    info = SimpleNamespace
    files = {
        "model-1.safetensors": info(tensors={"w": info(dtype="BF16", data_offsets=(0, 200))}),
        "model-2.safetensors": info(tensors={"s": info(dtype="F32", data_offsets=(0, 40)),
                                             "q": info(dtype="F8_E4M3", data_offsets=(40, 140))})}
    return SimpleNamespace(metadata={"total_size": 340}, files_metadata=files,
                           weight_map={"w": "model-1.safetensors", "s": "model-2.safetensors",
                                       "q": "model-2.safetensors"})


def test_hub_headers_are_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple] = []

    def fake(repo_id: str, *, revision: str | None = None, **kwargs: object) -> SimpleNamespace:
        calls.append((repo_id, revision))
        return fake_metadata()

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", fake)
    first = hub_stored_tensors("org/model", "abc123")
    assert first.total_bytes == 340 and first.tensor_count == 3
    assert first.bytes_by_dtype == (("BF16", 200), ("F32", 40), ("F8_E4M3", 100))
    assert cache_file("org/model", "abc123").is_file()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the cache answers without the Hub
    second = hub_stored_tensors("org/model", "abc123")
    assert second.total_bytes == 340 and "cached in" in second.source
    assert calls == [("org/model", "abc123")]


def test_hub_offline_without_cache_is_a_hub_error() -> None:
    with pytest.raises(HubError, match="org/model.*HF_HUB_OFFLINE"):
        hub_stored_tensors("org/model", None)


def test_hub_failure_is_a_hub_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(repo_id: str, **kwargs: object) -> None:
        raise huggingface_hub.errors.NotASafetensorsRepoError("no safetensors")

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", fail)
    with pytest.raises(HubError, match="cannot read safetensors headers"):
        hub_stored_tensors("org/model", "main")


def test_cache_file_layout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUSIZER_CACHE", str(tmp_path))
    assert cache_file("org/name", "refs/pr/1") == (
        tmp_path / "safetensors" / "org" / "name" / "refs%2Fpr%2F1.json")
    monkeypatch.delenv("GPUSIZER_CACHE")
    assert cache_file("org/name", None).parts[-5:] == (
        "gpusizer", "safetensors", "org", "name", "main.json")
