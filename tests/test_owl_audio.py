"""OWL's audio ablation (§2.4, Fig. 3): real offline speech (eSpeak NG, Piper), the Whisper round
trip, a tiny random-weight Qwen2-Audio built here with a real processor (Whisper feature extractor
+ a tokenizer), the openai input_audio path through the loopback server with injected faults,
and text-only models refused before any request."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2AudioConfig, Qwen2AudioForConditionalGeneration,
                          Qwen2AudioProcessor, WhisperFeatureExtractor)

from babelprobe.families.owl.audio import MANIFEST, Synthesiser, read_manifest, spoken_texts
from babelprobe.families.owl.config import DEMO_OWL, OwlConfig
from babelprobe.families.owl.data import load_owl
from babelprobe.models import speech
from babelprobe.execute_run import run
from babelprobe.stored_runs import RunError
from babelprobe.store import read_items
from tiny_models import DECODER, save_tiny, tiny_model, tiny_tokenizer

PASSAGES = ("alice", "metamorphosis")  # two bundled English passages, both with a character name


def _english(books=PASSAGES):
    return [i for i in load_owl(DEMO_OWL, ["en"]) if i.book_id in books]


@pytest.fixture(scope="module")
def transcriber():
    return speech.Transcriber()


@pytest.fixture(scope="module")
def espeak_dir(tmp_path_factory, transcriber) -> Path:
    folder = tmp_path_factory.mktemp("audio") / "espeak"
    Synthesiser(folder, speech.make_engine("espeak"), transcriber).run(_english())
    return folder


def test_synthesis_writes_one_wav_per_variant_with_its_manifest(espeak_dir):
    entries = read_manifest(espeak_dir)
    items = _english()
    assert {(e.book_id, e.variant) for e in entries} == {(i.book_id, v) for i in items for v in spoken_texts(i)}
    assert len(entries) == 6  # whole, masked, first half for each of the two passages
    for e in entries:
        data, rate = sf.read(espeak_dir / e.file)
        assert rate == e.sample_rate == 22050
        assert e.duration_s == pytest.approx(len(data) / rate, abs=1e-3) and e.duration_s > 1.0
        assert e.sha256 == speech.sha256_file(espeak_dir / e.file)
        assert e.engine == "espeak" and e.voice == "en-us" and e.engine_version.startswith("eSpeak NG")
        assert e.transcript and 0.0 <= e.wer <= 1.0 and e.flagged == (e.wer > 0.2)
    by = {(e.book_id, e.variant): e for e in entries}
    # the task each file serves, and what it says: [MASK] is given verbatim and heard as "mask"
    assert by[("alice", "masked")].task == ["direct/masked", "name-cloze/masked"]
    assert "[MASK]" in by[("alice", "masked")].text and "Alice" not in by[("alice", "masked")].text
    assert "mask" in by[("alice", "masked")].transcript.lower()
    assert by[("alice", "first-half")].task == ["prefix/none"]
    assert len(by[("alice", "first-half")].text) < len(by[("alice", "whole")].text)
    # the round trip is good on this engine: Whisper hears the passages almost word for word
    assert np.mean([e.wer for e in entries]) < 0.25


def test_synthesis_resumes_and_redoes_only_what_changed(tmp_path, espeak_dir):
    folder = tmp_path / "copy"
    folder.mkdir()
    for e in read_manifest(espeak_dir):
        (folder / e.file).parent.mkdir(parents=True, exist_ok=True)
        (folder / e.file).write_bytes((espeak_dir / e.file).read_bytes())
    (folder / MANIFEST).write_text((espeak_dir / MANIFEST).read_text())
    engine = speech.make_engine("espeak")
    summary = Synthesiser(folder, engine, None).run(_english())
    assert summary.made == 0 and summary.files == 6
    # a killed run left a file damaged: only that one is made again, and the manifest keeps one line per file
    damaged = read_manifest(folder)[1]
    (folder / damaged.file).write_bytes(b"RIFF")
    summary = Synthesiser(folder, engine, None).run(_english())
    assert summary.made == 1
    lines = (folder / MANIFEST).read_text().splitlines()
    assert len(lines) == 6 and len({json.loads(x)["file"] for x in lines}) == 6
    redone = next(e for e in read_manifest(folder) if e.file == damaged.file)
    assert speech.sha256_file(folder / damaged.file) == redone.sha256
    assert redone.duration_s == pytest.approx(damaged.duration_s, rel=0.05)


def test_piper_default_voice_round_trip(tmp_path, transcriber):
    engine = speech.make_engine("piper")
    text = spoken_texts(_english(("alice",))[0])["first-half"]
    samples = engine.synthesize(text)
    sha = speech.write_wav(tmp_path / "a.wav", samples, engine.sample_rate)
    assert engine.voice == "en_US-joe-medium" and engine.sample_rate == 22050 and len(sha) == 64
    assert speech.word_error_rate(text, transcriber.transcribe(tmp_path / "a.wav")) < 0.2


def test_word_error_rate():
    assert speech.word_error_rate("Of course if [MASK] was home", "of course, if mask was home") == 0.0
    assert speech.word_error_rate("a b c d", "a x c") == pytest.approx(0.5)
    assert speech.word_error_rate("", "") == 0.0 and speech.word_error_rate("hello", "") == 1.0


def test_unknown_engine_and_voice_are_one_line_errors():
    with pytest.raises(speech.SpeechError, match="unknown engine"):
        speech.make_engine("festival")
    with pytest.raises(speech.SpeechError, match="--voice"):
        speech.make_engine("piper", "/nonexistent/voice.onnx")


# ---------------------------------------------------------------------- a tiny model that hears
def _audio_tokenizer():
    tok = tiny_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": ["<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>",
                                                          "<|im_start|>", "<|im_end|>"]})
    return tok


@pytest.fixture(scope="module")
def qwen2_audio(tmp_path_factory) -> Path:
    """Random weights from a config; the processor is Qwen2-Audio's own (Whisper features, 128 mel
    bins, its chat template), around the word-level test tokenizer."""
    tok = _audio_tokenizer()
    text = {**DECODER, "vocab_size": len(tok), "model_type": "qwen2", "max_position_embeddings": 4096,
            "eos_token_id": tok.convert_tokens_to_ids("<|im_end|>")}
    config = Qwen2AudioConfig(
        audio_config=dict(d_model=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32,
                          num_mel_bins=128, max_source_positions=1500),
        text_config=text, audio_token_index=tok.convert_tokens_to_ids("<|AUDIO|>"))
    out = tmp_path_factory.mktemp("qwen2audio")
    tiny_model(Qwen2AudioForConditionalGeneration, config).save_pretrained(out)
    Qwen2AudioProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=128), tokenizer=tok).save_pretrained(out)
    return out


def _config(out: Path, model: str, audio: Path, **kw) -> OwlConfig:
    return OwlConfig(model=model, data=DEMO_OWL, out=out, device="cpu", modality="audio", audio=audio, cache=None,
                     allow_errors=True, max_tokens=4, prefix_max_tokens=4, overwrite=True, **kw)


def test_run_owl_modality_audio_on_a_tiny_qwen2_audio(tmp_path, qwen2_audio, espeak_dir):
    audio = tmp_path / "audio"
    audio.mkdir()
    for e in read_manifest(espeak_dir):
        (audio / e.file).parent.mkdir(parents=True, exist_ok=True)
        (audio / e.file).write_bytes((espeak_dir / e.file).read_bytes())
    (audio / MANIFEST).write_text((espeak_dir / MANIFEST).read_text())
    # one clip longer than the model's 30 s audio window: its request fails (never cut), the row is an error
    entries = read_manifest(audio)
    long = next(e for e in entries if e.book_id == "metamorphosis" and e.variant == "whole")
    data, rate = sf.read(audio / long.file)
    sha = speech.write_wav(audio / long.file, np.concatenate([data, np.zeros(31 * rate)]), rate)
    (audio / MANIFEST).write_text("".join((e.model_copy(update={"sha256": sha}) if e is long else e).model_dump_json()
                                          + "\n" for e in entries))
    outcome = run(_config(tmp_path / "run", f"hf:{qwen2_audio}", audio, audio_cascade=True))
    items = read_items(tmp_path / "run")
    assert set(items["language"]) == {"en"}
    pairs = {("direct", "none"), ("direct", "masked"), ("name-cloze", "masked"), ("prefix", "none")}
    assert set(map(tuple, items[["task", "perturbation"]].to_numpy())) == pairs
    # every task in every modality, for the passages that have audio (the two synthesised)
    counts = items.groupby(["modality", "task", "perturbation"]).size()
    assert set(counts.index.get_level_values(0)) == {"text", "audio", "asr"}
    assert all(n == 2 for n in counts)
    audio_rows = items[items["modality"] == "audio"]
    assert audio_rows["audio_sha256"].notna().all() and audio_rows["prompt"].str.contains(r"\[audio: ").all()
    errors = items[items["error"].notna()]
    assert list(map(tuple, errors[["modality", "book_id", "task"]].to_numpy())) == [("audio", "metamorphosis", "direct")]
    assert "30 s window" in errors["error"].iat[0]
    asr = items[items["modality"] == "asr"]
    transcripts = {e.file: e.transcript for e in read_manifest(audio)}
    assert all(transcripts[f] in p for f, p in zip(asr["audio_file"], asr["prompt"]))
    summary = outcome.summary
    assert [(t.task, t.perturbation) for t in summary.tasks] and all(t.n == 2 for t in summary.tasks)  # text rows only
    row = next(r for r in summary.modalities if (r.task, r.perturbation) == ("direct", "none"))
    assert [c.group for c in row.cells] == ["text", "audio", "asr"] and row.passages == 1  # the same passages
    from babelprobe.report.html import run_report

    html = run_report(tmp_path / "run").read_text()
    assert "audio vs text" in html


def test_a_changed_audio_file_is_refused_before_the_run(tmp_path, espeak_dir):
    from babelprobe.data.validation import DatasetError
    from babelprobe.families.owl.audio import load_clips

    audio = tmp_path / "audio"
    for e in read_manifest(espeak_dir):
        (audio / e.file).parent.mkdir(parents=True, exist_ok=True)
        (audio / e.file).write_bytes((espeak_dir / e.file).read_bytes())
    (audio / MANIFEST).write_text((espeak_dir / MANIFEST).read_text())
    first = read_manifest(audio)[0]
    (audio / first.file).write_bytes(b"RIFF....")
    with pytest.raises(DatasetError, match=r"manifest.jsonl, row 1, field 'sha256'.*changed"):
        load_clips(audio, _english())


def test_text_only_models_are_refused_before_any_request(tmp_path, espeak_dir):
    llama = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), tmp_path / "llama")
    with pytest.raises(RunError, match="audio_generate.*cannot serve it"):
        run(_config(tmp_path / "run", f"hf:{llama}", espeak_dir))
    assert not (tmp_path / "run" / "items.parquet").exists()
    with pytest.raises(Exception, match="--audio"):
        run(OwlConfig(model=f"hf:{llama}", data=DEMO_OWL, out=tmp_path / "r2", device="cpu", modality="audio"))


def test_openai_input_audio_through_faults(tmp_path, qwen2_audio, espeak_dir, monkeypatch):
    from babelprobe.models import load_backend
    from babelprobe.models.audio import AudioTextBackend
    from babelprobe.models.base import AudioClip, AudioGenerate
    from babelprobe.models.registry import LoadOptions
    from loopback_server import FaultProxy, ModelServer, serve

    backend = load_backend(f"hf:{qwen2_audio}", device="cpu")
    assert isinstance(backend, AudioTextBackend)
    entries = read_manifest(espeak_dir)
    requests = [AudioGenerate(parts=("Name the book: <passage>", AudioClip(sha256=e.sha256, path=str(espeak_dir / e.file)),
                                     "</passage>"), max_tokens=4) for e in entries[:3]]
    direct = backend.audio_generate(requests)
    server = ModelServer(backend, "qwen2-audio-tiny", "hosted")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with serve(server.handler()) as url:
        proxy = FaultProxy(url, seed=3, rate=0.5, stall=0.2)
        with serve(proxy.handler()) as proxied:
            options = LoadOptions(model_args={"base_url": proxied, "timeout": "2", "backoff": "0", "max_retries": "8",
                                              "concurrency": "2"})
            http = load_backend("openai:qwen2-audio-tiny", options=options)
            try:
                assert "audio_generate" in http.supported_kinds
                answers = http.audio_generate(requests)
            finally:
                http.close()
    assert [a.text for a in answers] == [d.text for d in direct]
    assert sum(proxy.injected.values()) > 0 and http.usage.retries > 0
    sent = [b for b in server.bodies if isinstance(b.get("messages", [{}])[-1].get("content"), list)]
    part = next(p for p in sent[0]["messages"][-1]["content"] if p["type"] == "input_audio")
    assert part["input_audio"]["format"] == "wav" and len(part["input_audio"]["data"]) > 1000


def test_openai_model_that_does_not_hear_is_refused(tmp_path, espeak_dir):
    from babelprobe.models.openai_backend import OpenAIBackend, OpenAIOptions
    from babelprobe.models.registry import UnsupportedKind, check_supported

    deaf = OpenAIBackend("openai:gpt-4o-mini", "gpt-4o-mini", "http://127.0.0.1:9/v1", "k", OpenAIOptions())
    hears = OpenAIBackend("openai:gpt-4o-audio-preview", "gpt-4o-audio-preview", "http://127.0.0.1:9/v1", "k",
                          OpenAIOptions())
    forced = OpenAIBackend("openai:local", "local", "http://127.0.0.1:9/v1", "k", OpenAIOptions(audio="true"))
    try:
        with pytest.raises(UnsupportedKind, match="audio=true"):
            check_supported(deaf, {"generate", "audio_generate"}, "owl")
        check_supported(hears, {"audio_generate"}, "owl")
        check_supported(forced, {"audio_generate"}, "owl")
    finally:
        for b in (deaf, hears, forced):
            b.close()


def test_owl_audio_command(tmp_path):
    from typer.testing import CliRunner

    from babelprobe.cli import app

    result = CliRunner().invoke(app, ["owl", "audio", "--data", str(DEMO_OWL), "--out", str(tmp_path / "a"),
                                      "--tts", "espeak", "--no-asr", "--limit", "1"])
    assert result.exit_code == 0, result.output
    entries = read_manifest(tmp_path / "a")
    assert len(entries) == 3 and all(e.transcript is None and e.wer is None for e in entries)
    assert json.loads((tmp_path / "a" / "synthesis.json").read_text())["made"] == 3
    bad = CliRunner().invoke(app, ["owl", "audio", "--data", str(DEMO_OWL), "--out", str(tmp_path / "b"),
                                   "--tts", "festival"])
    assert bad.exit_code == 2 and "unknown engine" in bad.output


def test_fig3_table_counts_the_errored_items_of_each_modality():
    """Fig. 3's table compares modalities over the passages all of them answered, and says how many
    items each modality lost to errors (an errored item is not silently dropped: 'n = 0, 0 errors'
    on a modality whose every item failed was the old output)."""
    import pandas as pd

    from babelprobe.families.owl.analysis import modality_rows
    from babelprobe.families.owl.report import _fmt

    rows = []
    for i in range(4):
        for modality in ("text", "audio"):
            failed = modality == "audio" and i < 2  # two audio items errored (a 30 s window, a timeout)
            rows.append({"book_id": f"b{i}", "passage_id": "1", "language": "en", "task": "direct",
                         "perturbation": "none", "modality": modality, "correct": None if failed else i % 2 == 0,
                         "chrf_pp": None, "error": "boom" if failed else None, "audio_flagged": False})
    items = pd.DataFrame(rows)
    (row,) = modality_rows(items, n_resamples=200)
    cells = {c.group: c for c in row.cells}
    assert row.passages == 2 and cells["audio"].n == 2 and cells["text"].n == 2  # the same passages b2, b3
    assert cells["audio"].errors == 2 and cells["text"].errors == 0
    assert _fmt(row, cells["audio"]).endswith(", 2 errors") and "error" not in _fmt(row, cells["text"])
    every = items.assign(error=items["error"].where(items["modality"] != "audio", "boom"))
    (row,) = modality_rows(every, n_resamples=200)
    audio = next(c for c in row.cells if c.group == "audio")
    assert audio.errors == 4 and _fmt(row, audio) == "- (n = 0, 4 errors)"


@pytest.mark.parametrize("engine", ["espeak", "piper", "kokoro"])
def test_the_same_text_voice_and_seed_give_the_same_audio_bytes(engine):
    """Every engine is seeded: Piper samples VITS noise inside onnxruntime, eSpeak NG carries state
    from one call to the next; before, Piper gave 3 different hashes for 3 syntheses of one
    sentence and eSpeak's n-th call differed from its first. (Kokoro's graph draws no random
    numbers: the same bytes whatever the seed.)"""
    text = "Alice was beginning to get very tired of sitting by her sister."
    first = speech.make_engine(engine, seed=3)
    runs = [first.synthesize(text).tobytes() for _ in range(2)]
    runs.append(speech.make_engine(engine, seed=3).synthesize(text).tobytes())  # a new engine, the same seed
    assert len(runs[0]) > 10_000 and runs[0] == runs[1] == runs[2]
    other = speech.make_engine(engine, seed=4).synthesize(text).tobytes()
    # Piper's noise follows the seed; eSpeak's default voice and Kokoro draw no random numbers
    assert (other != runs[0]) == (engine == "piper")


def test_a_resynthesised_folder_has_the_same_hashes_and_records_the_seed(tmp_path):
    items = _english(("alice",))
    for name in ("one", "two"):
        Synthesiser(tmp_path / name, speech.make_engine("espeak", seed=5)).run(items)
    one, two = read_manifest(tmp_path / "one"), read_manifest(tmp_path / "two")
    assert [e.sha256 for e in one] == [e.sha256 for e in two] and {e.seed for e in one} == {5}
    summary = json.loads((tmp_path / "one" / "synthesis.json").read_text())
    assert summary["seed"] == 5
    # another seed: the folder's files are redone (their seed no longer matches), not kept
    again = Synthesiser(tmp_path / "one", speech.make_engine("espeak", seed=6)).run(items)
    assert again.made == len(one) and {e.seed for e in read_manifest(tmp_path / "one")} == {6}
