"""Relative regression in the metric's worse direction, and the tolerance test (pure).

``regression = (candidate − reference) / reference`` when lower is better (perplexity),
``(reference − candidate) / reference`` when higher is better (exact match, lm-eval accuracy).
Positive: the candidate is worse; negative: better. The candidate passes when
``regression ≤ max_regression`` (the sheet's ``quality.max_regression``, relative).
"""

from __future__ import annotations

from ..errors import QualityError

__all__ = ["relative_regression", "within_tolerance", "direction_of"]


def relative_regression(reference: float, candidate: float, direction: str) -> float:
    """Relative regression of ``candidate`` vs ``reference`` (dimensionless).

    Raises:
        QualityError: a reference of 0 or below (nothing to be relative to) or an unknown
            direction.
    """
    if direction not in ("lower", "higher"):
        raise QualityError(f"expected direction lower or higher, got {direction!r}",
                           field="direction", value=direction)
    if not reference > 0:
        raise QualityError(f"the reference's metric is {reference!r}: a relative regression "
                           "needs a reference value > 0 (the reference fails the task itself)",
                           field="reference_value", value=reference)
    worse = candidate - reference if direction == "lower" else reference - candidate
    return worse / reference


def within_tolerance(regression: float, max_regression: float) -> bool:
    """``regression ≤ max_regression`` (both relative)."""
    return regression <= max_regression


def direction_of(metric: str, lm_eval_higher: bool | None = None) -> str:
    """The better direction of a sheet's ``quality.metric``: ``lower`` for perplexity; ``higher``
    for exact_match and lm-eval metrics, unless lm-eval's results file marks the metric
    lower-is-better (``lm_eval_higher`` False)."""
    if metric == "perplexity":
        return "lower"
    if metric.startswith("lm_eval:") and lm_eval_higher is False:
        return "lower"
    return "higher"
