"""The one way the platform writes CSV: spreadsheet formulas in text cells are neutralised.

A cell that starts with = + - @ (or a tab / carriage return, which some spreadsheets skip before
reading a formula) is run as a formula when the file is opened (CSV injection: `=HYPERLINK(...)`,
`+SUM(1,2)` in an imported prompt or a run label). Such text cells get a leading apostrophe,
which spreadsheets show as text and never evaluate. Numbers stay numbers: -0.5 is data.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(rows: Iterable[dict], *, columns: list[str] | None = None) -> str:
    """Rows (dicts) as CSV text with a header; columns default to every key, in first-seen order."""
    rows = list(rows)
    if not rows:
        return ""
    columns = columns or list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    # RFC 4180 line ends: the writer then quotes any cell holding \r or \n, which "\n" alone would leave bare.
    writer = csv.DictWriter(buffer, fieldnames=[csv_cell(c) for c in columns], lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({csv_cell(k): csv_cell(v) for k, v in row.items()})
    return buffer.getvalue()
