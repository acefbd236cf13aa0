"""gpusizer: size GPU memory for an LLM workload and classify GPU offers.

The pipeline, one module (or package) per stage, in data-flow order:
``sheet`` → ``model`` → ``memory`` → ``evidence`` → ``decision`` → ``report``;
``cli`` sits on top. ``units`` and ``errors`` are shared.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
