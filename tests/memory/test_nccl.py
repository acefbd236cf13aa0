"""NCCL buffers within a node (memory.nccl): two setups derived by hand from NCCL's defaults
(buffer size × channels × peers × protocols), and one public measurement compared."""

import pytest

from gpusizer.catalog.cards import require_card
from gpusizer.memory.estimate import estimate_memory
from gpusizer.memory.nccl import (CONNECTION_BYTES, LL128_BUFFSIZE, LL_BUFFSIZE,
                                  SIMPLE_BUFFSIZE, nccl_buffers, within_node_link)
from gpusizer.memory.non_torch import nccl_item

from .conftest import facts_of, sheet

MiB = 2**20
# NCCL src/init.cc: LL = 8 lines/thread × 512 threads × 8 steps × 16 B; LL128 = 120 elems/thread
# × 640 threads × 8 steps × 8 B; Simple = NCCL_BUFFSIZE 4 MiB. One connection: the receive side
# holds the three, rounded up to CUDA_IPC_MIN 2 MiB (9.19 MiB → 10 MiB), the send side a 2 MiB
# header block: the 10485760 and 2097152 allocations of NVIDIA/nccl#1685.
PROTOCOLS = 8 * 512 * 8 * 16 + 120 * 640 * 8 * 8 + 4 * MiB
CONNECTION = 10 * MiB + 2 * MiB


def test_protocol_buffers_and_one_connection():
    assert (LL_BUFFSIZE, LL128_BUFFSIZE, SIMPLE_BUFFSIZE) == (524_288, 4_915_200, 4_194_304)
    assert PROTOCOLS == 9_633_792  # 9.19 MiB: the per-connection figure NCCL users report
    assert CONNECTION_BYTES == CONNECTION == 12 * MiB


def test_8_h100_nvlink_fsdp_by_hand():
    """8 × H100 SXM on NVSwitch, FSDP: ring all-gather / reduce-scatter over 32 channels, one
    peer pair each, + NVLS 16 channels × 2 halves × 128 KiB × 8 steps × 8 heads."""
    link = within_node_link("nvlink", require_card("H100 SXM"))
    assert (link.link, link.nvls, link.channels, link.nvls_channels) == ("nvlink", True, 32, 16)
    got = nccl_buffers(8, "fsdp", link)
    rings = 32 * 1 * CONNECTION                     # 384 MiB
    nvls = 16 * 2 * 128 * 1024 * 8 * 8              # 256 MiB
    assert got.bytes == rings + nvls == 640 * MiB
    assert "all-gather + reduce-scatter" in got.formula and "NVLS" in got.formula


def test_2_l40s_pcie_tensor_parallel_by_hand():
    """2 × L40S (no NVLink) under tensor parallelism: all-reduce, but on 2 GPUs the tree's peer
    is the ring's, so one pair per channel; 4 PCIe channels; no NVLS."""
    link = within_node_link(None, require_card("L40S"))
    assert (link.link, link.nvls, link.channels) == ("pcie", False, 4)
    assert nccl_buffers(2, "tensor-parallel", link).bytes == 4 * 1 * CONNECTION == 48 * MiB
    # on 4 GPUs the tree chain adds the opposite direction: 2 pairs per channel
    assert nccl_buffers(4, "tensor-parallel", link).bytes == 4 * 2 * CONNECTION


def test_against_a_public_measurement():
    """NVIDIA/nccl#964 (2023): 4 × A100 with NVLink, PyTorch process groups, one 4 MB
    all-reduce: 688 MB more per GPU for a 4-GPU group, 544 MB for a 2-GPU group (what nvidia-smi
    shows, so it includes NCCL's communicator structures and kernels, not counted here).

    Ours for A100 (compute capability 8.0, no NVLS): 24 channels × 2 pairs × 12 MiB = 576 MiB
    on 4 GPUs, 16 % under the 688 measured; 24 × 1 × 12 MiB = 288 MiB on 2 GPUs, 47 % under
    the 544 measured: the buffers are the larger part, the rest is per communicator."""
    link = within_node_link("nvlink", require_card("A100 80GB"))
    four = nccl_buffers(4, "ddp", link).bytes
    two = nccl_buffers(2, "ddp", link).bytes
    assert four == 576 * MiB and two == 288 * MiB
    assert four / (688 * MiB) == pytest.approx(0.84, abs=0.01)
    assert two / (544 * MiB) == pytest.approx(0.53, abs=0.01)


@pytest.mark.parametrize("interconnect, card, want", [
    ("pcie", "H100 SXM", ("pcie", False)),         # the offer wins over the card
    ("infiniband", "H100 SXM", ("nvlink", True)),  # between nodes: says nothing within one
    (None, "H100 NVL", ("nvlink", False)),         # an NVL bridge: no NVSwitch, no NVLS
    (None, "A100 80GB", ("nvlink", False)),        # Ampere: no NVLS
    (None, "RTX 4090", ("pcie", False)),
    ("nvls", "B200", ("nvlink", True)),
])
def test_link_from_offer_then_card(interconnect, card, want):
    link = within_node_link(interconnect, require_card(card))
    assert (link.link, link.nvls) == want
    if card == "B200" and link.nvls:
        assert link.nvls_channels == 24  # NVLS_NCHANNELS_SM100_NVL, one node


def test_no_collectives_no_buffers():
    assert nccl_item(1, ("load",), "single").phases == ()
    assert nccl_item(4, ("load",), "device-map").bytes == 0
    assert nccl_item(4, ("load",), "ddp").phases == ()          # inference replicas
    ddp = nccl_item(4, ("forward",), "ddp", training=True, card=require_card("RTX 4090"))
    assert ddp.bytes == 4 * 2 * CONNECTION and ddp.provenance == "declared"


def test_the_offer_interconnect_reaches_the_estimate():
    f = facts_of("meta-llama/Meta-Llama-3.1-70B")
    s = sheet(inference={"prompt_tokens": 3072, "new_tokens": 1024, "concurrency": 2},
              placement={"gpus": 8, "strategy": "tensor-parallel"})
    h100 = require_card("H100 SXM")
    nvlink = estimate_memory(s, f, card=h100)
    pcie = estimate_memory(s, f, card=h100, interconnect="pcie")
    a = nvlink.item("nccl_buffers").bytes
    b = pcie.item("nccl_buffers").bytes
    assert a == 32 * 2 * CONNECTION + 16 * 2 * MiB * 8 and b == 4 * 2 * CONNECTION
    assert nvlink.device_peak_bytes - pcie.device_peak_bytes == a - b


def test_plan_estimates_each_offer_on_its_own_interconnect():
    """Two 8 × H100 SXM offers, one documented as PCIe, one silent (the card's NVSwitch): the
    NCCL item of each offer's estimate follows its row, and the headrooms differ by it."""
    import datetime as dt

    from gpusizer import api
    rows = [{"id": "pcie", "provider": "p", "card": "H100 SXM", "cards": 8, "days": 1,
             "total_usd": 100, "interconnect": "PCIe"},
            {"id": "silent", "provider": "p", "card": "H100 SXM", "cards": 8, "days": 1,
             "total_usd": 100}]
    s = {"model": {"id": "meta-llama/Meta-Llama-3.1-70B"}, "task": "inference",
         "weights": "bf16", "inference": {"prompt_tokens": 3072, "new_tokens": 1024},
         "placement": {"gpus": 8, "strategy": "tensor-parallel"}}
    report = api.plan(s, catalogs=rows, today=dt.date(2026, 12, 1))
    by_id = {d.offer.id: d for d in report.result.decisions}
    pcie = by_id["pcie"].estimate.item("nccl_buffers").bytes
    silent = by_id["silent"].estimate.item("nccl_buffers").bytes
    assert pcie == 4 * 2 * CONNECTION and silent == 32 * 2 * CONNECTION + 16 * 2 * MiB * 8
    assert by_id["pcie"].fit.headroom_bytes - by_id["silent"].fit.headroom_bytes == silent - pcie
