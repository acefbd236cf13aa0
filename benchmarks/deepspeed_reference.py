"""Ours vs DeepSpeed's own model-state estimators on a few models (issue 14, point 1).

    python benchmarks/deepspeed_reference.py

For each bundled model and placement (zero2 / zero3, 8 GPUs on one node, with and without
optimizer offload; full fine-tuning, precision master, AdamW), prints DeepSpeed's
``estimate_zero2_model_states_mem_needs`` / ``estimate_zero3_model_states_mem_needs`` GPU and
CPU figures (``gpusizer.memory.training.deepspeed_reference``, reproduced from DeepSpeed 0.19.6),
our model states per GPU, our whole peak (activations, buffers and non-PyTorch memory included)
and our host RAM per node. DeepSpeed's CPU figure carries ``additional_buffer_factor`` 1.5; ours
has no such multiplier (SPEC R5). No network: models resolve from the bundled registry.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from gpusizer.memory.estimate import estimate_memory  # noqa: E402
from gpusizer.model.resolve import facts_for_sheet  # noqa: E402
from gpusizer.sheet import parse_sheet  # noqa: E402

MODELS = ("Qwen/Qwen3-0.6B", "meta-llama/Meta-Llama-3.1-8B", "Qwen/Qwen2.5-32B-Instruct")
PLACEMENTS = ({"gpus": 8, "strategy": "zero2"}, {"gpus": 8, "strategy": "zero2",
                                                  "offload": "optimizer"},
              {"gpus": 8, "strategy": "zero3"}, {"gpus": 8, "strategy": "zero3",
                                                  "offload": "optimizer+params"})
GiB = 2 ** 30


def rows() -> list[dict]:
    """One row per model × placement (bytes)."""
    out = []
    for model in MODELS:
        for placement in PLACEMENTS:
            sheet = parse_sheet({"model": {"id": model}, "task": "full", "weights": "bf16",
                                 "attention": "flash",
                                 "training": {"sequence_length": 2048, "microbatch": 1,
                                              "gradient_checkpointing": True,
                                              "precision": "master"},
                                 "placement": placement})
            try:
                facts = facts_for_sheet(sheet)
            except Exception as exc:   # a model the registry does not hold: say so, go on
                out.append({"model": model, "placement": placement, "error": str(exc)})
                break
            est = estimate_memory(sheet, facts)
            ref = est.training.deepspeed_reference
            out.append({"model": model, "placement": placement, "ds_gpu": ref.gpu_bytes,
                        "ds_cpu": ref.cpu_bytes, "ours_states": ref.ours_model_states_bytes,
                        "ours_peak": est.device_peak_bytes, "ours_host": est.host_ram_bytes})
    return out


def main() -> None:
    print(f"{'model':32} {'placement':28} {'DS GPU':>9} {'ours states':>11} {'ours peak':>10} "
          f"{'DS CPU':>9} {'ours host':>10}   (GiB)")
    for r in rows():
        where = r["placement"]["strategy"] + " " + r["placement"].get("offload", "")
        if "error" in r:
            print(f"{r['model']:32} {where:28} {r['error']}")
            continue
        peak = f"{r['ours_peak'] / GiB:10.2f}" if r["ours_peak"] is not None else "   unknown"
        host = f"{r['ours_host'] / GiB:10.2f}" if r["ours_host"] is not None else "   unknown"
        print(f"{r['model']:32} {where:28} {r['ds_gpu'] / GiB:9.2f} "
              f"{r['ours_states'] / GiB:11.2f} {peak} {r['ds_cpu'] / GiB:9.2f} {host}")


if __name__ == "__main__":
    main()
