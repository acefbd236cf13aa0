"""NVML readings through a stand-in: a figure when NVML answers, unknown with the reason when it
does not (never zero)."""

from __future__ import annotations

import os

from gpusizer.measure.nvml import PROCESS_COUNTER, open_nvml

from .conftest import FakeNvml


def test_process_and_device_used_when_nvml_lists_the_process():
    nvml = open_nvml(FakeNvml(processes=[(1, 10), (os.getpid(), 3_221_225_472)]))
    assert nvml.process_used(0).bytes == 3_221_225_472
    assert nvml.process_used(0).counter == PROCESS_COUNTER
    assert nvml.device_used(0).bytes == 7 * 2**30
    assert nvml.device_total(0).bytes == 150754820096
    assert nvml.driver_version() == "580.159"


def test_process_not_listed_is_unknown_with_reason():
    r = open_nvml(FakeNvml(processes=[(1, 10)])).process_used(0)
    assert r.bytes is None and f"does not list pid {os.getpid()}" in r.unknown_reason


def test_process_listed_without_a_figure_is_unknown():
    r = open_nvml(FakeNvml(processes=[(os.getpid(), None)])).process_used(0)
    assert r.bytes is None and "no usedGpuMemory" in r.unknown_reason


def test_nvml_error_on_a_gpu_is_unknown_with_the_error():
    r = open_nvml(FakeNvml()).device_used(3)
    assert r.bytes is None and "NVML error on GPU 3" in r.unknown_reason


def test_no_driver_makes_every_reading_unknown():
    nvml = open_nvml(FakeNvml(init_error="NVML_ERROR_LIBRARY_NOT_FOUND"))
    assert not nvml.available and nvml.driver_version() is None
    for reading in (nvml.process_used(0), nvml.device_used(0), nvml.device_total(0)):
        assert reading.bytes is None
        assert "NVML_ERROR_LIBRARY_NOT_FOUND" in reading.unknown_reason
        assert reading.as_json()["unknown_reason"] == reading.unknown_reason


def test_the_real_binding_on_this_machine_never_invents_a_figure():
    nvml = open_nvml()
    r = nvml.process_used(0)
    if nvml.available:  # a machine with a driver: a figure or a reason, never a silent 0
        assert (r.bytes is None) == (r.unknown_reason is not None)
    else:
        assert r.bytes is None and r.unknown_reason
