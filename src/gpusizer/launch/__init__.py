"""``gpusizer launch``: measure a sheet on the offer itself, through SkyPilot (the ``launch``
extra). :func:`prepare_launch` builds the task from the sheet and the catalogs (no network);
:func:`run_launch` hands it to SkyPilot's CLI and brings the evidence back."""

from __future__ import annotations

from .prepare import LaunchPlan, prepare_launch, run_launch
from .task import LaunchTask, skypilot_task

__all__ = ["LaunchPlan", "LaunchTask", "prepare_launch", "run_launch", "skypilot_task"]
