"""Write docs/json-output.md from the code: the JSON Schemas of ``gpusizer schema --output NAME``
(``gpusizer.report.output_schema``), and which ⟨new⟩ items of CONTRACT.md exist now, probed in
the sheet's model, the output models and the CLI's commands.

Run: ``PYTHONPATH=src python docs/generate_json_output.py`` (``--check`` exits 1 when the
committed page differs; ``tests/test_json_output_doc.py`` runs that check).
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gpusizer import SCHEMA_VERSION
from gpusizer.report.output_schema import OUTPUT_MODELS, output_schema
from gpusizer.sheet import Sheet

DOC = Path(__file__).resolve().parent / "json-output.md"

NEW_ITEMS: tuple[tuple[str, str, str], ...] = (
    # (CONTRACT.md's wording, probe kind, probe): kinds are "sheet" (a dotted key of the sheet),
    # "value" (a value the sheet's schema admits), "output" (NAME:dotted key of an output
    # model), "command" (a CLI command) and "option" (COMMAND --option)
    ("`weights: nvfp4`", "value", "nvfp4"),
    ("`inference.engine: sglang`", "value", "sglang"),
    ("`inference.kv_cache_dtype: fp8_e4m3 | fp8_e5m2`", "value", "fp8_e4m3"),
    ("`inference.images`", "sheet", "inference.images"),
    ("`inference.mem_fraction_static` (sglang)", "sheet", "inference.mem_fraction_static"),
    ("`training.precision: master`", "value", "master"),
    ("`training.peft`, `peft_options`", "sheet", "training.peft"),
    ("`training.modules_to_save`", "sheet", "training.modules_to_save"),
    ("`training.loss`", "sheet", "training.loss"),
    ("`training.packing`", "sheet", "training.packing"),
    ("`training.checkpointing`", "sheet", "training.checkpointing"),
    ("`training.dataset_tokens`, `epochs`, `mfu`", "sheet", "training.dataset_tokens"),
    ("`placement.nodes`", "sheet", "placement.nodes"),
    ("`placement.strategy: zero1 | zero3`", "value", "zero3"),
    ("`placement.fsdp_sharding`", "sheet", "placement.fsdp_sharding"),
    ("`placement.offload`", "sheet", "placement.offload"),
    ("`stack` (versions, framework)", "sheet", "stack"),
    ("`variants` (campaigns)", "sheet", "variants"),
    ("`schema_version` on every output", "output", "plan:schema_version"),
    ("`gpusizer schema --output NAME`", "option", "schema --output"),
    ("`gpusizer cards [SHEET]`", "command", "cards"),
    ("`gpusizer models`", "command", "models"),
    ("`gpusizer import vllm-log|sglang-log`", "command", "import"),
    ("`gpusizer launch`", "command", "launch"),
    ("`gpusizer serve` and `POST /api/plan`", "command", "serve"),
    ("`offers[].estimated_fit`, `headroom_bytes`", "output", "plan:offers.estimated_fit"),
    ("`offers[].provisional_rank` (fits only, R3 order)", "output",
     "plan:offers.provisional_rank"),
    ("`offers[].claimed_device_bytes`", "output", "plan:offers.claimed_device_bytes"),
    ("`memory.pool`, `offers[].pool` (`vllm` alias)", "output", "plan:memory.pool"),
    ("`memory.pool.command`", "output", "plan:memory.pool.command"),
    ("`memory.host_ram_bytes`", "output", "plan:memory.host_ram_bytes"),
    ("`memory.reserved_peak_bytes`", "output", "plan:memory.reserved_peak_bytes"),
    ("`memory.peak_interval_bytes` (intervals)", "output", "plan:memory.peak_interval_bytes"),
    ("`offers[].throughput`", "output", "plan:offers.throughput"),
    ("`campaign` (variants)", "output", "plan:campaign"),
    ("`kind: engine_log` evidence", "value", "engine_log"),
)
"""CONTRACT.md's ⟨new⟩ items and where the code would show each."""


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in typing.get_args(annotation) for m in _models_in(a)]


def _has_key(model: type[BaseModel], dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    info = model.model_fields.get(head)
    if info is None:
        return False
    return not rest or any(_has_key(m, rest) for m in _models_in(info.annotation))


def _commands() -> set[str]:
    from gpusizer.cli import app
    names = {c.name or c.callback.__name__ for c in app.registered_commands}
    return names | {g.name for g in app.registered_groups if g.name}


def _options(command: str) -> set[str]:
    import inspect

    from gpusizer.cli import app
    for c in app.registered_commands:
        if (c.name or c.callback.__name__) == command:
            return {f"--{p}" for p in inspect.signature(c.callback).parameters}
    return set()


def exists(kind: str, probe: str) -> bool:
    """True when the code shows a ⟨new⟩ item (see :data:`NEW_ITEMS`)."""
    import json
    if kind == "sheet":
        return _has_key(Sheet, probe)
    if kind == "value":
        from gpusizer.evidence import EvidenceDoc
        texts = json.dumps(Sheet.model_json_schema()) + json.dumps(EvidenceDoc.model_json_schema())
        return f'"{probe}"' in texts
    if kind == "output":
        name, _, dotted = probe.partition(":")
        return _has_key(OUTPUT_MODELS[name], dotted)
    if kind == "command":
        return probe in _commands()
    command, _, option = probe.partition(" ")
    return option in _options(command)


def _anchor(name: str) -> str:
    return name.lower()


def _type(prop: dict[str, Any]) -> str:
    """A schema node as words: ``integer or null``, ``list of [ItemOut](#itemout)``."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "const" in prop:
        return f"`{prop['const']!s}`"
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"])
    kind = prop.get("type")
    if kind == "array":
        return "list of " + _type(prop.get("items", {}))
    if kind == "object":
        extra = prop.get("additionalProperties")
        return "object of " + _type(extra) if isinstance(extra, dict) and extra else "object"
    return kind or "any"


def _ref_description(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """The description of the object a property refers to (directly or through ``or null``)."""
    for node in [prop, *prop.get("anyOf", ()), prop.get("items", {})]:
        if "$ref" in node:
            return defs.get(node["$ref"].rsplit("/", 1)[-1], {}).get("description", "")
    return ""


def _table(node: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    required = set(node.get("required", ()))
    lines = ["| key | type | always present | meaning |", "|---|---|---|---|"]
    for key, prop in node.get("properties", {}).items():
        meaning = prop.get("description") or _ref_description(prop, defs)
        meaning = " ".join(meaning.split()).replace("|", "\\|")
        lines.append(f"| `{key}` | {_type(prop)} | {'yes' if key in required else 'no'} | "
                     f"{meaning} |")
    return lines


def render() -> str:
    """The whole page, as committed in docs/json-output.md."""
    out = [
        "# JSON output reference",
        "",
        "<!-- generated by docs/generate_json_output.py from gpusizer.report.output_schema; "
        "do not edit by hand -->",
        "",
        f"Every `--format json` document carries `schema_version` ({SCHEMA_VERSION}); it rises "
        "only when a field is renamed or removed, so a consumer must accept keys beside the ones "
        "listed here (every object allows them). `gpusizer schema --output NAME` prints the "
        "JSON Schema (draft 2020-12) of each document below; plain `gpusizer schema` prints the "
        "workload sheet's. Measurement and quality evidence files carry `schema_version` too. "
        "Bytes are integers, per GPU unless the key says otherwise; CONTRACT.md gives the "
        "meaning of each figure.",
        "",
    ]
    objects: dict[str, dict[str, Any]] = {}
    for name in OUTPUT_MODELS:
        schema = output_schema(name)
        out += [f"## `gpusizer {name} --format json`", "",
                " ".join(OUTPUT_MODELS[name].__doc__.split()), "",
                *_table(schema, schema.get("$defs", {})), ""]
        objects.update(schema.get("$defs", {}))
    out += ["## Objects", ""]
    for name in sorted(objects):
        node = objects[name]
        out += [f"### {name}", "", " ".join(node.get("description", "").split()), "",
                *_table(node, objects), ""]
    out += ["## CONTRACT.md's ⟨new⟩ items in this version", "",
            "Probed in the code when this page was generated: the sheet's model, the output "
            "models above and the CLI's commands.", "",
            "| item | here |", "|---|---|"]
    for label, kind, probe in NEW_ITEMS:
        shown = label.replace("|", "\\|")
        out.append(f"| {shown} | {'yes' if exists(kind, probe) else 'not yet'} |")
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is stale: run python docs/generate_json_output.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
