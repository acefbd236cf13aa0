"""The facts about one model that the memory stage consumes (frozen, typed, sourced).

Every count is logical parameters as transformers instantiates them (``model.num_parameters()``),
split by component so a quantization can keep embeddings, lm_head, norms, biases and routers in
16 bit while it packs the linear weights of the decoder layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..formats import QuantConfig, detect

__all__ = ["ParamRole", "ParamGroup", "LinearModule", "MlaDims", "MoeDims", "ModelFacts",
           "QUANTIZABLE_ROLES"]

ParamRole = Literal["embedding", "linear", "expert_linear", "router", "norm", "bias", "lm_head",
                    "other"]
"""What a group of parameters is, which decides how a weight format stores it.

- ``linear``: 2-D weight of a decoder-layer linear (attention projections, dense MLP, shared
  experts); quantized by bitsandbytes, GPTQ, AWQ, fp8.
- ``expert_linear``: routed-expert weights (MoE); quantized too (mxfp4 in gpt-oss quantizes only these).
- ``embedding``, ``lm_head``, ``norm``, ``bias``, ``router``: kept in the 16-bit compute dtype by
  bitsandbytes (``llm_int8_skip_modules``/lm_head), GPTQ and AWQ (only ``nn.Linear`` layers of the
  blocks are packed).
- ``other``: anything else transformers instantiates (e.g. attention sinks, learned position
  embeddings); kept in 16 bit.
"""

QUANTIZABLE_ROLES: frozenset[str] = frozenset({"linear", "expert_linear"})


@dataclass(frozen=True)
class ParamGroup:
    """A group of parameters of one role.

    Attributes:
        name: component name, e.g. ``"embed_tokens"``, ``"attention"``, ``"mlp"``, ``"experts"``.
        count: number of parameters (elements), whole model.
        role: see :data:`ParamRole`.
        matrices: number of 2-D weight matrices in the group (for per-matrix metadata), or 0 when
            not meaningful.
        rows: sum of ``out_features`` over those matrices (per-row scales: bitsandbytes int8 SCB,
            fp8 per-channel), 0 when not meaningful or not known.
        cols: sum of ``in_features`` over those matrices (GPTQ ``g_idx``), 0 when not known.
        largest_matrix: elements of the largest single weight tensor in the group as the
            checkpoint stores it (load-time conversion transient), 0 when not known.
        shapes: the group's 2-D matrices as ``(n, rows, cols)`` triples: ``n`` matrices of
            ``rows`` (out_features) × ``cols`` (in_features). Per-block scale tensors (fp8
            ``weight_block_size``, mxfp4 32-value blocks) are counted per matrix, which the sums
            ``rows``/``cols`` cannot give. Empty for groups without matrices (norms, biases).
    """

    name: str
    count: int
    role: ParamRole
    matrices: int = 0
    rows: int = 0
    cols: int = 0
    largest_matrix: int = 0
    shapes: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class LinearModule:
    """One kind of linear layer, by its module path inside a decoder layer (what LoRA targets).

    Attributes:
        path: module path below the layer, e.g. ``"self_attn.q_proj"``, ``"mlp.c_fc"``,
            ``"mlp.experts.gate_up_proj"``; ``"lm_head"`` for the output projection.
        rows: out_features (elements).
        cols: in_features (elements).
        count: instances in the whole model (layers that carry it).
        experts: 0 for an ``nn.Linear``/``Conv1D`` module; for a stacked routed-expert parameter,
            the number of experts it stacks (PEFT ``target_parameters`` adds one adapter per
            expert).
        router: the MoE router (a ``…TopKRouter`` module with a 2-D weight).
        converted_from: checkpoint tensors transformers v5 concatenates into this stacked
            parameter at load (``gate_up_proj`` from per-expert gate and up: 2), 0 when the
            checkpoint already stores it stacked (gpt-oss) or for plain modules.
    """

    path: str
    rows: int
    cols: int
    count: int
    experts: int = 0
    router: bool = False
    converted_from: int = 0

    @property
    def name(self) -> str:
        """The last component of ``path`` (``q_proj``)."""
        return self.path.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class MlaDims:
    """Multi-head latent attention (DeepSeek-V2/V3), DeepSeek-V2 paper §2.1.

    Attributes:
        kv_lora_rank: width of the compressed KV latent c_KV (tokens).
        qk_rope_head_dim: width of the decoupled RoPE key, shared by heads.
        qk_nope_head_dim: per-head non-RoPE query/key width.
        v_head_dim: per-head value width.
        q_lora_rank: width of the compressed query, or None (direct q projection).
    """

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None


@dataclass(frozen=True)
class MoeDims:
    """Mixture-of-experts dimensions.

    Attributes:
        num_experts: routed experts per MoE layer.
        experts_per_token: top-k routed experts per token.
        expert_intermediate_size: intermediate width of one routed expert.
        num_shared_experts: always-on experts per MoE layer (DeepSeek), 0 if none.
        moe_layers: number of decoder layers that are MoE (the rest are dense).
    """

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    num_shared_experts: int
    moe_layers: int


@dataclass(frozen=True)
class ModelFacts:
    """What gpusizer knows about a model, with where each fact came from.

    Attributes:
        model_id: Hub id or folder path (``None`` for a bare parameter count).
        revision: commit sha, tag or branch the facts describe.
        source: how the facts were resolved: ``path`` | ``registry`` | ``hub`` | ``parameters``.
        source_detail: human text naming the file(s), registry entry and its public source.
        architecture: config.json ``model_type`` (``"llama"``…), or ``"dense"`` for a bare count.
        hidden_size: d_model (elements).
        num_layers: decoder layers (``num_hidden_layers``).
        num_attention_heads: query heads.
        num_key_value_heads: KV heads (GQA/MQA); equals query heads for MHA.
        head_dim: per-head width (explicit ``head_dim`` when config.json gives one).
        vocab_size: tokens in the embedding.
        intermediate_size: dense MLP width (0 when every layer is MoE and none is dense).
        gated_mlp: True for gate/up/down MLPs (SwiGLU/GeGLU), False for two-matrix MLPs.
        context_window_tokens: ``max_position_embeddings`` as config.json states it.
        tie_word_embeddings: lm_head shares the embedding matrix.
        layer_types: per layer ``"full_attention"`` or ``"sliding_attention"``.
        sliding_window: window in tokens for ``sliding_attention`` layers, or None.
        mla: MLA dims, or None.
        moe: MoE dims, or None.
        params: parameter groups; ``total_parameters`` sums them.
        stored_dtype: config.json ``torch_dtype``/``dtype`` (e.g. ``"bfloat16"``) or None.
        stored_format: the weight format as stored, in the sheet's vocabulary (``bf16``, ``fp8``,
            ``gptq-int4``, ``mxfp4``, ``int8``, ``nf4``…), or None when unknown.
        quantization_config: config.json ``quantization_config`` as given (or the side file
            that declares it, ModelOpt's ``hf_quant_config.json``), or None.
        quant: ``quantization_config`` parsed once by its format family's detector
            (``gpusizer.formats.detect``), or None; derived, never passed.
        stored_bytes: exact tensor bytes of the checkpoint from safetensors headers or the index's
            ``metadata.total_size``, or None when no header was read.
        stored_bytes_source: where ``stored_bytes`` came from.
        unrecognised_keys: config.json keys the family module did not use (recorded, not swallowed).
        unloaded_checkpoint_layers: decoder layers stored in the checkpoint that transformers does
            not load (DeepSeek MTP): on disk, not on the GPU.
        modules: the linear layers by module path (LoRA targets), empty for a bare count.
        norm: ``"rms"`` (RMSNorm, transformers upcasts to fp32) or ``"layer"`` (nn.LayerNorm).
        norms_per_layer: hidden-wide norms per decoder layer (2; Gemma 2/3: 4; Falcon-7B: 1).
        qk_norm: per-head norms on q and k (Qwen3, Gemma 3).
    """

    model_id: str | None
    revision: str | None
    source: str
    source_detail: str
    architecture: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    gated_mlp: bool
    context_window_tokens: int | None
    tie_word_embeddings: bool
    layer_types: tuple[str, ...]
    sliding_window: int | None
    params: tuple[ParamGroup, ...]
    mla: MlaDims | None = None
    moe: MoeDims | None = None
    stored_dtype: str | None = None
    stored_format: str | None = None
    quantization_config: dict | None = field(default=None, hash=False, compare=False)
    stored_bytes: int | None = None
    stored_bytes_source: str | None = None
    unrecognised_keys: tuple[str, ...] = ()
    unloaded_checkpoint_layers: int = 0
    modules: tuple[LinearModule, ...] = ()
    norm: Literal["rms", "layer"] = "rms"
    norms_per_layer: int = 2
    qk_norm: bool = False
    quant: QuantConfig | None = field(init=False, default=None, hash=False, compare=False,
                                      repr=False)

    def __post_init__(self) -> None:
        parsed = detect(self.quantization_config) if self.quantization_config else None
        object.__setattr__(self, "quant", parsed)

    @property
    def total_parameters(self) -> int:
        """Logical parameters of the whole model (what transformers instantiates)."""
        return sum(g.count for g in self.params)

    def parameters_by_role(self, *roles: str) -> int:
        """Sum of the groups whose role is in ``roles``."""
        return sum(g.count for g in self.params if g.role in roles)

    @property
    def full_attention_layers(self) -> int:
        """Layers whose KV cache grows with the whole sequence."""
        return sum(1 for t in self.layer_types if t != "sliding_attention")

    @property
    def sliding_attention_layers(self) -> int:
        """Layers whose KV cache is capped at ``sliding_window`` tokens."""
        return sum(1 for t in self.layer_types if t == "sliding_attention")
