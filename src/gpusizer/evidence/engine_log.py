"""Evidence from an engine's own start-up log (CONTRACT.md ``gpusizer import vllm-log|sglang-log``;
the acceptance rule is in docs/evidence.md, kind ``engine_log``).

A vLLM or SGLang start-up log states what the engine took on the card it ran on: the weights, the
KV pool (bytes, blocks, tokens), the maximum concurrency at the executed ``max_model_len``, and
often the version and the settings. It runs no request: it proves capacity, never executed work.

The log is untrusted text: it is read through ``input_files.read_input`` by the caller, matched
line by line against one table of line kinds (:data:`LINE_KINDS`, tolerant regular expressions
that cover vLLM 0.4 – 0.11, V0 and V1, and SGLang's scheduler lines) and never executed or
evaluated. :func:`parse_engine_log` says which kinds were found; :func:`check_engine_log` refuses
a foreign, truncated or self-contradicting log with one line; :func:`log_proof` judges what the
imported figures prove for a required concurrency at a required length (no I/O).

Units as the engines print them: vLLM's "Loading model weights took X GB" is ``bytes / 2**30``
(``vllm/worker/model_runner.py`` v0.6: ``self.model_memory_usage / float(2**30)``), its
"GiB" figures too; SGLang's "GB" is ``bytes / (1 << 30)`` as well
(``python/sglang/srt/mem_cache/memory_pool.py`` and ``srt/utils.py get_available_gpu_memory``,
v0.4: ``GB = 1024 * 1024 * 1024``). Printed figures carry their rounding (2 or 4 decimals), so
byte counts derived from them are recorded with ``*_rounding_bytes``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import EngineLogError

__all__ = ["engine_log_fields", "LINE_KINDS", "LineKind", "EngineLog", "parse_engine_log",
           "check_engine_log", "LogProof", "log_proof", "LOG_KINDS", "model_matches",
           "VLLM_DEFAULT_BLOCK_TOKENS"]

LogKind = Literal["vllm-log", "sglang-log"]
LOG_KINDS: dict[str, str] = {"vllm-log": "vLLM", "sglang-log": "SGLang"}
"""The log kinds read (``gpusizer import <engine>-log``) with the engine's name as reports give
it; the sheet's ``inference.engine`` a log documents is its kind without ``-log``."""

GIB = 1 << 30
VLLM_DEFAULT_BLOCK_TOKENS = 16
"""vLLM's default KV block on CUDA (``vllm/config.py CacheConfig``: ``block_size`` None → 16,
v0.4 – v0.11), used only when neither the log nor the sheet states another."""

_NUM = r"(\d[\d,]*)"          # an integer, possibly with thousands separators (V1: 2,042,016)
_FLOAT = r"(\d+(?:\.\d+)?)"
_VCMD = r"(?:vllm serve|vllm\.entrypoints\S*)\s.*?(?<=\s)"   # a launch command's flag
_SARGS = r"server_args=ServerArgs\(.*?\b"   # a field of SGLang's logged ServerArgs
_SCMD = r"sglang\.launch_server\b.*?"      # a flag of SGLang's launch command
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_RANK = re.compile(r"\b(?:TP|rank[= ]|Worker_TP|EngineCore_)(\d+)\b")


@dataclass(frozen=True)
class LineKind:
    """One kind of line an engine prints at start, with the figures read from it.

    Attributes:
        name: the kind's name (reported in ``lines_found``).
        log: the log kind it belongs to (None: either engine's, torch's own lines).
        pattern: a tolerant regular expression (searched, not anchored).
        fields: the figure each group gives, in group order (``None``: a group not kept).
        source: where the engine prints it (repository path, versions).
    """

    name: str
    log: LogKind | None
    pattern: re.Pattern[str]
    fields: tuple[str | None, ...]
    source: str


def _k(name: str, log: LogKind | None, pattern: str, fields: tuple[str | None, ...],
       source: str) -> LineKind:
    return LineKind(name, log, re.compile(pattern), fields, source)


LINE_KINDS: tuple[LineKind, ...] = (
    # --- vLLM -----------------------------------------------------------------------------
    _k("version", "vllm-log", r"vLLM API server version v?(\d+\.\d+[\w.+-]*)", ("version",),
       "vllm/entrypoints/openai/api_server.py (v0.4 – v0.11)"),
    _k("engine_config", "vllm-log",
       r"Initializing an? (?:(V[01]) )?LLM engine \(v?(\d+\.\d+[\w.+-]*)\) with config: "
       r"model='([^']*)'", ("mode", "version", "model"),
       "vllm/engine/llm_engine.py (V0), vllm/v1/engine/core.py (V1)"),
    _k("config_max_seq_len", "vllm-log", r"with config: .*\bmax_seq_len=(\d+)", ("max_model_len",),
       "the engine config line"),
    _k("config_tp", "vllm-log", r"with config: .*\btensor_parallel_size=(\d+)",
       ("tensor_parallel_size",), "the engine config line"),
    _k("config_kv_dtype", "vllm-log", r"with config: .*\bkv_cache_dtype=([\w]+)",
       ("kv_cache_dtype",), "the engine config line"),
    _k("args_model", "vllm-log", r"non-default args: .*'model': '([^']*)'", ("model",),
       "vllm/entrypoints/utils.py log_non_default_args (v0.9+)"),
    _k("args_max_model_len", "vllm-log", r"non-default args: .*'max_model_len': (\d+)",
       ("max_model_len",), "non-default args"),
    _k("args_tp", "vllm-log", r"non-default args: .*'tensor_parallel_size': (\d+)",
       ("tensor_parallel_size",), "non-default args"),
    _k("args_utilization", "vllm-log", r"non-default args: .*'gpu_memory_utilization': " + _FLOAT,
       ("gpu_memory_utilization",), "non-default args"),
    _k("args_kv_dtype", "vllm-log", r"non-default args: .*'kv_cache_dtype': '(\w+)'",
       ("kv_cache_dtype",), "non-default args"),
    _k("args_max_num_seqs", "vllm-log", r"non-default args: .*'max_num_seqs': (\d+)",
       ("max_num_seqs",), "non-default args"),
    _k("args_block_size", "vllm-log", r"non-default args: .*'block_size': (\d+)",
       ("block_size",), "non-default args"),
    _k("v1_env", "vllm-log", r"VLLM_USE_(V1)=1", ("mode",),
       "the environment pasted with the command"),
    _k("command", "vllm-log", r"(?:vllm serve|vllm\.entrypoints\.openai\.api_server\s+--model)"
       r"[ =]+(?!-)(\S+)", ("model",), "the launch command, as pasted beside the log"),
    _k("command_max_model_len", "vllm-log", _VCMD + r"--max[-_]model[-_]len[ =]+(\d+)",
       ("max_model_len",), "the launch command"),
    _k("command_utilization", "vllm-log", _VCMD + r"--gpu[-_]memory[-_]utilization[ =]+" + _FLOAT,
       ("gpu_memory_utilization",), "the launch command"),
    _k("command_tp", "vllm-log", _VCMD + r"(?:--tensor[-_]parallel[-_]size|-tp)[ =]+(\d+)",
       ("tensor_parallel_size",), "the launch command"),
    _k("command_kv_dtype", "vllm-log", _VCMD + r"--kv[-_]cache[-_]dtype[ =]+(\w+)",
       ("kv_cache_dtype",), "the launch command"),
    _k("command_max_num_seqs", "vllm-log", _VCMD + r"--max[-_]num[-_]seqs[ =]+(\d+)",
       ("max_num_seqs",), "the launch command"),
    _k("command_block_size", "vllm-log", _VCMD + r"--block[-_]size[ =]+(\d+)", ("block_size",),
       "the launch command"),
    _k("max_model_len", "vllm-log", r"Using max model len (\d+)", ("max_model_len",),
       "vllm/config.py (v0.8+)"),
    _k("weights_gb", "vllm-log", r"Loading model weights took " + _FLOAT + r" ?GB",
       ("weights_gib",), "vllm/worker/model_runner.py, v1/worker/gpu_model_runner.py (≤ v0.8)"),
    _k("weights_gib", "vllm-log", r"Model loading took " + _FLOAT + r" ?GiB", ("weights_gib",),
       "vllm/v1/worker/gpu_model_runner.py (v0.8+)"),
    _k("profile_v0", "vllm-log",
       r"Memory profiling results: total_gpu_memory=" + _FLOAT + r"GiB.*?"
       r"non_torch_memory=" + _FLOAT + r"GiB kv_cache_size=" + _FLOAT + r"GiB "
       r"gpu_memory_utilization=" + _FLOAT,
       ("total_gib", "non_torch_gib", "kv_cache_gib", "gpu_memory_utilization"),
       "vllm/worker/worker.py determine_num_available_blocks (v0.6.4 – v0.6.5)"),
    _k("profile_budget", "vllm-log",
       r"total_gpu_memory \(" + _FLOAT + r" ?GiB\) x gpu_memory_utilization \(" + _FLOAT
       + r"\)", ("total_gib", "gpu_memory_utilization"),
       "vllm/worker/worker.py (v0.6.6 – v0.8, V0) and v1/worker/gpu_worker.py"),
    _k("profile_kv_rest", "vllm-log", r"reserved for KV Cache is " + _FLOAT + r" ?GiB",
       ("kv_cache_gib",), "vllm/worker/worker.py (v0.6.6 – v0.8)"),
    _k("profile_non_torch", "vllm-log", r"non_torch_memory takes " + _FLOAT + r" ?GiB",
       ("non_torch_gib",), "vllm/worker/worker.py (v0.6.6 – v0.8)"),
    _k("available_kv", "vllm-log", r"Available KV cache memory: " + _FLOAT + r" ?GiB",
       ("kv_cache_gib",), "vllm/v1/worker/gpu_worker.py (v0.8+)"),
    _k("gpu_blocks", "vllm-log", r"(?:#\s*)?GPU blocks: " + _NUM, ("kv_blocks",),
       "vllm/executor/*, v1/core/kv_cache_utils.py (≤ v0.7)"),
    _k("num_gpu_blocks", "vllm-log", r"num_gpu_blocks is: " + _NUM, ("kv_blocks",),
       "vllm/v1/metrics/loggers.py (v0.9+)"),
    _k("kv_tokens", "vllm-log", r"GPU KV cache size: " + _NUM + r" tokens", ("kv_tokens",),
       "vllm/v1/core/kv_cache_utils.py (v0.7.3+)"),
    _k("max_concurrency", "vllm-log",
       r"Maximum concurrency for " + _NUM + r" tokens per request: " + _FLOAT + r"x",
       ("max_model_len", "max_concurrency"),
       "vllm/executor/executor_base.py (V0), v1/core/kv_cache_utils.py (V1)"),
    _k("refusal_tokens", "vllm-log",
       r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be "
       r"stored in KV cache \((\d+)\)", ("refused_max_model_len", "refused_kv_tokens"),
       "vllm/worker/worker.py raise_if_cache_size_invalid (V0)"),
    _k("refusal_memory", "vllm-log",
       r"max seq len \((\d+)\), \(" + _FLOAT + r" GiB KV cache is needed, which is larger "
       r"than the available KV cache memory \(" + _FLOAT + r" GiB\)",
       ("refused_max_model_len", None, "refused_kv_cache_gib"),
       "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (V1)"),
    _k("refusal_no_blocks", "vllm-log", r"(No available memory for the cache blocks)",
       ("refusal",), "vllm/worker/worker.py (V0)"),
    # --- SGLang ---------------------------------------------------------------------------
    _k("sglang_version", "sglang-log", r"\bsglang(?: version|==|:)\s*v?(\d+\.\d+[\w.+-]*)",
       ("version",), "python -m sglang.check_env, or the package version pasted"),
    _k("server_args_model", "sglang-log", _SARGS + r"model_path='([^']*)'",
       ("model",), "python/sglang/srt/server_args.py (logged at launch)"),
    _k("server_args_tp", "sglang-log", _SARGS + r"tp_size=(\d+)",
       ("tensor_parallel_size",), "server_args"),
    _k("server_args_fraction", "sglang-log",
       _SARGS + r"mem_fraction_static=" + _FLOAT,
       ("mem_fraction_static",), "server_args"),
    _k("server_args_context", "sglang-log", _SARGS + r"context_length=(\d+)",
       ("max_model_len",), "server_args"),
    _k("server_args_kv_dtype", "sglang-log", _SARGS + r"kv_cache_dtype='(\w+)'",
       ("kv_cache_dtype",), "server_args"),
    _k("sglang_command", "sglang-log", _SCMD + r"--model(?:-path)?[ =]+(\S+)",
       ("model",), "the launch command, as pasted beside the log"),
    _k("sglang_command_tp", "sglang-log", _SCMD + r"--tp(?:-size)?[ =]+(\d+)",
       ("tensor_parallel_size",), "the launch command"),
    _k("sglang_command_fraction", "sglang-log",
       _SCMD + r"--mem-fraction-static[ =]+" + _FLOAT,
       ("mem_fraction_static",), "the launch command"),
    _k("sglang_command_context", "sglang-log",
       _SCMD + r"--context-length[ =]+(\d+)", ("max_model_len",),
       "the launch command"),
    _k("sglang_command_running", "sglang-log",
       _SCMD + r"--max-running-requests[ =]+(\d+)",
       ("max_running_requests",), "the launch command"),
    _k("sglang_command_kv_dtype", "sglang-log",
       _SCMD + r"--kv-cache-dtype[ =]+(\w+)", ("kv_cache_dtype",),
       "the launch command"),
    _k("load_weight_end", "sglang-log",
       r"Load weight end\..*?avail mem=" + _FLOAT + r" ?GB, mem usage=" + _FLOAT + r" ?GB",
       ("available_after_load_gib", "weights_gib"),
       "python/sglang/srt/model_executor/model_runner.py load_model"),
    _k("sglang_kv_alloc", "sglang-log",
       r"KV Cache is allocated\. #tokens: " + _NUM + r", K size: " + _FLOAT + r" ?GB, "
       r"V size: " + _FLOAT + r" ?GB", ("kv_tokens", "k_gib", "v_gib"),
       "python/sglang/srt/mem_cache/memory_pool.py MHATokenToKVPool"),
    _k("sglang_kv_alloc_mla", "sglang-log",
       r"KV Cache is allocated\. #tokens: " + _NUM + r", KV size: " + _FLOAT + r" ?GB",
       ("kv_tokens", "kv_cache_gib"),
       "python/sglang/srt/mem_cache/memory_pool.py MLATokenToKVPool"),
    _k("sglang_summary", "sglang-log",
       r"max_total_num_tokens=" + _NUM + r".*?max_running_requests=(\d+).*?context_len=(\d+)",
       ("kv_tokens", "max_running_requests", "max_model_len"),
       "python/sglang/srt/managers/scheduler.py (tp_worker info)"),
    _k("sglang_refusal", "sglang-log", r"(Not enough memory\. Please try to increase "
       r"--mem-fraction-static)", ("refusal",),
       "python/sglang/srt/model_executor/model_runner.py init_memory_pool"),
    # --- either ---------------------------------------------------------------------------
    _k("cuda_oom", None, r"((?:torch\.)?(?:cuda\.)?OutOfMemoryError|CUDA out of memory)",
       ("refusal",), "torch (either engine)"),
)
"""Every line kind read, in one table; a line may match several kinds (the config line gives
the model, the length, TP and the KV dtype)."""

_INT_FIELDS = {"max_model_len", "tensor_parallel_size", "max_num_seqs", "block_size",
               "kv_blocks", "kv_tokens", "refused_max_model_len", "refused_kv_tokens",
               "max_running_requests"}
_FLOAT_FIELDS = {"gpu_memory_utilization", "mem_fraction_static", "max_concurrency"}
_GIB_FIELDS = {"weights_gib", "total_gib", "non_torch_gib", "kv_cache_gib", "k_gib", "v_gib",
               "available_after_load_gib", "refused_kv_cache_gib"}
_CAPACITY = {"vllm-log": ("kv_tokens", "kv_blocks", "refusal", "refused_max_model_len"),
             "sglang-log": ("kv_tokens", "refusal")}
"""A figure without which a log says nothing of the pool: the KV capacity, or the refusal."""


@dataclass(frozen=True)
class EngineLog:
    """What one start-up log says, figure by figure (``None``: the log does not say).

    Attributes:
        kind: ``vllm-log`` or ``sglang-log``, the log kind the user named.
        values: figure → every distinct value found, in order (ints, floats, strings).
        lines: kind name → 1-based line numbers where it matched.
        foreign: line kinds of the other engine that matched (a log of another engine).
        ranks: ranks (TP0, EngineCore_0 …) whose lines were read.
    """

    kind: LogKind
    values: dict[str, list[Any]]
    lines: dict[str, list[int]]
    foreign: dict[str, list[int]]
    ranks: tuple[int, ...] = ()

    def one(self, name: str) -> Any:
        """The single value of a figure (None when absent); several distinct values are a
        contradiction, refused by :func:`check_engine_log`, except the GiB figures each rank
        prints for itself: then the smallest KV and the largest weights (the heaviest GPU)."""
        got = self.values.get(name)
        if not got:
            return None
        if len(got) > 1 and name in _GIB_FIELDS:
            return max(got) if name == "weights_gib" else min(got)
        return got[0]

    def first_line(self, name: str) -> int | None:
        return (self.lines.get(name) or [None])[0]


def _value(name: str, text: str) -> Any:
    if name in _INT_FIELDS:
        return int(text.replace(",", ""))
    if name in _FLOAT_FIELDS or name in _GIB_FIELDS:
        return float(text)
    return text


_URL_COMMENT = re.compile(r"^#\s*https?://")
_MAX_LINE = 20_000   # characters of one line read; a longer line is cut (no engine prints one)


def _logical_lines(text: str):
    """``(first line number, line)``: ANSI codes removed, shell continuations (a trailing
    backslash, as pasted launch commands have) joined, a leading ``# https://…`` provenance
    comment skipped (a log line never starts so; vLLM's ``# GPU blocks`` does not)."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _ANSI.sub("", raw)[:_MAX_LINE]
        if not pending and _URL_COMMENT.match(line):
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\") and len(pending) < 64:
            pending.append(line.rstrip()[:-1])
            continue
        yield start, " ".join(pending + [line])[:_MAX_LINE * 4]
        pending = []
    if pending:
        yield start, " ".join(pending)


def parse_engine_log(text: str, kind: LogKind) -> EngineLog:
    """Match every line of ``text`` against :data:`LINE_KINDS` (no evaluation of any kind).

    Args:
        text: the log, decoded (ANSI colour codes are removed; a ``#`` first-line comment is
            read as a line like any other and matches nothing).
        kind: the log kind the user says it is (``vllm-log`` / ``sglang-log``).

    Returns:
        The figures found, the line numbers of each kind, and the other engine's kinds that
        matched (see :func:`check_engine_log`).
    """
    values: dict[str, list[Any]] = {}
    lines: dict[str, list[int]] = {}
    foreign: dict[str, list[int]] = {}
    ranks: set[int] = set()
    for number, line in _logical_lines(text):
        for line_kind in LINE_KINDS:
            m = line_kind.pattern.search(line)
            if m is None:
                continue
            if line_kind.log not in (kind, None):
                foreign.setdefault(line_kind.name, []).append(number)
                continue
            lines.setdefault(line_kind.name, []).append(number)
            if (r := _RANK.search(line)) is not None:
                ranks.add(int(r.group(1)))
            for fname, group in zip(line_kind.fields, m.groups()):
                if fname is None or group is None:
                    continue
                v = _value(fname, group)
                seen = values.setdefault(fname, [])
                if v not in seen:
                    seen.append(v)
    return EngineLog(kind, values, lines, foreign, tuple(sorted(ranks)))


def _gib_bytes(gib: float | None) -> int | None:
    return None if gib is None else round(gib * GIB)


def _rounding(gib_text_decimals: int) -> int:
    """Half a unit of the printed last decimal, in bytes (2 decimals of GiB: ± 5.4 MB)."""
    return math.ceil(0.5 * 10 ** -gib_text_decimals * GIB)


def check_engine_log(log: EngineLog) -> dict[str, Any]:
    """The figures of a log that is whole and consistent, as the evidence records them.

    Checks, each refused with one line (``EngineLogError``, exit 2):
    foreign (none of the engine's own kinds matched, or the other engine's did and none of
    its own capacity lines), truncated (no KV capacity line and no refusal: the log stops
    before the pool was sized), contradictory (a figure with two values — two start-ups in one
    file —, blocks × block size ≠ tokens, a maximum concurrency that does not follow from
    tokens / max_model_len, a length in the concurrency line unlike the configured one,
    SGLang's ``#tokens`` unlike ``max_total_num_tokens``, or K size ≠ V size).

    Returns:
        ``{engine, engine_version, engine_mode, model, tensor_parallel_size,
        gpu_memory_utilization | mem_fraction_static, kv_cache_dtype, max_model_len,
        max_num_seqs, max_running_requests, block_size, kv_blocks, kv_tokens, kv_cache_bytes,
        weights_bytes, non_torch_bytes, total_bytes, max_concurrency, started, refusal,
        lines_found, lines_missing, ranks}`` (``None`` where the log does not say; byte
        counts from printed GiB carry ``gib_rounding_bytes``).

    Raises:
        EngineLogError: foreign, truncated or contradictory, with the line numbers.
    """
    name = LOG_KINDS[log.kind]
    other = next(k for k in LOG_KINDS if k != log.kind)
    own = {k: v for k, v in log.lines.items() if k != "cuda_oom"}
    if not own:
        if log.foreign:
            raise EngineLogError(f"not a {name} log: it reads as a {LOG_KINDS[other]} log "
                                 f"({_where(log.foreign)}); use `gpusizer import {other}`",
                                 field="LOG")
        raise EngineLogError(f"not a {name} start-up log: none of its line kinds was found "
                             f"(e.g. {_EXPECTED[log.kind]})", field="LOG")
    for fname, vals in log.values.items():
        if fname in _GIB_FIELDS and len(log.ranks) > 1:
            continue   # each rank prints its own; the pool is sized by the smallest (below)
        if len(vals) > 1 and fname not in ("version", "refusal"):
            raise EngineLogError(f"contradictory log: {fname} is {vals[0]!r} and {vals[1]!r} "
                                 f"({_where(log.lines)}): one file per start-up", field="LOG")
    if not any(log.one(k) is not None for k in _CAPACITY[log.kind]):
        if log.foreign and any(k in log.foreign for k in ("sglang_kv_alloc", "kv_tokens",
                                                           "gpu_blocks", "sglang_summary")):
            raise EngineLogError(f"not a {name} log: its KV cache lines are {LOG_KINDS[other]}'s "
                                 f"({_where(log.foreign)}); use `gpusizer import {other}`",
                                 field="LOG")
        raise EngineLogError(f"truncated {name} log: it stops before the KV cache was sized (no "
                             f"{_EXPECTED[log.kind]} line; found {', '.join(sorted(own))})",
                             field="LOG")
    facts = {"log_kind": log.kind, "engine": log.kind.removesuffix("-log"),
             **_FIGURES[log.kind](log)}
    facts["lines_found"] = {k: v for k, v in sorted(log.lines.items())}
    facts["lines_missing"] = [k.name for k in LINE_KINDS
                              if k.log == log.kind and k.name not in log.lines]
    facts["ranks"] = list(log.ranks)
    return facts


def _where(lines: dict[str, list[int]]) -> str:
    return ", ".join(f"{k} at line {v[0]}" for k, v in sorted(lines.items(), key=lambda kv:
                                                               kv[1][0])[:4])


_EXPECTED = {"vllm-log": "'GPU KV cache size: N tokens', '# GPU blocks: N' or the refusal",
             "sglang-log": "'KV Cache is allocated. #tokens: N' or 'max_total_num_tokens=N'"}


def _vllm_figures(log: EngineLog) -> dict[str, Any]:
    blocks, tokens = log.one("kv_blocks"), log.one("kv_tokens")
    block = log.one("block_size")
    if blocks is not None and tokens is not None:
        if tokens % blocks:
            raise EngineLogError(f"contradictory log: {tokens} KV tokens are not a whole number "
                                 f"of {blocks} blocks", field="LOG")
        if block is not None and blocks * block != tokens:
            raise EngineLogError(f"contradictory log: {blocks} blocks × {block} tokens ≠ "
                                 f"{tokens} KV tokens", field="LOG")
        block = tokens // blocks
    derived = tokens is None and blocks is not None and block is None
    if tokens is None and blocks is not None:
        tokens = blocks * (block or VLLM_DEFAULT_BLOCK_TOKENS)
    lengths = log.values.get("max_model_len", [])
    max_len = lengths[0] if lengths else None
    conc = log.one("max_concurrency")
    if conc is not None and tokens is not None and max_len:
        implied = tokens / max_len
        if abs(conc - implied) > 0.01 + 0.02 * implied:
            raise EngineLogError(f"contradictory log: maximum concurrency {conc}x does not "
                                 f"follow from {tokens} KV tokens / {max_len} tokens "
                                 f"({implied:.2f}x)", field="LOG")
    refused = log.one("refused_max_model_len")
    if refused is not None and max_len is not None and refused != max_len:
        raise EngineLogError(f"contradictory log: refused at max seq len {refused}, configured "
                             f"{max_len}", field="LOG")
    refused_tokens = log.one("refused_kv_tokens")
    if refused_tokens is not None and tokens is not None and refused_tokens != tokens:
        raise EngineLogError(f"contradictory log: the refusal counts {refused_tokens} KV tokens, "
                             f"the pool {tokens}", field="LOG")
    refusal = None
    if refused is not None:
        refusal = (f"vLLM refused to start: max_model_len {refused} needs more KV cache than "
                   "the pool holds" + (f" ({refused_tokens} tokens)" if refused_tokens else ""))
    elif log.one("refusal") is not None:
        refusal = f"vLLM did not start: {log.one('refusal')}"
    kv_gib = log.one("kv_cache_gib")
    version = log.one("version")
    mode = log.one("mode") or ("V1" if {"available_kv", "kv_tokens", "num_gpu_blocks"}
                               & set(log.lines) else "V0" if "profile_v0" in log.lines else None)
    return {
        "engine_version": version, "engine_mode": mode,
        "model": log.one("model"), "tensor_parallel_size": log.one("tensor_parallel_size"),
        "gpu_memory_utilization": log.one("gpu_memory_utilization"),
        "kv_cache_dtype": log.one("kv_cache_dtype"), "max_model_len": max_len or refused,
        "max_num_seqs": log.one("max_num_seqs"), "block_size": block,
        "block_size_source": ("the log" if block is not None else None),
        "kv_blocks": blocks, "kv_tokens_from_blocks": derived,
        "kv_tokens": tokens if refusal is None else (tokens or
                                                                          refused_tokens),
        "kv_cache_bytes": _gib_bytes(kv_gib), "weights_bytes": _gib_bytes(log.one("weights_gib")),
        "non_torch_bytes": _gib_bytes(log.one("non_torch_gib")),
        "total_bytes": _gib_bytes(log.one("total_gib")),
        "gib_rounding_bytes": _rounding(2),
        "max_concurrency": conc, "max_running_requests": None,
        "started": refusal is None, "refusal": refusal,
    }


def _sglang_figures(log: EngineLog) -> dict[str, Any]:
    tokens = log.one("kv_tokens")
    k, v = log.one("k_gib"), log.one("v_gib")
    if k is not None and v is not None and k != v:
        raise EngineLogError(f"contradictory log: K size {k} GB ≠ V size {v} GB (one pool per "
                             "start-up)", field="LOG")
    kv_gib = (k + v) if k is not None and v is not None else log.one("kv_cache_gib")
    refusal = log.one("refusal")
    return {
        "engine_version": log.one("version"), "engine_mode": None,
        "model": log.one("model"), "tensor_parallel_size": log.one("tensor_parallel_size"),
        "mem_fraction_static": log.one("mem_fraction_static"),
        "kv_cache_dtype": log.one("kv_cache_dtype"), "max_model_len": log.one("max_model_len"),
        "max_num_seqs": None, "block_size": 1, "block_size_source": "SGLang's token pool",
        "kv_blocks": None, "kv_tokens": tokens,
        "kv_cache_bytes": _gib_bytes(kv_gib), "weights_bytes": _gib_bytes(log.one("weights_gib")),
        "non_torch_bytes": None, "total_bytes": None, "gib_rounding_bytes": _rounding(2),
        "max_concurrency": None, "max_running_requests": log.one("max_running_requests"),
        "started": refusal is None,
        "refusal": None if refusal is None else f"SGLang did not start: {refusal}",
    }


_FIGURES = {"vllm-log": _vllm_figures, "sglang-log": _sglang_figures}
"""Each log kind's figures and consistency checks."""


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def model_matches(logged: str, sheet_model: str) -> bool:
    """The log's model (a Hub id or a local folder) names the sheet's model: the last path
    component of the sheet's id ends the log's, letters and digits compared case-insensitively
    (``/mnt/models--meta-llama--llama-3-1-70b-instruct`` names
    ``meta-llama/Llama-3.1-70B-Instruct``; a ``-quantized.w8a8`` suffix names another model)."""
    want = _norm(sheet_model.rstrip("/").split("/")[-1])
    got = _norm(logged.rstrip("/").split("/")[-1])
    return bool(want) and got.endswith(want)


@dataclass(frozen=True)
class LogProof:
    """What an imported start-up log proves for a required concurrency at a required length.

    Attributes:
        state: ``proves`` (the pool holds every required sequence at the required length),
            ``disproves`` (the engine refused, or holds fewer, under the sheet's very settings
            at the required length), or ``silent`` (the log lacks a figure, or ran another
            length): the memory criterion's acceptable / exclude / to_confirm.
        reason: the comparison in words, with the figures.
        sequences_held: whole sequences of the required length the pool holds, or None.
    """

    state: Literal["proves", "disproves", "silent"]
    reason: str
    sequences_held: int | None = None
    missing: tuple[str, ...] = field(default=())


def _vllm_held(doc: dict[str, Any], tokens: int, L: int, max_len: int,
               block_tokens: int) -> tuple[int, str]:
    block = doc.get("block_size") or block_tokens
    per_seq = -(-L // block) * block
    held = tokens // per_seq
    how = f"{tokens:,} KV tokens // {per_seq:,} ({L:,} in blocks of {block})"
    conc = doc.get("max_concurrency")
    if conc is not None and max_len == L and math.floor(conc) < held:
        held = math.floor(conc)
        how += f", capped by vLLM's own maximum concurrency {conc}x"
    cap = doc.get("max_num_seqs")
    if cap is not None and cap < held:
        held = cap
        how += f", capped by max_num_seqs {cap}"
    return held, how


def _sglang_held(doc: dict[str, Any], tokens: int, L: int, max_len: int,
                 block_tokens: int) -> tuple[int, str]:
    held = min(tokens // L, int(doc["max_running_requests"]))
    return held, (f"{tokens:,} pool tokens // {L:,} = {tokens // L}, max_running_requests "
                  f"{doc['max_running_requests']}")


@dataclass(frozen=True)
class _HeldRule:
    needs: tuple[str, ...]
    held: Any


_HELD = {"vllm-log": _HeldRule((), _vllm_held),
         "sglang-log": _HeldRule(("max_running_requests",), _sglang_held)}
"""How each engine's pool holds sequences of a required length (``log_proof``)."""


def log_proof(doc: dict[str, Any], *, tokens_per_sequence: int, sequences: int,
              block_tokens: int) -> LogProof:
    """Judge an ``engine_log`` document's figures (its kind-specific fields) for the workload.

    Rule (docs/evidence.md, ``engine_log``): with ``L`` = prompt + new tokens and ``C`` the
    sequences one GPU serves at once, the log proves memory when the engine started, its
    ``max_model_len`` (SGLang: ``context_len``) is at least ``L``, and its pool holds ``C``
    sequences of ``L`` tokens at once: vLLM ``floor(kv_tokens / (ceil(L / B) × B))`` with ``B``
    the block size (the log's, else ``block_tokens``), and no more than ``floor(max_concurrency)``
    when the log's length is ``L`` (vLLM's own figure, ``kv_cache_utils.py``); SGLang
    ``min(floor(max_total_num_tokens / L), max_running_requests)`` (a token pool, page size 1).
    vLLM's ``max_num_seqs`` below ``C`` caps the sequences too. It disproves it when the engine
    refused to start at a length ``<= L``, or held fewer than ``C`` at exactly ``L``.

    Args:
        doc: the evidence document (``EvidenceDoc.model_extra`` or the dict written).
        tokens_per_sequence: ``L`` (tokens).
        sequences: ``C`` (sequences per GPU).
        block_tokens: the sheet's KV block (tokens), used when the log gives none.
    """
    name = LOG_KINDS.get(doc.get("log_kind", ""), "the engine")
    L, C = tokens_per_sequence, sequences
    max_len = doc.get("max_model_len")
    if not doc.get("started", False):
        refused = max_len
        settled = (doc.get("gpu_memory_utilization") is not None
                   or doc.get("mem_fraction_static") is not None)
        said = doc.get("refusal") or f"{name} did not start"
        if refused is not None and refused <= L and settled:
            return LogProof("disproves", f"{said} (at max_model_len {refused} <= the required "
                            f"{L} tokens)", 0)
        if refused is not None and refused <= L:
            return LogProof("silent", f"{said} at max_model_len {refused} <= {L}, but the log "
                            "does not state its memory setting (gpu_memory_utilization / "
                            "mem_fraction_static)")
        return LogProof("silent", said + (f" at max_model_len {refused}, longer than the "
                                          f"required {L}: the required length may still fit"
                                          if refused else ""))
    held_rule = _HELD[doc["log_kind"]]
    missing = [k for k in ("kv_tokens", "max_model_len", *held_rule.needs) if doc.get(k) is None]
    if missing:
        return LogProof("silent", f"the log does not give {', '.join(missing)}, so it cannot "
                        f"show {C} sequence(s) of {L} tokens fit", None, tuple(missing))
    tokens = int(doc["kv_tokens"])
    if max_len < L:
        return LogProof("silent", f"the log ran max_model_len {max_len} < the required {L} "
                        f"tokens: it proves nothing at {L}")
    held, how = held_rule.held(doc, tokens, L, max_len, block_tokens)
    where = f"{name} start-up log, max_model_len {max_len:,}"
    if held >= C:
        return LogProof("proves", f"{where}: the pool holds {held} sequence(s) of {L:,} tokens "
                        f">= {C} required ({how})", held)
    if max_len == L and (doc.get("gpu_memory_utilization") is not None
                         or doc.get("mem_fraction_static") is not None):
        return LogProof("disproves", f"{where}: the pool holds {held} sequence(s) of {L:,} "
                        f"tokens < {C} required ({how})", held)
    return LogProof("silent", f"{where} (longer than {L:,}): the pool holds {held} sequence(s) "
                    f"of {L:,} tokens < {C} required ({how}); a start at {L:,} may hold more",
                    held)


def engine_log_fields(extra: dict[str, Any]) -> None:
    """Check the fields :func:`log_proof` reads in an ``engine_log`` document (ValueError, the
    evidence reader's "malformed" one line): ``log_kind`` one of :data:`LOG_KINDS`, ``started`` a
    boolean, and ``kv_tokens``, ``max_model_len``, ``block_size``, ``max_num_seqs``,
    ``max_running_requests`` integers >= 0 or null, ``max_concurrency`` a number >= 0 or null."""
    if extra.get("log_kind") not in LOG_KINDS:
        raise ValueError(f"an engine_log document needs log_kind: {' or '.join(LOG_KINDS)}")
    if not isinstance(extra.get("started"), bool):
        raise ValueError("an engine_log document needs started: true or false")
    for key in ("kv_tokens", "max_model_len", "block_size", "max_num_seqs",
                "max_running_requests"):
        v = extra.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0
                              or v > 2 ** 64):
            raise ValueError(f"an engine_log document's {key} must be an integer >= 0 or null, "
                             f"got {v!r}")
    c = extra.get("max_concurrency")
    if c is not None and (isinstance(c, bool) or not isinstance(c, (int, float))
                          or not math.isfinite(c) or c < 0):
        raise ValueError(f"an engine_log document's max_concurrency must be a number >= 0 or "
                         f"null, got {c!r}")
