"""Typed, tracked reads of a config.json: every key a family reads is remembered.

A family module never indexes the raw dict; it asks a :class:`ConfigReader`, which checks the type,
names the key and the file in any error, and records the key as used. Keys nobody read are then
reported as ``unrecognised_keys`` instead of being swallowed (house style: "Unrecognised
config.json keys are recorded, never swallowed").
"""

from __future__ import annotations

from collections.abc import Mapping

from ..bounds import MAX_COUNT, NumberProblem, check_number
from ..errors import ModelError, shown

__all__ = ["ConfigReader"]

_MISSING = object()

MAX_LAYERS = 4096
"""Most decoder layers a config.json may state (the largest published models have 126-160):
per-layer tuples are built from it, so an absurd count is refused before any work."""
_MAXIMUM = {"num_hidden_layers": MAX_LAYERS, "n_layer": MAX_LAYERS, "num_layers": MAX_LAYERS}
"""Keys with a tighter bound than every integer's ``bounds.MAX_COUNT``."""


class ConfigReader:
    """Read keys of one parsed config.json, with types checked and use recorded.

    Args:
        config: the parsed config.json (a JSON object).
        file: where it came from, quoted in every error (``models/x/config.json``).
    """

    def __init__(self, config: Mapping[str, object], *, file: str) -> None:
        self._config = config
        self.file = file
        self._used: set[str] = set()

    @property
    def used(self) -> frozenset[str]:
        """Keys read so far (present or not)."""
        return frozenset(self._used)

    def has(self, key: str) -> bool:
        """True when ``key`` is present with a non-null value (does not mark it used)."""
        return self._config.get(key) is not None

    def mark_used(self, *keys: str) -> None:
        """Record keys as consumed without reading them (e.g. read by another module)."""
        self._used.update(keys)

    def error(self, key: str, message: str, value: object = None) -> ModelError:
        """A :class:`ModelError` naming ``key`` and this reader's file."""
        return ModelError(message, field=key, value=value, file=self.file)

    def _raw(self, key: str) -> object:
        self._used.add(key)
        return self._config.get(key, _MISSING)

    def require_int(self, key: str, *, minimum: int = 1) -> int:
        """An integer the sizing cannot do without.

        Raises:
            ModelError: the key is absent or null ("missing required key"), or not an integer
                >= ``minimum``.
        """
        value = self._raw(key)
        if value is _MISSING or value is None:
            raise self.error(key, "missing required key: the parameter count depends on it; "
                             "add it to config.json or pass model.parameters")
        return self._check_int(key, value, minimum)

    def optional_int(self, key: str, default: int, *, minimum: int = 1) -> int:
        """An integer; ``default`` (the transformers config class default) when absent or null."""
        value = self._raw(key)
        if value is _MISSING or value is None:
            return default
        return self._check_int(key, value, minimum)

    def nullable_int(self, key: str, *, minimum: int = 1) -> int | None:
        """An integer that must be present but may be null (DeepSeek-V2-Lite ``q_lora_rank``).

        Raises:
            ModelError: the key is absent, or neither null nor an integer >= ``minimum``.
        """
        value = self._raw(key)
        if value is _MISSING:
            raise self.error(key, "missing required key (null is allowed, absence is not)")
        if value is None:
            return None
        return self._check_int(key, value, minimum)

    def optional_nullable_int(self, key: str, default: int | None, *,
                              minimum: int = 1) -> int | None:
        """An integer or null; ``default`` when the key is absent."""
        value = self._raw(key)
        if value is _MISSING:
            return default
        if value is None:
            return None
        return self._check_int(key, value, minimum)

    def optional_int_or_auto(self, key: str, auto: int) -> int:
        """An integer; ``auto`` (the value transformers derives) when absent, null or the string
        ``"auto"`` (Jamba's ``mamba_dt_rank``, Mamba-2's ``time_step_rank``)."""
        value = self._raw(key)
        if value is _MISSING or value is None or value == "auto":
            return auto
        return self._check_int(key, value, 1)

    def optional_str(self, key: str) -> str | None:
        """A string (Nemotron-H's ``hybrid_override_pattern``), or None when absent or null.

        Raises:
            ModelError: the value is not a string.
        """
        value = self._raw(key)
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {shown(value)}", value)
        return value

    def sub(self, key: str, **overrides: object) -> ConfigReader:
        """A reader over the nested object ``key`` (a composite model's ``text_config`` or
        ``vision_config``; empty when absent or null), with ``overrides`` set on it; errors name
        ``file`` and the key.

        Raises:
            ModelError: the value is not a JSON object.
        """
        value = self._raw(key)
        if value is _MISSING or value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise self.error(key, f"expected an object, got {shown(value)}", value)
        return ConfigReader({**value, **overrides}, file=f"{self.file} ({key})")

    def flag(self, key: str, default: bool) -> bool:
        """A boolean; ``default`` (transformers' config default) when absent or null."""
        value = self._raw(key)
        if value is _MISSING or value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {shown(value)}", value)
        return value

    def int_list(self, key: str) -> tuple[int, ...]:
        """A list of integers (e.g. ``mlp_only_layers``); empty when absent or null."""
        value = self._raw(key)
        if value is _MISSING or value is None:
            return ()
        if not isinstance(value, list):
            raise self.error(key, f"expected a list of integers, got {shown(value)}", value)
        return tuple(self._check_int(key, v, 0) for v in value)

    def str_list(self, key: str) -> tuple[str, ...] | None:
        """A list of strings (e.g. ``layer_types``), or None when absent or null."""
        value = self._raw(key)
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"expected a list of strings, got {shown(value)}", value)
        return tuple(value)

    def _check_int(self, key: str, value: object, minimum: int) -> int:
        """Through ``gpusizer.bounds``: an integer (not a bool) in [minimum, the key's maximum:
        :data:`MAX_LAYERS` for layer counts, ``bounds.MAX_COUNT`` otherwise]."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer >= {minimum}, got {shown(value)}", value)
        if value < minimum:
            raise self.error(key, f"expected an integer >= {minimum}, got {value}", value)
        try:
            return int(check_number(value, minimum=minimum, maximum=_MAXIMUM.get(key, MAX_COUNT),
                                    whole=True))
        except NumberProblem as exc:
            raise self.error(key, str(exc), value) from None
