"""Health endpoints, the deployment check command, and production settings."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def staff_client(client):
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="operator", is_staff=True))
    return client


@pytest.mark.django_db
def test_health_endpoints_answer(staff_client):
    assert staff_client.get("/healthz/").json() == {"ok": True}
    ready = staff_client.get("/readyz/")
    assert ready.status_code == 200
    body = ready.json()
    assert body["ok"] and body["checks"]["database"]["ok"] and body["checks"]["cache"]["ok"]


@pytest.mark.django_db
def test_the_public_gets_the_status_only(client, monkeypatch):
    from auditorium import health

    assert client.get("/readyz/").json() == {"ok": True}
    assert client.get("/healthz/workers/").json() == {"ok": True}

    def broken():
        raise ConnectionError("connection refused by 10.0.0.5:6379")

    monkeypatch.setattr(health, "check_cache", broken)
    r = client.get("/readyz/")
    assert r.status_code == 503 and r.json() == {"ok": False}
    assert b"10.0.0.5" not in r.content and b"sqlite" not in r.content and b"postgresql" not in r.content


@pytest.mark.django_db
def test_readyz_reports_a_broken_dependency_to_staff(staff_client, monkeypatch):
    from auditorium import health

    def broken():
        raise ConnectionError("connection refused")

    monkeypatch.setattr(health, "check_cache", broken)
    r = staff_client.get("/readyz/")
    assert r.status_code == 503
    assert "connection refused" in r.json()["checks"]["cache"]["detail"]


def _proxy_header(env_extra):
    code = "import json, django; django.setup(); from django.conf import settings; print(json.dumps(settings.SECURE_PROXY_SSL_HEADER))"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "AUDITORIUM_"))}
    env.update(PRODUCTION, **env_extra, DJANGO_SETTINGS_MODULE="auditorium.settings", PYTHONPATH=f"{ROOT / 'platform'}:{ROOT}")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_x_forwarded_proto_is_trusted_only_behind_a_configured_proxy():
    assert _proxy_header({}) is None
    assert _proxy_header({"AUDITORIUM_BEHIND_PROXY": "true"}) == ["HTTP_X_FORWARDED_PROTO", "https"]


@pytest.mark.django_db
def test_check_deployment_passes_on_a_migrated_database(capsys):
    call_command("check_deployment", "--skip-workers")
    out = capsys.readouterr().out
    assert "[ok  ] database" in out and "[ok  ] migrations: all applied" in out


@pytest.mark.django_db
def test_check_deployment_names_missing_judge_weights(capsys):
    from scoring.models import Judge

    Judge.objects.create(key="clap-missing", kind=Judge.Kind.CLAP, weights="/nonexistent/clap-weights", queue="gpu")
    call_command("check_deployment", "--skip-workers")  # missing weights warn, they do not fail the web tier
    out = capsys.readouterr().out
    assert "[warn] judge weights: clap-missing" in out and "/nonexistent/clap-weights" in out


def _run_manage(*args, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ARENA_"))}
    env.update(env_extra)
    env["DJANGO_SETTINGS_MODULE"] = "auditorium.settings"
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


# Development settings with a key of their own, so no test writes the development key under var/.
DEVELOPMENT = {"DJANGO_DEBUG": "true", "DJANGO_SECRET_KEY": "test-only-development-key-7c3e9a51d2f4b806"}

PRODUCTION = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "k" * 20 + "Zq8#vL2@pX9!mR4$wT7^nB1&cY6*hJ3(",
    "DJANGO_ALLOWED_HOSTS": "auditorium.example.org",
}


def test_check_deploy_is_clean_with_production_settings():
    result = _run_manage("check", "--deploy", "--fail-level", "WARNING", env_extra=PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    result = _run_manage("check", env_extra={"DJANGO_DEBUG": "false"})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_debug_is_off_unless_asked_for():
    result = _run_manage("check", env_extra={})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr and "DJANGO_DEBUG=true" in result.stderr


@pytest.mark.engine
@pytest.mark.parametrize("name, value", [("DJANGO_DEBUG", "maybe"), ("CELERY_TASK_TIME_LIMIT", "ten"), ("DATABASE_URL", "mysql://x@y/z"), ("LOG_LEVEL", "LOUD")])
def test_bad_environment_values_fail_loudly(name, value):
    result = _run_manage("check", env_extra={**DEVELOPMENT, name: value})
    assert result.returncode != 0
    assert name in result.stderr


def test_logs_are_json_lines():
    import json
    import logging

    from common.logging import JsonFormatter

    record = logging.LogRecord("auditorium.test", logging.INFO, __file__, 1, "vote stored %s", ("x",), None)
    record.battle = 12
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "vote stored x" and line["battle"] == 12 and line["level"] == "INFO"


def _database_settings(env_extra):
    code = "import json, django; django.setup(); from django.conf import settings; d = settings.DATABASES['default']; print(json.dumps([d['CONN_MAX_AGE'], d.get('OPTIONS', {}).get('pool')]))"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DB_", "DATABASE_"))}
    env.update(DEVELOPMENT, **env_extra, DJANGO_SETTINGS_MODULE="auditorium.settings", PYTHONPATH=f"{ROOT / 'platform'}:{ROOT}")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.engine
def test_postgresql_connections_are_pooled_per_process():
    import json

    url = {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/auditorium"}
    result = _database_settings(url)
    assert result.returncode == 0, result.stderr
    max_age, pool = json.loads(result.stdout)
    # Persistent per-thread connections under ASGI exhaust PostgreSQL; the pool bounds them, sized from
    # the server's threads (ASGI_THREADS under uvicorn, WEB_THREADS / gunicorn --threads under gthread) plus two.
    assert max_age == 0 and pool["max_size"] == 8 + 2
    assert json.loads(_database_settings({**url, "ASGI_THREADS": "4"}).stdout)[1]["max_size"] == 6
    assert json.loads(_database_settings({**url, "WEB_THREADS": "16"}).stdout)[1]["max_size"] == 18
    assert json.loads(_database_settings({**url, "DB_POOL_MAX_SIZE": "20"}).stdout)[1]["max_size"] == 20
    assert json.loads(_database_settings({**url, "DB_POOL": "false", "DB_CONN_MAX_AGE": "60"}).stdout) == [60, None]
    refused = _database_settings({**url, "DB_CONN_MAX_AGE": "60"})
    assert refused.returncode != 0 and "DB_CONN_MAX_AGE" in refused.stderr


@pytest.mark.engine
def test_gunicorn_threads_size_the_pool_under_gthread():
    from auditorium.dbpool import threads_from_gunicorn

    environ = {}
    threads_from_gunicorn(environ, ["/venv/bin/gunicorn", "auditorium.wsgi:application", "-k", "gthread", "--threads", "6"])
    assert environ == {"WEB_THREADS": "6"}
    environ = {"GUNICORN_CMD_ARGS": "--threads=3"}
    threads_from_gunicorn(environ, ["/venv/bin/gunicorn", "auditorium.wsgi:application"])
    assert environ["WEB_THREADS"] == "3"
    environ = {}
    threads_from_gunicorn(environ, ["/venv/bin/gunicorn", "auditorium.wsgi:application", "-k", "sync"])
    assert environ == {"WEB_THREADS": "1"}  # one request at a time per process
    environ = {}
    threads_from_gunicorn(environ, ["manage.py", "runserver"])
    assert environ == {}  # not gunicorn: nothing to read


@pytest.mark.engine
def test_cache_instances_share_one_redis_pool_and_client_per_process():
    # Under ASGI every request context builds its own cache backend; they must not each dial Redis.
    code = (
        "import json, django; django.setup()\n"
        "from django.core.cache import caches\n"
        "first, second = caches.create_connection('default'), caches.create_connection('default')\n"
        "same = first._cache._get_connection_pool(True) is second._cache._get_connection_pool(True)\n"
        # Django's own client builds a redis.Redis object for every command; one serves them all here.
        "same = same and first._cache.get_client('k') is second._cache.get_client('k', write=True)\n"
        "created = None\n"
        "try:\n"
        "    for i in range(20):\n"
        "        caches.create_connection('default').get('probe')\n"
        "    created = first._cache._get_connection_pool(True)._created_connections\n"
        "except Exception:\n"
        "    pass\n"
        "print(json.dumps([same, created]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DB_", "DATABASE_"))}
    env.update(
        DEVELOPMENT, REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), DJANGO_SETTINGS_MODULE="auditorium.settings", PYTHONPATH=f"{ROOT / 'platform'}:{ROOT}"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    same, created = json.loads(result.stdout.strip().splitlines()[-1])
    assert same
    if created is not None:  # Redis reachable: twenty request contexts, one connection
        assert created == 1
