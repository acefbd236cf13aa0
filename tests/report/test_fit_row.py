"""``fit_row`` ends when no cell can lose more (a row of many escaped cells, e.g. an uploaded
catalog whose offer ids are markup, used to loop for ever: a 9-character cell cut to 8 + "…"
is 9 characters again)."""

from gpusizer.report.markdown import fit_row


def test_a_row_that_cannot_fit_ends_with_every_cell_at_its_shortest():
    row = fit_row(["&lt;script&gt;alert(1)&lt;/script&gt;"] * 12, 60)
    assert row.count("|") == 13
    assert all(len(c.strip()) == 9 for c in row.strip("|").split("|"))


def test_a_row_that_can_fit_is_cut_to_the_width():
    row = fit_row(["a" * 50, "b" * 10], 40)
    assert len(row) == 40 and "…" in row
