"""Audio-text models in transformers (OWL §2.4: Qwen2.5-Omni-7B; Qwen2-Audio): ``hf:`` specs whose
configuration is an audio-text model are loaded here instead of the text backend.

Everything goes through the model's own processor (``AutoProcessor``: a Whisper feature
extractor + the tokenizer + the chat template): one user turn of text and audio parts in order
(``AudioGenerate.parts``), the chat template's audio placeholders expanded by the processor, a
batch left-padded, greedy generation (``do_sample=False``), new tokens decoded and cut at the stop
strings. Text-only ``Generate`` requests (the text rows beside the audio ones, Fig. 3) go through
the same processor and template without audio.

Audio is read with soundfile and resampled to the feature extractor's rate (16 kHz) with a
polyphase filter (scipy). A clip longer than the feature extractor's window (Whisper: 30 s;
Qwen2-Audio encodes one window and would drop the rest silently) is refused as that request's
error, not cut.

Qwen2.5-Omni: the full model (``qwen2_5_omni``) is loaded without its talker and its thinker
generates the text; a thinker checkpoint (``qwen2_5_omni_thinker``) is loaded as it is. Not tested
here: Qwen2.5-Omni's processor needs a video processor (torchvision), which the test extra lacks;
the tiny model of tests/test_owl_audio.py is a Qwen2-Audio.
"""

from __future__ import annotations

from math import gcd
from typing import Sequence

import numpy as np
import torch

from babelprobe.models.base import AudioGenerate, Fingerprint, Generate, GenerateResult, RequestFailure

AUDIO_MODEL_TYPES = ("qwen2_audio", "qwen2_5_omni", "qwen2_5_omni_thinker")
BACKEND_REVISION = 1


def is_audio_model(config) -> bool:
    return getattr(config, "model_type", None) in AUDIO_MODEL_TYPES


def read_audio(path: str, rate: int) -> np.ndarray:
    """Mono float32 at ``rate`` Hz."""
    import soundfile as sf
    from scipy.signal import resample_poly

    samples, source = sf.read(path, dtype="float32", always_2d=True)
    samples = samples.mean(axis=1)
    if source != rate:
        g = gcd(int(source), int(rate))
        samples = resample_poly(samples, rate // g, source // g).astype(np.float32)
    return samples


class AudioTextBackend:
    """Answers ``audio_generate`` (and text ``generate``) with a transformers audio-text model."""

    supported_kinds = frozenset({"audio_generate", "generate"})
    has_chat_template = True

    def __init__(self, model, processor, fingerprint: Fingerprint, omni_full: bool = False):
        self.model = model.eval()
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.tokenizer.padding_side = "left"
        self.fingerprint = fingerprint
        self.omni_full = omni_full
        self.device = next(model.parameters()).device
        extractor = processor.feature_extractor
        self.rate = int(extractor.sampling_rate)
        self.window_s = float(getattr(extractor, "chunk_length", 30))
        eos = self.tokenizer.eos_token_id
        self._eos = [eos] if eos is not None else []
        for token in ("<|im_end|>", "<|endoftext|>"):  # the chat templates' end of turn
            tid = self.tokenizer.convert_tokens_to_ids(token)
            if isinstance(tid, int) and tid != self.tokenizer.unk_token_id and tid not in self._eos:
                self._eos.append(tid)
        self._stop_criteria: dict[tuple[str, ...], object] = {}
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else (self._eos or [0])[0]

    @classmethod
    def load(cls, path: str, config, fingerprint_fn, *, device: str = "auto", dtype: str = "auto",
             revision: str | None = None) -> "AudioTextBackend":
        import transformers
        from transformers import AutoProcessor

        from babelprobe.models.transformers_helpers import resolve_device, resolve_dtype

        device = resolve_device(device)
        torch_dtype = resolve_dtype(dtype, device)
        kwargs = {"revision": revision} if revision else {}
        processor = AutoProcessor.from_pretrained(path, **kwargs)
        model_type = config.model_type
        omni_full = model_type == "qwen2_5_omni"
        model_class = {
            "qwen2_audio": "Qwen2AudioForConditionalGeneration",
            "qwen2_5_omni": "Qwen2_5OmniForConditionalGeneration",
            "qwen2_5_omni_thinker": "Qwen2_5OmniThinkerForConditionalGeneration",
        }[model_type]
        extra = {"enable_audio_output": False} if omni_full else {}
        model = getattr(transformers, model_class).from_pretrained(path, dtype=torch_dtype, **kwargs, **extra).to(device)
        fingerprint = fingerprint_fn(device, str(torch_dtype).removeprefix("torch."), BACKEND_REVISION)
        return cls(model, processor, fingerprint, omni_full)

    @property
    def parameters(self) -> int:
        return int(self.model.num_parameters())

    # ------------------------------------------------------------------ requests -> inputs
    def _conversation(self, r: AudioGenerate | Generate) -> list[dict]:
        if isinstance(r, Generate):
            if r.messages is not None:
                return [{"role": m.role, "content": [{"type": "text", "text": m.content}]} for m in r.messages]
            return [{"role": "user", "content": [{"type": "text", "text": r.prompt or ""}]}]
        content = [{"type": "text", "text": p} if isinstance(p, str) else {"type": "audio", "path": p.path}
                   for p in r.parts]
        return [{"role": "user", "content": content}]

    def _audio(self, r: AudioGenerate) -> list[np.ndarray]:
        clips = []
        for clip in r.clips:
            samples = read_audio(clip.path, self.rate)
            seconds = len(samples) / self.rate
            if seconds > self.window_s + 1e-6:
                raise ValueError(f"{clip.path}: {seconds:.1f} s of audio is longer than the model's "
                                 f"{self.window_s:.0f} s window (it would be cut)")
            clips.append(samples)
        return clips

    @torch.inference_mode()
    def _run(self, requests: Sequence[AudioGenerate | Generate]) -> list[GenerateResult | RequestFailure]:
        from babelprobe.models.transformers_helpers import cut_generated

        results: dict[int, GenerateResult | RequestFailure] = {}
        prepared: dict[int, tuple[str, list[np.ndarray]]] = {}
        for i, r in enumerate(requests):
            if r.temperature > 0:
                results[i] = RequestFailure(error="sampling is not supported by the audio backend (greedy only)")
                continue
            try:
                text = self.processor.apply_chat_template(self._conversation(r), add_generation_prompt=True,
                                                          tokenize=False)
                prepared[i] = (text, self._audio(r) if isinstance(r, AudioGenerate) else [])
            except (OSError, ValueError, RuntimeError) as exc:  # unreadable or too long audio: this request only
                results[i] = RequestFailure(error=str(exc))
        groups: dict[tuple, list[int]] = {}
        for i in prepared:
            r = requests[i]
            groups.setdefault((r.max_tokens, r.stop, bool(prepared[i][1])), []).append(i)
        for (max_tokens, stop, with_audio), members in groups.items():
            texts = [prepared[i][0] for i in members]
            audio = [a for i in members for a in prepared[i][1]]
            kwargs = dict(text=texts, return_tensors="pt", padding=True)
            if with_audio:
                kwargs.update(audio=audio, sampling_rate=self.rate)
            inputs = self.processor(**kwargs).to(self.device)
            if "input_features" in inputs:
                inputs["input_features"] = inputs["input_features"].to(self.model.dtype)
            generate = dict(max_new_tokens=max_tokens, do_sample=False, num_beams=1, eos_token_id=self._eos,
                            pad_token_id=self.pad_id)
            criteria = self._stopping(stop)
            if criteria is not None:
                generate["stopping_criteria"] = criteria
            # the full Omni model: its thinker answers in text (the talker would add speech)
            generator = self.model.thinker if self.omni_full else self.model
            out = generator.generate(**inputs, **generate)
            sequences = out if isinstance(out, torch.Tensor) else out.sequences
            new = sequences[:, inputs["input_ids"].shape[1]:]
            eos = set(self._eos)
            for b, i in enumerate(members):
                text, finish, toks = cut_generated(self.tokenizer, new[b].tolist(), eos, stop)
                results[i] = GenerateResult(text=text, finish_reason=finish, token_ids=toks)
        return [results[i] for i in range(len(requests))]

    def _stopping(self, stop: tuple[str, ...]):
        """transformers' stop-string criterion, built once per set of stop strings; a tokenizer it
        cannot index (a word-level one) stops at the token limit instead, and the text is cut
        at the stop string either way."""
        from transformers import StoppingCriteriaList, StopStringCriteria

        stop = tuple(s for s in stop if s)
        if not stop:
            return None
        if stop not in self._stop_criteria:
            try:
                self._stop_criteria[stop] = StoppingCriteriaList([StopStringCriteria(self.tokenizer, list(stop))])
            except ValueError:
                self._stop_criteria[stop] = None
        return self._stop_criteria[stop]

    def audio_generate(self, requests: Sequence[AudioGenerate]) -> list[GenerateResult | RequestFailure]:
        return self._run(requests)

    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult | RequestFailure]:
        for r in requests:
            if r.prompt_ids is not None or r.logprobs:
                raise ValueError("the audio backend generates from text or chat messages, without log-probs")
        return self._run(requests)
