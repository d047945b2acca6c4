"""Errors a user can act on (issue 9 §5): every command refuses missing, binary, non-UTF-8, empty
or wrong data, bad flag values, unwritable --out and runs of another or an unknown probe with one
message and exit 2, before any model is loaded (these tests load none)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelprobe import store
from babelprobe.families.cka.analysis import summarise_cka
from babelprobe.cli import app
from babelprobe.families.cka.config import DEMO_CKA
from babelprobe.families.owl.config import DEMO_OWL
from babelprobe.families import family_names, get_family
from babelprobe.families.cka.config import CKAConfig
from babelprobe.data.polyglot_or_not import load_cka_facts
from babelprobe.models.base import Fingerprint, LogLikelihoodResult
from babelprobe.families.cka.probe import CKAProbe

cli = CliRunner()
# every registered family, from the registry: a family added later is held to the same errors
PROBES = family_names()
DEMOS = {name: get_family(name).config.model_fields["data"].default for name in PROBES}
NOUNS = {name: get_family(name).item_noun for name in PROBES}


def refused(args: list[str], *expected: str) -> str:
    """Run the command; it must exit 2 with one 'error:' message holding every expected piece."""
    result = cli.invoke(app, args)
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and text.count("error:") <= 1, result.output
    for piece in expected:
        assert piece in text, f"{piece!r} not in {text!r}"
    return text


def run_args(probe: str, tmp_path: Path, *extra: str) -> list[str]:
    return ["run", probe, "--out", str(tmp_path / "run"), "--no-cache", *extra]


# ---------------------------------------------------------------- model specs and --out

def test_missing_hf_directory_is_one_line(tmp_path):
    refused(run_args("cka", tmp_path, "--model", "hf:/no/such/dir"),
            "/no/such/dir is neither an existing directory nor a hub id")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("probe", PROBES)
def test_unwritable_out(tmp_path, probe):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    refused(["run", probe, "--out", str(blocker / "run"), "--no-cache"], f"--out {blocker / 'run'}: cannot write there")
    refused(["run", probe, "--out", str(blocker), "--no-cache"], f"--out {blocker}: is a file, not a directory")


def test_unwritable_out_of_convert_and_rescore(tmp_path):
    release = tmp_path / "book.csv"
    release.write_text("en,Single_ent\nCall me Ishmael.,['Ishmael']\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    refused(["convert", "owl-release", str(release), "--out", str(blocker / "x.jsonl"), "--book-id", "b",
             "--title", "T", "--author", "A", "--original", "en"], "cannot write there")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"q_id": "q", "original_language": "en", "target_language": lang,
                                         "answer": "Paris", "prediction": "Paris"}) + "\n" for lang in ("en", "de")))
    refused(["rescore", "eclektic", str(preds), "--out", str(blocker / "out")], "cannot write there")


# ---------------------------------------------------------------- data files

@pytest.mark.parametrize("probe", PROBES)
def test_missing_file(tmp_path, probe):
    missing = tmp_path / "nope.jsonl"
    refused(["validate", str(missing), "--probe", probe], str(missing), "no such file")
    refused(run_args(probe, tmp_path, "--data", str(missing)), str(missing), "no such file")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("probe", PROBES)
def test_non_utf8_and_binary_files_are_named(tmp_path, probe):
    latin1 = tmp_path / "en.jsonl"
    latin1.write_bytes(b'{"dataset_id": "a"}\n{"stem": "Caf\xe9"}\n')
    refused(["validate", str(latin1), "--probe", probe], str(latin1), "not UTF-8 text (byte 0xe9 on line 2)")
    csv = tmp_path / "en.csv"
    csv.write_bytes(b"dataset_id,stem\na,\xff\xfe\n")
    refused(run_args(probe, tmp_path, "--data", str(csv)), str(csv), "not UTF-8 text (byte 0xff on line 2)")
    binary = tmp_path / "en.parquet"
    binary.write_bytes(bytes(range(256)))
    refused(["validate", str(binary), "--probe", probe], str(binary), "not a readable Parquet file")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("probe", PROBES)
def test_wrong_file_type(tmp_path, probe):
    text_file = tmp_path / "en.txt"
    text_file.write_text("hello")
    refused(["validate", str(text_file), "--probe", probe], "unsupported file type '.txt'")


@pytest.mark.parametrize("probe", PROBES)
def test_empty_dataset_is_an_error_for_every_probe(tmp_path, probe):
    empty = tmp_path / "en.jsonl"
    empty.write_text("\n")
    refused(["validate", str(empty), "--probe", probe], str(empty), f"no {NOUNS[probe]}: the dataset is empty")
    refused(run_args(probe, tmp_path, "--data", str(empty)), f"no {NOUNS[probe]}: the dataset is empty")
    assert not (tmp_path / "run").exists()


# loaders that name the absent languages themselves; any other family gets the shared message
ABSENT_LANGUAGES = {"cka": "no facts for xx", "similarity": "no sentences for xx"}


@pytest.mark.parametrize("probe", PROBES)
def test_dataset_emptied_by_langs(tmp_path, probe):
    expected = ABSENT_LANGUAGES.get(probe, f"no {NOUNS[probe]} left after --langs xx")
    refused(["validate", str(DEMOS[probe]), "--probe", probe, "--langs", "xx"], str(DEMOS[probe]), expected)
    refused(run_args(probe, tmp_path, "--langs", "xx,yy"), expected.replace("xx", "xx, yy")
            if probe in ABSENT_LANGUAGES else f"no {NOUNS[probe]} left after --langs xx,yy")
    assert not (tmp_path / "run").exists()


def test_cka_langs_without_facts(tmp_path):
    refused(["validate", str(DEMO_CKA), "--langs", "xx"], str(DEMO_CKA), "no facts for xx")
    refused(run_args("cka", tmp_path, "--langs", "en,xx"), "no facts for xx")


def test_owl_tasks_that_need_names_on_passages_without(tmp_path):
    rows = [json.loads(line) for line in DEMO_OWL.read_text().splitlines()]
    nameless = tmp_path / "nameless.jsonl"
    nameless.write_text("".join(json.dumps({**r, "names": []}) + "\n" for r in rows))
    refused(run_args("owl", tmp_path, "--data", str(nameless), "--tasks", "name-cloze"),
            "no passage has a character name, which name-cloze/masked, name-cloze/masked-shuffled need")


# ---------------------------------------------------------------- flag values

@pytest.mark.parametrize("probe, args, expected", [
    ("cka", ["--mode", "foo"], "--mode: Input should be 'first-token' or 'full' (got 'foo')"),
    ("cka", ["--batch-size", "0"], "--batch-size: Input should be greater than or equal to 1"),
    ("cka", ["--limit", "0"], "--limit: Input should be greater than or equal to 1"),
    ("cka", ["--dtype", "float8"], "--dtype: Input should be"),
    ("cka", ["--max-length", "1"], "--max-length: Input should be greater than or equal to 2"),
    ("eclektic", ["--settings", "bogus"], "--settings: Input should be 'closed-book',"),
    ("eclektic", ["--max-tokens", "0"], "--max-tokens: Input should be greater than or equal to 1"),
    ("eclektic", ["--columns", "question"], "--columns: Value error, column mapping 'question': expected FIELD=COLUMN"),
    ("owl", ["--tasks", "summary"], "--tasks: Input should be 'direct', 'name-cloze' or 'prefix' (got 'summary')"),
    ("owl", ["--perturbations", "reversed"], "--perturbations: Input should be 'none', 'shuffled'"),
    ("owl", ["--shots", "2"], "--shots: Input should be 0 or 1"),
    ("owl", ["--batch-size", "0"], "--batch-size: Input should be greater than or equal to 1"),
    ("memorization", ["--rm-units", "chars"], "--rm-units: Input should be 'tokens' or 'words' (got 'chars')"),
    ("memorization", ["--prefix-tokens", "0,35"], "--prefix-tokens: Value error, prompt lengths must be positive"),
    ("memorization", ["--prefix-tokens", "a"], "--prefix-tokens: Input should be a valid integer"),
    ("memorization", ["--noise-density", "1.5"], "--noise-density: Input should be less than 1"),
])
def test_bad_flag_values(tmp_path, probe, args, expected):
    refused(run_args(probe, tmp_path, *args), expected)
    assert not (tmp_path / "run").exists()


def test_cache_off_is_not_taken_as_a_file_name(tmp_path):
    refused(["run", "similarity", "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "off")],
            "off is taken as a cache file name; to run without the cache, pass --no-cache")
    assert not (tmp_path / "off").exists() and not (tmp_path / "run").exists()


def test_perturbation_that_applies_to_no_task(tmp_path):
    refused(run_args("owl", tmp_path, "--tasks", "prefix", "--perturbations", "masked"),
            "--perturbations masked: none applies to --tasks prefix (prefix: none)")


def test_validate_flags():
    refused(["validate", str(DEMO_CKA), "--probe", "foo"], "unknown probe 'foo' (available: cka, owl, eclektic, memorization, similarity)")
    refused(["validate", str(DEMO_CKA), "--probe", "cka", "--columns", "q_id=id"], "--columns applies to eclektic")


def test_rescore_and_convert_flags(tmp_path):
    refused(["rescore", "owl", str(tmp_path / "none.csv"), "--task", "direct"], "none.csv", "no such file")
    refused(["rescore", "owl", str(DEMO_OWL), "--task", "summary"], "unknown owl task 'summary'")
    refused(["convert", "owl-xml", str(DEMO_OWL), "--out", str(tmp_path / "x"), "--book-id", "b", "--title", "T",
             "--author", "A", "--original", "en"], "unknown conversion 'owl-xml'")


# ---------------------------------------------------------------- run directories

def hand_made_run(out: Path, probe: str = "cka") -> Path:
    """A finished cka run directory scored from hand-made responses (no model): enough for the
    commands that read runs. ``probe`` is what the manifest claims."""
    facts = load_cka_facts(DEMO_CKA, langs=["en", "ru"], limit=4)
    cka = CKAProbe("full")
    records = [cka.score(f, [LogLikelihoodResult(logprob=-1.0 - (i + n) % 3, token_logprobs=[-1.0], tokens=["x"],
                                                 greedy=True) for i in range(len(f.objects))])
               for n, f in enumerate(facts)]
    config = CKAConfig(data=DEMO_CKA, out=out, cache=None, mode="full", langs=["en", "ru"], limit=4,
                       bootstrap_resamples=200)
    out.mkdir(parents=True)
    store.write_items(out, records)
    store.write_json(out / store.SUMMARY, summarise_cka(store.read_items(out), 200, 0))
    fingerprint = Fingerprint(spec="hand-made", backend="none", weights="none", dtype="float32", device="cpu",
                              versions={})
    manifest = store.new_manifest(probe=probe, config=config.model_dump(mode="json"), model=fingerprint, data_files={},
                                  seed=0, timings={}, items=len(records), errors=0,
                                  requests=store.RequestCounts(requested=0, unique=0, cached=0, computed=0, failed=0,
                                                               batches=0))
    store.write_json(out / store.MANIFEST, manifest)
    return out


def test_report_refuses_what_is_not_a_finished_run(tmp_path):
    refused(["report", str(tmp_path / "nowhere")], "nowhere: no such run directory")
    (tmp_path / "unfinished").mkdir()
    refused(["report", str(tmp_path / "unfinished")], "no manifest.json: the run did not finish")
    broken = hand_made_run(tmp_path / "broken")
    (broken / store.MANIFEST).write_text("{not json")
    refused(["report", str(broken)], "manifest.json is not a babelprobe manifest")


def test_report_refuses_a_run_of_an_unknown_probe(tmp_path):
    run = hand_made_run(tmp_path / "run", probe="shared-path-v0")
    text = refused(["report", str(run)], "a run of unknown probe 'shared-path-v0' (available: cka, owl, eclektic, memorization, similarity)")
    assert "CKA" not in text  # never summarised as CKA
    refused(["compare", str(run), str(run)], "unknown probe 'shared-path-v0'")


def test_report_of_a_cka_run_and_compare_refusals(tmp_path):
    run = hand_made_run(tmp_path / "run")
    report = cli.invoke(app, ["report", str(run)])
    assert report.exit_code == 0 and "CKA (full)" in report.output
    same = cli.invoke(app, ["compare", str(run), str(run)])  # CKA compares item by item (issue 18)
    assert same.exit_code == 0 and "B - A on the same facts" in same.output, same.output
    refused(["compare", str(run), str(tmp_path / "nowhere")], "no such run directory")
    refused(["size-curve", str(run), "--out", str(tmp_path / "c.png")], "not an eclektic run (cka)")
    # the multi-run commands of every family read their runs through one stored_runs.read_runs
    refused(["memorization", "compare", str(run), str(run)], "not a memorization run (cka)")
    refused(["owl", "quantization", str(run), str(run)], "not an owl run (cka)")
    refused(["memorization", "compare", str(tmp_path / "nowhere"), str(run)], "no such run directory")


# ---------------------------------------------------------------- --device (issue 18)

@pytest.mark.parametrize("probe", PROBES)
@pytest.mark.parametrize("device, expected", [
    ("gpu", "'gpu' is not a torch device: did you mean cuda?"),
    ("GPU:1", "'GPU:1' is not a torch device: did you mean cuda:1?"),
    ("cuda0", "'cuda0' is not a torch device: did you mean cuda:0?"),
    ("tpu", "'tpu' is not a torch device: use auto, cpu, cuda, cuda:N or mps"),
])
def test_a_device_torch_does_not_know_is_one_line_and_writes_nothing(tmp_path, probe, device, expected):
    refused(run_args(probe, tmp_path, "--device", device), f"--device: Value error, {expected}")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("probe", PROBES)
@pytest.mark.parametrize("device", ["cuda", "cuda:1", "mps"])
def test_a_device_this_machine_lacks_is_one_line_and_writes_nothing(tmp_path, probe, device):
    """Was a 144-line traceback from model loading, after an empty run folder had been made."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.device_count() > 1:
        pytest.skip("this machine has the device")
    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has the device")
    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has the device")
    text = refused(run_args(probe, tmp_path, "--device", device), f"--device {device}:")
    assert "cpu" in text  # what to use instead
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------- profile over runs/* (issue 18)

def test_profile_skips_folders_that_are_not_probe_runs_and_says_why(tmp_path):
    """README's `babelprobe profile runs/* --html ...` failed on the demo folder: runs/graph holds a
    `graph correlate` output, not a run. Each such folder is named with its reason; the page is
    written from the runs that are usable; exit 2 only when none is."""
    runs = tmp_path / "runs"
    first = hand_made_run(runs / "cka")
    hand_made_run(runs / "cka-again")
    (runs / "graph").mkdir()
    (runs / "graph" / "graph.json").write_text("{}", encoding="utf-8")
    (runs / "unfinished").mkdir()
    (runs / "notes.txt").write_text("what I ran", encoding="utf-8")
    broken = hand_made_run(runs / "broken")
    (broken / store.MANIFEST).write_text("{not json", encoding="utf-8")
    unknown = hand_made_run(runs / "unknown", probe="shared-path-v0")
    html = tmp_path / "profile.html"
    folders = sorted(runs.iterdir())  # what the shell's runs/* gives
    result = cli.invoke(app, ["profile", *map(str, folders), "--html", str(html)])
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "error:" not in text
    assert f"skipped {runs / 'graph'}: a `graph correlate` output (graph.json), not a probe run" in text
    assert f"skipped {runs / 'unfinished'}: no manifest.json: the run did not finish" in text
    assert f"skipped {runs / 'notes.txt'}: a file, not a run folder" in text
    assert f"skipped {broken}: manifest.json is not a babelprobe manifest" in text
    assert f"skipped {unknown}: a run of unknown probe 'shared-path-v0'" in text
    assert text.count("skipped") == 5 and f"html: {html}" in text
    page = html.read_text(encoding="utf-8")
    assert "CKA accuracy (full)" in page and str(first) in page and "shared-path" not in page
    # none usable: exit 2, one line, no page
    html.unlink()
    text = refused(["profile", str(runs / "graph"), str(runs / "unfinished"), "--html", str(html)],
                   "no probe run among the 2 folder(s) given: nothing to profile")
    assert "skipped" in text and not html.exists()
