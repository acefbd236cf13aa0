"""The JSON outputs as pydantic models: their JSON Schemas (``gpusizer schema --output NAME``) and
the reference of docs/json-output.md are generated from these classes.

The documents themselves are built as plain dicts (``json_report``, ``simulation``,
``alternatives_report``, ``pipeline.fitting``); tests validate real outputs of every command
against these schemas, and check that every key an output carries is declared here, so the
schema and the documents cannot drift apart. Every object allows keys beside the declared ones:
CONTRACT.md raises ``schema_version`` only when a field is renamed or removed, so a consumer must
tolerate new keys.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import SCHEMA_VERSION

__all__ = ["OUTPUT_MODELS", "output_schema", "PlanOutput", "EstimateOutput", "SimulateOutput",
           "FitOutput", "AlternativesOutput", "CardsOutput"]

State = Literal["acceptable", "to_confirm", "exclude"]
EstimatedFit = Literal["fits", "does_not_fit", "borderline", "unknown"]
Provenance = Literal["estimated", "simulated", "measured", "declared"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class CatalogRecord(_Out):
    """One catalog file read (``gpusizer.catalogs[]``)."""

    file: str = Field(description="the file as given (or the bundled catalog's name)")
    sha256: str = Field(description="SHA-256 of the file's bytes")
    kind: str | None = Field(None, description="the reader used: yaml, csv, skypilot-vms, "
                                               "bundled-default")
    offers: int | None = Field(None, description="offers read from it")
    skipped_rows: list[dict[str, Any]] = Field(
        default_factory=list, description="rows that gave no offer: {row, label, reason}")


class Producer(_Out):
    """Who made the document (``gpusizer``)."""

    version: str = Field(description="gpusizer's version")
    catalogs: list[CatalogRecord] = Field(default_factory=list,
                                          description="the catalog files read, in order")
    registry: str | None = Field(None, description="the bundled model registry used")
    stack: dict[str, str] | None = Field(
        None, description="library → the version whose rules were applied (the sheet's stack "
                          "block, auto resolved to the pinned version; docs/stack-rules.md), "
                          "and framework as the sheet gives it")


class ModelOut(_Out):
    """The model (``model``)."""

    id: str | None = Field(description="Hub id, or null for a bare parameter count")
    revision: str = Field(description="commit sha, tag or branch as the sheet gives it")
    parameters: int | None = Field(description="the whole model's logical parameter count")
    trainable_parameters: int | None = Field(
        description="0 for inference; the LoRA (or full) trainable count for adaptation")
    architecture: str | None = Field(description="config.json model_type")
    context_window_tokens: int | None = Field(
        description="max_position_embeddings as config.json states it (tokens)")
    source: str = Field(description="registry | path | hub | parameters")
    source_detail: str = Field(description="where the facts were read, in words")
    stored_format: str | None = Field(None, description="the checkpoint's stored format")
    stored_bytes: int | None = Field(None, description="the checkpoint's size (bytes)")
    parameters_by_component: dict[str, int] = Field(
        default_factory=dict, description="parameter count per component group")
    unrecognised_keys: list[str] = Field(default_factory=list,
                                         description="config.json keys gpusizer does not read")


class ItemOut(_Out):
    """One memory item (``memory.items[]``), per GPU."""

    name: str = Field(description="the item's name (weights, kv_cache, cuda_context, …)")
    bytes: int | None = Field(description="largest size over its phases (bytes); null when "
                                          "unknown, then unknown_reason says why")
    provenance: Provenance
    phases: list[str] = Field(description="phases it is live in; [] = not live")
    source: str = Field(description="the formula's source")
    formula: str | None = Field(None, description="the arithmetic, with its figures")
    non_torch: bool = Field(False, description="true when the caching allocator does not hold "
                                               "it (counted in device_peak_bytes only)")
    holder: Literal["torch", "allocator", "non_torch"] | None = Field(
        None, description="torch: tensors hold it (peak_bytes); allocator: the caching "
                          "allocator reserves it without a tensor (reserved_peak_bytes and "
                          "device_peak_bytes, not peak_bytes); non_torch: outside the allocator "
                          "(device_peak_bytes only)")
    unknown_reason: str | None = Field(None, description="why bytes is null")
    phase_bytes: dict[str, int] | None = Field(None, description="bytes per phase where they "
                                                                 "differ")


Interval = Annotated[list[int], Field(min_length=2, max_length=2)] | None
"""``[low, high]`` bytes (CONTRACT.md intervals)."""


_IV_TEXT = ("[low, high] bytes: the nominal 90 % range of the figure given the measured spread "
            "of its items' kinds (data/intervals.json); null when unknown or uncalibrated")


class _Intervals(_Out):
    """The peaks' intervals (CONTRACT.md), on a phase, the memory block and an offer's memory."""

    peak_interval_bytes: Interval = Field(None, description=_IV_TEXT)
    reserved_peak_interval_bytes: Interval = Field(None, description=_IV_TEXT)
    device_peak_interval_bytes: Interval = Field(None, description=_IV_TEXT)


class PhaseOut(_Intervals):
    """One phase (``memory.phases[]``), per GPU."""

    name: str
    peak_bytes: int | None = Field(description="allocated peak in this phase (bytes)")
    reserved_peak_bytes: int | None = Field(
        None, description="peak_bytes + the live allocator items (predicts "
                          "torch.cuda.max_memory_reserved in this phase); null when one is unknown")
    device_peak_bytes: int | None = Field(description="reserved_peak_bytes + live non-PyTorch "
                                                      "items; null when one of them is unknown")
    known_bytes: int = Field(description="the known items' sum (bytes)")
    items: list[str] = Field(description="items live in this phase")
    unknown_items: list[str] = Field(description="live items of unknown size")


class PoolOut(_Out):
    """A serving engine's split per GPU (``pool``; ``vllm`` is its alias until schema_version
    3)."""

    engine: str
    budget_bytes: int = Field(description="device total × the engine's utilization (bytes)")
    kv_cache_bytes: int | None = Field(description="what is left for the KV cache (bytes)")
    kv_tokens: int | None = Field(description="tokens the KV pool holds")
    max_concurrency: float | None = Field(description="kv_tokens / tokens per sequence")
    total_bytes: int | None = Field(None, description="the device total used (bytes)")
    total_source: str | None = Field(None, description="which total was used and why")
    weights_bytes: int | None = None
    activation_bytes: int | None = None
    non_torch_bytes: int | None = None
    block_bytes: int | None = None
    kv_blocks: int | None = None
    starts: bool | None = Field(None, description="one sequence of the required length fits")
    sequences_held: int | None = None
    tokens_per_sequence: int | None = None
    required_sequences: int | None = None
    required_kv_bytes: int | None = None
    command: str | None = Field(None, description="the engine's exact command line under "
                                "which the verdict holds (vllm serve …, python -m "
                                "sglang.launch_server …)")
    log_lines: list[str] = Field([], description="the start-up log lines the engine would "
                                 "print for this split, in its own units")
    settings: dict[str, Any] = Field({}, description="the engine settings the split used, "
                                     "resolved (SGLang's mem_fraction_static when auto, …)")


class MemoryOut(_Intervals):
    """The memory estimate (``memory``): every figure per GPU under the sheet's placement."""

    per_gpu: bool = True
    gpus: int
    card: str | None = Field(description="the card whose rules were applied, or null")
    weights_format: str
    stored_format: str | None
    weights_bytes: int | None
    reserve_bytes: int = Field(description="the sheet's declared reserve (bytes)")
    envelope_bytes: int | None = Field(description="weights_bytes + reserve")
    peak_bytes: int | None = Field(description="predicted torch.cuda.max_memory_allocated")
    reserved_peak_bytes: int | None = Field(
        None, description="predicted torch.cuda.max_memory_reserved: peak_bytes + what the "
                          "caching allocator reserves without a tensor (slack, fragmentation); "
                          "between peak_bytes and device_peak_bytes, never added to either")
    device_peak_bytes: int | None = Field(
        description="reserved_peak_bytes + non-PyTorch items (what nvidia-smi shows); null when "
                    "an item live in the peak phase is unknown")
    conservative_envelope_bytes: int | None = None
    lower_bound_bytes: int | None = Field(None, description="the certain lower bound (bytes)")
    lower_bound_covers: str | None = Field(None, description="what the lower bound counts")
    host_ram_bytes: int | None = Field(
        None, description="host RAM per node the run needs: max(loading the checkpoint, "
                          "offloaded and paged states during the steps); null when unknown")
    host_ram_formula: str | None = Field(None, description="how host_ram_bytes was made")
    items: list[ItemOut]
    phases: list[PhaseOut]
    pool: PoolOut | None = None
    vllm: PoolOut | None = Field(None, description="alias of pool until schema_version 3")
    training: dict[str, Any] | None = Field(None, description="adaptation facts: trainable "
                                                              "parameters and dtype, tokens, "
                                                              "placement, deepspeed_reference")
    notes: list[str] = Field(default_factory=list)


class Citation(_Out):
    """An evidence document cited (``criteria.*.evidence[]``, ``evidence.used[]``)."""

    document: str
    version: str
    scope: str


class CriterionOut(_Out):
    """One of the six criteria of an offer."""

    state: State
    reason: str
    condition: str | None = Field(description="what must be confirmed; null when acceptable")
    evidence: list[Citation]


class Criteria(_Out):
    """The six criteria (R1), each with a state."""

    workload: CriterionOut
    compatibility: CriterionOut
    memory: CriterionOut
    quality: CriterionOut
    distribution: CriterionOut
    budget: CriterionOut


class OfferMemory(_Intervals):
    """The offer's own per-card estimate (``offers[].memory``)."""

    peak_bytes: int | None
    device_peak_bytes: int | None
    lower_bound_bytes: int | None
    weights_format: str
    notes: list[str]


class ThroughputOut(_Out):
    """CONTRACT.md ``offers[].throughput``: labelled bounds per lot at the sheet's concurrency
    (``decision.throughput``); never used to order offers (R3)."""

    decode_tokens_per_s_bound: float | None = Field(
        description="generated tokens/s at most: bandwidth ÷ bytes read per step")
    usd_per_million_tokens_bound: float | None = Field(
        description="USD per million generated tokens at least, at the decode bound")
    prefill_seconds_bound: float | None = Field(
        description="seconds to prefill the prompts at least: FLOPs ÷ peak")
    training_days_bound: float | None = Field(
        description="days for training.dataset_tokens × epochs at training.mfu (6 N T FLOPs)")
    measured_decode_tokens_per_s: float | None = Field(
        None, description="a measured figure from evidence (decode_tokens_per_s), beside it")
    measured_source: str | None = Field(None, description="the evidence document it came from")
    source: str = Field(description="the formulas and card facts used")


class OfferOut(_Out):
    """One classified offer (``offers[]``)."""

    id: str
    provider: str
    card: str = Field(description="the card's name as the catalog gives it")
    canonical_card: str | None = Field(description="the card table's name; null when unknown")
    cards: int = Field(description="cards in the lot")
    days: float | None
    total_usd: float | None = Field(description="price of the lot for `days`")
    device_bytes: int | None = Field(description="nvidia-smi total from the card table; never a "
                                                 "catalog's claim")
    claimed_device_bytes: int | None = Field(
        None, description="for a card the table does not know: the catalog's own per-GPU "
                          "memory (its claim), used only for estimated_fit")
    estimated_fit_basis: str | None = Field(
        None, description="what estimated_fit was judged at: `card table`, `catalog's claim`, "
                          "or the memory every variant of an ambiguous name has; null when "
                          "nothing gives a memory figure")
    estimated_fit: EstimatedFit
    headroom_bytes: int | None = Field(description="device bytes - device peak - margin; for a "
                                                   "serving engine the pool's spare KV bytes")
    spot: bool = False
    card_note: str | None = Field(None, description="how the card was decided, or why unknown")
    pool: PoolOut | None = None
    vllm: PoolOut | None = None
    memory: OfferMemory | None
    criteria: Criteria
    verdict: Literal["selected", "conditional", "excluded"]
    rank: int | None = Field(description="order of selected offers (R3)")
    provisional_rank: int | None = Field(
        description="order of conditional offers estimated to fit, labelled provisional")
    throughput: ThroughputOut | None = Field(
        None, description="speed bounds (null without a card the table describes)")


class Change(_Out):
    """One sheet field an invalidator changes."""

    field: str = Field(description="the sheet's dotted key")
    value: int = Field(description="the sheet's value")
    changed_to: int = Field(description="the value considered")


class InvalidatorOut(_Out):
    """What could invalidate the conclusion, under machine keys (``invalidator_details[]``)."""

    kind: Literal["longer_input", "longer_input_impossible", "unknown_item", "declared_items",
                  "unknown_card", "card_fact", "quality_evaluation", "bare_count"]
    subjects: list[str] = Field(description="item names, a card, the corpus; [] for the sheet")
    changes: list[Change] = Field(description="the fields it changes, by how much")
    device_peak_bytes: int | None = Field(description="estimated device peak per GPU after "
                                                      "the changes (bytes)")
    peak_change_bytes: int | None = Field(description="its effect on the device peak (bytes)")
    text: str = Field(description="the same sentence as in `invalidators`")


class EvidenceUse(_Out):
    """Evidence read (``evidence``)."""

    used: list[Citation]
    ignored: list[dict[str, str]] = Field(description="{file, reason}: why it does not count")


class Discrepancy(_Out):
    """A catalog's memory claim off the card table (``catalog_discrepancies[]``)."""

    offer_id: str
    card: str
    catalog_bytes: int
    card_bytes: int
    relative_difference: float


class Checkpoint(_Out):
    """The checkpoint to download (``checkpoint``)."""

    bytes: int | None
    source: str


class EstimateFit(_Out):
    """``estimate --card``: the memory criterion on the card (``fit``)."""

    state: State
    reason: str
    condition: str | None
    device_bytes: int | None
    estimated_fit: EstimatedFit
    headroom_bytes: int | None


class _Versioned(_Out):
    schema_version: Literal[2] = Field(
        description="2 for CONTRACT.md's page; rises only when a field is renamed or removed")


class EstimateOutput(_Versioned):
    """``gpusizer estimate --format json``: memory only."""

    gpusizer: Producer
    sheet: dict[str, Any] = Field(description="the validated sheet, defaults filled in "
                                              "(`gpusizer schema`)")
    model: ModelOut
    card: str | None = Field(description="the --card used, or null")
    memory: MemoryOut
    offers: list[OfferOut] = Field(description="always empty for estimate")
    fit: EstimateFit | None = Field(None, description="with --card only")


class SimulateOutput(EstimateOutput):
    """``gpusizer simulate --format json``: estimate's document with simulated items and the
    ``simulation`` block."""

    simulation: dict[str, Any] = Field(description="engine, versions, attention kernels, GPU "
                                                   "rules, what it cannot see, difference to "
                                                   "estimate")


class CampaignVariantOut(_Out):
    """One variant of a campaign (``campaign.variants[]``)."""

    name: str = Field(description="the variant's name; `base` is the sheet's own workload")
    sheet_sha256: str = Field(description="SHA-256 of the variant's whole sheet (its evidence)")
    peak_bytes: int | None = Field(description="estimated peak allocated per GPU, no card rules")
    device_peak_bytes: int | None = Field(description="the same with non-PyTorch items")


class CampaignOfferOut(_Out):
    """One offer's coverage (``campaign.offers[]``); no reason text (``--variant NAME``)."""

    id: str
    covers: list[str] = Field(description="variants it covers: not excluded there and "
                                          "estimated_fit `fits`")
    total_usd: float | None = Field(description="the lot's total, as in offers[]")


class CampaignOut(_Out):
    """A sheet with variants (CONTRACT.md ``campaign``)."""

    variants: list[CampaignVariantOut]
    offers: list[CampaignOfferOut] = Field(description="by variants covered (most first), then "
                                                       "total USD, then catalog order")
    cheapest_covering: str | None = Field(description="the cheapest offer covering every "
                                                      "variant; null when none does")


class PlanOutput(_Versioned):
    """``gpusizer plan --format json`` (CONTRACT.md "JSON output")."""

    gpusizer: Producer
    sheet: dict[str, Any] = Field(description="the validated sheet, defaults filled in")
    sheet_sha256: str = Field(description="SHA-256 of the sheet's canonical JSON")
    model: ModelOut
    card: None = Field(description="always null for plan (each offer has its card)")
    memory: MemoryOut
    offers: list[OfferOut] = Field(description="selected by rank, then conditional by "
                                               "provisional_rank, then the rest")
    checkpoint: Checkpoint
    invalidators: list[str] = Field(description="what could invalidate the conclusion (R15)")
    invalidator_details: list[InvalidatorOut] = Field(
        description="the same, in order, under machine keys")
    evidence: EvidenceUse
    catalog_discrepancies: list[Discrepancy]
    simulations: dict[str, Any] | None = Field(None, description="plan --simulate: per card")
    campaign: CampaignOut | None = Field(None, description="a sheet with variants only: which "
                                                           "variants each offer covers")


class FitLimit(_Out):
    """One inverse question answered under a machine key (``limits.<dimension>``)."""

    question: str = Field(description="the key of the same answer in `answers`")
    largest: int | None = Field(description="the largest value that fits; null when not even "
                                            "the smallest does")
    required: int = Field(description="the sheet's own value")
    unit: Literal["sequences", "tokens"]
    change: int | None = Field(description="largest - required (what changes, by how much)")
    device_peak_bytes: int | None = Field(description="estimated device peak per GPU at "
                                                      "`largest` (bytes)")
    headroom_bytes: int | None = Field(description="the fit rule's headroom at `largest`")
    peak_change_bytes: int | None = Field(
        description="device peak at `largest` minus at `required` (effect on the peak)")


class FitOutput(_Out):
    """``gpusizer fit --format json``."""

    schema_version: Literal[2]
    card: str = Field(description="the card's canonical name")
    device_bytes: int = Field(description="the card's nvidia-smi total (bytes)")
    margin: str = Field(description="the sheet's margin as written")
    answers: dict[str, int | None] = Field(description="question (a sentence) -> largest value")
    limits: dict[str, FitLimit] = Field(
        description="the same answers under machine keys: concurrency, prompt_tokens, "
                    "context_tokens (inference); microbatch, sequence_length, tokens_per_update "
                    "(training)")
    notes: list[str]


class AlternativeOffer(_Out):
    """One offer's single changes (``alternatives`` ``offers[]``)."""

    offer_id: str
    card: str | None
    memory_state: State
    memory_reason: str
    alternatives: list[dict[str, Any]]
    not_offered: list[dict[str, str]]


class AlternativesOutput(_Out):
    """``gpusizer alternatives --format json``."""

    schema_version: Literal[2]
    gpusizer: Producer
    sheet_sha256: str
    sheet: dict[str, Any]
    offers: list[AlternativeOffer]
    excluded_on_memory: int
    estimated_not_to_fit: int
    note: str


class CountOut(_Out):
    """One card at one GPU count (``cards[].counts[]``)."""

    gpus: int = Field(description="GPUs in the placement judged")
    strategy: str = Field(description="the multi-GPU strategy judged (single for one GPU)")
    estimated_fit: EstimatedFit | None = Field(
        description="the fit rule's answer (CONTRACT.md estimated_fit); null when refused")
    headroom_bytes: int | None = Field(description="device − device peak − margin, per GPU")
    certain: bool = Field(description="the certain lower bound alone exceeds the device")
    peak_bytes: int | None = Field(description="allocated peak per GPU")
    device_peak_bytes: int | None = Field(description="device peak per GPU (null: unknown)")
    provenance: Provenance | None = Field(description="of the figures; null when refused")
    reason: str | None = Field(description="the judgement in words, or why it was refused")
    refused: str | None = Field(description="why the sheet cannot run at this count on this "
                                            "card (e.g. heads that do not split over the GPUs), "
                                            "else null")
    sheet_count: bool = Field(description="this is the sheet's own placement.gpus")


class CardOut(_Out):
    """One card of the card table (``cards[]``)."""

    card: str = Field(description="the card table's canonical name")
    device_bytes: int = Field(description="nvidia-smi memory.total, bytes")
    device_bytes_status: str = Field(description="how the card table knows it")
    compute_capability: str | None = Field(description="e.g. 9.0, or null when unknown")
    fewest_gpus: int | None = Field(description="the fewest GPUs (of gpu_counts) that fit")
    counts: list[CountOut]


class CardsAnswer(_Out):
    """The answer first (``answer``): the fewest GPUs that fit, then the smallest card."""

    card: str
    gpus: int
    strategy: str
    headroom_bytes: int | None


class CardsOutput(_Versioned):
    """``gpusizer cards SHEET --format json``: every card at 1, 2, 4 and 8 GPUs, no catalog."""

    gpusizer: dict[str, Any]
    sheet: dict[str, Any]
    model: ModelOut
    strategy: dict[str, Any] = Field(description="{name, default, source}: the multi-GPU "
                                                 "strategy judged and where it comes from")
    gpu_counts: list[int]
    sheet_gpus: int
    answer: CardsAnswer | None = Field(description="null: no card fits at up to 8 GPUs")
    answer_text: str
    cards: list[CardOut]
    provenance: dict[str, str] = Field(description="what every figure is and where it comes "
                                                   "from")


OUTPUT_MODELS: dict[str, type[BaseModel]] = {
    "plan": PlanOutput, "estimate": EstimateOutput, "simulate": SimulateOutput,
    "fit": FitOutput, "alternatives": AlternativesOutput, "cards": CardsOutput,
}
"""``gpusizer schema --output NAME`` → the model of that command's JSON."""


def output_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12, as pydantic writes it) of one command's JSON output.

    Raises:
        KeyError: ``name`` is not a key of :data:`OUTPUT_MODELS`.
    """
    schema = OUTPUT_MODELS[name].model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"gpusizer {name} --format json (schema_version {SCHEMA_VERSION})"
    return schema
