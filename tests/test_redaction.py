"""Credentials in --base-url (issue 17, point 6): user-info and secret query parameters are
redacted everywhere the URL is stored or printed (redaction.py): manifest config and command,
fingerprints, error rows, log records, suite.json. The end-to-end test runs against a real server
on 127.0.0.1 and greps the run folder, the cache file and every captured log for the secrets."""

from __future__ import annotations

import base64
import logging
import sys

import pytest

from babelprobe.families.cka.config import CKAConfig
from babelprobe.models.base import Fingerprint
from babelprobe.redaction import redact_text, redact_url, url_secrets

PASSWORD = "pw-5be1c0a7d2e94f"
QUERY_KEY = "qk-93f1e6b2a8c4d7"


@pytest.mark.parametrize("url, expected", [
    ("http://user:KEY123@host:8000/v1", "http://***@host:8000/v1"),
    ("https://sk-abcdef@api.example.com/v1/", "https://***@api.example.com/v1/"),
    ("http://u:p%40ss@[::1]:8080/v1", "http://***@[::1]:8080/v1"),
    ("https://h/v1?api_key=S1&api-version=2024-06-01", "https://h/v1?api_key=***&api-version=2024-06-01"),
    ("https://h/v1?key=S1", "https://h/v1?key=***"),
    ("https://h/v1?Token=S1&x=1&API-KEY=S2", "https://h/v1?Token=***&x=1&API-KEY=***"),
    ("https://h/v1?access_token=S1#frag", "https://h/v1?access_token=***#frag"),
    ("https://h/v1?api-version=1&keyword=yes", "https://h/v1?api-version=1&keyword=yes"),  # nothing secret
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
])
def test_redact_url(url, expected):
    assert redact_url(url) == expected


def test_redact_text_finds_urls_and_registered_secrets():
    text = "POST http://bob:hunter2x@h/v1/completions?sig=abc123 failed; see 'https://h/v1?token=t0k3n'"
    assert redact_text(text) == "POST http://***@h/v1/completions?sig=*** failed; see 'https://h/v1?token=***'"
    assert set(url_secrets("http://bob:hunter2x@h/v1?key=k%2Fy")) >= {
        "hunter2x", "k%2Fy", "k/y", base64.b64encode(b"bob:hunter2x").decode()}
    # a spec naming a server keeps no credentials in fingerprints (and so in manifests and the cache)
    fp = Fingerprint(spec="openai:m@http://u:sekrit99@h/v1", backend="openai-compatible", weights="served:m",
                     dtype="server", device="http://u:sekrit99@h/v1?key=sekrit98", versions={})
    assert "sekrit" not in fp.model_dump_json()


@pytest.mark.slow
def test_no_secret_in_run_folder_cache_logs_or_suite(smollm2, tmp_path, monkeypatch, capsys, caplog):
    from babelprobe.execute_run import run
    from babelprobe.suite import PairResult, _differences
    from loopback_server import FaultProxy, ModelServer, serve

    caplog.set_level(logging.DEBUG)  # httpx logs every request's URL at INFO
    server = ModelServer(smollm2, "smollm2-echo", "llamacpp")  # text prompts: the poison below matches them
    with serve(server.handler()) as upstream:
        # one fact's requests always fail with a body echoing the Authorization header (Basic
        # auth made from the URL's user-info): the error rows must not carry it either
        proxy = FaultProxy(upstream, seed=0, rate=0.0, stall=0.0, poison=("ThinkPad",))
        with serve(proxy.handler()) as url:
            host = url.removeprefix("http://")
            base_url = f"http://babel:{PASSWORD}@{host}?api_key={QUERY_KEY}&api-version=2024-06-01"
            monkeypatch.setattr(sys, "argv", ["babelprobe", "run", "cka", "--model", "openai:smollm2-echo",
                                              "--base-url", base_url, f"--base-url={base_url}"])
            config = CKAConfig(model="openai:smollm2-echo", base_url=base_url, out=tmp_path / "run",
                               cache=tmp_path / "responses.sqlite", langs=["en"], bootstrap_resamples=100,
                               allow_errors=True, max_retries=0)
            outcome = run(config)
    assert proxy.injected["poison"] > 0 and outcome.manifest.errors > 0  # an error row was written
    assert outcome.manifest.errors < outcome.manifest.items  # and answers: requests went through
    assert outcome.manifest.config["base_url"] == f"http://***@{host}?api_key=***&api-version=2024-06-01"
    assert outcome.manifest.command[-1] == f"--base-url=http://***@{host}?api_key=***&api-version=2024-06-01"
    # the suite compares a finished run's stored (redacted) config with the wanted one: no conflict
    assert _differences(outcome.manifest.config, config) == []
    suite_file = tmp_path / "suite.json"
    suite_file.write_text(PairResult(model="m", probe="cka", out="x", state="error",
                                     error=f"could not reach {base_url}").model_dump_json())

    logs = capsys.readouterr()
    log_text = "\n".join(r.getMessage() for r in caplog.records)
    assert "api_key=***" in log_text  # the request lines were logged, redacted
    blobs = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    blobs.update({"stdout": logs.out.encode(), "stderr": logs.err.encode(), "log": log_text.encode()})
    assert any(b"auth=Basic" in blob for blob in blobs.values())  # the echoing bodies were recorded...
    basic = base64.b64encode(f"babel:{PASSWORD}".encode())
    for name, blob in blobs.items():  # ...and no secret in any form anywhere
        for secret in (PASSWORD.encode(), QUERY_KEY.encode(), basic):
            assert secret not in blob, f"{secret!r} in {name}"


def test_cli_error_line_hides_the_url_credentials(tmp_path):
    """A server that cannot be reached: the one-line error names the URL, without its secrets."""
    import socket

    from typer.testing import CliRunner

    from babelprobe.cli import app

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://ops:{PASSWORD}@127.0.0.1:{port}/v1?key={QUERY_KEY}"
    result = CliRunner().invoke(app, ["run", "cka", "--model", "openai:m", "--base-url", url, "--out",
                                      str(tmp_path / "r"), "--no-cache", "--max-retries", "0"])
    assert result.exit_code == 2, result.output
    assert "cannot reach the server at http://127.0.0.1" in result.output
    assert PASSWORD not in result.output and QUERY_KEY not in result.output
