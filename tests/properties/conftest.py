"""Hypothesis profiles for the property suite.

``ci`` (the default): a fixed seed (``derandomize``), few examples, no deadline — bounded for CI.
``deep``: many more examples, random seeds; select it with ``GPUSIZER_HYPOTHESIS=deep``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=100, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.register_profile(
    "deep", max_examples=2000, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("GPUSIZER_HYPOTHESIS", "ci"))
