"""A simulation's figures do not depend on what ran before it in the same process.

The simulations run in a fresh interpreter (a subprocess): this test session has imported peft
already (``conftest.py``), and a library's first import in a process is what once moved the
figures (peft's LoHa module evaluates ``torch.tensor(1)`` default arguments when it is imported;
imported under the fake mode, they were counted as 2 × 512 B of activations by the first
simulation of a process and by no later one).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import real_config, tiny_config

SRC = Path(__file__).resolve().parents[2] / "src"

RUN = """
import json, sys
from pathlib import Path
assert "peft" not in sys.modules and "transformers" not in sys.modules
from gpusizer.catalog.cards import require_card
from gpusizer.pipeline import run_simulate
from gpusizer.sheet import load_sheet
out = []
for path in sys.argv[1:]:
    p = Path(path)
    r = run_simulate(load_sheet(p), card=require_card("H100 SXM"), base_dir=p.parent)
    out.append({"items": {it.name: it.phase_bytes for it in r.memory.items
                          if it.provenance == "simulated"},
                "peaks": {ph.name: ph.peak_bytes for ph in r.memory.phases}})
print(json.dumps(out))
"""


def _sheet(folder: Path, name: str, model: Path, body: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"model: {{path: {model}}}\n{body}")
    return path


def test_same_figures_first_second_and_after_another_model(shared_dir, write_model, tmp_path):
    qwen = write_model(tiny_config(real_config(shared_dir, "Qwen--Qwen2.5-1.5B")), "qwen")
    llama = write_model(tiny_config(real_config(shared_dir, "TinyLlama--TinyLlama-1.1B-Chat-v1.0")),
                        "llama")
    lora = ("task: lora\nweights: bf16\n"
            "training: {sequence_length: 64, microbatch: 2, lora: {rank: 4}}\n")
    a = _sheet(tmp_path, "qwen-lora", qwen, lora)
    b = _sheet(tmp_path, "llama-lora", llama, lora)
    c = _sheet(tmp_path, "llama-serve", llama, "task: inference\nweights: bf16\n"
               "inference: {prompt_tokens: 48, new_tokens: 16, concurrency: 2}\n")
    runs = [a, a, b, c, a]
    proc = subprocess.run([sys.executable, "-c", RUN, *map(str, runs)], capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(SRC),
                                                       "HF_HUB_OFFLINE": "1",
                                                       "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, second, _, _, after_others = json.loads(proc.stdout)
    assert second == first  # to the byte, every item at every phase, and every phase peak
    assert after_others == first
    # nothing but the model's own tensors outlives the load phase: no activation at load
    items = first["items"]
    assert "load" not in items["activations"]
    # tiny Qwen2.5 (tied embeddings, q/k/v biases), bf16, each tensor booked in 512 B steps:
    # embedding 256 × 64 × 2 = 32 768; per layer q 8192 + k 4096 + v 4096 + o 8192,
    # three biases 3 × 512, MLP 3 × 64 × 128 × 2 = 49 152, two norms 2 × 512 → 76 288
    assert items["weights"]["load"] == 32_768 + 2 * 76_288 + 512 == 185_856
    # the load peak: weights + rotary inv_freq and original_inv_freq (2 × 512 B) + one
    # embedding-sized initialisation temporary, and nothing else
    assert first["peaks"]["load"] == 185_856 + 2 * 512 + 32_768
    assert items["buffers"]["load"] == 2 * 512 and items["temporaries"]["load"] == 32_768
