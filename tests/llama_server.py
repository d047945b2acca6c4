"""llama-cpp-python's own OpenAI-compatible server (``llama_cpp.server``, the llamacpp extra) on a
bundled GGUF file, in a subprocess, for tests: started on a free port or a given one, stopped and
started again on the same port (a model server's restart)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx

# The server as llama-cpp-python ships it, started with the AMX workaround of the in-process
# backend (llamacpp_backend._without_amx: AMX segfaults on Q4 decode on these CPUs).
LAUNCH = """
import sys
import llama_cpp, uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings
from babelprobe.models.llamacpp_backend import _without_amx
path, alias, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
with _without_amx(llama_cpp):
    app = create_app(server_settings=ServerSettings(host="127.0.0.1", port=port),
                     model_settings=[ModelSettings(model=path, model_alias=alias, n_ctx=512, n_threads=2,
                                                   verbose=False, seed=0)])
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One ``llama_cpp.server`` process serving ``gguf`` as ``alias`` on ``port``."""

    def __init__(self, gguf: Path, alias: str, port: int | None = None):
        self.gguf, self.alias, self.port = gguf, alias, port or free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "LlamaServer":
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, str(self.gguf), self.alias, str(self.port)],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(240):  # bounded wait for the port (the model loads first)
            try:
                httpx.get(f"{self.url}/models", timeout=1)
                return self
            except httpx.TransportError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"llama_cpp.server exited: {self.proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.5)
        raise RuntimeError(f"llama_cpp.server did not answer on port {self.port} within 120 s")

    def stop(self) -> None:
        """Kill the server (SIGKILL: a crash, not a graceful shutdown)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None


@contextmanager
def llama_server(gguf: Path, alias: str) -> Iterator[str]:
    server = LlamaServer(gguf, alias).start()
    try:
        yield server.url
    finally:
        server.stop()
