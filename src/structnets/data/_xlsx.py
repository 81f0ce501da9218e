"""A minimal reader for the one-sheet numeric workbook of the UCI Real Estate Valuation data set.

An ``.xlsx`` is a zip of XML parts; reading its first worksheet needs only ``zipfile`` and
``xml.etree``, so the download path needs no spreadsheet dependency.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
import zipfile

_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_COLUMN = re.compile(r"^([A-Z]+)")


def xlsx_to_csv(workbook: bytes) -> bytes:
    """Convert the first worksheet of an ``.xlsx`` workbook to comma-separated text.

    Numbers are written in the shortest form that reads back as the same double (``repr``), and
    integral values without a fractional part (``32``, not ``32.0``); strings are written as they
    are (the real-estate sheet has no commas or quotes in its cells). LF line endings, one
    trailing newline. Applied to UCI's ``Real estate valuation data set.xlsx`` this gives exactly
    the derived ``real_estate_valuation.csv`` whose content digest is pinned.

    Args:
        workbook: the bytes of the ``.xlsx`` file.

    Returns:
        the CSV as UTF-8 bytes.

    Raises:
        ValueError: the bytes are not a workbook with a worksheet.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(workbook))
    except zipfile.BadZipFile as exc:
        raise ValueError(f"not an .xlsx workbook: {exc}") from exc
    names = set(archive.namelist())
    sheets = sorted(n for n in names if n.startswith("xl/worksheets/") and n.endswith(".xml"))
    if not sheets:
        raise ValueError("not an .xlsx workbook: no worksheet in xl/worksheets/")
    sheet = "xl/worksheets/sheet1.xml" if "xl/worksheets/sheet1.xml" in names else sheets[0]
    strings: list[str] = []
    if "xl/sharedStrings.xml" in names:
        table = ET.fromstring(archive.read("xl/sharedStrings.xml"))
        strings = ["".join(t.text or "" for t in si.iter(f"{_NS}t")) for si in table.iter(f"{_NS}si")]
    lines: list[str] = []
    for row in ET.fromstring(archive.read(sheet)).iter(f"{_NS}row"):
        cells: dict[int, str] = {}
        for position, cell in enumerate(row.iter(f"{_NS}c")):
            ref = cell.get("r")
            match = _COLUMN.match(ref) if ref else None
            column = _column_index(match.group(1)) if match else position
            cells[column] = _cell_text(cell, strings)
        width = max(cells) + 1 if cells else 0
        lines.append(",".join(cells.get(i, "") for i in range(width)))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _column_index(letters: str) -> int:
    index = 0
    for letter in letters:
        index = index * 26 + (ord(letter) - ord("A") + 1)
    return index - 1


def _cell_text(cell: ET.Element, strings: list[str]) -> str:
    kind = cell.get("t")
    if kind == "inlineStr":
        return "".join(t.text or "" for t in cell.iter(f"{_NS}t"))
    value = cell.find(f"{_NS}v")
    if value is None or value.text is None:
        return ""
    if kind == "s":
        return strings[int(value.text)]
    if kind in ("str", "b", "e"):
        return value.text
    number = float(value.text)
    return str(int(number)) if number.is_integer() else repr(number)
