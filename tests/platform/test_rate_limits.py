"""Rate limits counted together (common/rates.py, the arena's votes and battles): the rules of one limit at a time, in one cache round trip on Redis."""

from __future__ import annotations

import pytest
from django.core.cache import cache, caches

from common import rates
from common.cache import RedisCache

NOW = 1_000_000.0  # a fixed clock: window starts are multiples of the window


def _count(scope: str, ident: str, window: int) -> int | None:
    return cache.get(f"rl:{scope}:{ident}:{int(NOW // window) * window}")


def test_limits_are_counted_in_order_and_stop_at_the_first_one_over():
    limits = [("v", "visitor", "2/60"), ("ip", "net", "3/60"), ("day", "net", "100/86400")]
    assert [rates.hit_many(limits, now=NOW) for _ in range(2)] == [(-1, 0), (-1, 0)]
    # The third request is over the first limit: refused with its window's remaining seconds,
    # and the limits after it are not counted for it.
    assert rates.hit_many(limits, now=NOW) == (0, 20)
    assert (_count("v", "visitor", 60), _count("ip", "net", 60), _count("day", "net", 86400)) == (3, 2, 2)


def test_a_later_limit_refuses_when_the_earlier_ones_allow():
    assert rates.hit_many([("v", "a", "5/60"), ("ip", "n", "1/60")], now=NOW) == (-1, 0)
    assert rates.hit_many([("v", "b", "5/60"), ("ip", "n", "1/60")], now=NOW) == (1, 20)
    assert (_count("v", "b", 60), _count("ip", "n", 60)) == (1, 2)


def test_a_limit_of_zero_is_off_and_a_new_window_starts_again():
    assert rates.hit_many([("off", "x", "0/60")], now=NOW) == (-1, 0)
    assert _count("off", "x", 60) is None
    assert rates.hit(scope="w", ident="x", rate="1/60", now=NOW) == 0
    assert rates.hit(scope="w", ident="x", rate="1/60", now=NOW) == 20
    assert rates.hit(scope="w", ident="x", rate="1/60", now=NOW + 60) == 0


@pytest.mark.engine
def test_on_redis_the_counters_expire_after_their_window():
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        pytest.skip("needs REDIS_URL (the embedded cache counts with add/incr)")
    rates.hit_many([("v", "ttl", "5/60")], now=NOW)
    key = backend.make_and_validate_key(f"rl:v:ttl:{int(NOW // 60) * 60}")
    ttl = backend._cache.get_client(key).ttl(key)
    assert 60 < ttl <= 65


def test_a_cache_outage_lets_requests_through(monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(rates, "_count_many", down)
    assert rates.hit_many([("v", "x", "1/60"), ("ip", "y", "1/60")], now=NOW) == (-1, 0)
