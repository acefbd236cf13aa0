"""Inference on one rung (R9): prefill of prompt_tokens × concurrency, then decode of exactly
new_tokens per sequence with the KV cache — forced, never stopping at an end-of-sequence token.

Token ids are drawn from a seeded generator (memory does not depend on their values). Greedy
decoding: the first new token comes from the prefill's logits, the others from ``new_tokens - 1``
decode forwards, as ``generate`` does; the cache ends holding prompt + new − 1 tokens.

Executed dimensions come from the shapes the embedding received (:class:`.shapes.InputProbe`)
and the logits returned: ``prompt_tokens`` and ``concurrency`` from the prefill call,
``new_tokens`` as the tokens produced for every sequence.
"""

from __future__ import annotations

import torch

from ..sheet import Sheet
from .faults import Injection
from .phases import PhaseRunner
from .shapes import InputProbe

__all__ = ["run_inference"]


def _make_cache(sheet: Sheet, model, max_tokens: int):
    from transformers import DynamicCache, StaticCache
    if sheet.inference.cache == "static":
        return StaticCache(config=model.config, max_cache_len=max_tokens)
    return DynamicCache(config=model.config)


def _cache_kwarg(model) -> str:
    """``cache`` (transformers >= 5.2x) or ``past_key_values`` (earlier): the forward's name."""
    import inspect
    params = inspect.signature(type(model).forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _returned_cache(out):
    return getattr(out, "cache", None) if hasattr(out, "cache") else out.past_key_values


def run_inference(model, sheet: Sheet, dims: dict[str, int], phases: PhaseRunner,
                  device: torch.device, inject: Injection | None = None,
                  executed: dict[str, int] | None = None) -> dict[str, int]:
    """Run prefill and decode at ``dims``; returns the executed dimensions.

    ``executed`` (when given) is filled as the phases go, so a failure still leaves what ran.

    Raises:
        PhaseFailure: a phase ran out of memory or failed.
    """
    batch, prompt, new = dims["concurrency"], dims["prompt_tokens"], dims["new_tokens"]
    cut_batch = inject is not None and inject.at("truncate", "concurrency") and batch > 1
    fed_batch = batch - 1 if cut_batch else batch
    fed_prompt = prompt - 1 if inject and inject.at("truncate", "prompt_tokens") else prompt
    decode_steps = new - 1 - (1 if inject and inject.at("truncate", "new_tokens") else 0)
    vocab = int(model.config.get_text_config().vocab_size)
    gen = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, vocab, (fed_batch, fed_prompt), generator=gen).to(device)
    keep = 0 if sheet.inference.logits == "all" else 1
    probe = InputProbe(model)
    produced = torch.zeros(fed_batch, dtype=torch.long)
    state: dict = {}
    kw = _cache_kwarg(model)

    def prefill() -> None:
        cache = _make_cache(sheet, model, prompt + new)
        with torch.inference_mode():
            out = model(input_ids=ids, use_cache=True, logits_to_keep=keep, **{kw: cache})
        state["cache"] = _returned_cache(out)
        state["next"] = out.logits[:, -1, :].argmax(-1)
        produced.add_(1)
        del out

    def decode() -> None:
        cache, nxt = state["cache"], state["next"]
        with torch.inference_mode():
            for _ in range(max(decode_steps, 0)):
                out = model(input_ids=nxt[:, None], use_cache=True, **{kw: cache})
                nxt = out.logits[:, -1, :].argmax(-1)  # no stop at EOS: exactly new_tokens
                produced.add_(1)
                del out
        state["next"] = nxt

    executed = {} if executed is None else executed
    try:
        phases.run("prefill", prefill, planned=dims)
        (b, p), = probe.take()
        executed.update(prompt_tokens=p, concurrency=b, new_tokens=int(produced.min()))
        phases.run("decode", decode, planned=dims)
        decode_calls = probe.take()
    finally:
        probe.remove()
        state.clear()
    steps_ok = all(c == (b, 1) for c in decode_calls)
    executed["new_tokens"] = (int(produced.min()) if steps_ok
                              else 1 + len([c for c in decode_calls if c == (b, 1)]))
    executed["decode_forwards"] = len(decode_calls)
    return executed
