"""From a sheet file, catalogs and an offer id to a SkyPilot task (``launch.task``), and running
it with SkyPilot's own CLI (``sky launch``, then ``rsync`` over the SSH alias SkyPilot writes for
the cluster, then ``sky down``)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..catalog.cards import resolve_offer_card
from ..errors import ArgumentError, GpusizerError
from ..memory.engines import engine_of
from ..memory.estimate import estimate_memory
from ..pipeline.inputs import load_plan_inputs, resolve_or_config_only
from ..sheet import Sheet
from .task import LaunchTask, skypilot_task

__all__ = ["LaunchPlan", "prepare_launch", "run_launch", "project_folder", "task_yaml",
           "TASK_FILE"]

TASK_FILE = "sky-task.yaml"
"""The task file written in the evidence folder (``--out``) before launching."""


@dataclass(frozen=True)
class LaunchPlan:
    """What ``gpusizer launch`` would do: the task, its YAML text and the commands in order."""

    task: LaunchTask
    yaml_text: str
    out_dir: Path

    @property
    def commands(self) -> list[str]:
        """The shell commands, in order, with the task file and the output folder filled in."""
        task_file = shlex.quote(str(self.out_dir / TASK_FILE))
        out = shlex.quote(str(self.out_dir))
        return [self.task.launch_command.format(task=task_file),
                self.task.fetch_command.format(out=out), self.task.down_command]


def project_folder() -> Path:
    """The checkout gpusizer runs from (its ``pyproject.toml`` folder): SkyPilot's workdir.

    Raises:
        ArgumentError: gpusizer is installed without its sources (a wheel).
    """
    root = Path(__file__).resolve().parents[3]
    if not (root / "pyproject.toml").is_file():
        raise ArgumentError("launch syncs the gpusizer checkout to the machine; this gpusizer "
                            f"is installed without one ({root} has no pyproject.toml): install "
                            "it from a clone with pip install -e '.[launch]'", field="launch")
    return root


def prepare_launch(sheet: Sheet, sheet_path: Path, offer_id: str, *,
                   catalogs: list[Path] | None, out_dir: Path) -> LaunchPlan:
    """The task for ``offer_id`` of the catalogs (no file written, nothing launched).

    Raises:
        ArgumentError: no offer has that id (field ``--offer``).
        CatalogError, SheetError, ModelError: as ``launch.task.skypilot_task`` and the input
            stage.
    """
    inputs = load_plan_inputs(sheet, catalogs=catalogs, base_dir=sheet_path.parent)
    offer = next((o for o in inputs.offers if o.id == offer_id), None)
    if offer is None:
        ids = [o.id for o in inputs.offers]
        raise ArgumentError(f"no offer of the catalogs has this id ({len(ids)} offers; the "
                            f"first: {', '.join(ids[:3])})", field="--offer", value=offer_id)
    card = resolve_offer_card(offer).card
    command = None
    if not engine_of(sheet).measure_supported and card is not None:  # a serving engine
        facts, _ = resolve_or_config_only(sheet, base_dir=sheet_path.parent)
        pool = estimate_memory(sheet, facts, card=card).pool
        command = getattr(pool, "command", None)  # offers[].pool.command, where it exists
    lock = None
    if sheet.quality is not None:
        from ..quality.criteria_lock import default_lock_path
        candidate = default_lock_path(sheet_path)
        lock = candidate if candidate.is_file() else None
    task = skypilot_task(sheet, sheet_path, offer, card, workdir=project_folder(),
                         engine_command=command, lock=lock)
    return LaunchPlan(task, task_yaml(task.config), out_dir)


class _TaskDumper(yaml.SafeDumper):
    """YAML with multi-line strings (setup, run) as literal ``|`` blocks, as SkyPilot's
    examples write them."""


def _literal(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_TaskDumper.add_representer(str, _literal)


def task_yaml(config: dict) -> str:
    """The task mapping as YAML text (keys in SkyPilot's documented order, no line folding)."""
    return yaml.dump(config, Dumper=_TaskDumper, sort_keys=False, width=10**6,
                     allow_unicode=True)


def run_launch(plan: LaunchPlan) -> None:
    """Write the task file into the output folder and run the commands in order (needs the
    ``launch`` extra's ``sky`` command and a cloud account SkyPilot can use).

    Raises:
        GpusizerError: ``sky`` is not installed, or a command failed (its exit status named).
    """
    if shutil.which("sky") is None:
        raise GpusizerError("gpusizer launch needs SkyPilot: pip install 'gpusizer[launch]' "
                            "(or --dry-run to print the task)")
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    (plan.out_dir / TASK_FILE).write_text(plan.yaml_text, encoding="utf-8")
    for command in plan.commands:
        done = subprocess.run(command, shell=True, check=False)
        if done.returncode != 0:
            raise GpusizerError(f"{command.split()[0]} exited {done.returncode}: {command}")
