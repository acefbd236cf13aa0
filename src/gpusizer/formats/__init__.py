"""Weight formats: one record per format, the registry, and a checkpoint's parsed quantization.

Layer: above ``units`` / ``errors`` / ``yaml_reader``, below ``sheet``, ``model``, ``memory`` and
everything after them; it imports none of those (a test checks it).

- :class:`WeightFormat` (``record.py``): bits, layout, metadata and matmul-transient functions,
  flags (packed at rest, produced at load, dequantizable), compute-capability rules per engine,
  lower-precision successors, detector.
- ``FORMATS`` (``registry.py``): every format in the sheet's order.
- :class:`QuantConfig` / :class:`QuantParams` (``quant_config.py``): what a checkpoint's
  ``quantization_config`` says, parsed once, and the parameters a stage sizes with — one set of
  defaults for every stage.

How to add a format: ``README.md`` in this folder.
"""

from .quant_config import (DEFAULT_GROUP_SIZE, FP8_DEFAULT_BLOCK, PER_ROW, PER_TENSOR,
                           QuantConfig, QuantParams, QuantSource, module_excluded)
from .record import (ALL_ENGINES, CardStep, Fallback, Matrices, Metadata, NO_METADATA,
                     WeightFormat, ceil_div)
from .registry import (FORMATS, NAMES, compute_dtype, detect, dtype_format, quant_params,
                       quantization_config_of, side_files, weight_format)

__all__ = [
    "WeightFormat", "Matrices", "Metadata", "NO_METADATA", "Fallback", "CardStep", "ceil_div",
    "ALL_ENGINES", "FORMATS", "NAMES", "weight_format", "detect", "dtype_format",
    "compute_dtype", "side_files", "quantization_config_of", "QuantConfig", "QuantParams",
    "QuantSource", "quant_params", "module_excluded", "DEFAULT_GROUP_SIZE", "FP8_DEFAULT_BLOCK",
    "PER_TENSOR", "PER_ROW",
]
