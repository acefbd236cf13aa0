"""Card names → cards: aliases, disambiguation by memory, unknown names."""

from __future__ import annotations

import csv

import pytest

from gpusizer.catalog import cards as cards_module
from gpusizer.catalog.cards import (
    close_card_names, lookup_card, require_card, resolve_card, resolve_offer_card,
)
from gpusizer.catalog.types import Offer
from gpusizer.cli import exit_code_for
from gpusizer.errors import CatalogError, UnknownCardError
from gpusizer.units import GB, GiB, MiB


def test_all_names_exported():
    for name in cards_module.__all__:
        assert hasattr(cards_module, name)


@pytest.mark.parametrize("name, canonical", [
    # NVML names (nvidia-smi --query-gpu=name)
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("Tesla T4", "T4"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB"),
    ("Quadro RTX 6000", "Quadro RTX 6000"),
    # SkyPilot AcceleratorName spellings (shared catalogs, common accelerators.csv)
    ("RTX4090", "RTX 4090"),
    ("A100-80GB", "A100 80GB"),
    ("A100-80GB-SXM", "A100 80GB"),
    ("A100-80G-PCIe", "A100 80GB"),
    ("H100-SXM", "H100 SXM"),
    ("H100-NVL", "H100 NVL"),
    ("H100-80G-PCIe-NVLink", "H100 PCIe"),
    ("L40S", "L40S"),
    ("RTXA6000", "RTX A6000"),
    ("RTX-A6000", "RTX A6000"),
    ("RTX6000Ada", "RTX 6000 Ada"),
    ("RTX6000-Ada", "RTX 6000 Ada"),
    ("RTXPRO6000S", "RTX PRO 6000 Blackwell (Server)"),
    ("A10G", "A10 / A10G"),
    ("H200-SXM", "H200"),
    # FSDL cloud-gpus "GPU Type" spellings
    ("A100 (80 GB)", "A100 80GB"),
    ("A100 (40 GB)", "A100 40GB (SXM4)"),
    ("A6000 (48 GB)", "RTX A6000"),
    ("H100 PCIe (80GB)", "H100 PCIe"),
    ("Quadro RTX 6000 (24 GB)", "Quadro RTX 6000"),
    # case, spaces and hyphens do not matter
    ("rtx 4090", "RTX 4090"),
    ("  Rtx-4090 ", "RTX 4090"),
])
def test_aliases(name, canonical):
    card = lookup_card(name)
    assert card is not None, name
    assert card.name == canonical


def test_rtx6000_with_24_gib_is_the_quadro_not_the_ada():
    assert lookup_card("RTX6000", 24 * GiB).name == "Quadro RTX 6000"
    assert lookup_card("RTX6000", 24576 * MiB).name == "Quadro RTX 6000"
    assert lookup_card("RTX6000", 49140 * MiB).name == "RTX 6000 Ada"


def test_ambiguous_name_without_memory_is_unknown_with_the_reason():
    match = resolve_card("RTX6000")
    assert match.card is None
    assert "ambiguous" in match.reason and "no memory size" in match.reason
    assert set(match.candidates) == {"Quadro RTX 6000", "RTX 6000 Ada"}


def test_a100_40_vs_80():
    assert lookup_card("A100", 40 * GiB).name == "A100 40GB (SXM4)"
    assert lookup_card("A100", 80 * GiB).name == "A100 80GB"
    assert lookup_card("A100", 80 * GB).name == "A100 80GB"  # nominal decimal GB also fits
    assert lookup_card("A100") is None


def test_h100_nvl_94_is_decided_but_80_is_not():
    assert lookup_card("H100", 95830 * MiB).name == "H100 NVL"
    # SXM and PCIe report the same 81559 MiB: memory cannot tell them apart
    match = resolve_card("H100", 81559 * MiB)
    assert match.card is None
    assert {"H100 SXM", "H100 PCIe"} <= set(match.candidates)


def test_memory_fitting_only_an_unlisted_variant_is_unknown():
    # vast 2x-RTX_3060_Ti: AcceleratorName RTX3060, 8192 MiB per GPU
    match = resolve_card("RTX3060", 8192 * MiB)
    assert match.card is None
    assert "does not describe" in match.reason
    assert lookup_card("RTX3060", 12288 * MiB).name == "RTX 3060 12GB"


def test_memory_is_ignored_for_a_name_that_means_one_card():
    # vast lists a 48 GB-modded RTX 4090 (49140 MiB); the name still means the RTX 4090
    assert lookup_card("RTX4090", 49140 * MiB).name == "RTX 4090"


def test_unknown_card_is_none():
    assert lookup_card("GTX 1080") is None
    assert "not in the card table" in resolve_card("GTX 1080").reason


def test_require_card_lists_close_matches():
    with pytest.raises(UnknownCardError) as info:
        require_card("RTX 4099")
    error = info.value
    assert isinstance(error, CatalogError) and isinstance(error, LookupError)
    assert exit_code_for(error) == 2
    assert "RTX 4090" in str(error)
    assert error.field == "card" and error.value == "RTX 4099"


def test_require_card_on_an_ambiguous_name_lists_the_variants():
    with pytest.raises(UnknownCardError, match="Quadro RTX 6000, RTX 6000 Ada"):
        require_card("RTX6000")
    assert require_card("RTX6000", 24576 * MiB).name == "Quadro RTX 6000"


def test_close_card_names():
    assert "RTX 4090" in close_card_names("RTX 4080")


def test_resolve_offer_card_prefers_the_reader_decision():
    offer = Offer(id="x", provider="p", card="H100", cards=1, days=None, total_usd=None,
                  catalog_memory_bytes=81559 * MiB, canonical_card="H100 SXM")
    assert resolve_offer_card(offer).card.name == "H100 SXM"
    undecided = Offer(id="y", provider="p", card="H100", cards=1, days=None, total_usd=None,
                      catalog_memory_bytes=81559 * MiB)
    assert resolve_offer_card(undecided).card is None


def test_skypilot_common_accelerator_names_resolve_or_are_reported(catalogs_dir):
    # every NVIDIA name of SkyPilot's common accelerators either maps to a card, is declared
    # ambiguous, or is unknown: never an exception
    path = catalogs_dir / "skypilot-catalog_v8_common_accelerators.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        names = [row["AcceleratorName"] for row in csv.DictReader(handle)]
    assert len(names) == 60
    known = {name for name in names if lookup_card(name) is not None}
    assert {"RTX4090", "A100-80GB", "A100-80GB-SXM", "H100-SXM", "L40S", "RTXA6000",
            "RTX6000Ada", "RTX6000-Ada", "T4", "L4", "A10G", "H200", "B200"} <= known
    assert "RTX6000" not in known  # ambiguous without memory


def test_variant_memory_of_undecided_ambiguous_names():
    from gpusizer.catalog.cards import resolve_card, variant_memory
    from gpusizer.units import GiB
    # 'H100' at 80 GiB fits H100 SXM and H100 PCIe, both 81559 MiB (card table); the name may
    # also mean H100 NVL (95830 MiB), the largest
    vm = variant_memory(resolve_card("H100", 80 * GiB))
    assert vm.names == ("H100 SXM", "H100 PCIe") and vm.common_bytes == 81559 * 2**20
    assert vm.largest_bytes == 95830 * 2**20
    # 'A100' without memory: 40 GB or 80 GB, no common memory; the largest is the 80 GB card
    vm = variant_memory(resolve_card("A100"))
    assert vm.common_bytes is None and vm.largest_bytes == 81920 * 2**20
    # 'V100' may mean an unlisted 32 GB variant: the largest is its nominal 32 GiB
    assert variant_memory(resolve_card("V100")).largest_bytes == 32 * GiB
    # a decided or unambiguous name has no variants
    assert variant_memory(resolve_card("H200")) is None
    assert variant_memory(resolve_card("RTX6000", 24 * GiB)) is None
