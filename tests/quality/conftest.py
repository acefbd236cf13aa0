"""A tiny model trained from a real config for the quality tests (session scope, ~seconds).

The config is TinyLlama's, shrunk (``derive_tiny_config``; bundled in ``data/tiny-llama``). The
tokenizer is byte-level (ids = UTF-8 bytes) because no tokenizer can be downloaded in tests. The
model trains with a fixed seed and 2 threads on ``data/train.txt`` until its perplexity on the
held-out corpus is below half the untrained one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
TINY_CONFIG = DATA / "tiny-llama" / "config.json"
TRAIN_TEXT = DATA / "train.txt"
HELD_OUT = 0.15        # the last 15 % of the text is the frozen corpus, never trained on
SAMPLE_BYTES = 200     # bytes per corpus sample (< 256 positions)


def derive_tiny_config(src: dict) -> dict:
    """TinyLlama's config shrunk to 2 layers, hidden 64, byte vocabulary, 256 positions."""
    d = dict(src)
    d.update({"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 176,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
              "max_position_embeddings": 256, "torch_dtype": "float32", "bos_token_id": None,
              "eos_token_id": None})
    return d


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character map (openai/gpt-2 src/encoder.py)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def save_byte_tokenizer(folder: Path) -> None:
    """A byte-level fast tokenizer (id = byte value) saved as tokenizer.json in ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {ch: b for b, ch in _bytes_to_unicode().items()}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(folder)


def write_corpus(path: Path, text: bytes) -> int:
    lines = []
    for i in range(0, len(text) - SAMPLE_BYTES + 1, SAMPLE_BYTES):
        chunk = text[i:i + SAMPLE_BYTES].decode("utf-8", errors="ignore")
        lines.append(json.dumps({"text": chunk, "id": f"held-out-{i}"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


@dataclass(frozen=True)
class TinyModel:
    folder: Path
    corpus: Path
    untrained_ppl: float
    trained_ppl: float
    steps: int
    seconds: float


def _perplexity(model, ids_list) -> float:
    import math

    import torch
    total, n = 0.0, 0
    with torch.inference_mode():
        for ids in ids_list:
            t = torch.tensor([ids])
            logits = model(input_ids=t).logits.float()
            total += torch.nn.functional.cross_entropy(logits[0, :-1], t[0, 1:],
                                                       reduction="sum").item()
            n += len(ids) - 1
    return math.exp(total / n)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> TinyModel:
    torch = pytest.importorskip("torch", reason="the quality extra (torch) is not installed")
    pytest.importorskip("transformers")
    from transformers import AutoModelForCausalLM, LlamaConfig
    root = tmp_path_factory.mktemp("tiny")
    folder = root / "tiny-llama"
    folder.mkdir()
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        cfg = json.loads(TINY_CONFIG.read_text())
        model = AutoModelForCausalLM.from_config(LlamaConfig(**cfg), dtype=torch.float32)
        data = TRAIN_TEXT.read_bytes()
        cut = int(len(data) * (1 - HELD_OUT))
        train, held = data[:cut], data[cut:]
        corpus = root / "frozen.jsonl"
        write_corpus(corpus, held)
        samples = [list(json.loads(l)["text"].encode()) for l in corpus.read_text().splitlines()]
        untrained = _perplexity(model, samples)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        gen = torch.Generator().manual_seed(0)
        train_ids = torch.tensor(list(train))
        seq, batch = 128, 16
        start, steps, ppl = time.perf_counter(), 0, untrained
        while steps < 600:
            model.train()
            for _ in range(25):
                idx = torch.randint(0, len(train_ids) - seq - 1, (batch,), generator=gen)
                x = torch.stack([train_ids[i:i + seq] for i in idx.tolist()])
                loss = model(input_ids=x, labels=x).loss
                opt.zero_grad()
                loss.backward()
                opt.step()
                steps += 1
            model.eval()
            ppl = _perplexity(model, samples)
            if ppl < untrained / 2:
                break
        seconds = time.perf_counter() - start
        model.save_pretrained(folder, safe_serialization=True)
        save_byte_tokenizer(folder)
    finally:
        torch.set_num_threads(threads)
    return TinyModel(folder, corpus, untrained, ppl, steps, seconds)
