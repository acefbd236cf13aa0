"""Untrusted input files are read with bounds (issue 11, point 1; reliability findings F7, F10,
F11, F17, F22, S-a and the header cache of S-e): each reproducer of
/work/shared/reliability-findings.md is refused with one line naming the file, before the work."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from gpusizer.catalog.offers import read_catalog
from gpusizer.errors import CatalogError, EvidenceError, HubError, ModelError, SheetError
from gpusizer.evidence import read_evidence_folder
from gpusizer.input_files import MAX_INT_DIGITS, MAX_JSON_DEPTH, SIZE_CAPS, parse_json, read_input
from gpusizer.model.resolve import resolve_model
from gpusizer.model.safetensors_headers import (cache_file, hub_stored_tensors,
                                                local_stored_tensors, read_header)
from gpusizer.sheet import load_sheet, parse_sheet_text

from .conftest import run_cli

SEED = "model: {parameters: 7000000000}\ntask: inference\nweights: fp16\n"
DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE_INT = "1" + "0" * 4400  # 4,401 digits: over Python 3.11's int-str limit of 4,300


def _one_line(proc) -> str:
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err[-2000:]
    return err


# --- F11: regular files only, a cap per kind checked before reading --------------------------

def test_devices_are_refused_before_any_read() -> None:
    for reader, error in ((load_sheet, SheetError), (read_catalog, CatalogError)):
        with pytest.raises(error, match="not a regular file"):
            reader(Path("/dev/zero"))


def test_a_symlink_to_dev_zero_in_the_evidence_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ev").mkdir()
    os.symlink("/dev/zero", tmp_path / "ev" / "zero.json")
    with pytest.raises(EvidenceError, match="zero.json: the evidence file is not a regular"):
        read_evidence_folder(tmp_path / "ev")


def test_a_fifo_never_blocks(tmp_path: Path) -> None:
    (tmp_path / "ev").mkdir()
    os.mkfifo(tmp_path / "ev" / "x.json")
    with pytest.raises(EvidenceError, match="not a regular file"):
        read_evidence_folder(tmp_path / "ev")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    os.mkfifo(tmp_path / "m" / "model.safetensors")
    with pytest.raises(ModelError,
                       match="model.safetensors: the safetensors file is not a regular"):
        local_stored_tensors(tmp_path / "m")


def test_the_cli_refuses_dev_zero_with_one_line(tmp_path: Path) -> None:
    sheet = tmp_path / "s.yaml"
    sheet.write_text(SEED)
    err = _one_line(run_cli("plan", "/dev/zero", check=2))
    assert err == "error: /dev/zero: the sheet is not a regular file (a device, FIFO or folder " \
                  "is never read)"
    err = _one_line(run_cli("plan", str(sheet), "--catalog", "/dev/zero", check=2))
    assert "/dev/zero: the catalog is not a regular file" in err


def test_a_file_over_its_cap_is_refused_from_its_size(tmp_path: Path) -> None:
    big = tmp_path / "s.yaml"
    big.write_bytes(SEED.encode() + b"#" * SIZE_CAPS["sheet"])  # 1 MiB + the seed
    with pytest.raises(SheetError, match=f"over the {1 << 20}-byte limit for a sheet"):
        load_sheet(big)
    assert SIZE_CAPS == {**SIZE_CAPS, "sheet": 1 << 20, "catalog": 64 << 20,
                         "evidence file": 16 << 20, "config.json": 4 << 20,
                         "safetensors header": 100_000_000, "engine log": 64 << 20}


def test_read_input_reads_no_more_than_the_cap_plus_one(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that grows between the stat and the read is cut at cap + 1 bytes and refused."""
    f = tmp_path / "e.json"
    f.write_bytes(b"x" * 100)
    monkeypatch.setitem(SIZE_CAPS, "evidence file", 10)
    real_stat = os.stat

    def small_stat(path, *args, **kwargs):  # the file "was" small when stat-ed
        st = real_stat(path, *args, **kwargs)
        return os.stat_result((st.st_mode, *st[1:6], 5, *st[7:]))

    monkeypatch.setattr(os, "stat", small_stat)
    with pytest.raises(EvidenceError, match="over the 10-byte limit"):
        read_input(f, "evidence file", EvidenceError)


# --- F7: JSON and YAML failures other than syntax errors --------------------------------------

@pytest.mark.parametrize("body,fragment", [
    (DEEP, f"nested deeper than {MAX_JSON_DEPTH} levels"),
    (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
     f"nested deeper than {MAX_JSON_DEPTH} levels"),
    (('{"kind": "commercial", "document": "d", "version": "v", "x": %s}' % HUGE_INT).encode(),
     f"an integer of 4401 digits (at most {MAX_INT_DIGITS} accepted)"),
], ids=["100000-deep", "65-deep", "4401-digit-int"])
def test_deep_or_huge_json_evidence_is_one_line(tmp_path: Path, body: bytes,
                                                fragment: str) -> None:
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "a.json").write_bytes(body)
    (tmp_path / "s.yaml").write_text(SEED)
    err = _one_line(run_cli("plan", str(tmp_path / "s.yaml"), "--evidence",
                            str(tmp_path / "ev"), check=2))
    assert "a.json: cannot read JSON (evidence file): refused, " + fragment in err


def test_depth_is_measured_before_parsing_and_ignores_strings() -> None:
    # brackets inside strings (escaped quotes included) do not count; 65 levels are refused
    # before json.loads runs, so no interpreter recursion limit or stack size is involved
    inside = '{"a": "[[[[\\"[[", "b": [1, {}]}'
    assert parse_json(inside, "evidence file", EvidenceError) == {"a": '[[[[\"[[', "b": [1, {}]}
    with pytest.raises(EvidenceError, match="nested deeper than 64 levels"):
        parse_json("[" * 65 + "]" * 65, "evidence file", EvidenceError)


def test_json_at_the_depth_limit_is_read() -> None:
    body = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(body, "evidence file", EvidenceError) is not None
    assert parse_json("9" * MAX_INT_DIGITS, "evidence file", EvidenceError) == int("9" * 1000)


@pytest.mark.parametrize("body", [DEEP, ('{"x": %s}' % HUGE_INT).encode()],
                         ids=["100000-deep", "4401-digit-int"])
def test_deep_or_huge_config_json_and_header(tmp_path: Path, body: bytes) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_bytes(body)
    with pytest.raises(ModelError, match="config.json: cannot read JSON .config.json.: refused"):
        resolve_model(model_id=None, revision=None, path=str(tmp_path / "m"))
    st = tmp_path / "h.safetensors"
    st.write_bytes(struct.pack("<Q", len(body)) + body)
    with pytest.raises(ModelError, match="h.safetensors: cannot read JSON .safetensors header.: "
                                         "refused"):
        read_header(st)


def test_a_huge_yaml_integer_is_one_line(tmp_path: Path) -> None:
    sheet = tmp_path / "s.yaml"
    sheet.write_text(SEED + f"budget: {{max_usd: {HUGE_INT}}}\n")
    err = _one_line(run_cli("plan", str(sheet), check=2))
    assert "an integer of 4401 digits at line 4 (at most 1000 accepted)" in err


# --- F10: YAML aliases and merge keys refused by name before expansion ------------------------

def _laughs(levels: int) -> str:
    names = "abcdefghi"[:levels]
    lines = [f'{names[0]}: &{names[0]} ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", '
             '"lol"]']
    for prev, name in zip(names, names[1:]):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_by_name(tmp_path: Path) -> None:
    sheet = tmp_path / "laughs.yaml"
    sheet.write_text(SEED + _laughs(9) + "requirements: {software: *i}\n")
    err = _one_line(run_cli("plan", str(sheet), check=2))
    assert err.endswith("laughs.yaml: YAML anchor &a at line 4 is not accepted (anchors and "
                        "aliases are refused: write the value out)")
    assert len(err) < 200  # the 6-level bomb gave a 4,335,066-byte line


@pytest.mark.parametrize("text,fragment", [
    (SEED + "x: *a\n", "YAML alias *a at line 4 is not accepted"),
    (SEED + "base: &b {days: 3}\nbudget: {<<: *b, max_usd: 10}\n", "YAML anchor &b at line 4"),
    (SEED + "budget: {<<: {days: 3}, max_usd: 10}\n", "YAML merge key << at line 4"),
])
def test_aliases_anchors_and_merge_keys_are_refused(text: str, fragment: str) -> None:
    with pytest.raises(SheetError, match=fragment.replace("*", r"\*")):
        parse_sheet_text(text)


def test_a_catalog_alias_is_refused(tmp_path: Path) -> None:
    cat = tmp_path / "c.yaml"
    cat.write_text("- &o {id: a, provider: p, card: RTX 4090, cards: 1, total_usd: 10}\n- *o\n")
    with pytest.raises(CatalogError, match="c.yaml: YAML anchor &o at line 1"):
        read_catalog(cat)


def test_a_quoted_double_angle_value_is_text(tmp_path: Path) -> None:
    cat = tmp_path / "c.yaml"
    cat.write_text("- {id: '<<', provider: p, card: RTX 4090, cards: 1, total_usd: 10}\n")
    offers, _ = read_catalog(cat)
    assert offers[0].id == "<<"


# --- F17: a model.path over the filesystem's name limit ---------------------------------------

def test_an_overlong_model_path_is_an_input_error(tmp_path: Path) -> None:
    sheet = tmp_path / "s.yaml"
    sheet.write_text(f"model: {{path: {'x' * 300}}}\ntask: inference\n"
                     "inference: {prompt_tokens: 16, new_tokens: 16}\n")
    err = _one_line(run_cli("estimate", str(sheet), check=2))
    assert "model.path: cannot read this folder: File name too long" in err


# --- F22 and S-a: safetensors headers and the index are cross-checked -------------------------

def _safetensors(path: Path, header: dict, data_bytes: int) -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * data_bytes)


def test_offsets_beyond_the_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")
    _safetensors(tmp_path / "model.safetensors", {"model.embed_tokens.weight": {
        "dtype": "BF16", "shape": [50000000000000], "data_offsets": [0, 100000000000000]}}, 0)
    with pytest.raises(ModelError, match="model.safetensors: the tensors span 100000000000000 B "
                                         "but the file holds 0 B of data after its header"):
        local_stored_tensors(tmp_path)


@pytest.mark.parametrize("second,fragment", [
    ([4, 12], "start at 4, expected 8: the tensor overlaps the previous tensor"),
    ([12, 20], "start at 12, expected 8: the tensor leaves a gap"),
])
def test_overlapping_or_gapped_tensors_are_refused(tmp_path: Path, second: list[int],
                                                   fragment: str) -> None:
    _safetensors(tmp_path / "m.safetensors", {
        "a": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]},
        "b": {"dtype": "BF16", "shape": [4], "data_offsets": second}}, 20)
    with pytest.raises(ModelError, match=fragment):
        read_header(tmp_path / "m.safetensors")


@pytest.mark.parametrize("index,fragment", [
    ({"metadata": {"total_size": 1}, "weight_map": {}}, "expected a non-empty weight_map"),
    ({"metadata": {"total_size": 2471645608}, "weight_map": {"a": "/etc/passwd"}},
     "weight_map: expected a shard file name in the index's folder"),
    ({"metadata": {"total_size": 1}, "weight_map": {"a": "../../../../etc/hostname"}},
     "expected a shard file name"),
    ({"metadata": {"total_size": 10**30}, "weight_map": {"a": "s1.safetensors"}},
     "total_size: metadata.total_size is 1000000000000000000000000000000 B but the shards' "
     "headers hold 8 B of tensors"),
])
def test_an_index_is_checked(tmp_path: Path, index: dict, fragment: str) -> None:
    _safetensors(tmp_path / "s1.safetensors",
                 {"a": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}, 8)
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ModelError, match=fragment):
        local_stored_tensors(tmp_path)


# --- point 4 / S-e: the header cache is validated on read -------------------------------------

@pytest.mark.parametrize("entry", [
    {"total_bytes": -123456789, "bytes_by_dtype": [["BF16", -123456789]], "tensor_count": 1,
     "source": "x"},
    {"total_bytes": 8, "bytes_by_dtype": [["BF16", 8]], "tensor_count": 1,
     "source": "<script>poisoned</script>"},
    {"total_bytes": 8, "bytes_by_dtype": [["EVIL", 8]], "tensor_count": 1, "source": "x"},
    {"total_bytes": True, "bytes_by_dtype": [], "tensor_count": 1, "source": "x"},
])
def test_a_poisoned_cache_entry_is_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               entry: dict) -> None:
    monkeypatch.setenv("GPUSIZER_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = cache_file("acme/tiny", "main")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(entry))
    with pytest.raises(HubError, match="not cached"):  # set aside, so refetched (offline here)
        hub_stored_tensors("acme/tiny", "main")


def test_a_sound_cache_entry_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSIZER_CACHE", str(tmp_path))
    path = cache_file("acme/tiny", "main")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"total_bytes": 8, "bytes_by_dtype": [["BF16", 8]],
                                "tensor_count": 1, "source": "sum of headers"}))
    assert hub_stored_tensors("acme/tiny", "main").total_bytes == 8


# --- F24: error lines show values cut and escaped ---------------------------------------------

def test_a_newline_in_a_value_cannot_forge_an_error_line(tmp_path: Path) -> None:
    sheet = tmp_path / "s.yaml"
    sheet.write_text('model: {id: "meta-llama/Meta-Llama-3.1-8B\\nerror: everything is fine"}\n'
                     "task: inference\ninference: {prompt_tokens: 16, new_tokens: 16}\n")
    err = _one_line(run_cli("estimate", str(sheet), check=2))
    # refused as text with a control character before any lookup (issue 13, F18; the fresh
    # user's F9), the value escaped
    assert ("model.id: control character U+000A in 'meta-llama/Meta-Llama-3.1-8B\\nerror: "
            "everything is fine': text may not hold control or bidi characters") in err


def test_a_long_garbage_row_is_cut_to_80_characters(tmp_path: Path) -> None:
    cat = tmp_path / "c.csv"
    cat.write_text("id,provider,card,cards,total_usd\na,p,RTX 4090,1," + "9x" * 5000 + "\n")
    with pytest.raises(CatalogError) as info:
        read_catalog(cat)
    message = str(info.value)
    assert "got '" + "9x" * 39 + "…" in message and len(message) < 400


def test_an_evidence_file_is_never_echoed_whole(tmp_path: Path) -> None:
    (tmp_path / "ev").mkdir()
    secret = {"auths": {"registry.example.com": {"auth": "dXNlcjpzM2NyM3QtdG9rZW4=" * 100}}}
    (tmp_path / "ev" / "run.json").write_text(json.dumps(secret))
    with pytest.raises(EvidenceError) as info:
        read_evidence_folder(tmp_path / "ev")
    assert len(str(info.value)) < 80 + len(str(tmp_path)) + 60


def test_paths_are_cut_to_their_last_80_characters() -> None:
    from gpusizer.errors import SheetError as E
    from gpusizer.errors import one_line, shown, shown_path
    long = "/x" * 100 + "/sheet.yaml"
    assert str(E("bad", file=long)) == "…" + long[-79:] + ": bad"
    assert shown_path("a\x1b[2Jb") == "'a\\x1b[2Jb'"
    assert shown("x" * 200) == "'" + "x" * 78 + "…" and shown("a\nb") == "'a\\nb'"
    assert one_line("a\nb\x1b") == "a\\nb\\x1b" and len(one_line("y" * 5000)) == 1000


def test_a_negative_reserve_says_it_must_not_be_negative() -> None:
    with pytest.raises(SheetError, match=r"reserve: must be >= 0, got '-6 GiB'"):
        parse_sheet_text(SEED + "reserve: -6 GiB\n")


# --- F13: -o refuses every input of the run ---------------------------------------------------

def test_output_never_overwrites_evidence_or_model_files(tmp_path: Path) -> None:
    sheet = tmp_path / "s.yaml"
    sheet.write_text(SEED)
    (tmp_path / "ev").mkdir()
    quote = tmp_path / "ev" / "quote.json"
    quote.write_text('{"kind": "commercial", "document": "q.pdf", "version": "1"}')
    before = quote.read_text()
    err = _one_line(run_cli("plan", str(sheet), "--evidence", str(tmp_path / "ev"), "-o",
                            str(quote), check=2))
    assert "is in the evidence folder, an input of this command" in err
    assert quote.read_text() == before
    (tmp_path / "m").mkdir()
    config = tmp_path / "m" / "config.json"
    config.write_text("{}")
    (tmp_path / "s2.yaml").write_text("model: {path: m}\ntask: inference\n"
                                      "inference: {prompt_tokens: 16, new_tokens: 16}\n")
    for command in ("plan", "estimate"):
        err = _one_line(run_cli(command, str(tmp_path / "s2.yaml"), "-o", str(config), check=2))
        assert "is in the model folder, an input of this command" in err
    assert config.read_text() == "{}"


def test_output_through_a_symlink_to_an_input_is_refused(tmp_path: Path) -> None:
    sheet = tmp_path / "s.yaml"
    sheet.write_text(SEED)
    cat = tmp_path / "c.yaml"
    cat.write_text("- {id: a, provider: p, card: RTX 4090, cards: 1, total_usd: 10}\n")
    os.symlink(cat, tmp_path / "out.json")
    err = _one_line(run_cli("alternatives", str(sheet), "--catalog", str(cat), "-o",
                            str(tmp_path / "out.json"), check=2))
    assert "is an input of this command" in err and cat.read_text().startswith("- {id: a")


# --- F12: alternatives estimate once per distinct card, not per offer -------------------------

def _estimates_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int) -> int:
    import gpusizer.decision.alternatives as alternatives
    from gpusizer.pipeline import run_alternatives

    cat = tmp_path / f"c{rows}.csv"
    cards = ("RTX 4090", "L4", "A10G")
    cat.write_text("id,provider,card,cards,total_usd\n" + "".join(
        f"o{i},p,{cards[i % 3]},1,{10 + i}\n" for i in range(rows)))
    calls = []
    real = alternatives.estimate_memory

    def counted(*args, **kwargs):
        calls.append(kwargs["card"].name)
        return real(*args, **kwargs)

    monkeypatch.setattr(alternatives, "estimate_memory", counted)
    sheet = parse_sheet_text("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\n"
                             "weights: bf16\ninference: {prompt_tokens: 7168, new_tokens: 1024, "
                             "concurrency: 16}\n")
    result = run_alternatives(sheet, catalogs=[cat])
    assert len(result.offers) == rows  # every offer is excluded on memory and gets its changes
    return len(calls)


def test_alternatives_estimate_per_distinct_card(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    few = _estimates_for(tmp_path, monkeypatch, 3)
    many = _estimates_for(tmp_path, monkeypatch, 60)
    assert few == many  # 20 times the offers, the same estimates: one per (changed sheet, card)


# --- F15 and point 4: input strings are text in every output ----------------------------------

EVIL = {"[/]": "closes a rich tag", "[link=https://evil.example/]seed[/link]": "a hyperlink",
        "<!--<script>": "an HTML parser state",
        "</script><img src=x onerror=alert(3)>": "raw HTML"}
"""Terminal escapes ("RTX\x1b[2J") no longer reach a view: the catalog refuses control
characters (``bounds.unsafe_character``, tests/catalog/test_untrusted_catalog.py)."""


def _evil_plan(tmp_path: Path) -> dict:
    from gpusizer.pipeline import run_plan
    from gpusizer.report.json_report import plan_document

    cat = tmp_path / "c.yaml"
    cat.write_text("".join(f"- {{id: {json.dumps(i)}, provider: {json.dumps(i)}, card: RTX 4090, "
                           "cards: 1, total_usd: 10}\n" for i in EVIL))
    return plan_document(run_plan(parse_sheet_text(SEED), catalogs=[cat]))


def test_the_terminal_table_shows_input_strings_as_text(tmp_path: Path) -> None:
    import io

    from gpusizer.report.terminal import print_terminal

    out = io.StringIO()
    print_terminal(_evil_plan(tmp_path), file=out)  # `[/]` raised rich.errors.MarkupError
    shown = out.getvalue()
    assert "\x1b" not in shown  # never sent raw
    # the offer table's first column (ids), its folded lines joined
    ids = "".join(line.split("│")[1].strip() for line in shown.splitlines()
                  if line.startswith("│") and line.count("│") > 2)
    assert "[/]" in ids and "[link=https://evil.example/]seed[/link]" in ids


def test_the_html_data_island_cannot_be_broken(tmp_path: Path) -> None:
    import html as html_lib
    import re

    from gpusizer.report.html import render_html

    doc = _evil_plan(tmp_path)
    page = render_html(doc)
    island = re.search(r'<script type="application/json" id="gpusizer-json">(.*?)</script>',
                       page, re.S)
    assert island and "<" not in island.group(1) and ">" not in island.group(1)
    assert json.loads(island.group(1)) == json.loads(json.dumps(doc, default=str))
    assert page.count("<script") == 1  # no tag from an input outside the island
    assert html_lib.escape("</script><img src=x onerror=alert(3)>") in page


def test_markdown_escapes_html_in_input_values(tmp_path: Path) -> None:
    from gpusizer.report.markdown import render_markdown

    text = render_markdown(_evil_plan(tmp_path))
    assert "<script" not in text and "<img" not in text and "<!--" not in text
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(3)&gt;" in text


def test_alternatives_markdown_escapes_html_in_input_values(tmp_path: Path) -> None:
    from gpusizer.report.alternatives_report import (alternatives_document,
                                                     render_alternatives_markdown)
    from gpusizer.pipeline import run_alternatives

    cat = tmp_path / "c.yaml"
    cat.write_text('- {id: "<b>x</b>", provider: p, card: RTX 4090, cards: 1, total_usd: 10}\n')
    sheet = parse_sheet_text("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\n"
                             "weights: bf16\ninference: {prompt_tokens: 7168, new_tokens: 1024, "
                             "concurrency: 16}\n")
    text = render_alternatives_markdown(alternatives_document(
        run_alternatives(sheet, catalogs=[cat])))
    assert "## &lt;b&gt;x&lt;/b&gt; (RTX 4090)" in text and "<b>" not in text


# --- point 2: found by a new user -------------------------------------------------------------

@pytest.mark.parametrize("block", ["inference", "budget", "quality"])
def test_an_empty_block_is_not_read_as_no_block(block: str) -> None:
    with pytest.raises(SheetError, match=f"{block}: the {block} block is empty"):
        parse_sheet_text(SEED + f"{block}:\n")
    assert getattr(parse_sheet_text(SEED + f"{block}: null\n"), block) is None  # written out


def test_measure_refuses_a_prompt_beyond_the_context_window(tmp_path: Path) -> None:
    sheet = tmp_path / "s.yaml"
    sheet.write_text("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\nweights: bf16\n"
                     "inference: {prompt_tokens: 200000, new_tokens: 256}\n")
    for command in (("estimate",), ("measure", "--out", str(tmp_path / "o"), "--device", "cpu")):
        err = _one_line(run_cli(*command[:1], str(sheet), *command[1:], check=2))
        assert ("prompt_tokens + new_tokens = 200000 + 256 = 200256 tokens exceeds the model's "
                "context window max_position_embeddings = 131072 tokens") in err
    assert not (tmp_path / "o").exists()  # refused before anything ran or was written


@pytest.mark.parametrize("name,text", [
    ("c.yaml", "- {id: a, provider: p, card: RTX 4090, cards: 0, total_usd: 10}\n"
               "- {id: b, provider: p, card: RTX 4090, cards: 1, total_usd: 10}\n"
               "- {id: c, provider: p, card: RTX 4090, cards: 1, total_usd: -1}\n"),
    ("c.csv", "id,provider,card,cards,total_usd\na,p,RTX 4090,0,10\nb,p,RTX 4090,1,10\n"
              "c,p,RTX 4090,1,-1\n"),
])
def test_a_catalog_reports_every_bad_row(tmp_path: Path, name: str, text: str) -> None:
    cat = tmp_path / name
    cat.write_text(text)
    with pytest.raises(CatalogError) as info:
        read_catalog(cat)
    message = str(info.value)
    assert f"{name}: 2 rows are invalid: row 1.cards: " in message
    assert "; row 3.total_usd: " in message and "row 2" not in message


def test_a_catalog_lists_ten_bad_rows_then_counts(tmp_path: Path) -> None:
    cat = tmp_path / "c.csv"
    cat.write_text("id,provider,card,cards,total_usd\n" + "".join(
        f"o{i},p,RTX 4090,0,10\n" for i in range(25)))
    with pytest.raises(CatalogError) as info:
        read_catalog(cat)
    # every bad row is counted; the first ones are listed while they fit in LISTED_CHARS (and
    # at most MAX_ROW_ERRORS), then the count of the others: the error line stays under 300
    reason = info.value.reason
    listed_rows = reason.count(".cards: ")
    assert reason.startswith("25 rows are invalid: row 1.cards: ")
    assert 1 < listed_rows <= 10
    assert f"; and {25 - listed_rows} more (row {listed_rows + 1}.cards, " in reason
    assert len(str(info.value)) < 300


def test_a_lock_file_in_the_evidence_folder_is_skipped_with_a_note(tmp_path: Path) -> None:
    sheet = tmp_path / "s.yaml"
    sheet.write_text(SEED)
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "s.quality-lock.json").write_text(json.dumps({
        "kind": "quality_criteria", "criteria": {}, "criteria_sha256": "0" * 64,
        "locked_at": "2026-11-30T00:00:00+00:00", "locked_by": "gpusizer 0.1.0"}))
    proc = run_cli("plan", str(sheet), "--evidence", str(tmp_path / "ev"), "--format", "json")
    ignored = json.loads(proc.stdout)["evidence"]["ignored"]
    assert ignored == [{"file": str(tmp_path / "ev" / "s.quality-lock.json"),
                        "reason": "a quality lock (kind quality_criteria), not evidence: skipped "
                                  "(keep it beside the sheet, out of --evidence)"}]


@pytest.mark.parametrize(("text", "what"), [("ma\x1bin", "control character U+001B"),
                                            ("main\u202e", "bidi control U+202E"),
                                            ("ma\nin", "control character U+000A")])
def test_f9_a_sheet_text_with_control_or_bidi_characters_is_refused(text, what):
    from gpusizer.errors import SheetError
    from gpusizer.sheet import parse_sheet
    with pytest.raises(SheetError) as info:
        parse_sheet({"model": {"id": "Qwen/Qwen2.5-7B-Instruct", "revision": text},
                     "task": "inference", "weights": "bf16",
                     "inference": {"prompt_tokens": 10, "new_tokens": 10}})
    assert info.value.field == "model.revision"
    assert f"{what} in {text!r}: text may not hold control or bidi characters" in \
        str(info.value)
