"""Fixtures of the measurement tests: the tiny scaled-down Llama-3.1 config (see
``tiny_config.py``), sheets written beside it, and an NVML stand-in."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

TINY = Path(__file__).parent / "data" / "tiny-llama-3.1"


@pytest.fixture
def tiny_dir() -> Path:
    """The bundled tiny config folder (config.json only: run with random weights)."""
    return TINY


def write_sheet(tmp_path: Path, body: dict, name: str = "sheet.yaml") -> Path:
    """A sheet on the tiny model, ``body`` merged over ``model: {path: TINY}``."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"model": {"path": str(TINY)}, **body}))
    return path


INFERENCE = {"task": "inference",
             "inference": {"prompt_tokens": 160, "new_tokens": 6, "concurrency": 2}}
LORA = {"task": "lora", "training": {"sequence_length": 140, "microbatch": 2,
                                     "gradient_accumulation": 2, "export": "merged",
                                     "lora": {"rank": 4}}}


class FakeNvml:
    """Stand-in for ``pynvml``: one GPU; ``processes`` lists (pid, usedGpuMemory)."""

    def __init__(self, processes=(), used=7 * 2**30, total=150754820096, init_error=None):
        self.processes, self.used, self.total, self.init_error = processes, used, total, init_error

    def nvmlInit(self):
        if self.init_error:
            raise RuntimeError(self.init_error)

    def nvmlDeviceGetHandleByIndex(self, index):
        if index != 0:
            raise RuntimeError(f"NVML_ERROR_INVALID_ARGUMENT: no GPU {index}")
        return ("handle", index)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(used=self.used, total=self.total, free=self.total - self.used)

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem) for pid, mem in self.processes]

    def nvmlSystemGetDriverVersion(self):
        return "580.159"
