"""Persistent response cache: SQLite in WAL mode, keyed by model fingerprint + request hash.

Responses are written batch by batch, each batch in one transaction, as they arrive: a run
killed at any moment (kill -9) loses at most the batch in flight, and a restarted run finds every
finished batch here. Failed requests are never cached, so a rerun tries them again.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Iterable, Iterator, TypeVar

from pydantic import BaseModel

from babelprobe.models.base import RESPONSE_TYPES, Response

Answer = TypeVar("Answer", bound=BaseModel)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    fingerprint TEXT NOT NULL,
    request_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (fingerprint, request_key)
) WITHOUT ROWID
"""


class ResponseCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable against a killed process in WAL mode (not against power loss).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    def get_many(self, fingerprint: str, keys: Iterable[str]) -> dict[str, Response]:
        """The cached responses of ``keys``, each read as its kind's response type."""
        return {key: RESPONSE_TYPES[kind].model_validate_json(payload)
                for key, kind, payload in self._rows(fingerprint, keys)}

    def get_answers(self, fingerprint: str, keys: Iterable[str], answer: type[Answer]) -> dict[str, Answer]:
        """The cached answers of ``keys``, read as ``answer``: for answers that are no model
        request kind (the infini-gram API's counts, families/owl/presence.py)."""
        return {key: answer.model_validate_json(payload) for key, _, payload in self._rows(fingerprint, keys)}

    def _rows(self, fingerprint: str, keys: Iterable[str]) -> Iterator[tuple[str, str, str]]:
        keys = list(keys)
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            yield from self._db.execute(
                f"SELECT request_key, kind, response FROM responses "
                f"WHERE fingerprint = ? AND request_key IN ({marks})",
                [fingerprint, *chunk],
            )

    def put_many(self, fingerprint: str, kind: str, items: Iterable[tuple[str, BaseModel]]) -> None:
        now = time.time()
        rows = [(fingerprint, key, kind, resp.model_dump_json(), now) for key, resp in items]
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)", rows)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def drop_since(self, fingerprint: str, since: float) -> int:
        """Forget ``fingerprint``'s answers cached after ``since`` (``time.time()``): the model
        behind it moved at some point after then (models/retry.py ModelChanged). Returns how many."""
        cursor = self._db.execute("DELETE FROM responses WHERE fingerprint = ? AND created > ?", (fingerprint, since))
        return cursor.rowcount

    def count_present(self, fingerprint: str, keys: Iterable[str]) -> int:
        """How many of ``keys`` have a cached response (without reading the responses)."""
        keys = list(keys)
        present = 0
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            present += self._db.execute(
                f"SELECT COUNT(*) FROM responses WHERE fingerprint = ? AND request_key IN ({marks})",
                [fingerprint, *chunk],
            ).fetchone()[0]
        return present

    def count(self, fingerprint: str | None = None) -> int:
        if fingerprint is None:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return self._db.execute(
            "SELECT COUNT(*) FROM responses WHERE fingerprint = ?", (fingerprint,)
        ).fetchone()[0]

    def close(self) -> None:
        self._db.close()
