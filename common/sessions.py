"""Sessions read from the cache first and kept in the database, that never fail a request on the cache.

Django's cached_db store already survives a cache error on read and on save, but not the cache
write after a database read or the check for a free session key: with Redis down or restarting,
every signed-in page would answer 500 although the database holds every session. Here those two
fall back to the database alone. The key change at sign-in drops the old key
from the database and tries the cache (the copy there is unreadable while Redis is down and gone
after its restart). Sign-out still fails loudly when the cache cannot drop its copy: a session
left valid in the cache after a sign-out is worse than an error page.
"""

from __future__ import annotations

import logging

from django.contrib.sessions.backends import cached_db

log = logging.getLogger(__name__)


class SessionStore(cached_db.SessionStore):
    def load(self):
        try:
            data = self._cache.get(self.cache_key)
        except Exception:
            data = None
        if data is not None:
            return data
        stored = self._get_session_from_db()
        if not stored:
            return {}
        data = self.decode(stored.session_data)
        try:
            self._cache.set(self.cache_key, data, self.get_expiry_age(expiry=stored.expire_date))
        except Exception:
            log.warning("session cache write skipped: cache unavailable", exc_info=True)
        return data

    def exists(self, session_key):
        try:
            if session_key and (self.cache_key_prefix + session_key) in self._cache:
                return True
        except Exception:
            log.warning("session cache read skipped: cache unavailable", exc_info=True)
        return super(cached_db.SessionStore, self).exists(session_key)

    def cycle_key(self):
        self._tolerate_cache_delete = True
        try:
            super().cycle_key()
        finally:
            self._tolerate_cache_delete = False

    def delete(self, session_key=None):
        try:
            super().delete(session_key)
        except Exception:
            if not getattr(self, "_tolerate_cache_delete", False):
                raise
            log.warning("session cache delete skipped at key change: cache unavailable", exc_info=True)
