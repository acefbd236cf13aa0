"""``gpusizer measure``: run the ladder (short → typical → limit) for real and write raw notes and
evidence. Needs the measure extra (torch, transformers, peft, nvidia-ml-py), imported only when
called."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HubError, MeasureExtraMissingError, install_line
from ..sheet import Sheet

if TYPE_CHECKING:
    from ..measure.run import MeasurementResult

__all__ = ["measure"]


def measure(sheet: Sheet, out: str | Path, *, random_weights: bool,
            base_dir: str | Path | None = None, provider: str | None = None,
            image: str | None = None, offer_id: str | None = None,
            device: str | None = None) -> MeasurementResult:
    """Run the ladder for ``sheet`` and write raw notes and evidence under ``out``
    (``measure.run.run_measurement``: its arguments, result and errors).

    Raises:
        MeasureExtraMissingError: torch, transformers or peft is not installed (the message names
            the missing package and the extra).
        MeasureUnsupportedError, MeasureError: see ``measure.run.run_measurement``.
        SheetError: prompt + new tokens (or the sequence length) beyond the model's context
            window, refused before anything is loaded, as ``estimate`` refuses it.
    """
    from ..memory.estimate import check_context_window
    from ..model.resolve import facts_for_sheet
    try:
        facts = facts_for_sheet(sheet, base_dir=Path(base_dir) if base_dir else None)
    except HubError:
        facts = None  # the Hub's answer is the loader's to give (it may hold a cached copy)
    check_context_window(sheet, facts)
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401

        from ..measure.run import run_measurement
    except ImportError as exc:
        raise MeasureExtraMissingError(f"the measure extra is not installed ({exc.name or exc} "
                                       f"is missing): {install_line('measure')}") from None
    return run_measurement(sheet, out, random_weights=random_weights, base_dir=base_dir,
                           provider=provider, image=image, offer_id=offer_id, device=device)
