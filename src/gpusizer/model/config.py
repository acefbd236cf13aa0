"""config.json → ModelFacts: pick the family by ``model_type``, read it, record what was not used.

Remote code is never executed: a config with ``auto_map`` is read by gpusizer's own family for
its ``model_type`` (and says so), and an unknown ``model_type`` is an error even with ``auto_map``.
"""

from __future__ import annotations

from collections.abc import Mapping
from ..errors import ModelError
from .config_reader import ConfigReader
from .facts import ModelFacts
from .families import family_for
from .stored_format import declared_quantization, stored_format

__all__ = ["KEYS_WITHOUT_MEMORY_EFFECT", "facts_from_config"]

KEYS_WITHOUT_MEMORY_EFFECT: frozenset[str] = frozenset({
    # Identity and bookkeeping.
    "architectures", "_name_or_path", "transformers_version", "_commit_hash",
    "model_type", "auto_map",  # model_type picks the family; auto_map is noted, never run
    # Special token ids (the vocabulary size is vocab_size).
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id",
    # Numerics that change no tensor shape.
    "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "initializer_range", "hidden_act",
    "hidden_activation", "activation_function",
    # Rotary position encoding: frequencies, not parameters; the context is max_position_embeddings
    # (CONTRACT: original_max_position_embeddings is the pre-extension length).
    "rope_theta", "rope_scaling", "rope_parameters", "rope_local_base_freq",
    "partial_rotary_factor", "original_max_position_embeddings",
    # Dropout (training-time masks only).
    "attention_dropout", "hidden_dropout", "embd_pdrop", "resid_pdrop", "attn_pdrop",
    # Runtime switches read by generate / the loss, not by the weights.
    "use_cache", "output_attentions", "output_hidden_states", "return_dict",
    "output_router_logits", "router_aux_loss_coef", "router_z_loss_coef", "pretraining_tp",
    "task_specific_params", "_attn_implementation",
    # Read by stored_format().
    "torch_dtype", "dtype", "quantization_config",
    # PretrainedConfig's own attributes, which ``to_dict()`` writes into a saved config
    # (transformers 4.x ``PretrainedConfig.__init__``): generation defaults, labels, flags.
    "add_cross_attention", "bad_words_ids", "begin_suppress_tokens", "chunk_size_feed_forward",
    "cross_attention_hidden_size", "diversity_penalty", "do_sample", "early_stopping",
    "encoder_no_repeat_ngram_size", "exponential_decay_length_penalty", "finetuning_task",
    "forced_bos_token_id", "forced_eos_token_id", "id2label", "is_decoder", "is_encoder_decoder",
    "label2id", "length_penalty", "max_length", "min_length", "no_repeat_ngram_size",
    "num_beam_groups", "num_beams", "num_return_sequences", "output_scores", "prefix",
    "problem_type", "pruned_heads", "remove_invalid_values", "repetition_penalty",
    "return_dict_in_generate", "suppress_tokens", "temperature", "tf_legacy_loss",
    "tie_encoder_decoder", "tokenizer_class", "top_k", "top_p", "torchscript", "typical_p",
    "use_bfloat16",
})
"""config.json keys known not to change memory for any family; anything else a family does not
read is recorded in ``ModelFacts.unrecognised_keys``. Family-specific lists live in each family
module's ``IGNORED_KEYS``."""


def _refuse_unbuildable(arch, where: str) -> None:
    """Refuse what transformers could not build, naming the key: query heads that the KV heads
    do not divide (``repeat_kv`` repeats each KV head ``num_attention_heads //
    num_key_value_heads`` times, LlamaAttention and its copies), and more routed experts per
    token than experts (``torch.topk`` over the router's logits).

    Raises:
        ModelError: the key, its value and what was expected.
    """
    heads, kv = arch.num_attention_heads, arch.num_key_value_heads
    if arch.mla is None and (kv > heads or heads % kv):
        raise ModelError(f"{kv} KV heads do not divide the {heads} query heads: transformers "
                         "repeats each KV head num_attention_heads // num_key_value_heads times; "
                         f"expected a divisor of {heads}", field="num_key_value_heads", value=kv,
                         file=where)
    moe = arch.moe
    if moe is not None and moe.experts_per_token > moe.num_experts:
        raise ModelError(f"{moe.experts_per_token} experts per token out of {moe.num_experts} "
                         f"experts: expected at most {moe.num_experts} (the router picks the "
                         "top-k of its experts)", field="num_experts_per_tok",
                         value=moe.experts_per_token, file=where)


def facts_from_config(config: Mapping[str, object], *, model_id: str | None,
                      revision: str | None, source: str, source_detail: str,
                      file: str | None = None,
                      side_files: Mapping[str, Mapping] | None = None) -> ModelFacts:
    """Facts about a model from its parsed config.json.

    Args:
        config: the parsed config.json.
        model_id: Hub id or folder path the config belongs to.
        revision: commit sha, tag or branch the config describes.
        source: ``path`` | ``registry`` | ``hub``.
        source_detail: human text naming the file(s) and public source.
        file: the file named in errors (default: ``source_detail``).
        side_files: files read next to config.json that a format's detector uses (name →
            parsed JSON; ``gpusizer.formats.side_files()`` names them).

    Returns:
        ModelFacts with parameter groups counted as transformers instantiates them; stored bytes
        are not read here (see ``safetensors_headers``).

    Raises:
        ModelError: not a JSON object, ``model_type`` missing, a required key missing or
            mistyped, or a config transformers could not build (KV heads that do not divide the
            query heads, more experts per token than experts); the error names the key and the
            file.
        UnknownArchitectureError: no family counts this ``model_type``.
    """
    where = file or source_detail
    if not isinstance(config, Mapping):
        raise ModelError(f"expected a JSON object, got {type(config).__name__}", file=where)
    if config.get("model_type") is None:
        raise ModelError("missing required key: it names the architecture (llama, qwen2…)",
                         field="model_type", file=where)
    auto_map = config.get("auto_map") is not None
    family = family_for(config["model_type"], file=where, has_auto_map=auto_map)
    reader = ConfigReader(config, file=where)
    arch = family.describe(reader)
    _refuse_unbuildable(arch, where)
    side = side_files or {}
    dtype, fmt, fmt_note = stored_format(config, file=where, side=side)
    skipped = KEYS_WITHOUT_MEMORY_EFFECT | family.IGNORED_KEYS | reader.used
    unrecognised = tuple(sorted(k for k in config if k not in skipped))
    notes = list(arch.notes)
    if auto_map:
        notes.append(f"config.json has auto_map; counted by gpusizer's {config['model_type']} "
                     "family, remote code not executed")
    if fmt_note:
        notes.append(fmt_note)
    quant, quant_where = declared_quantization(config, side, file=where)
    if quant is not None and quant_where != "config.json quantization_config":
        notes.append(f"quantization read from {quant_where}")
    detail = "; ".join([source_detail, *notes])
    return ModelFacts(
        model_id=model_id, revision=revision, source=source, source_detail=detail,
        model_type=str(config["model_type"]), architecture=arch, stored_dtype=dtype,
        stored_format=fmt, quantization_config=quant,
        unrecognised_keys=unrecognised)
