"""resolve_model: folder → registry → Hub (mocked), offline errors, lazy huggingface_hub."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import huggingface_hub
import pytest

from gpusizer.errors import HubError, ModelError, UnknownArchitectureError
from gpusizer.model.resolve import resolve_model

from .test_config import LLAMA
from .test_safetensors_headers import fake_metadata, write_safetensors


def test_folder_with_config_and_safetensors(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    write_safetensors(tmp_path / "model.safetensors", {"w": ("BF16", [100, 64], 2)})
    facts = resolve_model(model_id=None, revision=None, path=tmp_path)
    assert facts.source == "path" and facts.model_id == str(tmp_path)
    assert facts.stored_bytes == 12_800 and "safetensors header" in facts.stored_bytes_source
    assert facts.source_detail == str(tmp_path / "config.json")


def test_folder_wins_over_id(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    facts = resolve_model(model_id="meta-llama/Llama-3.1-8B", revision=None, path=tmp_path)
    assert facts.source == "path" and facts.architecture.hidden_size == 64
    assert facts.stored_bytes is None


def test_folder_without_config(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(model_id=None, revision=None, path=tmp_path)


def test_folder_with_unknown_architecture(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "model_type": "rwkv"}))
    with pytest.raises(UnknownArchitectureError, match="config.json: model_type"):
        resolve_model(model_id=None, revision=None, path=tmp_path, trust_remote_code=True)


def test_registry_id_resolves_offline() -> None:
    facts = resolve_model(model_id="meta-llama/Meta-Llama-3.1-8B", revision="main", path=None)
    assert facts.source == "registry" and facts.stored_bytes == 16_060_522_496
    assert facts.architecture.total_parameters == 8_030_261_248


def test_offline_unknown_id_names_id_and_model_path() -> None:
    with pytest.raises(HubError) as err:
        resolve_model(model_id="someone/private-model", revision=None, path=None)
    assert "someone/private-model" in str(err.value) and "model.path" in str(err.value)


def test_offline_other_revision_of_a_registry_model() -> None:
    with pytest.raises(HubError, match="registry knows it at revision main"):
        resolve_model(model_id="Qwen/Qwen3-8B", revision="0123abc", path=None)


def test_no_id_and_no_path() -> None:
    with pytest.raises(ModelError, match="model.id or model.path"):
        resolve_model(model_id=None, revision=None, path=None)


def _hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, config: dict) -> list:
    calls: list = []

    def download(repo_id: str, filename: str, *, revision: str | None = None,
                 **kwargs: object) -> str:
        calls.append((repo_id, filename, revision))
        target = tmp_path / "hub" / repo_id / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(config))
        return str(target)

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata",
                        lambda repo_id, **kw: fake_metadata())
    return calls


def test_hub_config_and_headers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = _hub(monkeypatch, tmp_path, LLAMA)
    facts = resolve_model(model_id="org/tiny-llama", revision="abc123", path=None)
    assert calls == [("org/tiny-llama", "config.json", "abc123")]
    assert facts.source == "hub" and facts.revision == "abc123"
    assert facts.stored_bytes == 340 and "metadata.total_size" in facts.stored_bytes_source
    assert "huggingface.co/org/tiny-llama/blob/abc123/config.json" in facts.source_detail


def test_hub_without_safetensors_keeps_the_reason(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    _hub(monkeypatch, tmp_path, LLAMA)

    def fail(repo_id: str, **kwargs: object) -> None:
        raise huggingface_hub.errors.NotASafetensorsRepoError("only .bin weights")

    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", fail)
    facts = resolve_model(model_id="org/old-model", revision=None, path=None)
    assert facts.stored_bytes is None and "only .bin weights" in facts.stored_bytes_source


def test_hub_download_failure_is_a_hub_error(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    _hub(monkeypatch, tmp_path, LLAMA)

    def fail(*args: object, **kwargs: object) -> None:
        raise huggingface_hub.errors.LocalEntryNotFoundError("connection refused")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fail)
    with pytest.raises(HubError, match="cannot download config.json of org/gated"):
        resolve_model(model_id="org/gated", revision=None, path=None)


def test_hub_unknown_architecture_even_with_auto_map(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    config = {**LLAMA, "model_type": "custom_thing", "auto_map": {"AutoModel": "m.Model"}}
    _hub(monkeypatch, tmp_path, config)
    with pytest.raises(UnknownArchitectureError, match="custom_thing"):
        resolve_model(model_id="org/custom", revision=None, path=None, trust_remote_code=True)


def test_importing_resolve_does_not_import_huggingface_hub() -> None:
    code = ("import sys, gpusizer.model.resolve as r; "
            "r.resolve_model(model_id='Qwen/Qwen3-8B', revision=None, path=None); "
            "print('huggingface_hub' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"HF_HUB_OFFLINE": "1", "PATH": ""}, timeout=60, check=True)
    assert out.stdout.strip() == "False"

