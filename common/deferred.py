"""Rows noted at the end of a response, written in batches off the request path.

The audio endpoints note what each response sent (AudioFetch, BattleAudioFetch). Under the ASGI
server that note is queued here and a background thread of the process writes the queue with one
INSERT per model every INTERVAL seconds, so an audio GET costs no database write and no thread
hand-off of its own. Whatever reads these rows to decide something (the listening record) calls
`flush()` before its transaction (waiting for a batch the writer is inserting) and again inside it, so this
process's notes are never missed; a note taken by
another process reaches the database within INTERVAL seconds on an idle machine, and later on a
saturated one; the judgment submit and the arena vote therefore count once more from the stored rows
before refusing for too little listening. Elsewhere (WSGI, the test client, management commands) `add` writes at once.
If a process dies with notes queued, those fetches are not credited: the proof can only
under-count, never credit what was not sent.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict

log = logging.getLogger(__name__)

INTERVAL = 0.2


class DeferredRows:
    def __init__(self, interval: float = INTERVAL):
        self.interval = interval
        self.enabled = False
        self.lock = threading.Lock()
        self.writing = threading.Lock()
        self.pending: list = []
        self.thread: threading.Thread | None = None

    def enable(self) -> None:
        """Queue from now on in this process (the ASGI server's start-up message turns it on)."""
        self.enabled = True

    def add(self, instance) -> None:
        if not self.enabled:
            instance.save(force_insert=True)
            return
        with self.lock:
            self.pending.append(instance)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="auditorium-deferred-rows", daemon=True)
                self.thread.start()

    def flush(self) -> int:
        """Write what this process has queued; returns the number of rows written.

        Outside a transaction it first waits for a batch the writer thread has taken but not yet inserted: after
        it, every note this process queued before the call is in the database. The services that decide from
        these rows call it before opening their transaction. Inside a transaction it does not wait, since the
        writer's insert may need a lock that transaction holds; it writes what is still queued.
        """
        from django.db import connection

        if connection.in_atomic_block:
            return self._write()
        with self.writing:
            return self._write()

    def _write(self) -> int:
        with self.lock:
            rows, self.pending = self.pending, []
        if not rows:
            return 0
        by_model = defaultdict(list)
        for row in rows:
            by_model[type(row)].append(row)
        for model, group in by_model.items():
            model.objects.bulk_create(group)
        return len(rows)

    def _run(self) -> None:
        from django.db import close_old_connections

        stop = threading.Event()
        while not stop.wait(self.interval):
            try:
                # Held while the batch is written, so a reader's flush outside a transaction waits for it.
                with self.writing:
                    written = self._write()
                if written:
                    close_old_connections()
            except Exception:  # a failed batch is lost (never over-credits); the writer keeps going
                log.exception("writing the queued audio notes failed")
                close_old_connections()


deferred_rows = DeferredRows()
