"""Counters on the CPU are named as such; no CUDA figure is invented; non-PyTorch memory from
NVML or mem_get_info."""

from __future__ import annotations

import torch

from gpusizer.measure.counters import CUDA_FIELDS, DeviceCounters, non_torch_bytes
from gpusizer.measure.live_tensors import COUNTER, LiveTensorBytes
from gpusizer.measure.nvml import Reading, open_nvml

from .conftest import FakeNvml


def test_cpu_phase_has_cpu_counters_and_no_cuda_figure():
    live = LiveTensorBytes()
    dc = DeviceCounters(torch.device("cpu"), 0, open_nvml(FakeNvml()), live)
    with live:
        keep = torch.zeros(1000, dtype=torch.float32)          # 4000 B live before the phase
        dc.start()
        tmp = torch.ones(250_000, dtype=torch.bfloat16)        # 500 000 B, freed in the phase
        del tmp
        out = torch.empty(10, 10, dtype=torch.float64)         # 800 B, live at the end
        pc = dc.read("prefill").as_json()
    assert pc["cpu_live_tensor_peak_bytes"] == 4000 + 500_000
    assert pc["counters"]["cpu_live_tensor_peak_bytes"] == COUNTER
    assert live.live_bytes == 4000 + 800
    for key in CUDA_FIELDS + ("non_torch_bytes", "nvml_used_bytes", "nvml_device_used_bytes"):
        assert pc[key] is None, key
        assert pc["unknown"][key] == "no CUDA device: the phase ran on cpu"
    rss = pc["cpu_rss_peak_bytes"]
    assert (rss is None and "clear_refs" in pc["unknown"]["cpu_rss_peak_bytes"]) or rss > 500_000
    del keep, out


def test_views_share_their_storage_and_count_once():
    live = LiveTensorBytes()
    with live:
        a = torch.zeros(256, dtype=torch.float32)
        b = a.view(16, 16)
        c = a[:128]
        assert live.live_bytes == 1024 and b.numel() + c.numel() == 384


def test_non_torch_from_the_process_when_nvml_lists_it():
    got = non_torch_bytes(Reading("nvml", 20 * 2**30), 19 * 2**30, 100 * 2**30, 140 * 2**30)
    assert got[0] == 2**30 and got[2].startswith("NVML process used")


def test_non_torch_falls_back_to_device_used_an_upper_bound():
    got = non_torch_bytes(Reading("nvml", None, "not listed"), 19 * 2**30, 100 * 2**30,
                          140 * 2**30)
    assert got[0] == (140 - 100 - 19) * 2**30
    assert "an upper bound" in got[2] and "not listed" in got[2]
