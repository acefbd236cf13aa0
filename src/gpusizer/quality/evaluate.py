"""``gpusizer quality run``: the reference format and a candidate format on the frozen corpus,
per-sample outputs and the metric written as evidence (imports torch and transformers).

Metrics:

- ``perplexity`` = exp(Σ token NLL / Σ scored tokens) over the whole corpus (token-weighted);
  each sample is scored whole in one forward pass (tokens 2..n predicted from their prefix),
  logits in float32. Lower is better.
- ``exact_match`` = matches / samples: greedy decoding of exactly as many tokens as the expected
  output has, decoded without special tokens, compared after stripping surrounding whitespace.
  Higher is better.

A sample longer than the model's context window (``max_position_embeddings``) is an error naming
the sample; nothing is truncated. The tokenizer is the model folder's own (``AutoTokenizer``,
no remote code). Each sample in the outputs carries its index and the corpus SHA-256.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError, QualityError, SampleTooLongError, install_line
from ..sheet import Sheet
from .corpus import Corpus, read_corpus
from .criteria_lock import check_lock, corpus_path, read_lock
from .evidence_doc import quality_evidence, refuse_existing, write_json

__all__ = ["QualityRun", "FormatScore", "TOKENIZER_FILES", "run_quality", "score_format",
           "load_model"]


def _torch():
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(f"quality runs need torch and transformers ({exc.name} is "
                                f"missing): {install_line('quality')}") from None
    import torch
    return torch


@dataclass(frozen=True)
class FormatScore:
    """One format's result on the corpus.

    Attributes:
        format: the format's name; implementation: how it was produced.
        value: the corpus metric.
        samples: per-sample rows (``sample``, ``corpus_sha256``, the format, its numbers).
    """

    format: str
    implementation: str
    value: float
    samples: tuple[dict, ...]


@dataclass(frozen=True)
class QualityRun:
    """``run_quality``'s answer: both scores, the evidence document and the files written."""

    reference: FormatScore
    candidate: FormatScore
    evidence: dict
    evidence_file: Path
    samples_file: Path


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json", "vocab.json",
                   "tiktoken.model")
"""Files one of which a model folder must hold for ``AutoTokenizer`` to load its tokenizer:
the fast tokenizer's serialization, a SentencePiece model, the config naming the class, a BPE
vocabulary (transformers ``tokenization_utils_base`` file names)."""


def _model_source(sheet: Sheet, base_dir: Path | None) -> tuple[str, str | None]:
    m = sheet.model
    if m.parameters is not None:
        raise QualityError("a quality run needs a checkpoint: model.parameters is a bare count; "
                           "give model.path or model.id", field="model.parameters",
                           value=m.parameters)
    if m.path is not None:
        p = Path(m.path).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        return str(p), None
    return str(m.id), m.revision


def load_model(source: str, revision: str | None, fmt: str, *, device: str,
               double_quant: bool = False, compute_dtype: str = "bf16"):
    """Load the checkpoint in ``fmt`` (a ``formats.FORMATS`` name) on ``device``.

    Returns:
        ``(model, implementation)``; the model in eval mode.

    Raises:
        FormatUnavailableError: bitsandbytes absent for int8/nf4/fp4.
        QualityError: the checkpoint cannot be loaded (safetensors only, no remote code).
    """
    torch = _torch()
    from transformers import AutoModelForCausalLM

    from .formats import TORCH_DTYPES, bitsandbytes_config, format_spec, roundtrip_linear_weights
    spec = format_spec(fmt)
    kwargs: dict[str, Any] = {"trust_remote_code": False, "use_safetensors": True}
    if revision is not None:
        kwargs["revision"] = revision
    base_dtype = TORCH_DTYPES.get(fmt, TORCH_DTYPES[compute_dtype])
    if spec.kind == "roundtrip":
        # the round-trip starts from the stored dtype, kept after dequantization
        base_dtype = "auto"
    kwargs["dtype"] = base_dtype
    if spec.kind == "bitsandbytes":
        kwargs["quantization_config"] = bitsandbytes_config(spec, TORCH_DTYPES[compute_dtype],
                                                            double_quant=double_quant)
        kwargs["device_map"] = {"": device}
    try:
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        raise QualityError(f"cannot load the checkpoint {source!r} as {fmt} (safetensors only, "
                           f"no remote code): {exc}", field="model", value=source) from None
    if spec.kind != "bitsandbytes":
        model.to(device)
    implementation = spec.implementation
    if spec.kind == "roundtrip":
        n = roundtrip_linear_weights(model, spec.bits or 8)
        dtype = next(model.parameters()).dtype
        implementation += f" ({n} matrices, kept in {str(dtype).removeprefix('torch.')})"
    model.eval()
    torch.manual_seed(0)
    return model, implementation


def _tokenize(tokenizer, corpus: Corpus, metric: str, context_tokens: int) -> list[dict]:
    """Token ids per sample, every length checked before any model runs."""
    out = []
    for s in corpus.samples:
        ids = tokenizer(s.text)["input_ids"]
        if metric == "perplexity":
            if len(ids) < 2:
                raise QualityError(f"sample {s.index}: {len(ids)} token(s); perplexity needs at "
                                   "least 2 (one predicted token)", field="quality.corpus",
                                   value=s.index)
            need, exp_ids = len(ids), None
        else:
            exp_ids = tokenizer(s.expected, add_special_tokens=False)["input_ids"]
            if not exp_ids:
                raise QualityError(f"sample {s.index}: the expected output has no token",
                                   field="quality.corpus", value=s.index)
            need = len(ids) + len(exp_ids)
        if need > context_tokens:
            raise SampleTooLongError(
                f"sample {s.index}{f' (id {s.id})' if s.id else ''} needs {need} tokens "
                f"({'text' if metric == 'perplexity' else 'prompt + expected output'}), more than "
                f"the model's context window max_position_embeddings = {context_tokens}; it is "
                "never truncated: shorten or split it in the corpus and lock again",
                file=corpus.file, field=f"sample {s.index}", value=need)
        out.append({"sample": s, "ids": ids, "expected_ids": exp_ids})
    return out


def score_format(model, tokenizer, tokenized: list[dict], corpus: Corpus, metric: str,
                 fmt: str, implementation: str, device: str) -> FormatScore:
    """The corpus metric for one loaded model, with per-sample rows."""
    torch = _torch()
    rows = []
    with torch.inference_mode():
        if metric == "perplexity":
            total_nll, total_tokens = 0.0, 0
            for t in tokenized:
                ids = torch.tensor([t["ids"]], device=device)
                logits = model(input_ids=ids).logits.float()
                nll = torch.nn.functional.cross_entropy(logits[0, :-1], ids[0, 1:],
                                                        reduction="sum").item()
                n = ids.shape[1] - 1
                total_nll += nll
                total_tokens += n
                rows.append({"sample": t["sample"].index, "id": t["sample"].id,
                             "corpus_sha256": corpus.sha256, "format": fmt, "tokens": n + 1,
                             "scored_tokens": n, "nll_sum": nll, "perplexity": math.exp(nll / n)})
            value = math.exp(total_nll / total_tokens)
        else:
            matches = 0
            for t in tokenized:
                ids = torch.tensor([t["ids"]], device=device)
                k = len(t["expected_ids"])
                pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (
                    tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0)
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     max_new_tokens=k, do_sample=False, pad_token_id=pad)
                text = tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
                ok = text.strip() == t["sample"].expected.strip()
                matches += ok
                rows.append({"sample": t["sample"].index, "id": t["sample"].id,
                             "corpus_sha256": corpus.sha256, "format": fmt, "output": text,
                             "expected": t["sample"].expected, "match": ok})
            value = matches / len(tokenized)
    return FormatScore(fmt, implementation, value, tuple(rows))


def run_quality(sheet: Sheet, *, candidate: str, lock_path: Path, out_dir: Path,
                base_dir: Path | None = None, device: str | None = None,
                today: dt.date | None = None) -> QualityRun:
    """Evaluate the locked reference format and ``candidate`` on the frozen corpus.

    Writes ``out_dir/quality-<candidate>-vs-<reference>.samples.jsonl`` (one row per format and
    sample) and ``out_dir/quality-<candidate>-vs-<reference>.json`` (the evidence).

    Raises:
        QualityError: no lock, an lm-eval metric (use ``quality import``), no checkpoint.
        CriteriaMovedError: the sheet's criteria or corpus differ from the lock.
        SampleTooLongError: a sample longer than the context window.
        FormatUnavailableError: bitsandbytes missing for int8/nf4/fp4.
        MissingExtraError: torch or transformers not installed.
    """
    lock = read_lock(lock_path)
    check_lock(sheet, lock, base_dir=base_dir)
    q = sheet.quality
    assert q is not None
    if q.metric.startswith("lm_eval:"):
        raise QualityError(f"metric {q.metric} comes from lm-evaluation-harness: run the task "
                           "with the candidate format and `gpusizer quality import SHEET "
                           "RESULTS.json --candidate F`", field="quality.metric", value=q.metric)
    reference = lock.reference_format
    if candidate == reference:
        raise QualityError(f"the candidate is the reference format {reference}: nothing to "
                           "compare", field="--candidate", value=candidate)
    torch = _torch()
    from .formats import format_spec, require_runnable
    for fmt in (reference, candidate):
        require_runnable(format_spec(fmt))
    from transformers import AutoTokenizer
    corpus = read_corpus(corpus_path(sheet, base_dir), q.metric)
    source, revision = _model_source(sheet, base_dir)
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    field = "model.path" if sheet.model.path is not None else "model.id"
    shown = sheet.model.path if sheet.model.path is not None else source
    if sheet.model.path is not None and not any((Path(source) / name).is_file()
                                                for name in TOKENIZER_FILES):
        raise QualityError(f"{shown!r} holds no tokenizer file ({', '.join(TOKENIZER_FILES)}): a "
                           "quality run tokenizes the corpus with the model's own tokenizer; "
                           "copy its tokenizer files from the model's repository into the folder",
                           field=field, value=shown)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision,
                                                  trust_remote_code=False)
    except (OSError, ValueError) as exc:
        raise QualityError(f"no usable tokenizer with the checkpoint {shown!r}: "
                           + " ".join(str(exc).split()), field=field, value=shown) from None
    stem = f"quality-{candidate}-vs-{reference}"
    out_dir = Path(out_dir)
    samples_file = out_dir / f"{stem}.samples.jsonl"
    for p in (samples_file, out_dir / f"{stem}.json"):
        refuse_existing(p)
    from transformers import AutoConfig
    try:
        config = AutoConfig.from_pretrained(source, revision=revision, trust_remote_code=False)
    except (OSError, ValueError) as exc:
        raise QualityError(f"cannot read the checkpoint's config {source!r}: {exc}",
                           field="model", value=source) from None
    context = getattr(config, "max_position_embeddings", None)
    if not isinstance(context, int):
        raise QualityError("the model's config gives no max_position_embeddings: sample lengths "
                           "cannot be checked against the context window", field="model",
                           value=source)
    # every sample's length is checked before any model is loaded
    tokenized = _tokenize(tokenizer, corpus, q.metric, context)
    scores = []
    for fmt in (reference, candidate):
        model, impl = load_model(source, revision, fmt, device=device,
                                 double_quant=sheet.quantization.double_quant,
                                 compute_dtype=sheet.quantization.compute_dtype)
        scores.append(score_format(model, tokenizer, tokenized, corpus, q.metric, fmt, impl,
                                   device))
        del model
    ref, cand = scores
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with samples_file.open("w", encoding="utf-8") as fh:
            for row in ref.samples + cand.samples:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
    except OSError as exc:
        raise QualityError(f"cannot write {str(samples_file)!r}: {exc.strerror}", field="--out",
                           value=str(out_dir)) from None
    from .formats import FORMATS
    env = {"torch": torch.__version__, "device": device,
           "device_name": (torch.cuda.get_device_name(0) if device.startswith("cuda")
                           else platform.processor() or platform.machine()),
           "threads": torch.get_num_threads()}
    import transformers
    env["transformers"] = transformers.__version__
    doc = quality_evidence(
        sheet=sheet, lock=lock, candidate_format=candidate,
        candidate_implementation=cand.implementation, reference_implementation=ref.implementation,
        reference_value=ref.value, candidate_value=cand.value, document=str(samples_file),
        source="gpusizer quality run", proxy_for=FORMATS[candidate].proxy_for, environment=env,
        extra={"samples_file": samples_file.name, "samples": len(corpus.samples)}, today=today)
    evidence_file = write_json(doc, out_dir / f"{stem}.json")
    return QualityRun(ref, cand, doc, evidence_file, samples_file)
