"""The facts about one model that the memory stage consumes (frozen, typed, sourced).

Every count is logical parameters as transformers instantiates them (``model.num_parameters()``),
split by component so a quantization can keep embeddings, lm_head, norms, biases and routers in
16 bit while it packs the linear weights of the decoder layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from ..formats import QuantConfig, detect

if TYPE_CHECKING:  # architecture.py imports this module's value types
    from .architecture import Architecture

__all__ = ["ParamRole", "ParamGroup", "ModuleRole", "MODULE_ROLES", "LinearModule",
           "PositionKind", "PersistentBuffer", "MlaDims", "MoeDims", "RecurrentState",
           "VisionTower", "ModelFacts",
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


ModuleRole = Literal["attention_in", "attention_latent", "attention_out", "mlp_in", "mlp_out",
                     "shared_expert_in", "shared_expert_out", "expert", "router", "lm_head"]
"""What a linear module does in its layer, which decides what autograd saves when it trains.

The family states it (``model/families``); the memory stage reads the role, never the module's
name, so a family whose projection is called ``Wqkv`` is sized like Llama's ``q_proj``.

- ``attention_in``: reads the attention norm's output (q, k, v, fused qkv; MLA's ``q_a_proj``,
  ``kv_a_proj_with_mqa`` and a direct ``q_proj``). Adapting one keeps that output for backward.
- ``attention_latent``: MLA's up-projections (``q_b_proj``, ``kv_b_proj``), which read a latent
  norm's output rather than the layer's attention norm (DeepSeek-V2 paper §2.1.2); the latents
  are counted whatever trains, so adapting these saves nothing more.
- ``attention_out``: the output projection (``o_proj``, ``dense``, ``attn.c_proj``); adapting it
  keeps the attention output.
- ``mlp_in`` / ``mlp_out``: the dense MLP's first matrices (gate, up, fused gate_up, fc) and its
  last (down); adapting ``mlp_in`` keeps the MLP norm's output, ``mlp_out`` the product.
- ``shared_expert_in`` / ``shared_expert_out``: the same matrices of DeepSeek's always-on shared
  expert, which sits in MoE layers beside the routed experts: it reads the MLP norm's output like
  ``mlp_in``, but is not one of the dense-layer readers (:class:`memory.activations.TrainedParts`).
- ``expert``: a stacked routed-expert parameter (``mlp.experts.gate_up_proj``).
- ``router``: the MoE router (``mlp.gate``, gpt-oss ``mlp.router``).
- ``lm_head``: the output projection to the vocabulary (never in PEFT's ``all-linear``).
"""

MODULE_ROLES: frozenset[str] = frozenset(get_args(ModuleRole))

PositionKind = Literal["rope", "learned", "alibi", "none"]
"""How a model encodes positions: ``rope`` (rotary, Su et al. 2021; an engine may cache cos/sin
tables), ``learned`` (absolute position embeddings, a parameter: GPT-2 ``wpe``), ``alibi``
(attention biases, Press et al. 2022: neither a parameter nor a rotary cache; Falcon with
``alibi: true``), ``none`` (no position signal at all: Mamba-2's recurrence orders the
tokens)."""


@dataclass(frozen=True)
class LinearModule:
    """One kind of linear layer, by its module path inside a decoder layer (what LoRA targets).

    Attributes:
        path: module path below the layer, e.g. ``"self_attn.q_proj"``, ``"mlp.c_fc"``,
            ``"mlp.experts.gate_up_proj"``; ``"lm_head"`` for the output projection.
        rows: out_features (elements).
        cols: in_features (elements).
        count: instances in the whole model (layers that carry it).
        role: what it does in its layer (:data:`ModuleRole`).
        experts: 0 for an ``nn.Linear``/``Conv1D`` module; for a stacked routed-expert parameter,
            the number of experts it stacks (PEFT ``target_parameters`` adds one adapter per
            expert).
        converted_from: the per-expert checkpoint tensor names transformers v5 concatenates into
            this stacked parameter at load (``gate_up_proj`` from ``("gate_proj", "up_proj")``;
            Mixtral ``("w1", "w3")``); empty when the checkpoint already stores it stacked
            (gpt-oss) or for plain modules. PEFT 0.21 maps targets by these names
            (``peft/utils/transformers_weight_conversion.py`` ``_MOE_TARGET_MODULE_MAPPING``).
    """

    path: str
    rows: int
    cols: int
    count: int
    role: ModuleRole
    experts: int = 0
    converted_from: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The last component of ``path`` (``q_proj``)."""
        return self.path.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class PersistentBuffer:
    """A buffer transformers registers as persistent: loaded from the checkpoint, not a parameter.

    Attributes:
        name: module path of the buffer, e.g. ``"mlp.gate.e_score_correction_bias"``.
        elements: elements over the whole model.
        dtype: torch dtype name as transformers creates it (``"float32"``).
    """

    name: str
    elements: int
    dtype: str


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
class RecurrentState:
    """The per-sequence state of one kind of Mamba / linear-attention layer (not per token).

    transformers 5.24 keeps it in ``cache_utils.LinearAttentionLayer``: ``conv_states`` of shape
    ``[batch, conv_channels, conv_kernel]`` in the activations' dtype (``update_conv_state``
    keeps the last ``conv_kernel`` inputs of the causal convolution) and ``recurrent_states``
    (the SSM or delta-rule state, ``state_elements`` per sequence) in ``state_dtype``.

    Attributes:
        kind: ``"selective_scan"`` (Mamba-1: intermediate × d_state), ``"ssd"`` (Mamba-2's
            state-space duality scan: heads × head_dim × d_state) or ``"gated_delta_net"``
            (value heads × k_head_dim × v_head_dim).
        layers: decoder layers holding this state.
        conv_channels: channels of the causal convolution per layer.
        conv_kernel: its width (``conv_kernel`` / ``mamba_d_conv`` / ``linear_conv_kernel_dim``).
        state_elements: elements of the recurrent state per layer per sequence.
        state_dtype: torch dtype name of the recurrent state: ``"float32"`` where the GPU kernel
            returns it in fp32 (mamba_ssm ``_state_passing_fwd`` / ``selective_scan_cuda``,
            flash-linear-attention ``chunk_gated_delta_rule``), ``"compute"`` for the
            activations' dtype.
        served_state_dtype: the recurrent state's dtype in vLLM's pool: ``"compute"`` (its
            ``mamba_ssm_cache_dtype`` "auto" is the model dtype,
            ``MambaStateDtypeCalculator._mamba_state_dtype``) unless config.json names one
            (Nemotron-H ``mamba_ssm_cache_dtype: float32``).
        in_proj_width: outputs of the mixer's input projection(s) per token (the kernel's
            working rule, ``memory/recurrent_state.mixer_working_bytes``).
        inner: width of the scan's output per token (Mamba I; gated delta-net value width).
        heads: SSM heads (Mamba-2) or value heads (gated delta-net); 0 for Mamba-1.
        groups: B/C groups (Mamba-2 ``n_groups``).
        chunk: tokens per chunk of the GPU kernel (SSD ``chunk_size``, 256; delta rule 64;
            Mamba-1's selective scan 2048).
    """

    kind: str
    layers: int
    conv_channels: int
    conv_kernel: int
    state_elements: int
    state_dtype: str = "float32"
    served_state_dtype: str = "compute"
    in_proj_width: int = 0
    inner: int = 0
    heads: int = 0
    groups: int = 0
    chunk: int = 0


@dataclass(frozen=True)
class VisionTower:
    """A vision-language model's image encoder and its processor's rule for image tokens.

    Attributes:
        parameters: elements of the vision tower and the multimodal projector (counted in
            ``Architecture.params`` too, groups ``vision_tower`` / ``multi_modal_projector``).
        rule: ``"fixed"`` (every image becomes ``tokens_per_image`` tokens: Gemma 3's
            ``mm_tokens_per_image``, pan & scan off) or ``"grid"`` (Qwen2-VL / Qwen2.5-VL:
            ``smart_resize`` to multiples of ``patch_size × merge_size``, then one token per
            ``(patch_size × merge_size)²`` pixels).
        tokens_per_image: the fixed rule's count.
        patch_size: pixels per patch side (grid rule).
        merge_size: patches merged per token side (grid rule).
        min_pixels: smallest image area after resizing (grid rule).
        max_pixels: largest image area after resizing (grid rule).
    """

    parameters: int
    rule: str
    tokens_per_image: int = 0
    patch_size: int = 14
    merge_size: int = 2
    min_pixels: int = 56 * 56
    max_pixels: int = 28 * 28 * 1280


@dataclass(frozen=True, kw_only=True)
class ModelFacts:
    """What gpusizer knows about a model, with where each fact came from.

    Attributes:
        model_id: Hub id or folder path.
        revision: commit sha, tag or branch the facts describe.
        source: how the facts were resolved: ``path`` | ``registry`` | ``hub``.
        source_detail: human text naming the file(s), registry entry and its public source, and
            the architecture's notes.
        model_type: config.json ``model_type`` (``"llama"``…), which picked the family; the JSON
            output prints it as ``model.architecture``.
        architecture: what the family read: shapes, attention layout, parameter groups, module
            roles, positions, PEFT defaults and buffers
            (:class:`~gpusizer.model.architecture.Architecture`).
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
    """

    model_id: str | None
    revision: str | None
    source: str
    source_detail: str
    model_type: str
    architecture: Architecture
    stored_dtype: str | None = None
    stored_format: str | None = None
    quantization_config: dict | None = field(default=None, hash=False, compare=False)
    stored_bytes: int | None = None
    stored_bytes_source: str | None = None
    unrecognised_keys: tuple[str, ...] = ()
    quant: QuantConfig | None = field(init=False, default=None, hash=False, compare=False,
                                      repr=False)

    def __post_init__(self) -> None:
        parsed = detect(self.quantization_config) if self.quantization_config else None
        object.__setattr__(self, "quant", parsed)
