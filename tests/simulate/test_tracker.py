"""The live-storage tracker: allocator rounding, views, phases, and the CPU ground truth (a real
run and a fake run of the same tiny model give the same peaks)."""

from __future__ import annotations

import pytest
import torch

from gpusizer.sheet import parse_sheet
from gpusizer.simulate.phases import RuleSwitches, run_phases
from gpusizer.simulate.tracker import LiveTracker, allocator_bytes

from .conftest import real_config, tiny_config


@pytest.mark.parametrize("nbytes, booked", [(0, 0), (1, 512), (512, 512), (513, 1024),
                                             (4000, 4096), (1 << 20, 1 << 20)])
def test_allocator_rounding(nbytes, booked):
    # c10/cuda/CUDACachingAllocator.cpp round_size: max(512, ceil(n / 512) * 512)
    assert allocator_bytes(nbytes) == booked


def test_views_share_their_storage_and_release_frees():
    tracker = LiveTracker()
    with tracker:
        a = torch.empty(1000)            # 4000 B → 4096 B booked
        v = a.view(10, 100)
        s = a[:10]
        assert tracker.live_bytes == 4096
        b = a + 1                        # a new storage: 4096 more
        assert tracker.live_bytes == 8192
        del a, v, s, b
        assert tracker.live_bytes == 0


def test_phase_peak_split_by_lifetime():
    tracker = LiveTracker()
    with tracker:
        with tracker.phase("p"):
            kept = torch.empty(256)      # 1024 B, alive at the end: activations
            gone = torch.empty(512)      # 2048 B, freed within the phase: temporaries
            del gone
            after = torch.empty(64)      # 256 B → 512 B, after the peak: not in it
    (peak,) = tracker.peaks
    assert peak.peak_bytes == 1024 + 2048
    assert peak.by_category == {"activations": 1024, "temporaries": 2048}
    assert peak.end_bytes == 1024 + 512
    del kept, after


@pytest.mark.parametrize("task, block", [
    ("full", {"training": {"sequence_length": 64, "microbatch": 2}}),
    ("lora", {"training": {"sequence_length": 64, "microbatch": 2,
                           "gradient_checkpointing": True}}),
    ("inference", {"inference": {"prompt_tokens": 48, "new_tokens": 16, "concurrency": 2}}),
])
def test_fake_run_equals_real_cpu_run(shared_dir, task, block):
    """Ground truth: the same tiny TinyLlama-shaped model run for real on the CPU and on fake
    tensors, both on the plain CPU paths (no kernel routing, PyTorch's CPU optimizer default),
    books exactly the same live bytes at every phase's peak, category by category."""
    cfg = tiny_config(real_config(shared_dir, "TinyLlama--TinyLlama-1.1B-Chat-v1.0"))
    sheet = parse_sheet({"model": {"path": "unused"}, "task": task, "weights": "bf16", **block})
    runs = []
    for fake in (False, True):
        # the packed-sequence answer is the data's own answer (positions 0…n-1: not packed),
        # which a real CPU run reads and a fake one cannot; the other two rules stay off
        rules = RuleSwitches(attention=False, packed_sequences=True, optimizer=False, fake=fake)
        run = run_phases(sheet, cfg, dtype="bf16", compute_capability=(9, 0), rules=rules)
        runs.append({p.name: (p.peak_bytes, p.by_category) for p in run.phases})
    real, fake = runs
    assert list(real) == list(fake)
    assert real == fake


def test_cross_check_with_pytorch_memtracker():
    """PyTorch's own ``torch.distributed._tools.mem_tracker.MemTracker`` (slower, categories
    lumped) and this tracker agree to the byte on the peak of one real CPU training step
    (a 2-layer Llama, forward + backward + AdamW foreach) when both count exact bytes."""
    transformers = pytest.importorskip("transformers")
    from torch.distributed._tools.mem_tracker import MemTracker

    cfg = dict(model_type="llama", hidden_size=256, intermediate_size=640, num_hidden_layers=2,
               num_attention_heads=8, num_key_value_heads=2, vocab_size=1024,
               max_position_embeddings=512)

    def setup():
        torch.manual_seed(0)
        config = transformers.AutoConfig.for_model(**cfg)
        config._attn_implementation = "eager"
        model = transformers.AutoModelForCausalLM.from_config(config)
        opt = torch.optim.AdamW(model.parameters(), foreach=True)
        ids = torch.randint(0, cfg["vocab_size"], (2, 64))

        def step():
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
        return model, opt, step

    model, _, step = setup()
    ours = LiveTracker(block_bytes=1)
    for t in (*model.parameters(), *model.buffers()):
        ours.track(t)
    with ours, ours.phase("step"):
        step()
    model, opt, step = setup()
    theirs = MemTracker()
    theirs.track_external(model, opt)
    with theirs:
        step()
    peak = theirs.get_tracker_snapshot("peak")[torch.device("cpu")]
    assert ours.peaks[0].peak_bytes == peak["Total"]
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    assert params == peak[next(k for k in peak if str(getattr(k, "value", k)) == "Parameter")]
