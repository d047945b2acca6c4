"""OWL's audio ablation (§2.4, Fig. 3, Table 1's audio row): English passages as speech, a text
instruction, a text answer scored exactly like the text tasks.

What each task hears (App. B step 6: "We convert the entire passage into audio for all tasks. For
prefix probing, we generate only the first half of the passages"):

- ``whole``: the passage, for direct probing (``none``);
- ``masked``: the passage with its character name replaced by ``[MASK]`` (spoken as the word
  "mask", as the authors' Kokoro did: models/speech.py), for direct probing (``masked``) and name
  cloze (``masked``): the mask ablation is the only ablation with audio (text-specific shuffling
  is excluded, §2.4);
- ``first-half``: the first half (metrics.split_passage), for prefix probing.

``babelprobe owl audio`` writes one WAV per (passage, variant) under ``DIR/<book>/<passage>/`` and
one line per file in ``DIR/manifest.jsonl`` (appended as each file is done: a killed run resumes
where it stopped, a finished file whose text, engine, voice and seed still match is not redone).
Every engine is seeded (``--seed``, models/speech.py): the same text, engine version, voice and
seed give the same bytes, so a file's sha256 (which keys the cached answers) can be remade. Each
line carries the Whisper round trip's transcript and WER; files above ``--wer-threshold`` are
flagged (reported by the command and beside the results of ``run owl --modality audio``).

``run owl --modality audio --audio DIR`` sends the audio rows (``modality: audio``: the prompt of
Figs. 12-14 with the passage as an audio part) and, for the same English passages, the text rows
of the same tasks, so audio sits beside text; ``--audio-cascade`` adds ``modality: asr`` rows: the
text prompt with the Whisper transcript in place of the passage (hearing vs reading).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pydantic import BaseModel

from babelprobe.data.perturbations import NameNotMaskable
from babelprobe.data.validation import DatasetError, Problem
from babelprobe.families.owl.data import OwlItem
from babelprobe.families.owl.metrics import split_passage
from babelprobe.families.base import Plan
from babelprobe.families.owl.probe import OwlProbe, OwlRecord, perturb, task_perturbations
from babelprobe.models.base import AudioClip, AudioGenerate, GenerateResult, Request, Response

if TYPE_CHECKING:
    from babelprobe.models.speech import TTSEngine, Transcriber

MANIFEST = "manifest.jsonl"
SYNTHESIS = "synthesis.json"
AUDIO_LANGUAGE = "en"  # §2.4: "all audio experiments are limited to English"
DEFAULT_WER_THRESHOLD = 0.2
# (task, perturbation) -> the variant it hears
VARIANT_OF = {("direct", "none"): "whole", ("direct", "masked"): "masked", ("name-cloze", "masked"): "masked",
              ("prefix", "none"): "first-half"}
VARIANTS = ("whole", "masked", "first-half")
MODALITIES = ("text", "audio", "asr")


class ClipEntry(BaseModel):
    """One line of manifest.jsonl: one WAV file."""

    passage: str  # book_id/passage_id
    book_id: str
    passage_id: str
    variant: str  # whole, masked, first-half
    task: list[str]  # the task/perturbation rows that hear it
    text: str  # exactly what the engine was given
    file: str  # relative to the audio folder
    engine: str
    engine_version: str
    voice: str
    # the engine's seed: the same text, engine version, voice and seed give the same bytes (sha256);
    # None: synthesised before engines were seeded (not reproducible)
    seed: int | None = None
    sample_rate: int
    duration_s: float
    sha256: str
    synth_seconds: float
    asr_model: str | None = None
    transcript: str | None = None
    wer: float | None = None
    flagged: bool = False


class SynthesisSummary(BaseModel):
    engine: str
    engine_version: str
    voice: str
    seed: int
    files: int
    made: int  # synthesised by this call (the rest were already there)
    audio_seconds: float
    synth_seconds: float  # over the files made by this call
    speed: float | None  # seconds of audio per second of synthesis, over the files made now
    asr_model: str | None
    mean_wer: float | None
    wer_threshold: float
    flagged: list[str]
    note: str = ""


def spoken_texts(item: OwlItem) -> dict[str, str]:
    """variant -> the text to speak, for one English passage (no ``masked`` without a name, or
    when the name cannot be masked)."""
    texts = {"whole": item.passage, "first-half": split_passage(item.passage, item.language)[0]}
    if item.names:
        try:
            texts["masked"] = perturb(item.passage, item.names, "masked", 0, item.key, item.language)
        except NameNotMaskable:
            pass
    return texts


def _tasks_of(variant: str) -> list[str]:
    return [f"{t}/{p}" for (t, p), v in VARIANT_OF.items() if v == variant]


def _safe(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", part).strip("._") or "x"


def read_manifest(folder: Path) -> list[ClipEntry]:
    path = Path(folder) / MANIFEST
    if not path.exists():
        return []
    entries, problems = [], []
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append(ClipEntry.model_validate_json(line))
        except ValueError as exc:
            problems.append(Problem(str(path), row, "manifest line", str(exc).splitlines()[0]))
    if problems:
        raise DatasetError(problems)
    return entries


@dataclass
class Synthesiser:
    """Makes the WAV files and the manifest; ``engine`` from models/speech.make_engine,
    ``transcriber`` (or None: no round trip) from models/speech.Transcriber."""

    folder: Path
    engine: TTSEngine
    transcriber: Transcriber | None = None
    wer_threshold: float = DEFAULT_WER_THRESHOLD
    progress: Callable[[str], None] = field(default=lambda message: None)

    def run(self, items: list[OwlItem]) -> SynthesisSummary:
        from babelprobe.models import speech

        self.folder.mkdir(parents=True, exist_ok=True)
        done = {(e.book_id, e.passage_id, e.variant): e for e in read_manifest(self.folder)}
        english = [i for i in items if i.language == AUDIO_LANGUAGE]
        if not english:
            raise DatasetError([Problem("", None, "language", "no English (en) passage: OWL's audio is English only")])
        entries, made, synth_seconds = [], 0, 0.0
        asr = getattr(self.transcriber, "description", None)
        with (self.folder / MANIFEST).open("a", encoding="utf-8") as manifest:
            for item in english:
                for variant, text in spoken_texts(item).items():
                    old = done.get((item.book_id, item.passage_id, variant))
                    if old is not None and self._still_good(old, text, asr):
                        entries.append(old)
                        continue
                    rel = Path(_safe(item.book_id)) / _safe(item.passage_id) / f"{variant}.wav"
                    start = time.perf_counter()
                    samples = self.engine.synthesize(text)
                    seconds = time.perf_counter() - start
                    if not len(samples):
                        raise speech.SpeechError(f"{self.engine.name} made no audio for {item.key} ({variant})")
                    sha = speech.write_wav(self.folder / rel, samples, self.engine.sample_rate)
                    entry = ClipEntry(
                        passage=f"{item.book_id}/{item.passage_id}", book_id=item.book_id, passage_id=item.passage_id,
                        variant=variant, task=_tasks_of(variant), text=text, file=rel.as_posix(),
                        engine=self.engine.name, engine_version=self.engine.version, voice=self.engine.voice,
                        seed=self.engine.seed, sample_rate=self.engine.sample_rate,
                        duration_s=round(len(samples) / self.engine.sample_rate, 3),
                        sha256=sha, synth_seconds=round(seconds, 3),
                    )
                    if self.transcriber is not None:
                        transcript = self.transcriber.transcribe(self.folder / rel)
                        wer = speech.word_error_rate(text, transcript)
                        entry = entry.model_copy(update=dict(asr_model=asr, transcript=transcript, wer=round(wer, 4),
                                                             flagged=wer > self.wer_threshold))
                    manifest.write(entry.model_dump_json() + "\n")
                    manifest.flush()  # a killed run keeps every finished line
                    entries.append(entry)
                    made, synth_seconds = made + 1, synth_seconds + seconds
                    self.progress(f"{entry.passage} {variant}: {entry.duration_s:.1f}s"
                                  + (f", WER {entry.wer:.2f}" if entry.wer is not None else ""))
        self._rewrite(entries)
        made_audio = sum(e.duration_s for e in entries[-made:]) if made else 0.0
        wers = [e.wer for e in entries if e.wer is not None]
        summary = SynthesisSummary(
            engine=self.engine.name, engine_version=self.engine.version, voice=self.engine.voice,
            seed=self.engine.seed, files=len(entries),
            made=made, audio_seconds=round(sum(e.duration_s for e in entries), 2), synth_seconds=round(synth_seconds, 2),
            speed=round(made_audio / synth_seconds, 2) if synth_seconds > 0 else None, asr_model=asr,
            mean_wer=round(sum(wers) / len(wers), 4) if wers else None, wer_threshold=self.wer_threshold,
            flagged=[e.file for e in entries if e.flagged],
            note=("Kokoro with the packaged Japanese voices: English phonemes, Japanese speaker (accented)"
                  if getattr(self.engine, "accented", False) else ""),
        )
        (self.folder / SYNTHESIS).write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return summary

    def _still_good(self, entry: ClipEntry, text: str, asr: str | None) -> bool:
        from babelprobe.models.speech import sha256_file

        path = self.folder / entry.file
        return (entry.text == text and entry.engine == self.engine.name and entry.voice == self.engine.voice
                and entry.seed == self.engine.seed and path.exists() and sha256_file(path) == entry.sha256
                and (asr is None or entry.wer is not None))

    def _rewrite(self, entries: list[ClipEntry]) -> None:
        # the appended lines may hold superseded entries (a redone file): keep one line per file
        tmp = self.folder / (MANIFEST + ".tmp")
        tmp.write_text("".join(e.model_dump_json() + "\n" for e in entries), encoding="utf-8")
        tmp.replace(self.folder / MANIFEST)


# ---------------------------------------------------------------------- running
@dataclass(frozen=True)
class Clips:
    """The audio folder of a run: (book_id, passage_id, variant) -> manifest entry."""

    folder: Path
    entries: dict[tuple[str, str, str], ClipEntry]

    def get(self, item: OwlItem, variant: str) -> ClipEntry | None:
        return self.entries.get((item.book_id, item.passage_id, variant))


def load_clips(folder: Path, items: list[OwlItem]) -> Clips:
    """Read and check an audio folder before anything runs: every file present with its sha256
    (the requests are keyed by it),
    and spoken text that still matches the dataset (one DatasetError naming file, row and field)."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.exists():
        raise DatasetError([Problem(str(manifest), None, "--audio", "no manifest: make it with "
                                    f"`babelprobe owl audio --data DATA --out {folder}`")])
    entries = read_manifest(folder)
    problems = []
    by_key = {(e.book_id, e.passage_id, e.variant): (row, e) for row, e in enumerate(entries, start=1)}
    from babelprobe.models.speech import sha256_file

    for row, entry in by_key.values():
        path = folder / entry.file
        if not path.is_file():
            problems.append(Problem(str(manifest), row, "file", f"{entry.file} is missing"))
        elif sha256_file(path) != entry.sha256:  # the hash keys the cached answers: it must be the file's
            problems.append(Problem(str(manifest), row, "sha256", f"{entry.file} changed since it was synthesised"))
    english = [i for i in items if i.language == AUDIO_LANGUAGE]
    for item in english:
        for variant, text in spoken_texts(item).items():
            found = by_key.get((item.book_id, item.passage_id, variant))
            if found and found[1].text != text:
                problems.append(Problem(str(manifest), found[0], "text", f"{item.key} {variant}: the audio speaks "
                                        "another text than the dataset's passage; synthesise again"))
    if problems:
        raise DatasetError(problems)
    if english and not any((i.book_id, i.passage_id, v) in by_key for i in english for v in VARIANTS):
        raise DatasetError([Problem(str(manifest), None, "passage", "no audio for any English passage of the data")])
    return Clips(folder, {k: e for k, (_, e) in by_key.items()})


class OwlAudioProbe(OwlProbe):
    """The text probe's prompt with the passage given as speech (``modality="audio"``) or as its
    Whisper transcript (``modality="asr"``: the cascade baseline). Scored by the text probe."""

    def __init__(self, task: str, perturbation: str, clips: Clips, modality: str = "audio", shots: int = 1,
                 max_tokens: int = 100, seed: int = 0):
        super().__init__(task, perturbation, shots, chat=True, max_tokens=max_tokens, seed=seed)
        if (task, perturbation) not in VARIANT_OF:
            raise ValueError(f"{task}/{perturbation} has no audio (OWL §2.4: {', '.join(map('/'.join, VARIANT_OF))})")
        self.name = "owl"
        self.request_kinds = frozenset({"audio_generate" if modality == "audio" else "generate"})
        self.clips, self.modality, self.variant = clips, modality, VARIANT_OF[(task, perturbation)]

    def applies(self, item: OwlItem) -> bool:
        return item.language == AUDIO_LANGUAGE and super().applies(item) and self.clips.get(item, self.variant) is not None

    def _clip(self, item: OwlItem) -> ClipEntry:
        clip = self.clips.get(item, self.variant)
        if clip is None:
            raise ValueError(f"no {self.variant} audio for {item.key}")
        return clip

    def prompt(self, item: OwlItem) -> str:
        """Figs. 12-14 with the passage slot holding the audio (shown as ``[audio: FILE]`` in the
        stored prompt) or the transcript; the prefix prompt's word count is the real second half's."""
        from babelprobe.families.owl.probe import DIRECT_PROMPT, NAME_CLOZE_PROMPT, PREFIX_PROMPT
        from babelprobe.languages import language_name
        from babelprobe.text.segment import word_count

        clip = self._clip(item)
        shown = f"[audio: {clip.file}]" if self.modality == "audio" else (clip.transcript or "")
        template = {"direct": DIRECT_PROMPT, "name-cloze": NAME_CLOZE_PROMPT, "prefix": PREFIX_PROMPT}[self.task]
        words = word_count(split_passage(item.passage, item.language)[1], item.language)
        return template.format(language=language_name(item.language), demonstration=self._demonstration(),
                               passage=shown, word_count=words)

    def requests(self, item: OwlItem) -> list[Request]:
        clip = self._clip(item)
        text = self.prompt(item)
        stop = (self.closing_tag,)
        if self.modality == "asr":
            if clip.transcript is None:
                raise ValueError(f"{clip.file} has no transcript: synthesise with the Whisper round trip")
            from babelprobe.models.base import ChatMessage, Generate

            return [Generate(messages=(ChatMessage(role="user", content=text),), max_tokens=self.max_tokens, stop=stop)]
        shown = f"<passage>[audio: {clip.file}]</passage>"
        before, _, after = text.partition(shown)
        audio = AudioClip(sha256=clip.sha256, path=str(self.clips.folder / clip.file))
        # the passage tags stay around the audio, as around the text passage
        parts = (before + "<passage>", audio, "</passage>" + after)
        return [AudioGenerate(parts=parts, max_tokens=self.max_tokens, stop=stop)]

    def _audio_fields(self, item: OwlItem) -> dict:
        clip = self.clips.get(item, self.variant)
        return dict(modality=self.modality, audio_file=clip.file if clip else None,
                    audio_sha256=clip.sha256 if clip else None, audio_wer=clip.wer if clip else None,
                    audio_flagged=clip.flagged if clip else None)

    def score(self, item: OwlItem, responses: list[Response]) -> OwlRecord:
        (response,) = responses
        assert isinstance(response, GenerateResult)
        return super().score(item, responses).model_copy(update=self._audio_fields(item))

    def failed(self, item: OwlItem, error: str) -> OwlRecord:
        return super().failed(item, error).model_copy(update=self._audio_fields(item))


def audio_task_pairs(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (task, perturbation) pairs of a config that have audio (Table 1: DP, NC, PP; mask only)."""
    return [p for p in pairs if p in VARIANT_OF]


# ---------------------------------------------------------------------- the run (family.py hooks)
def check_audio_run(config, items: list[OwlItem]) -> list[OwlItem]:
    """``--modality audio``: English passages only, an audio folder that matches them, and at
    least one task with audio; checked before any model loads."""
    if config.audio is None:
        raise DatasetError([Problem(str(config.data), None, "--audio", "--modality audio needs --audio DIR "
                                    "(made by `babelprobe owl audio --data DATA --out DIR`)")])
    if not audio_task_pairs(task_perturbations(config)):
        raise DatasetError([Problem(str(config.data), None, "--tasks", "no selected task/perturbation has audio "
                                    f"(OWL §2.4: {', '.join(map('/'.join, VARIANT_OF))})")])
    english = [i for i in items if i.language == AUDIO_LANGUAGE]
    if not english:
        raise DatasetError([Problem(str(config.data), None, "language", "--modality audio: no English (en) "
                                    "passage (OWL's audio is English only)")])
    load_clips(config.audio, english)
    return english


def audio_plans(config, text_plans: list, items: list[OwlItem]) -> list:
    """The text plans of the tasks that have audio (the same passages: those with audio), then the
    audio plans, then (``--audio-cascade``) the transcript plans."""
    clips = load_clips(config.audio, items)
    plans = []
    modalities = ["audio", "asr"] if config.audio_cascade else ["audio"]
    for plan in text_plans:
        task, perturbation = plan.probe.task, plan.probe.perturbation
        if (task, perturbation) not in VARIANT_OF:
            continue
        variant = VARIANT_OF[(task, perturbation)]
        heard = [i for i in plan.items if clips.get(i, variant) is not None]
        plans.append(Plan(plan.probe, heard, label=plan.label))
        for modality in modalities:
            probe = OwlAudioProbe(task, perturbation, clips, modality, config.shots, seed=config.seed,
                                  max_tokens=config.prefix_max_tokens if task == "prefix" else config.max_tokens)
            plans.append(Plan(probe, [i for i in heard if probe.applies(i)], label=f"{task}/{perturbation} {modality}"))
    return plans
