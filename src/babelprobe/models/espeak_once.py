"""One eSpeak NG synthesis in a fresh process (run as a script by models/speech.EspeakEngine).

libespeak-ng keeps file-static synthesis state across calls that no API call resets, so the n-th
synthesis of a process differs from the first; a fresh process per synthesis, with libc's ``rand``
seeded, makes the same text, voice and seed give the same samples.

Usage: python espeak_once.py LIBRARY DATA_DIR VOICE SEED < utf-8 text > raw int16 samples
(exit 2: unknown voice; exit 3: espeak_Synth refused the text).
"""

from __future__ import annotations

import ctypes
import sys


def main() -> int:
    library, data_dir, voice, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    lib = ctypes.CDLL(library)
    # AUDIO_OUTPUT_SYNCHRONOUS = 2: espeak_Synth returns when all samples went to the callback
    if lib.espeak_Initialize(2, 0, data_dir.encode(), 0) <= 0:
        return 4
    chunks: list[bytes] = []

    def collect(wav, count, events) -> int:
        if wav and count > 0:
            chunks.append(ctypes.string_at(wav, count * ctypes.sizeof(ctypes.c_short)))
        return 0

    callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)(collect)
    lib.espeak_SetSynthCallback(callback)
    if lib.espeak_SetVoiceByName(voice.encode()) != 0:
        return 2
    ctypes.CDLL(None).srand(seed)  # variant voices (+f3, +whisper) draw from libc's rand
    data = sys.stdin.buffer.read() + b"\0"
    # position 0 (POS_CHARACTER = 1), flags espeakCHARS_UTF8 = 1
    rc = lib.espeak_Synth(ctypes.c_char_p(data), ctypes.c_size_t(len(data)), 0, 1, 0, 1, None, None)
    lib.espeak_Synchronize()
    if rc != 0:
        return 3
    sys.stdout.buffer.write(b"".join(chunks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
