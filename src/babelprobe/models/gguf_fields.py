"""A ``gguf.GGUFReader`` that reads the metadata's arrays in one pass, for the GGUF -> float32
conversion (``weights.gguf_parsed_once``).

gguf-py's reader builds every element of a metadata array as its own numpy view of the memory
map (two for a string: its uint64 length and its bytes), through a recursive call per element:
on Gemma 3 270M, whose tokenizer is three 262,144-entry arrays (tokens, scores, types), that
parse was 30% of a fresh home's conversion (docs/profiles/README.md). This reader yields the same
fields (names, offsets, types, data indices, the same bytes in every part), but each element's
part is a ``memoryview`` slice of one view of the file: the parts answer what transformers'
``_gguf_parse_value`` and gguf's ``ReaderField.contents`` ask of them (``[0]``, iteration,
``tobytes``, ``tolist``, ``nbytes``) with the same values, at a fraction of the cost.
"""

from __future__ import annotations

import struct
from typing import Any

import gguf
import numpy as np
from gguf import GGUFValueType

# struct formats of GGUF's scalar types, in the host's byte order (files in the other order are
# left to the plain reader)
_SCALAR_FORMATS: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "B", GGUFValueType.INT8: "b", GGUFValueType.UINT16: "H", GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I", GGUFValueType.INT32: "i", GGUFValueType.FLOAT32: "f",
    GGUFValueType.UINT64: "Q", GGUFValueType.INT64: "q", GGUFValueType.FLOAT64: "d", GGUFValueType.BOOL: "?",
}
_LENGTH = struct.Struct("=Q")  # a GGUF string's length prefix
_ARRAY_HEADER = 12  # uint32 item type + uint64 count


class ArrayFieldsReader(gguf.GGUFReader):
    """``gguf.GGUFReader`` with the metadata arrays of strings and scalars read in one pass."""

    def _get_field_parts(self, orig_offs: int, raw_type: int) -> tuple[int, list[Any], list[int], list[GGUFValueType]]:
        if GGUFValueType(raw_type) != GGUFValueType.ARRAY or self.byte_order != "I":
            return super()._get_field_parts(orig_offs, raw_type)
        raw_itype = self._get(orig_offs, np.uint32)
        alen = self._get(orig_offs + 4, np.uint64)
        item_type, count, start = GGUFValueType(raw_itype[0]), int(alen[0]), orig_offs + _ARRAY_HEADER
        if count == 0:  # the plain reader records no item type for an empty array
            return _ARRAY_HEADER, [raw_itype, alen], [], [GGUFValueType.ARRAY]
        view = self.data.data  # the file as one memoryview: slicing it skips memmap's per-slice wrapping
        if item_type == GGUFValueType.STRING:
            parts, end = _string_parts(view, start, count)
            data = list(range(3, 3 + 2 * count, 2))  # each string's bytes, after its length
        elif item_type in _SCALAR_FORMATS:
            format = _SCALAR_FORMATS[item_type]
            end = start + count * struct.calcsize(format)
            values = view[start:end].cast(format)  # type: ignore[call-overload]  # format is one of the table's
            parts = [values[index:index + 1] for index in range(count)]
            data = list(range(2, 2 + count))
        else:  # arrays of arrays: the plain reader's recursion
            return super()._get_field_parts(orig_offs, raw_type)
        return end - orig_offs, [raw_itype, alen, *parts], data, [GGUFValueType.ARRAY, item_type]


def _string_parts(view: memoryview, offset: int, count: int) -> tuple[list[memoryview], int]:
    """The [length, bytes] parts of ``count`` consecutive GGUF strings from ``offset``; the end."""
    parts: list[memoryview] = []
    unpack = _LENGTH.unpack_from
    for _ in range(count):
        (length,) = unpack(view, offset)
        parts.append(view[offset:offset + 8].cast("Q"))
        parts.append(view[offset + 8:offset + 8 + length])
        offset += 8 + length
    return parts, offset
