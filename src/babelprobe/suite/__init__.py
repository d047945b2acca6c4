"""Suites: one YAML file names models, probes with their options, datasets and an output root;
``babelprobe suite run`` runs every (model, probe) pair, ``babelprobe suite plan`` says what would.

    out: runs/study                  # relative paths are relative to the study file's folder
    cache: ~/.cache/babelprobe/responses.sqlite   # the default; null: no cache
    models:
      - bundled:gemma-3-270m         # a spec, or a mapping with spec, name and load options
      - {spec: "hf:/models/llama", name: llama, device: cuda, dtype: bfloat16}
    datasets:
      facts: ../shared/data/polyglot-or-not
    probes:
      - probe: cka                   # a family, as in `babelprobe run cka`
        dataset: facts               # a name above or a bundled dataset; default: the family's demo data
        options: {mode: full, langs: [en, de], limit: 100}

The whole file is validated before anything runs: unknown keys are refused, and every pair's
options are checked by building that family's own config model (config.py), the one `run
<family>` builds from its flags, so a suite takes exactly the options `run` does. Each error names
the file and the key path (``study.yaml: probes[1].options.mode: ...``).

Each pair runs through ``execute_run.run`` into ``<out>/<model>/<probe>/``. A model is loaded once
for all its pairs (and its probes' judges or reference models once per model). A re-run skips
pairs whose run directory has a manifest (a finished run) made with the same options, and runs a
half-finished pair again: the shared response cache answers every batch that finished before the
kill (request_runner.py), so only the rest is computed. Before a pair sends requests its run directory gets
``suite-requests.json`` (the model's fingerprint key and the request keys of its plans), which
``suite plan`` reads to say how far a half-finished pair got. An error in one pair is recorded and
the others go on. The suite ends with ``<out>/suite.json`` and the language profile page
``<out>/profile.html`` of every finished run.
"""

from babelprobe.suite.execute_study import PairResult, SuiteRecord, other_models, print_outcome, run_suite
from babelprobe.suite.schema import (FOLDER_NAME, MODEL_FIELDS, NOT_RESULTS, PROFILE_FILE, REQUESTS_FILE,
                                     SET_ELSEWHERE, SUITE_FILE, ModelEntry, Pair, ProbeEntry, Study, Suite,
                                     SuiteError, folder_slug, load_suite, read_study)
from babelprobe.suite.status import PairRequests, PairStatus, _differences, pair_status, print_plan, statuses

__all__ = ["FOLDER_NAME", "MODEL_FIELDS", "NOT_RESULTS", "PROFILE_FILE", "REQUESTS_FILE", "SET_ELSEWHERE",
           "SUITE_FILE", "ModelEntry", "Pair", "PairRequests", "PairResult", "PairStatus", "ProbeEntry", "Study",
           "Suite", "SuiteError", "SuiteRecord", "_differences", "folder_slug", "load_suite", "other_models",
           "pair_status", "print_outcome", "print_plan", "read_study", "run_suite", "statuses"]
