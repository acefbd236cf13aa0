"""The CLI's own table from library errors to exit statuses (2 invalid input, 1 otherwise)."""

from __future__ import annotations

import pytest

from gpusizer import errors
from gpusizer.cli import EXIT_CODES, exit_code_for
from gpusizer.simulate import errors as simulate_errors

# The statuses the library's classes carried before the table moved into the CLI (0.1.0):
# input errors (sheet, model config, catalog, evidence, quality gate, an unknown model id, a
# harness refusal of the sheet) are 2; the Hub unreachable, a missing extra, a harness failure
# and an unavailable format are 1.
EXPECTED = {
    "GpusizerError": 1, "ArgumentError": 2, "SheetError": 2, "ModelError": 2, "UnknownArchitectureError": 2,
    "CatalogError": 2, "UnknownCardError": 2, "EvidenceError": 2, "EngineLogError": 2,
    "HubError": 1,
    "ModelNotFoundError": 2, "QualityError": 2, "CriteriaMovedError": 2, "CorpusError": 2,
    "SampleTooLongError": 2, "LmEvalMismatchError": 2, "FormatUnavailableError": 1,
    "MissingExtraError": 1, "MeasureError": 1, "MeasureExtraMissingError": 1,
    "MeasureUnsupportedError": 2, "SimulationError": 2, "SimulateExtraMissing": 1,
    "UnsupportedBySimulation": 2,
}

CLASSES = [getattr(errors, n) for n in errors.__all__]
CLASSES += [getattr(simulate_errors, n) for n in simulate_errors.__all__]


def test_every_error_class_is_in_the_expected_list():
    assert sorted(c.__name__ for c in CLASSES) == sorted(EXPECTED)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_error_gets_its_status_from_the_cli_table(cls):
    assert exit_code_for(cls("what is wrong", field="f", value=1)) == EXPECTED[cls.__name__]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_library_errors_carry_no_exit_status(cls):
    assert not hasattr(cls("x"), "exit_code")


def test_table_lists_subclasses_first():
    """An entry after one of its base classes could never be reached."""
    order = list(EXIT_CODES)
    for i, later in enumerate(order):
        assert not any(issubclass(later, earlier) for earlier in order[:i]), later
    assert order[-1] is errors.GpusizerError
