"""ZeRO / FSDP sharding, precision master, offload and host RAM, DeepSpeed's estimators, and the
seed's calculator for training (issue 14 points 1, 2, 8)."""

from __future__ import annotations

import pytest

from gpusizer.errors import SheetError
from gpusizer.memory.estimate import estimate_memory
from gpusizer.memory.training.deepspeed_reference import zero2_model_states, zero3_model_states
from gpusizer.sheet import parse_sheet

GiB = 2 ** 30
PSI = 7_000_000_000


def _bare(task="full", placement=None, **training):
    body = {"model": {"parameters": PSI}, "task": task, "weights": "bf16",
            "training": {"sequence_length": 2048, "microbatch": 1, **training}}
    if placement:
        body["placement"] = placement
    return estimate_memory(parse_sheet(body), None)


def _items(est):
    return {it.name: it for it in est.items}


# DeepSpeed's docs, docs/code-docs/source/memory.rst (DeepSpeed 0.19.6), the "cold" tables for
# total_params=2851e6 (t5-3b), 1 node × 8 GPUs, printed as `{bytes/2**30:7.2f}GB`:
#   ZeRO-2:  127.45GB | 5.31GB | offload_optimizer=cpu
#            127.45GB | 15.93GB | offload_optimizer=none
#   ZeRO-3 (largest_layer_params=32e6):
#     71.69GB | 0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1
#    127.45GB | 0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=0
#     63.72GB | 0.78GB | offload_param=none, offload_optimizer=cpu , zero_init=1
#    127.45GB | 0.78GB | offload_param=none, offload_optimizer=cpu , zero_init=0
#      1.43GB | 6.09GB | offload_param=none, offload_optimizer=none, zero_init=1
#    127.45GB | 6.09GB | offload_param=none, offload_optimizer=none, zero_init=0
def _gb(b):
    return f"{b / 2 ** 30:7.2f}".strip()


def test_zero2_estimator_reproduces_deepspeeds_printed_table():
    assert [_gb(b) for b in zero2_model_states(2851e6, 8, 1, True)] == ["127.45", "5.31"]
    # the docs table was printed before PR #5099 (DeepSpeed 0.14.3): 4Ψ + 16Ψ/G
    assert [_gb(b) for b in zero2_model_states(2851e6, 8, 1, False, before_0_14_3=True)] \
        == ["127.45", "15.93"]
    # since 0.14.3: 2Ψ + int(18Ψ/G) = 5 702 000 000 + 6 414 750 000
    assert zero2_model_states(2851e6, 8, 1, False) == (int(2851e6 * 4 * 8 * 1.5),
                                                        5_702_000_000 + 6_414_750_000)


@pytest.mark.parametrize("offload,params,init,cpu,gpu", [
    (True, True, True, "71.69", "0.12"), (True, True, False, "127.45", "0.12"),
    (True, False, True, "63.72", "0.78"), (True, False, False, "127.45", "0.78"),
    (False, False, True, "1.43", "6.09"), (False, False, False, "127.45", "6.09")])
def test_zero3_estimator_reproduces_deepspeeds_printed_table(offload, params, init, cpu, gpu):
    c, g, largest = zero3_model_states(2851e6, 32e6, 8, 1, offload, params, init)
    assert (_gb(c), _gb(g), largest) == (cpu, gpu, 128_000_000)


def test_zero2_master_is_the_zero_paper_accounting_and_equals_deepspeeds_gpu_term():
    est = _bare(placement={"gpus": 8, "strategy": "zero2"}, precision="master")
    it = _items(est)
    # ZeRO §5.2: 2Ψ parameters whole; 2Ψ gradients, 4Ψ master, 8Ψ Adam states ÷ 8; DeepSpeed's
    # 4 B fp32 gradient partition at the step ÷ 8
    assert it["weights"].bytes == 2 * PSI
    assert it["gradients"].bytes == 2 * PSI // 8
    assert it["master_weights"].bytes == 4 * PSI // 8 == it["master_gradients"].bytes
    assert it["optimizer_states"].bytes == 8 * PSI // 8
    assert it["zero_reduce_bucket"].bytes == 500_000_000 * 2
    ref = est.training.deepspeed_reference
    assert ref.gpu_bytes == 2 * PSI + int(18 * PSI / 8) == ref.ours_model_states_bytes
    assert ref.cpu_bytes == int(PSI * 4 * 8 * 1.5) and ref.additional_buffer_factor == 1.5


def test_zero_stages_shard_more_and_more():
    one, two, three = (_items(_bare(placement={"gpus": 4, "strategy": s}, precision="master"))
                       for s in ("zero1", "zero2", "zero3"))
    assert one["gradients"].bytes == 2 * PSI and two["gradients"].bytes == 2 * PSI // 4
    assert one["optimizer_states"].bytes == two["optimizer_states"].bytes == 8 * PSI // 4
    assert two["weights"].bytes == 2 * PSI and three["weights"].bytes == 2 * PSI // 4
    assert three["zero3_gathered_parameters"].bytes is None   # needs the layer shapes


def test_offload_moves_states_to_host_ram_per_node():
    est = _bare(placement={"gpus": 16, "nodes": 2, "strategy": "zero3",
                           "offload": "optimizer+params"}, precision="master")
    it = _items(est)
    assert it["weights"].bytes == it["optimizer_states"].bytes == it["gradients"].bytes == 0
    # per GPU in host RAM: 2Ψ/16 parameters + (4 + 4)Ψ/16 master and fp32 gradients + 8Ψ/16
    per_gpu = (2 + 4 + 4 + 8) * PSI // 16
    assert est.training.host_bytes_per_gpu == per_gpu
    assert est.host_ram_bytes == per_gpu * 8   # 8 GPUs per node (> the 14 GB checkpoint)


def test_amp_under_zero2_keeps_no_fp32_copy_on_every_gpu():
    it = _items(_bare(placement={"gpus": 8, "strategy": "zero2"}, precision="amp"))
    assert it["weights"].bytes == 2 * PSI and it["master_weights"].bytes == 4 * PSI // 8


def test_fsdp_master_shards_fp32_parameters_and_hybrid_divides_by_a_node():
    full = _items(_bare(placement={"gpus": 8, "nodes": 2, "strategy": "fsdp"},
                        precision="master"))
    hybrid = _items(_bare(placement={"gpus": 8, "nodes": 2, "strategy": "fsdp",
                                     "fsdp_sharding": "hybrid"}, precision="master"))
    assert full["weights"].bytes == 4 * PSI // 8 and hybrid["weights"].bytes == 4 * PSI // 4
    assert "master_weights" not in full   # FSDP's fp32 shard is the master copy


def test_bare_count_lora_is_sized_with_unknown_items_and_no_refusal():
    est = _bare(task="lora")
    it = _items(est)
    assert it["weights"].bytes == 2 * PSI
    for name in ("lora_adapters", "gradients", "optimizer_states"):
        assert it[name].bytes is None and "layer shapes" in it[name].unknown_reason
    assert it["activations"].bytes is None and "architecture" in it["activations"].unknown_reason
    assert est.peak_bytes is None and est.training.trainable_parameters is None


def test_bare_count_full_gives_weights_gradients_and_states():
    it = _items(_bare())
    assert (it["weights"].bytes, it["gradients"].bytes, it["optimizer_states"].bytes) == (
        2 * PSI, 2 * PSI, 2 * 2 * PSI)   # bf16 pure AdamW: 2 states × Ψ × 2 B


@pytest.mark.parametrize("placement,field", [
    ({"gpus": 3, "nodes": 2, "strategy": "ddp"}, "placement.nodes"),
    ({"gpus": 2, "strategy": "zero2", "fsdp_sharding": "hybrid"}, "placement.fsdp_sharding"),
    ({"gpus": 2, "strategy": "fsdp", "offload": "optimizer"}, "placement.offload"),
    ({"gpus": 2, "strategy": "zero2", "offload": "optimizer+params"}, "placement.offload"),
    ({"gpus": 2, "strategy": "ddp", "offload": "optimizer"}, "placement.offload")])
def test_placement_refusals_name_the_field(placement, field):
    with pytest.raises(SheetError) as e:
        parse_sheet({"model": {"parameters": PSI}, "task": "full", "weights": "bf16",
                     "training": {"sequence_length": 8, "microbatch": 1},
                     "placement": placement})
    assert e.value.field == field


def test_new_placement_keys_left_at_default_keep_the_hash():
    from gpusizer.sheet import canonical_json
    text = canonical_json(parse_sheet({"model": {"parameters": PSI}, "task": "inference",
                                       "weights": "bf16"}))
    assert "nodes" not in text and "offload" not in text and "fsdp_sharding" not in text


def test_two_nodes_add_one_network_connection_per_channel():
    from gpusizer.memory.nccl import CONNECTION_BYTES, nccl_buffers, within_node_link
    link = within_node_link("pcie", None)   # 4 channels (memory/nccl.py stated default)
    one, two = nccl_buffers(8, "zero3", link), nccl_buffers(8, "zero3", link, nodes=2)
    assert two.bytes - one.bytes == 4 * CONNECTION_BYTES == 4 * 12 * 2 ** 20
    est = _bare(placement={"gpus": 16, "nodes": 2, "strategy": "zero3"}, precision="master")
    within = nccl_buffers(8, "zero3", within_node_link(None, None)).bytes
    assert _items(est)["nccl_buffers"].bytes == within + 32 * CONNECTION_BYTES


LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def _llama(placement, **training):
    from .conftest import facts_of, sheet
    body = {"task": "full", "training": {"sequence_length": 2048, "microbatch": 1,
                                         "gradient_checkpointing": True, **training},
            "placement": placement}
    return estimate_memory(sheet(**body), facts_of(LLAMA)), facts_of(LLAMA)


def test_zero3_reference_on_llama_uses_its_largest_module():
    est, facts = _llama({"gpus": 8, "strategy": "zero3"}, precision="master")
    arch = facts.architecture
    # Llama 3.1 8B config.json: vocab 128256 × hidden 4096, the embedding (and the untied
    # lm_head) is the largest module DeepSpeed's model_to_params finds
    largest = 128256 * 4096
    ref = est.training.deepspeed_reference
    assert ref.gpu_bytes == 4 * largest + int(18 * arch.total_parameters / 8)
    assert ref.cpu_bytes == int(largest * 4 * 8 * 1.5)
    gathered = _items(est)["zero3_gathered_parameters"]
    # (largest + prefetch bucket 5e7) × 2 B gathered, + the largest's 2 B gradient in backward
    assert gathered.bytes == (largest + 50_000_000) * 2 + largest * 2


def test_fsdp_grad_op_keeps_every_unit_gathered():
    full, facts = _llama({"gpus": 8, "strategy": "fsdp"}, precision="master")
    grad_op, _ = _llama({"gpus": 8, "strategy": "fsdp", "fsdp_sharding": "grad-op"},
                        precision="master")
    arch = facts.architecture
    layer = (arch.total_parameters - 2 * 128256 * 4096) // arch.num_layers
    assert _items(full)["fsdp_gathered_layers"].phase_bytes["forward"] == 2 * layer * 2
    assert _items(grad_op)["fsdp_gathered_layers"].phase_bytes["forward"] == 32 * layer * 2
