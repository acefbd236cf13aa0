"""NCCL's device buffers within one node: per channel, per connected peer, per protocol.

The figure applies to NCCL >= 2.21 (the NCCL PyTorch >= 2.5 wheels ship); the constants below
were read in NCCL's source at v2.30.7 (github.com/NVIDIA/nccl) and NCCL's documentation,
"Environment Variables" (NCCL_BUFFSIZE, NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS,
NCCL_NVLS_ENABLE, NCCL_NVLS_NCHANNELS, NCCL_NVLS_CHUNKSIZE).

Per GPU (all bytes per GPU):

    nccl_buffers = channels × peers × connection_bytes  +  nvls_bytes

- ``connection_bytes`` = one receive and one send connection to a peer on one channel:
  ``align_2MiB(LL + LL128 + Simple + header) + align_2MiB(header)`` = 10 MiB + 2 MiB = 12 MiB
  (``src/transport/p2p.cc`` p2pRecvSetup / p2pSendSetup: the receive side holds the three
  protocols' buffers, ``ALIGN_SIZE(size, CUDA_IPC_MIN)`` with CUDA_IPC_MIN = 2 MiB; in P2P read
  mode — NVLink on Ampere and later — the Simple buffer moves to the send side:
  align(LL + LL128 + header) + align(Simple + header) = 6 MiB + 6 MiB, the same 12 MiB).
  LL = NCCL_LL_LINES_PER_THREAD 8 × NCCL_LL_MAX_NTHREADS 512 × NCCL_STEPS 8 × 16 B = 512 KiB;
  LL128 = NCCL_LL128_ELEMS_PER_THREAD 120 × NCCL_LL128_MAX_NTHREADS 640 × 8 steps × 8 B
  = 4 800 KiB; Simple = NCCL_BUFFSIZE default 4 MiB (``src/init.cc`` DEFAULT_*BUFFSIZE;
  ``src/include/device.h``). The 10 MiB and 2 MiB allocations are the two sizes NCCL's ALLOC
  log shows on 8 × H100 (NVIDIA/nccl#1685).
- ``peers`` = distinct connections per channel the strategy's collectives open (NCCL >= 2.22
  connects an algorithm at its first use, NCCL_RUNTIME_CONNECT=1): ring all-gather and
  reduce-scatter (fsdp, zero*) connect to the previous and next rank (1 pair); all-reduce
  (tensor-parallel, ddp) adds the intra-node tree, a chain in the other direction (2 pairs), which
  on 2 GPUs is the same peer (1 pair).
- ``channels`` = NCCL's ring channels; NCCL's topology search picks them (NCCL_MIN_NCHANNELS /
  NCCL_MAX_NCHANNELS bound them, MAXCHANNELS = 64). Stated defaults: NVLink on compute
  capability >= 9.0: 32 (8 × H100: NVIDIA/nccl#1685), other NVLink: 24 (8 × A100 HGX:
  NVIDIA/nccl-tests#100; 16 on H800, NVIDIA/nccl#892); PCIe: 4 (the search finds 1–2 rings
  over PCIe and duplicates them; 2–8 are seen).
- ``nvls_bytes`` (NVLink SHARP, NVSwitch systems of compute capability >= 9.0, NCCL_NVLS_ENABLE
  default 2 = when multicast is supported): NVLS channels (NVLS_NCHANNELS_SM90 16,
  NVLS_NCHANNELS_SM100_NVL 24) × 2 (reduce and broadcast halves) × NCCL_NVLS_CHUNKSIZE 128 KiB ×
  NCCL_STEPS 8 × heads (one per GPU of the node) (``src/transport/nvls.cc``
  ncclNvlsBufferSetup) = 256 MiB on 8 × H100. NCCL 2.18–2.20 sized each by NCCL_BUFFSIZE plus a
  2 MiB alignment: 16 × 2 × 6 MiB × 8 = 1.5 GiB.

Between nodes (``placement.nodes`` > 1): every ring channel leaves and enters each node once,
and with one NIC per GPU NCCL's search starts channels on every GPU, so each GPU is taken to
hold, per channel, one network connection with the same per-protocol buffers (LL, LL128,
Simple = NCCL_BUFFSIZE) as a P2P one: ``src/transport/net.cc`` sizes its receive buffers by the
same ``comm->buffSizes`` and places them in device memory when GPUDirect RDMA is used (host
pinned memory otherwise, which then is host RAM, not device memory). This is a stated
upper-side default, not a measurement: ``channels × CONNECTION_BYTES`` more per GPU.

Not counted: NCCL's communicator structures, work FIFO and the memory of its loaded kernels, and
send/recv (all-to-all) channels, which MoE expert parallelism opens (NVIDIA/nccl#1685: +3.3 GB
per GPU on 8 × H100). A measurement replaces the figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..units import KiB, MiB

if TYPE_CHECKING:
    from ..catalog.types import Card

__all__ = ["NcclLink", "WithinNodeLink", "within_node_link", "nccl_buffers", "NcclBuffers",
           "COLLECTIVES",
           "LL_BUFFSIZE", "LL128_BUFFSIZE", "SIMPLE_BUFFSIZE", "CONNECTION_BYTES",
           "NCCL_SOURCE"]

NCCL_STEPS = 8                               # src/include/device.h
LL_BUFFSIZE = 8 * 512 * NCCL_STEPS * 16      # lines/thread × threads × steps × ncclLLFifoLine
LL128_BUFFSIZE = 120 * 640 * NCCL_STEPS * 8  # elems/thread × threads × steps × uint64_t
SIMPLE_BUFFSIZE = 4 * MiB                    # NCCL_BUFFSIZE default (1 << 22)
_IPC_ALIGN = 2 * MiB                         # CUDA_IPC_MIN, src/include/comm.h


def _aligned(size: int) -> int:
    return -(-size // _IPC_ALIGN) * _IPC_ALIGN


# receive side: the three protocols' buffers + an ncclRecvMem header (a few KiB, below the
# alignment's slack); send side: an ncclSendMem header alone → 10 MiB + 2 MiB
CONNECTION_BYTES = _aligned(LL_BUFFSIZE + LL128_BUFFSIZE + SIMPLE_BUFFSIZE + 1) + _aligned(1)
NVLS_CHUNK = 128 * KiB                       # NCCL_NVLS_CHUNKSIZE default
NCCL_SOURCE = ("NCCL docs 'Environment Variables' (NCCL_BUFFSIZE 4 MiB, NCCL_MIN/MAX_NCHANNELS, "
               "NCCL_NVLS_ENABLE, NCCL_NVLS_CHUNKSIZE); NVIDIA/nccl v2.30.7 src/init.cc "
               "(DEFAULT_LL/LL128/BUFFSIZE), src/transport/p2p.cc (2 MiB-aligned connection "
               "buffers), src/transport/nvls.cc (ncclNvlsBufferSetup); applies to NCCL >= 2.21")

NcclLink = Literal["pcie", "nvlink"]

COLLECTIVES: dict[str, tuple[str, str]] = {
    "tensor-parallel": ("all-reduce", "ring + tree"),
    "ddp": ("all-reduce", "ring + tree"),
    "fsdp": ("all-gather + reduce-scatter", "ring"),
    "zero1": ("all-gather + reduce-scatter", "ring"),
    "zero2": ("all-gather + reduce-scatter", "ring"),
    "zero3": ("all-gather + reduce-scatter", "ring"),
}
"""Strategy → (the collectives it runs every step, the NCCL algorithms they connect)."""


@dataclass(frozen=True)
class WithinNodeLink:
    """How the node's GPUs talk, as far as the NCCL buffers are concerned.

    Attributes:
        link: ``nvlink`` or ``pcie``.
        nvls: NVLink SHARP buffers are allocated (NVSwitch, compute capability >= 9.0).
        channels: NCCL ring channels (stated default, see the module docstring).
        nvls_channels: NVLS channels (0 without NVLS).
        origin: where the link comes from, in words (the offer's interconnect, the card's NVLink
            fact, or the stated default without a card).
    """

    link: NcclLink
    nvls: bool
    channels: int
    nvls_channels: int
    origin: str


def _nvlink_channels(cc: tuple[int, int] | None) -> int:
    return 32 if cc is None or cc >= (9, 0) else 24


def _nvls_channels(cc: tuple[int, int] | None) -> int:
    return 24 if cc is not None and cc >= (10, 0) else 16


def _switched(card: Card) -> bool:
    """An SXM card on an NVSwitch baseboard: its NVLink fact names NVLink or SXM, not a bridge."""
    text = str(card.nvlink.value).lower() if card.nvlink.value else ""
    return bool(text) and "bridge" not in text and ("nvlink" in text or "sxm" in text)


def within_node_link(interconnect: str | None, card: Card | None) -> WithinNodeLink:
    """The link NCCL uses within a node: the offer's ``interconnect`` when it names one
    (``pcie``; ``nvlink``, ``nvswitch``, ``sxm``; ``nvls``), else the card's NVLink fact (any
    NVLink → nvlink; NVLS on an NVSwitch card of compute capability >= 9.0), else — no card —
    the stated default: NVLink with NVLS (the largest buffers, so the figure is not
    understated). An interconnect between nodes (``infiniband``, ``ethernet``) says nothing about
    the link within one and falls back to the card.
    """
    cc = None
    if card is not None and card.compute_capability.value is not None:
        cc = tuple(card.compute_capability.value)
    hopper = cc is None or cc >= (9, 0)
    said = (interconnect or "").strip().lower()
    if said == "pcie":
        return WithinNodeLink("pcie", False, 4, 0, f"offer interconnect '{interconnect}'")
    if said in ("nvlink", "nvswitch", "sxm", "nvls"):
        nvls = hopper and (said in ("nvswitch", "nvls") or card is None or _switched(card))
        return WithinNodeLink("nvlink", nvls, _nvlink_channels(cc),
                              _nvls_channels(cc) if nvls else 0,
                              f"offer interconnect '{interconnect}'")
    if card is None:
        return WithinNodeLink("nvlink", True, _nvlink_channels(None), _nvls_channels(None),
                              "no card and no offer interconnect: stated default NVLink with "
                              "NVLS (the largest buffers)")
    if card.nvlink.value:
        nvls = hopper and _switched(card)
        return WithinNodeLink("nvlink", nvls, _nvlink_channels(cc),
                              _nvls_channels(cc) if nvls else 0,
                              f"catalog silent: the {card.name}'s NVLink ({card.nvlink.value})")
    return WithinNodeLink("pcie", False, 4, 0,
                          f"catalog silent: the {card.name} has no NVLink (PCIe)")


@dataclass(frozen=True)
class NcclBuffers:
    """NCCL's buffers on one GPU for one strategy and link.

    Attributes:
        bytes: channels × peers × CONNECTION_BYTES + NVLS bytes, per GPU.
        formula: the formula with this setup's numbers and its range.
        collectives: what the strategy runs, in words.
    """

    bytes: int
    formula: str
    collectives: str


def nccl_buffers(gpus: int, strategy: str, link: WithinNodeLink, nodes: int = 1
                 ) -> NcclBuffers:
    """NCCL buffers per GPU within one node (module docstring: formula and sources).

    ``channels × peers × 12 MiB + nvls_channels × 2 × 128 KiB × 8 × gpus``, where peers is 1
    for ring collectives (fsdp, zero*) and for all-reduce on 2 GPUs, 2 for all-reduce (ring +
    tree) on more GPUs.

    Args:
        gpus: GPUs in the node (>= 2).
        strategy: a key of :data:`COLLECTIVES`.
        link: :func:`within_node_link`'s answer.
        nodes: nodes the communicator spans; > 1 adds ``channels × CONNECTION_BYTES`` of
            network connections per GPU (module docstring).

    Raises:
        KeyError: a strategy without collectives.
    """
    what, algos = COLLECTIVES[strategy]
    peers = 2 if algos == "ring + tree" and gpus > 2 else 1
    rings = link.channels * peers * CONNECTION_BYTES if gpus > 1 else 0
    network = link.channels * CONNECTION_BYTES if nodes > 1 else 0
    nvls = link.nvls_channels * 2 * NVLS_CHUNK * NCCL_STEPS * gpus if link.nvls and gpus > 1 else 0
    mib = MiB
    low = 2 if link.link == "pcie" else 16
    high = 8 if link.link == "pcie" else 32
    text = (f"{what} ({algos}) over {link.link} ({link.origin}): {link.channels} channels × "
            f"{peers} peer{'s' if peers > 1 else ''} × {CONNECTION_BYTES // mib} MiB per "
            f"connection (LL {LL_BUFFSIZE // KiB} KiB + LL128 {LL128_BUFFSIZE // KiB} KiB + "
            f"Simple {SIMPLE_BUFFSIZE // mib} MiB, 2 MiB-aligned, + 2 MiB send side) = "
            f"{rings // mib} MiB")
    if link.nvls:
        text += (f" + NVLS {link.nvls_channels} channels × 2 × {NVLS_CHUNK // KiB} KiB × "
                 f"{NCCL_STEPS} steps × {gpus} heads = {nvls // mib} MiB (NCCL 2.18–2.20: "
                 f"{link.nvls_channels * 2 * 6 * gpus} MiB; 0 with NCCL_NVLS_ENABLE=0)")
    text += (f"; the rings range {low * peers * CONNECTION_BYTES // mib}–"
             f"{high * peers * CONNECTION_BYTES // mib} MiB for {low}–{high} channels "
             "(NCCL_MIN/MAX_NCHANNELS), NCCL >= 2.21; communicator structures and "
             "all-to-all channels not counted")
    if network:
        text += (f"; between {nodes} nodes: {link.channels} channels × "
                 f"{CONNECTION_BYTES // mib} MiB network connection (GPUDirect RDMA buffers, "
                 f"src/transport/net.cc) = {network // mib} MiB")
    return NcclBuffers(rings + nvls + network, text, what)
