"""pydantic errors → CatalogError naming file, row, field and value."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpusizer.catalog.row_errors import catalog_error_from


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cards: int = Field(ge=1)
    days: float = Field(gt=0)


def _error(data: dict):
    with pytest.raises(ValidationError) as info:
        _Row.model_validate(data)
    return catalog_error_from(info.value, file="f.yaml", where="row 7", known_keys=("cards", "days"))


def test_one_problem_goes_in_the_field():
    error = _error({"cards": 0, "days": 1})
    assert str(error) == "f.yaml: row 7.cards: expected a number >= 1, got 0"
    assert (error.field, error.value, error.file) == ("row 7.cards", 0, "f.yaml")


def test_several_problems_are_all_listed():
    error = _error({"cards": "x", "days": 0, "gpu": 1})
    message = str(error)
    assert error.field == "row 7"
    assert "cards: expected an integer, got 'x'" in message
    assert "days: expected a number > 0, got 0" in message
    assert "unknown key 'gpu' (accepted keys: cards, days)" in message
