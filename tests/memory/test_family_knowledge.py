"""The memory stage reads what the families declare, never a family's names (issue 10, point 4).

A ``model_type`` string or a module name tested in ``memory/`` is family knowledge outside the
family: a new family with other names (``Wqkv``) would then be sized without an error but wrong.
Roles (``LinearModule.role``), PEFT defaults, positions and buffers come from
``model/families`` through ``ModelFacts.architecture``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import gpusizer.memory
from gpusizer.model.facts import MODULE_ROLES, ParamRole
from gpusizer.model.families import FAMILIES
from gpusizer.model.registry import facts_from_entry, registry_entries

MEMORY = Path(gpusizer.memory.__file__).parent


def _module_names() -> set[str]:
    """Every component of every linear module path the bundled families produce, and the
    checkpoint names of converted experts, except words that are also role names."""
    names: set[str] = set()
    for entry in registry_entries():
        for m in facts_from_entry(entry).architecture.modules:
            names.update(m.path.split("."))
            names.update(m.converted_from)
    return names - MODULE_ROLES - set(get_args(ParamRole))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants (module, class, function) and of bare string statements."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            out.update(id(s.value) for s in body
                       if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    return out


def _literals(path: Path) -> list[tuple[int, str]]:
    """String constants of ``path`` that code can branch on: not docstrings, not parts of an
    f-string, not prose (a branch compares names, which hold no space)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
            and " " not in n.value]


def _family_literals(path: Path) -> list[str]:
    """``file:line: literal`` for each model_type, or string made only of module-name parts."""
    forbidden_names = _module_names()
    found = []
    for line, text in _literals(path):
        parts = [p for p in text.split(".") if p]
        if text in FAMILIES or (parts and all(p in forbidden_names for p in parts)):
            found.append(f"{path.name}:{line}: {text!r}")
    return found


def test_memory_holds_no_model_type_or_module_name_literal():
    found = [hit for path in sorted(MEMORY.rglob("*.py")) for hit in _family_literals(path)]
    assert not found, "family knowledge in memory/ (declare it in model/families):\n" + \
        "\n".join(found)


def test_the_check_flags_the_rules_memory_used_to_hold(tmp_path):
    # excerpts of memory/training.py, lora.py and vllm.py before the families declared roles
    old = tmp_path / "old.py"
    old.write_text('''"""Docstrings may name q_proj."""
_ATTENTION_INPUT_READERS = frozenset({"q_proj", "query_key_value", "c_attn"})
_MLP_INPUT_READERS = (".gate_proj", ".dense_h_to_4h", "mlp.gate_up_proj")
o = bool({p for p in paths if p.endswith((".o_proj", ".dense", "attn.c_proj"))})
_LEARNED_POSITIONS = frozenset({"gpt2"})
text = f"no module named {name} matches q_proj"
''', encoding="utf-8")
    found = {hit.split(": ", 1)[1] for hit in _family_literals(old)}
    assert found == {repr(t) for t in ("q_proj", "query_key_value", "c_attn", ".gate_proj",
                                       ".dense_h_to_4h", "mlp.gate_up_proj", ".o_proj", ".dense",
                                       "attn.c_proj", "gpt2")}
