"""A SkyPilot task that runs the measurement protocol on one offer (CONTRACT.md ``gpusizer
launch``; SPEC R4, R9): the machine the offer names, this project as the workdir, the ``measure``
extra with a CUDA torch, ``gpusizer measure`` (and ``gpusizer quality run`` when the sheet
declares quality) — or, for a serving engine, the engine started with the sheet's settings and
``gpusizer import`` on its start-up log — and the evidence folder brought back.

The evidence is scoped to the offer (``--offer-id``, ``--provider``, ``--image``), so a run that
passes there makes compatibility ``acceptable`` for that offer alone
(``decision.criteria._own_environment``), never for another offer of the same card.

SkyPilot task keys follow its YAML spec (docs.skypilot.co "YAML Configuration": ``name``,
``workdir``, ``resources.{cloud, region, instance_type, accelerators, disk_size, use_spot,
image_id}``, ``file_mounts``, ``envs``, ``setup``, ``run``); the tests parse every generated task
with ``sky.Task.from_yaml_config`` where SkyPilot is installed.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..catalog.types import Card, Offer
from ..errors import CatalogError, SheetError
from ..memory.engines import engine_of
from ..sheet import Sheet

__all__ = ["LaunchTask", "skypilot_task", "TORCH_RANGE", "REMOTE_EVIDENCE", "REMOTE_INPUTS",
           "QUALITY_CANDIDATES", "SERVER_READY"]

TORCH_RANGE = "torch>=2.4,<2.15"
"""The measure extra's torch range (pyproject.toml); PyPI's Linux wheels in it are CUDA builds,
unlike constraints.txt's CPU pin for CI."""
REMOTE_EVIDENCE = "~/gpusizer-evidence"
"""Where the task writes raw notes and evidence on the machine (brought back from there)."""
REMOTE_INPUTS = "~/gpusizer-inputs"
"""Where the sheet (and its model folder, corpus and quality lock) are mounted."""
QUALITY_CANDIDATES = ("fp32", "fp16", "bf16", "int8", "nf4", "fp4")
"""Weight formats ``gpusizer quality run --candidate`` evaluates (``quality.formats``)."""
SERVER_READY = "Application startup complete"
"""uvicorn's line once an ASGI server serves: vLLM's and SGLang's OpenAI servers both run on
uvicorn, so their start-up log is complete when it appears (no engine is named here:
``memory.engines`` owns what differs between engines)."""


@dataclass(frozen=True)
class LaunchTask:
    """A task ready to launch.

    Attributes:
        cluster: the SkyPilot cluster name used (one per offer).
        config: the task as SkyPilot's YAML mapping.
        launch_command: the ``sky launch`` command line (the task file as ``{task}``).
        fetch_command: the command that brings the evidence folder back (``{out}``: the local
            folder).
        down_command: the command that stops the machine.
        notes: what the task could not take from the offer, and what it chose instead.
    """

    cluster: str
    config: dict[str, Any]
    launch_command: str
    fetch_command: str
    down_command: str
    notes: tuple[str, ...] = ()


def _cluster_name(offer: Offer) -> str:
    """A SkyPilot cluster name for the offer: lower-case letters, digits and '-', at most 35."""
    slug = re.sub(r"[^a-z0-9]+", "-", offer.id.lower()).strip("-")
    return ("gpusizer-" + slug)[:35].rstrip("-")


def _required(offer: Offer) -> tuple[str, str, str]:
    """The offer's cloud, region and instance type, or CatalogError naming what is missing."""
    missing = [k for k in ("cloud", "region", "instance_type") if not getattr(offer, k)]
    if missing:
        raise CatalogError(
            f"offer {offer.id!r} has no {', '.join(missing)}: give the catalog keys cloud, "
            "region and instance_type (CONTRACT.md), or use a SkyPilot vms.csv catalog",
            field=missing[0], value=offer.id)
    return offer.cloud, offer.region, offer.instance_type  # type: ignore[return-value]


def _disk_gb(offer: Offer, sheet: Sheet) -> int:
    """Disk in GB: the offer's documented storage, else the sheet's required storage."""
    size = offer.storage_bytes or sheet.requirements.storage
    if not size:
        raise CatalogError(f"offer {offer.id!r} documents no storage and the sheet requires none: "
                           "give the catalog key storage or requirements.storage (the disk the "
                           "task asks for)", field="storage", value=offer.id)
    return math.ceil(size / 10**9)


def _mounts(sheet: Sheet, sheet_path: Path, lock: Path | None) -> tuple[dict[str, str], str]:
    """SkyPilot ``file_mounts`` (remote → local) for the sheet and what it reads, and the
    remote sheet's path as a shell word (catalog and file names are never run as shell)."""
    mounts = {f"{REMOTE_INPUTS}/{sheet_path.name}": str(sheet_path.resolve())}
    remote_sheet = _remote(sheet_path.name)
    base = sheet_path.resolve().parent
    if sheet.model.path is not None:
        local = Path(sheet.model.path)
        local = local if local.is_absolute() else base / local
        if not Path(sheet.model.path).is_absolute():  # the sheet reads it relative to itself
            mounts[f"{REMOTE_INPUTS}/{sheet.model.path}"] = str(local)
        else:
            raise SheetError("launch mounts a relative model.path beside the sheet; an absolute "
                             "path names a folder of this machine", field="model.path",
                             value=sheet.model.path)
    if sheet.quality is not None:
        corpus = Path(sheet.quality.corpus)
        if not corpus.is_absolute():
            mounts[f"{REMOTE_INPUTS}/{sheet.quality.corpus}"] = str(base / corpus)
        if lock is not None:
            mounts[f"{REMOTE_INPUTS}/{lock.name}"] = str(lock.resolve())
    return mounts, remote_sheet


def _remote(name: str) -> str:
    """A file under :data:`REMOTE_INPUTS` as a shell word: the name quoted, ``~`` expanded."""
    return f"{REMOTE_INPUTS}/{shlex.quote(name)}"


def _engine_run(engine: str, card: Card | None, remote_sheet: str,
                command: str | None) -> list[str]:
    """Start the serving engine, wait for its server to serve, stop it, import its start-up
    log (CONTRACT.md ``gpusizer import <engine>-log``)."""
    log = f"{REMOTE_EVIDENCE}/{engine}-startup.log"
    if command is None:
        raise SheetError(f"launch needs the {engine} command the verdict holds under "
                         "(offers[].pool.command), which this estimate does not give",
                         field="inference.engine", value=engine)
    card_name = shlex.quote(card.name) if card is not None else '"$GPUSIZER_CARD"'
    return [
        f"({command}) > {log} 2>&1 &",
        "ENGINE_PID=$!",
        f"for i in $(seq 1 360); do grep -q {shlex.quote(SERVER_READY)} {log} && break; "
        "kill -0 $ENGINE_PID 2>/dev/null || break; sleep 5; done",
        "kill $ENGINE_PID 2>/dev/null || true; wait $ENGINE_PID 2>/dev/null || true",
        f"gpusizer import {engine}-log {log} --sheet {remote_sheet} --card {card_name} "
        f"--out {REMOTE_EVIDENCE}",
    ]


def skypilot_task(sheet: Sheet, sheet_path: Path, offer: Offer, card: Card | None, *,
                  workdir: Path, engine_command: str | None = None,
                  lock: Path | None = None) -> LaunchTask:
    """The SkyPilot task that measures ``sheet`` on ``offer``.

    Args:
        sheet: the validated sheet (one workload; a campaign's variant already chosen).
        sheet_path: its file (mounted on the machine).
        offer: the offer to run on (cloud, region and instance type: SkyPilot catalogs carry
            them; other catalogs give the keys ``cloud``, ``region``, ``instance_type``).
        card: the offer's card in the card table, or None.
        workdir: the project's folder (synced as SkyPilot's ``workdir``, installed there).
        engine_command: a serving engine's exact command line (``offers[].pool.command``).
        lock: the quality lock file, when the sheet declares quality.

    Returns:
        :class:`LaunchTask`.

    Raises:
        CatalogError: the offer lacks cloud, region, instance type or a disk size (the field
            is named).
        SheetError: a serving engine without its command; an absolute ``model.path``.
    """
    cloud, region, instance_type = _required(offer)
    disk = _disk_gb(offer, sheet)
    mounts, remote_sheet = _mounts(sheet, sheet_path, lock)
    notes: list[str] = []
    image = offer.environment or f"skypilot default image ({cloud})"
    scope = (f" --offer-id {shlex.quote(offer.id)} --provider {shlex.quote(offer.provider)}"
             f" --image {shlex.quote(image)}")
    engine = engine_of(sheet)
    setup = ["set -e", f"pip install -e '.[measure]' '{TORCH_RANGE}'"]
    run = ["set -e", f"mkdir -p {REMOTE_EVIDENCE}"]
    if not engine.measure_supported:  # a serving engine: its own start-up log is the evidence
        version = getattr(sheet.stack, engine.name, "auto")  # the engine's pip name is its name
        setup.append(f"pip install '{engine.name}" + ("" if version == "auto" else
                                                      f"=={version}") + "'")
        run += _engine_run(engine.name, card, remote_sheet, engine_command)
        notes.append(f"{engine.label}: its start-up log is evidence of capacity only; it runs "
                     "no request, so the workload criterion stays to confirm (CONTRACT.md)")
    else:
        run.append(f"gpusizer measure {remote_sheet} --out {REMOTE_EVIDENCE}{scope}")
    if sheet.quality is not None:
        if sheet.weights in QUALITY_CANDIDATES and lock is not None:
            run.append(f"gpusizer quality run {remote_sheet} --candidate {sheet.weights} "
                       f"--lock {_remote(lock.name)} --out {REMOTE_EVIDENCE}/quality")
        else:
            notes.append(f"quality: no run (weights {sheet.weights}: gpusizer quality run "
                         f"evaluates {', '.join(QUALITY_CANDIDATES)} against a locked criteria "
                         "file)")
    resources: dict[str, Any] = {
        "cloud": cloud, "region": region, "instance_type": instance_type,
        "accelerators": {offer.card: offer.cards}, "disk_size": disk, "use_spot": offer.spot,
    }
    cluster = _cluster_name(offer)
    config = {"name": cluster, "workdir": str(workdir.resolve()), "resources": resources,
              "file_mounts": mounts, "setup": "\n".join(setup) + "\n",
              "run": "\n".join(run) + "\n"}
    return LaunchTask(
        cluster=cluster, config=config,
        launch_command=f"sky launch -c {cluster} {{task}} --yes",
        fetch_command=f"rsync -Pavz {cluster}:{REMOTE_EVIDENCE}/ {{out}}/",
        down_command=f"sky down {cluster} --yes", notes=tuple(notes))
