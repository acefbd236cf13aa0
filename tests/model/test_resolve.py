"""resolve_model: folder → registry → Hub (mocked), offline errors, lazy huggingface_hub."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import huggingface_hub
import pytest

from gpusizer.errors import HubError, ModelError, ModelNotFoundError, UnknownArchitectureError
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
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model(model_id="someone/private-model", revision=None, path=None)
    assert "someone/private-model" in str(err.value) and "model.path" in str(err.value)


def test_offline_unknown_id_lists_close_registry_ids() -> None:
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model(model_id="Qwen/Qwen2.5-7B-Instruct-AWQ", revision=None, path=None)
    assert "close ids in the bundled registry: Qwen/Qwen2.5-7B-Instruct" in str(err.value)


def test_offline_other_revision_of_a_registry_model_uses_the_entry_with_a_note() -> None:
    facts = resolve_model(model_id="Qwen/Qwen3-8B", revision="0123abc", path=None)
    assert facts.source == "registry" and facts.revision == "0123abc"
    assert "revision 0123abc NOT checked" in facts.source_detail
    assert facts.architecture.total_parameters == 8_190_735_360  # truth.json Qwen/Qwen3-8B


@pytest.mark.parametrize("bad", ["a//b", "../x", "a b c", "../../etc/passwd", "org/" + "x" * 97,
                                 "org/name--x", "-org/name"])
@pytest.mark.parametrize("offline", [True, False])
def test_malformed_id_is_an_input_error_before_any_request(
        bad: str, offline: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding F18: huggingface_hub's validate_repo_id rules, exit 2 naming model.id, online or
    offline, and no request is made."""
    calls = _unreachable_hub(monkeypatch)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError) as err:
        resolve_model(model_id=bad, revision=None, path=None)
    assert not isinstance(err.value, HubError) and err.value.field == "model.id"
    assert "is not a Hugging Face Hub id" in str(err.value) and calls == []


def _unreachable_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path | None = None) -> list:
    """An unreachable Hub: huggingface_hub's HTTP client gets a transport that fails every
    request with a connection error (``set_client_factory``'s hook, restored after the test),
    and an empty Hub cache. Returns the requests made (method, url)."""
    import httpx2
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    calls: list = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        calls.append((request.method, str(request.url)))
        raise httpx2.ConnectError("stub: network is unreachable", request=request)

    monkeypatch.setattr(_http, "_GLOBAL_CLIENT", None)
    monkeypatch.setattr(_http, "_GLOBAL_CLIENT_FACTORY",
                        lambda: httpx2.Client(transport=httpx2.MockTransport(refuse)))
    if tmp_path is not None:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return calls


def test_unreachable_hub_is_tried_once_and_fails_at_once(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """One request for config.json, no retry loop (hf_hub_download alone retries 5 times with
    1 + 2 + 4 + 8 + 8 s waits), and the offline hint."""
    calls = _unreachable_hub(monkeypatch, tmp_path)
    started = time.monotonic()
    with pytest.raises(HubError) as err:
        resolve_model(model_id="someone/not-in-the-registry", revision=None, path=None)
    elapsed = time.monotonic() - started
    assert not isinstance(err.value, ModelNotFoundError)  # exit 1, not an input error
    config_calls = [c for c in calls if c[1].endswith("/config.json")]
    url = "https://huggingface.co/someone/not-in-the-registry/resolve/main/config.json"
    assert config_calls == [("HEAD", url)]
    assert len(calls) <= 2  # plus at most huggingface_hub's own once-a-day agent registry GET
    assert elapsed < 2, elapsed
    text = str(err.value)
    assert "cannot be reached (one attempt" in text and "HF_HUB_OFFLINE=1" in text
    assert "model.path" in text


def test_unreachable_hub_uses_the_hub_cache(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    import huggingface_hub

    _unreachable_hub(monkeypatch, tmp_path)
    cached = tmp_path / "cached-config.json"
    cached.write_text(json.dumps(LLAMA))
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache",
                        lambda repo_id, filename, revision=None: str(cached))
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata",
                        lambda repo_id, **kw: fake_metadata())
    facts = resolve_model(model_id="org/cached-model", revision=None, path=None)
    assert facts.source == "hub" and facts.architecture.hidden_size == 64


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
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda url, **kw: None)
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
    with pytest.raises(HubError, match="config.json of org/gated@main is not in the local cache"):
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



def test_hub_not_found_is_an_input_error_with_close_ids(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """The Hub answers 404 RepoNotFound (huggingface_hub maps it to RepositoryNotFoundError):
    exit 2 with the close registry ids, after one request."""
    import httpx2
    from huggingface_hub.utils import _http

    _unreachable_hub(monkeypatch, tmp_path)
    calls: list = []

    def not_found(request: httpx2.Request) -> httpx2.Response:
        calls.append(request.method)
        return httpx2.Response(404, headers={"X-Error-Code": "RepoNotFound"}, request=request)

    monkeypatch.setattr(_http, "_GLOBAL_CLIENT_FACTORY",
                        lambda: httpx2.Client(transport=httpx2.MockTransport(not_found)))
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model(model_id="google/gemma-2-9b-instruct", revision=None, path=None)
    assert "RepositoryNotFoundError" in str(err.value)
    assert "google/gemma-2-9b-it" in str(err.value) and calls.count("HEAD") == 1


def test_config_for_sheet_reads_the_registry_offline() -> None:
    """simulate's config.json: the registry entry's whole file, with the revision note and a
    note when the entry holds the published keys only."""
    from gpusizer.model.registry import find_entry
    from gpusizer.model.resolve import config_for_sheet
    from gpusizer.sheet import Sheet

    def sheet(model: dict) -> Sheet:
        return Sheet.model_validate({"model": model, "task": "inference", "weights": "bf16",
                                     "inference": {"prompt_tokens": 8, "new_tokens": 1}})

    cfg, where = config_for_sheet(sheet({"id": "Qwen/Qwen2.5-7B-Instruct"}))
    assert cfg == find_entry("Qwen/Qwen2.5-7B-Instruct").config and cfg["architectures"]
    assert where.startswith("bundled registry gpusizer/data/registry/Qwen--Qwen2.5-7B-Instruct")
    _, pinned = config_for_sheet(sheet({"id": "Qwen/Qwen3-8B", "revision": "abc1234"}))
    assert "revision abc1234 NOT checked" in pinned
    _, partial = config_for_sheet(sheet({"id": "lmsys/vicuna-7b-v1.5"}))
    assert "published keys only" in partial
    with pytest.raises(ModelNotFoundError, match="close ids in the bundled registry"):
        config_for_sheet(sheet({"id": "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"}))
