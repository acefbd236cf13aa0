"""Fixtures for the model stage: the shared test data, and no network.

The shared test data (real config.json files and ground truth, see its SOURCES.md) lives in
``<repo_root>/../shared/data/models``: CI checks the repo out with ``shared/`` beside it. Tests
that need it skip, saying why, when it is absent.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from gpusizer.model.config import facts_from_config
from gpusizer.model.facts import ModelFacts

from tests.conftest import SHARED

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = SHARED / "data" / "models"
SKIP_REASON = (f"shared test data not found at {MODELS_DIR} (CI checks out shared/ beside the "
               "repo; GPUSIZER_SHARED points elsewhere)")


def need_shared() -> Path:
    """The shared models folder, or skip the calling test with the reason."""
    if not MODELS_DIR.is_dir():
        pytest.skip(SKIP_REASON)
    return MODELS_DIR


def truth() -> dict:
    """shared/data/models/truth.json (skips when absent)."""
    return json.loads((need_shared() / "truth.json").read_text(encoding="utf-8"))


def folder_of(model_id: str) -> Path:
    """The shared folder holding ``model_id``'s config.json (``org/name`` → ``org--name``)."""
    return need_shared() / model_id.replace("/", "--", 1)


def config_of(model_id: str) -> dict:
    """The real config.json of ``model_id`` from the shared data (skips when absent)."""
    return json.loads((folder_of(model_id) / "config.json").read_text(encoding="utf-8"))


def facts_of(model_id: str, **overrides: object) -> ModelFacts:
    """ModelFacts from the real config of ``model_id``, with config keys overridden."""
    config = {**config_of(model_id), **overrides}
    return facts_from_config(config, model_id=model_id, revision="main", source="path",
                             source_detail=f"shared/data/models/{model_id}/config.json")


def shared_model_ids() -> list[str]:
    """Ids with a config.json in the shared data, for parametrize (empty when absent)."""
    if not MODELS_DIR.is_dir():
        return []
    return sorted(p.name.replace("--", "/", 1) for p in MODELS_DIR.iterdir()
                  if (p / "config.json").is_file())


def group(facts: ModelFacts, name: str) -> int:
    """Count of the parameter group ``name`` (0 when the group is absent)."""
    return sum(g.count for g in facts.architecture.params if g.name == name)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never reach the network: Hub offline, sockets refuse to connect, private cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("GPUSIZER_CACHE", str(tmp_path / "gpusizer-cache"))

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network access is disabled in gpusizer's tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
