"""The local web page (``gpusizer serve``, issue 18; needs ``pip install "gpusizer[web]"``).

- :mod:`.schema_form`: the sheet form generated from the sheet's own JSON Schema, the sheet a
  submitted form makes, and the sheet keys that name paths.
- :mod:`.limits`: request bodies and uploads capped with :data:`gpusizer.input_files.SIZE_CAPS`.
- :mod:`.chart`: the phase chart (stacked bars per phase against one offer's device bytes).
- :mod:`.app`: the FastAPI application (pages, ``POST /api/plan``) and :func:`.app.serve`.

Nothing below this layer imports it; the CLI imports it lazily (``gpusizer serve``).
"""
