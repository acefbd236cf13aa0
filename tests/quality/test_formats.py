"""The PyTorch round-trips: per-output-channel symmetric grids, lm_head kept."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="the quality extra (torch) is not installed")

from gpusizer.errors import QualityError  # noqa: E402
from gpusizer.quality.formats import FORMATS, format_spec, roundtrip_linear_weights  # noqa: E402

from .conftest import TINY_CONFIG, derive_tiny_config  # noqa: E402


class Two(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(16, 4, bias=False)
        self.lm_head = torch.nn.Linear(4, 8, bias=False)


@pytest.mark.parametrize("bits, qmax", [(8, 127), (4, 7)])
def test_roundtrip_is_a_per_channel_symmetric_grid(bits, qmax):
    m = Two()
    before = m.proj.weight.detach().clone()
    head = m.lm_head.weight.detach().clone()
    assert roundtrip_linear_weights(m, bits) == 1
    after = m.proj.weight.detach()
    assert torch.equal(m.lm_head.weight, head)  # lm_head kept
    for r in range(4):
        scale = before[r].abs().max() / qmax
        levels = after[r] / scale
        assert torch.allclose(levels, levels.round(), atol=1e-4)
        assert levels.abs().max() <= qmax + 1e-4
        # round-to-nearest: every weight moved by at most half a step
        assert (after[r] - before[r]).abs().max() <= scale / 2 + 1e-7


def test_int4_error_exceeds_int8():
    errs = {}
    for bits in (8, 4):
        m = Two()
        w = m.proj.weight.detach().clone()
        roundtrip_linear_weights(m, bits)
        errs[bits] = (m.proj.weight - w).pow(2).mean().item()
    assert errs[4] > 100 * errs[8] > 0


def test_format_names():
    assert FORMATS["int4-roundtrip"].proxy_for == "int4"
    assert FORMATS["nf4"].kind == "bitsandbytes"
    with pytest.raises(QualityError, match="gptq-int4"):
        format_spec("gptq-int4")


def test_tiny_config_derived_from_tinyllama(shared_dir):
    src = json.loads((shared_dir / "data/models/TinyLlama--TinyLlama-1.1B-Chat-v1.0/"
                      "config.json").read_text())
    assert derive_tiny_config(src) == json.loads(TINY_CONFIG.read_text())
