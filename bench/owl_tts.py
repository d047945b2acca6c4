"""OWL audio (§2.4): the three offline TTS engines on the same passages (the bundled demo set's
English passages, each as its tasks hear it: whole, masked, first half): synthesis speed (seconds
of audio per second of synthesis) and the Whisper round trip's WER (faster-whisper, the packaged
Whisper base model), per engine and paired against each other (bootstrap CI of the mean per-file
difference). The figures in bench/README.md come from this script.

    python bench/owl_tts.py --out /tmp/owl_tts [--engines piper,kokoro,espeak]
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

from babelprobe.families.owl.audio import Synthesiser, read_manifest
from babelprobe.families.owl.config import DEMO_OWL
from babelprobe.families.owl.data import load_owl
from babelprobe.models import speech


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--engines", default="piper,kokoro,espeak")
    args = parser.parse_args()
    items = load_owl(DEMO_OWL, ["en"])
    transcriber = speech.Transcriber()
    wers = {}
    print("| engine | voice | files | audio s | synthesis s | speed (audio s / s) | mean WER | files > 0.2 |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.engines.split(","):
        summary = Synthesiser(args.out / name, speech.make_engine(name), transcriber).run(items)
        wers[name] = {(e.passage, e.variant): e.wer for e in read_manifest(args.out / name)}
        print(f"| {name} | {summary.voice} | {summary.files} | {summary.audio_seconds:.1f} | {summary.synth_seconds:.1f} "
              f"| {summary.speed} | {summary.mean_wer:.3f} | {len(summary.flagged)} |")
    names = list(wers)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            keys = sorted(wers[a].keys() & wers[b].keys())
            diff = [wers[a][k] - wers[b][k] for k in keys]
            rng = random.Random(0)
            means = sorted(statistics.mean(rng.choices(diff, k=len(diff))) for _ in range(5000))
            print(f"{a} - {b}: mean per-file WER difference {statistics.mean(diff):+.3f} "
                  f"(95% CI {means[125]:+.3f} to {means[4874]:+.3f}, {len(keys)} files)")


if __name__ == "__main__":
    main()
