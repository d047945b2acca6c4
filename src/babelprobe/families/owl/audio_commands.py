"""``babelprobe owl audio``: the speech of OWL's audio ablation (§2.4; families/owl/audio.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from babelprobe.commands import console, fail
from babelprobe.data.validation import DatasetError


def register(owl_app: typer.Typer) -> None:
    @owl_app.command("audio")
    def owl_audio(
        data: Path = typer.Option(..., help="OWL passages (JSONL/CSV/Parquet); the English ones are spoken"),
        out: Path = typer.Option(..., help="folder for the WAV files and manifest.jsonl (resumed if present)"),
        tts: str = typer.Option("kokoro", help="kokoro (the paper's engine; lowest measured round-trip WER, "
                                "bench/README.md), piper (13x faster, as good within noise) or espeak"),
        voice: Optional[str] = typer.Option(None, help="piper: a voice .onnx (default en_US-joe-medium, packaged); "
                                            "kokoro: a voice name (default jf_alpha, packaged, Japanese); "
                                            "espeak: a voice (default en-us)"),
        voices_file: Optional[Path] = typer.Option(None, help="kokoro: a voices file (voices-v1.0.bin has "
                                                   "af_heart, the paper's English voice)"),
        asr: bool = typer.Option(True, "--asr/--no-asr", help="transcribe every file with Whisper and store its WER"),
        wer_threshold: float = typer.Option(0.2, min=0.0, help="flag files whose round-trip WER is above this"),
        limit: Optional[int] = typer.Option(None, min=1, help="first N English passages only"),
        seed: int = typer.Option(0, help="the engines' seed: the same text, voice and seed give the same audio bytes"),
    ) -> None:
        """Synthesise each English passage as its tasks hear it (whole, masked, first half): one WAV
        per file, manifest.jsonl with text, engine, voice, seed, rate, duration, sha256 and Whisper WER."""
        from babelprobe.families.owl.audio import Synthesiser
        from babelprobe.families.owl.data import load_owl
        from babelprobe.models import speech

        try:
            items = [i for i in load_owl(data, ["en"])]
        except DatasetError as exc:
            fail(str(exc))
        if limit is not None:
            keep = sorted({(i.book_id, i.passage_id) for i in items})[:limit]
            items = [i for i in items if (i.book_id, i.passage_id) in keep]
        try:
            engine = speech.make_engine(tts, voice, voices_file, seed)
            transcriber = speech.Transcriber() if asr else None
            summary = Synthesiser(out, engine, transcriber, wer_threshold, progress=console.print).run(items)
        except (DatasetError, speech.SpeechError) as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"{out}: cannot write ({exc.strerror})")
        table = Table(title=f"OWL audio: {summary.engine} ({summary.voice})")
        for col in ("files", "made now", "audio s", "speed (audio s / s)", "mean WER", "flagged"):
            table.add_column(col)
        table.add_row(str(summary.files), str(summary.made), f"{summary.audio_seconds:.1f}",
                      "-" if summary.speed is None else f"{summary.speed:.1f}",
                      "-" if summary.mean_wer is None else f"{summary.mean_wer:.3f}", str(len(summary.flagged)))
        console.print(table)
        if summary.note:
            console.print(f"[yellow]note[/yellow]: {summary.note}")
        for file in summary.flagged:
            console.print(f"[yellow]flagged[/yellow] (WER > {summary.wer_threshold}): {file}")
        console.print(f"audio: {out}")
