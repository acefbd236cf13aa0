"""What an inference engine tells the memory stage: the ``Engine`` protocol and its pool split.

Every rule that differs between engines is asked of the engine object (``ENGINES[name]``), never
written as a comparison with an engine's name: its own sheet keys, the KV layout, the prefill
working memory, the working-memory rules of a forward, the placement rule, the card rule for fp8
weights, what bitsandbytes quantizes under it, the pool a serving engine takes at start and the
condition under which that pool serves the workload, and whether ``simulate`` and ``measure`` run
it. ``README.md`` in this folder lists the files a new engine touches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...catalog.types import Card
    from ...model.facts import ModelFacts
    from ...sheet import Inference, Sheet, Stack
    from ..items import Item
    from ..kv_cache import KvLayout
    from ..placement import PlacementRule, Share

__all__ = ["Engine", "EngineBase", "PoolSplit", "PoolCondition"]


@dataclass(frozen=True, kw_only=True)
class PoolSplit:
    """How a serving engine splits the memory it takes at start on one GPU (per GPU, bytes).

    The fields are those vLLM's start-up log reports; another engine fills the same figures
    under its own names (SGLang's ``mem_fraction_static`` budget is ``budget_bytes``).

    Attributes:
        engine: the engine's name (``ENGINES`` key) whose rule made the split.
        total_bytes: the device total used (CUDA-visible total when the card table has it).
        total_source: which total was used and why.
        budget_bytes: what the engine takes, total × its utilization setting.
        weights_bytes: model weights per GPU incl. the engine's own weight-sized buffers (vLLM's
            rotary cos/sin cache).
        activation_bytes: activation peak of the engine's profile run.
        non_torch_bytes: non-PyTorch memory per GPU inside the budget (None when unknown).
        kv_cache_bytes: what is left for the KV cache (negative: the engine refuses to start).
        block_bytes: bytes of one KV block (block_size tokens, all layers) per GPU.
        kv_blocks: whole blocks that fit.
        kv_tokens: kv_blocks × block_size.
        max_concurrency: kv_tokens / tokens per sequence (vLLM's "Maximum concurrency"),
            floored to 0.01.
        starts: True when one sequence of the required length fits (the engine starts).
        sequences_held: whole sequences of the required length the pool holds at once (compare
            this, not the rounded ``max_concurrency``, with the required concurrency).
        tokens_per_sequence: the required length (prompt + new tokens: vLLM's max_model_len).
        required_sequences: the sequences this GPU serves at once (the sheet's concurrency; its
            share under ddp replicas).
        required_kv_bytes: the KV bytes those sequences need at the required length, in whole
            blocks.
        command: the engine's exact command line under which this split (and the verdict
            drawn from it) holds (CONTRACT.md ``pool.command``).
        log_lines: the start-up log lines the engine would print for this split, with its own
            figures and units (to compare with a real log line by line).
        settings: the engine settings the split used, resolved (SGLang's
            ``mem_fraction_static`` when auto, …), name → value.
    """

    engine: str
    total_bytes: int
    total_source: str
    budget_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int | None
    kv_cache_bytes: int | None
    block_bytes: int
    kv_blocks: int | None
    kv_tokens: int | None
    max_concurrency: float | None
    starts: bool | None
    sequences_held: int | None = None
    tokens_per_sequence: int = 0
    required_sequences: int = 1
    required_kv_bytes: int = 0
    command: str = ""
    log_lines: tuple[str, ...] = ()
    settings: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class PoolCondition:
    """Whether a pool serves the workload, as its engine judges it.

    Attributes:
        starts: False when the engine refuses to start (certain: its own start-up rule).
        holds: True when the pool holds every required sequence at the required length at once.
        reason: the comparison in words, with the figures.
    """

    starts: bool
    holds: bool
    reason: str


class EngineBase:
    """What every engine derives the same way: ``simulate_supported`` / ``measure_supported``
    from its refusal texts (None: the tool runs it)."""

    simulate_refusal: str | None = None
    measure_refusal: str | None = None
    modeling_library: str | None = None
    """The library whose model code the engine runs, whose version rules (``gpusizer.stack``)
    then apply to how that code holds the weights (``transformers``), or None for an engine
    with model code of its own."""

    @property
    def simulate_supported(self) -> bool:
        """``gpusizer simulate`` runs this engine's model code."""
        return self.simulate_refusal is None

    @property
    def measure_supported(self) -> bool:
        """``gpusizer measure``'s harness runs this engine."""
        return self.measure_refusal is None


class Engine(Protocol):
    """An inference engine's memory rules. Implementations: ``transformers``, ``vllm``.

    Attributes:
        name: the sheet's ``inference.engine`` value.
        label: how reports name it (``vLLM``).
        KEYS: the ``inference`` keys only this engine reads (``sheet.ENGINE_SHEET_RULES``,
            where the sheet refuses them under another engine, with the engine's other rules
            that need no model facts).
        simulate_refusal, measure_refusal: why ``simulate`` / ``measure`` do not run this engine,
            or None when they do (see ``simulate_supported`` / ``measure_supported``).
        placement: how it splits a model over GPUs (``placement.PlacementRule``).
        fused_moe: routed experts run through fused kernels with scratch buffers (vLLM
            ``fused_moe``), not a loop over experts.
        keeps_inputs_embeds: the embedding output stays referenced for the whole forward
            (transformers ``inputs_embeds``).
        paged_mamba_state: Mamba / linear-attention states are kept as vLLM's ``MambaSpec``
            pages (conv_kernel − 1 columns, SSM in ``mamba_ssm_cache_dtype``) rather than
            transformers' ``LinearAttentionLayer`` (``memory/recurrent_state.py``).
        modeling_library: the library whose model code it runs (``EngineBase``), or None.
        budget_rule: how a serving engine's budget is derived, in the report's words ("total ×
            gpu_memory_utilization"); empty without a pool.
        pool_peak_note: the note saying that ``peak_bytes`` is the pool's budget; empty without
            a pool.
    """

    name: str
    label: str
    KEYS: frozenset[str]
    simulate_refusal: str | None
    measure_refusal: str | None
    placement: PlacementRule
    fused_moe: bool
    keeps_inputs_embeds: bool
    paged_mamba_state: bool
    modeling_library: str | None
    budget_rule: str
    pool_peak_note: str

    @property
    def simulate_supported(self) -> bool:
        """``gpusizer simulate`` runs this engine's model code."""

    @property
    def measure_supported(self) -> bool:
        """``gpusizer measure``'s harness runs this engine."""

    def describe_cache(self, inference: dict[str, Any]) -> str:
        """The KV cache in words for the report header (``inference`` as the JSON holds it)."""

    def describe_attention(self, attention: str, *, mla: bool = False) -> str:
        """The attention kernel in words for the report header and the compatibility condition
        (the sheet's ``attention``; ``mla``: the model uses multi-head latent attention)."""

    def notes(self, inference: Inference) -> list[str]:
        """What the sheet asks that this engine sizes with a caveat."""

    def kv_layout(self, facts: ModelFacts, *, dtype_bytes: int, tp: int) -> KvLayout:
        """Bytes per cached token on one GPU under this engine's cache layout."""

    def kv_block_tokens(self, inference: Inference) -> int:
        """Tokens each layer's cache is rounded up to (paged blocks; 1 when not paged)."""

    def prompt_kv_bytes(self, layout: KvLayout, *, tokens: int, sequences: int,
                        block_tokens: int) -> int:
        """KV bytes held at the end of prefill of ``tokens`` prompt tokens."""

    def kv_static(self, inference: Inference) -> bool:
        """The whole cache is allocated before prefill (no growth)."""

    def attention_kernel(self, card_kernel: str) -> str:
        """The kernel that runs, given the one the card rules chose for the sheet."""

    def prefill_working(self, facts: ModelFacts, *, inference: Inference, share: Share,
                        dtype_bytes: int, kernel: str, weights_format: str,
                        stack: Stack) -> Item:
        """The ``prefill_working`` item: the largest live set of the prefill forward (``stack``:
        the sheet's library versions, whose rules may differ)."""

    def decode_transients(self, facts: ModelFacts, *, inference: Inference, kv_bytes: int,
                          layer_fraction: Any) -> list[Item]:
        """Transient items of a decode step beyond the forward's working set."""

    def pool(self, *, inference: Inference, facts: ModelFacts, card: Card | None,
             compute_dtype: str, weights_bytes: int, items: list[Item], layout: KvLayout,
             sequences: int, sheet: Sheet, tp: int) -> tuple[PoolSplit | None, list[str]]:
        """The memory the engine takes at start on one GPU (None: no pool, or no card) and
        the notes on it (``sheet``: its model, placement and ``stack``; ``tp``: the
        tensor-parallel ranks)."""

    def pool_items(self, items: list[Item], pool: PoolSplit, *, facts: ModelFacts,
                   compute_dtype: str, kv_needed: int) -> list[Item]:
        """The items once the pool is taken (the ``kv_cache`` item becomes the pool)."""

    def pool_condition(self, pool: PoolSplit) -> PoolCondition:
        """Whether ``pool`` starts and holds its required sequences at the required length."""
