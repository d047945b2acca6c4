"""`run owl` options (OWL §2.3-2.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal


from babelprobe.config import BUNDLED_DATA, BootstrapOption, FiguresOption, RunOptions, batch_size_option, option

DEMO_OWL = BUNDLED_DATA / "owl_demo.jsonl"


class OwlConfig(RunOptions, FiguresOption, BootstrapOption):
    probe: Literal["owl"] = "owl"
    data: Path = option(DEMO_OWL, "passages: JSONL/CSV/Parquet (see `babelprobe convert owl-release`)")
    tasks: list[Literal["direct", "name-cloze", "prefix"]] = option(
        ["direct", "name-cloze", "prefix"], "comma-separated: direct, name-cloze, prefix", style="comma")
    perturbations: list[Literal["none", "shuffled", "masked", "masked-shuffled"]] | None = option(
        None, "keep only these: none, shuffled, masked, masked-shuffled (default: every one that applies)",
        style="comma")
    shots: Literal[0, 1] = option(1, "1: one-shot demonstration (Moby-Dick), 0: zero-shot")
    limit: int | None = option(None, "passages (seeded sample; all their language versions)", ge=1)
    max_tokens: int = option(100, "new tokens for direct probing and name cloze", ge=1)
    prefix_max_tokens: int = option(200, "new tokens for prefix probing", ge=1)
    batch_size: int = batch_size_option(8)
    presence: Path | None = option(None, "presence.jsonl from `babelprobe corpus presence`: accuracy of seen vs "
                                         "unseen passages (App. B.4, Figs. 9-10)")
    # OWL §2.4 (families/owl/audio.py): audio rows beside the text rows of the same English passages
    modality: Literal["text", "audio"] = option("text", "audio: the audio ablation (English; DP, NC, PP; mask "
                                                "only) beside text, from --audio")
    audio: Path | None = option(None, "folder made by `babelprobe owl audio` (manifest.jsonl and WAV files)")
    audio_cascade: bool = option(False, "with --modality audio: also the Whisper transcript as text (ASR cascade)",
                                 style="flag")

