"""An outside judge's URL may not make the server reach itself or its network: the host is resolved and loopback,
private, link-local and other non-public addresses are refused unless BENCHMARK_ENDPOINT_PRIVATE_NETWORKS allows them,
at registration and again when a run starts; the run connects to the address it checked and follows no redirect."""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client

from scoring.benchmarks import endpoint_address, services
from scoring.benchmarks.models import JudgeEndpoint, Prediction, Submission
from tests.benchmarks.helpers import known_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

REFUSED = [
    ("http://127.0.0.1:9/judge", "127.0.0.1 is a loopback address"),
    ("http://localhost:9/judge", "is a loopback address"),
    ("http://[::1]:9/judge", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]:9/judge", "127.0.0.1 is a loopback address"),
    ("http://10.1.2.3/judge", "10.1.2.3 is a private address"),
    ("http://192.168.0.7:8080/judge", "192.168.0.7 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://0.0.0.0:9/", "0.0.0.0 is a"),
    ("http://100.64.0.1/", "100.64.0.1 is a special-purpose address"),
    ("http://2130706433/", "127.0.0.1 is a loopback address"),  # the same address written as one number
]


class _Recorder(BaseHTTPRequestHandler):
    hits: list = []
    redirect_to = ""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Recorder.hits.append((self.path, self.headers["Host"]))
        if _Recorder.redirect_to:
            self.send_response(302)
            self.send_header("Location", _Recorder.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        raw = json.dumps({"id": body["id"], "preferred": "A"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_judge():
    _Recorder.hits, _Recorder.redirect_to = [], ""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture
def world(settings):
    settings.BENCHMARK_HTTP_TIMEOUT = 2.0
    settings.BENCHMARK_HTTP_RETRIES = 0
    settings.BENCHMARK_AUDIO_BASE_URL = "http://testserver"
    study, _ = known_study(n_pairs=4, name="ssrf-study")
    bench = services.benchmark_create(name="ssrf", study=study, bootstrap_rounds=100)
    member = UserFactory(username="ssrf-member")
    services.team_create(name="ssrf-team", members=[member])
    client = Client()
    client.force_login(member)
    return {"bench": bench, "client": client}


def register(world, url: str, name: str = "judge"):
    return world["client"].post("/benchmarks/teams/ssrf-team/endpoints/", {"name": name, "url": url}, follow=True)


def run(world, django_capture_on_commit_callbacks, name: str = "judge") -> Submission:
    with django_capture_on_commit_callbacks(execute=True):
        response = world["client"].post("/benchmarks/ssrf/run/", {"team": "ssrf-team", "endpoint": name})
    assert response.status_code == 302
    return Submission.objects.filter(team__name="ssrf-team").latest("pk")


def test_the_default_allows_no_private_network(settings):
    assert settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS == []


@pytest.mark.parametrize(("url", "why"), REFUSED, ids=[u for u, _ in REFUSED])
def test_registering_a_url_that_resolves_to_this_machine_or_its_network_is_refused(world, url, why):
    page = register(world, url).content.decode()
    assert "does not send judge requests to" in page
    assert why in page
    assert "BENCHMARK_ENDPOINT_PRIVATE_NETWORKS" in page
    assert not JudgeEndpoint.objects.exists()


def test_a_public_address_and_an_explicitly_allowed_network_are_accepted(world, settings):
    assert register(world, "http://93.184.215.14/judge", name="public").redirect_chain[0][1] == 302
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]
    assert register(world, "http://127.0.0.1:9/judge", name="local").redirect_chain[0][1] == 302
    # allowing one address does not open its neighbours
    assert "10.1.2.3 is a private address" in register(world, "http://10.1.2.3/", name="lan").content.decode()
    assert set(JudgeEndpoint.objects.values_list("name", flat=True)) == {"public", "local"}


@pytest.mark.engine
def test_a_run_checks_the_address_again_and_sends_nothing_once_it_is_refused(world, settings, local_judge, django_capture_on_commit_callbacks):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]
    register(world, f"http://127.0.0.1:{local_judge}/judge")
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = []
    submission = run(world, django_capture_on_commit_callbacks)
    assert submission.state == Submission.State.FAILED
    assert "127.0.0.1 is a loopback address" in submission.error
    assert _Recorder.hits == []
    assert not Prediction.objects.filter(submission=submission).exists()


@pytest.mark.engine
def test_a_run_connects_to_the_checked_address_and_keeps_the_host_name(world, settings, local_judge, monkeypatch, django_capture_on_commit_callbacks):
    """The name is resolved once, checked, and every request goes to that address (a second lookup that answered
    otherwise, DNS rebinding, would not move it); the Host header stays the registered name."""
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]
    lookups = []
    real = socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if host == "judge.example.test":
            lookups.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(endpoint_address.socket, "getaddrinfo", fake)
    register(world, f"http://judge.example.test:{local_judge}/judge")
    lookups.clear()
    submission = run(world, django_capture_on_commit_callbacks)
    assert submission.state == Submission.State.DONE, submission.error
    assert lookups == ["judge.example.test"]  # once for the whole run
    assert len(_Recorder.hits) == world["bench"].n_items
    assert {host for _, host in _Recorder.hits} == {f"judge.example.test:{local_judge}"}
    assert not Prediction.objects.filter(submission=submission).exclude(error="").exists()


@pytest.mark.engine
def test_a_redirect_is_not_followed(world, settings, local_judge, django_capture_on_commit_callbacks):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]
    register(world, f"http://127.0.0.1:{local_judge}/judge")
    _Recorder.redirect_to = f"http://127.0.0.1:{local_judge}/internal-admin"
    submission = run(world, django_capture_on_commit_callbacks)
    assert [path for path, _ in _Recorder.hits] == ["/judge"] * world["bench"].n_items
    errors = set(Prediction.objects.filter(submission=submission).values_list("error", flat=True))
    assert errors == {"error: HTTP 302"}


# IPv6 spellings that carry 127.0.0.1 (or another refused IPv4 address), and IANA special-purpose blocks.
CARRIED = [
    ("::7f00:1", "127.0.0.1 (IPv4-compatible)"),
    ("::ffff:0:7f00:1", "127.0.0.1 (IPv4-translated)"),
    ("::ffff:7f00:1", "127.0.0.1 (IPv4-mapped)"),
    ("64:ff9b::7f00:1", "127.0.0.1 (NAT64)"),
    ("64:ff9b::a9fe:a9fe", "169.254.169.254 (NAT64)"),
    ("2002:7f00:1::", "127.0.0.1 (6to4)"),
    ("2002:a00:1::1", "10.0.0.1 (6to4)"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1 (Teredo client)"),  # client bits are the address inverted
]
SPECIAL = ["192.0.0.8", "192.0.0.9", "192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "240.0.0.1", "255.255.255.255", "224.0.0.1",
           "192.88.99.1", "64:ff9b:1::1", "100::1", "2001:db8::1", "2001:2::1", "fd00::1", "fe80::1", "fec0::1", "ff02::1", "3fff::1", "5f00::1"]  # fmt: skip
PUBLIC = ["8.8.8.8", "93.184.215.14", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"]


@pytest.mark.parametrize(("address", "carried"), CARRIED, ids=[a for a, _ in CARRIED])
def test_ipv6_forms_are_judged_by_the_ipv4_address_they_carry(address, carried, settings):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = []
    why = endpoint_address.address_refusal(ipaddress.ip_address(address))
    assert f"carries {carried}" in why


@pytest.mark.parametrize("address", SPECIAL)
def test_special_purpose_blocks_are_refused(address, settings):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = []
    assert endpoint_address.address_refusal(ipaddress.ip_address(address)), address


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass_in_every_spelling(address, settings):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = []
    assert endpoint_address.address_refusal(ipaddress.ip_address(address)) == ""


# ISATAP interface identifiers (RFC 5214): ...:0:5efe:a.b.c.d, ...:200:5efe:a.b.c.d, with the group bit too.
ISATAP_REFUSED = [
    ("2600::5efe:7f00:1", "127.0.0.1"),
    ("2600::200:5efe:7f00:1", "127.0.0.1"),
    ("2600::5efe:a00:1", "10.0.0.1"),
    ("2600:1f18::200:5efe:a9fe:a9fe", "169.254.169.254"),
    ("2600::100:5efe:c0a8:101", "192.168.1.1"),
    ("2002:808:808::5efe:7f00:1", "127.0.0.1"),  # a public 6to4 prefix does not excuse the identifier
]


@pytest.mark.parametrize(("address", "carried"), ISATAP_REFUSED, ids=[a for a, _ in ISATAP_REFUSED])
def test_an_isatap_identifier_carrying_a_non_public_ipv4_address_is_refused(address, carried, settings):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = []
    assert f"carries {carried} (ISATAP)" in endpoint_address.address_refusal(ipaddress.ip_address(address))


def test_an_isatap_identifier_is_judged_on_top_of_its_prefix(settings):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = []
    refusal = lambda a: endpoint_address.address_refusal(ipaddress.ip_address(a))  # noqa: E731
    # A public IPv4 address in a public prefix passes; in a link-local or unique-local prefix the prefix refuses it.
    assert refusal("2600::5efe:808:808") == "" and refusal("2600::200:5efe:808:808") == ""
    assert "link-local" in refusal("fe80::5efe:808:808") and "unique-local" in refusal("fd00::200:5efe:808:808")
    # Other identifiers that merely look close are not ISATAP, and Teredo's low bits mean something else.
    assert refusal("2600::400:5efe:7f00:1") == "" and refusal("2600::5eff:7f00:1") == ""
    assert endpoint_address.isatap_ipv4(ipaddress.ip_address("2001:0:4136:e378::5efe:7f00:1")) is None
    # Allowing the carried network allows the ISATAP spelling of it.
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.0/8"]
    assert refusal("2600::5efe:7f00:1") == ""


def test_allowing_127_0_0_1_allows_it_in_every_spelling_and_nothing_else(settings):
    settings.BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = ["127.0.0.1"]
    for address in ("127.0.0.1", "::ffff:7f00:1", "64:ff9b::7f00:1"):
        assert endpoint_address.address_refusal(ipaddress.ip_address(address)) == "", address
    assert endpoint_address.address_refusal(ipaddress.ip_address("127.0.0.2"))


@pytest.mark.parametrize("address", ["::7f00:1", "::ffff:0:7f00:1", "64:ff9b::7f00:1", "2002:7f00:1::", "192.0.0.8"])
def test_registration_and_the_run_refuse_a_host_that_resolves_to_them(address, world, settings, monkeypatch, django_capture_on_commit_callbacks):
    """Through the real routes, with a stubbed resolver: nothing is sent anywhere."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET

    def fake(host, port, *args, **kwargs):
        if host == "judge.example.org":
            return [(family, socket.SOCK_STREAM, 6, "", (address, port) if family == socket.AF_INET else (address, port, 0, 0))]
        raise socket.gaierror("no such name")

    monkeypatch.setattr(endpoint_address.socket, "getaddrinfo", fake)
    page = register(world, "http://judge.example.org/judge").content.decode()
    assert "does not send judge requests to judge.example.org" in page and not JudgeEndpoint.objects.exists()
    # Registered while the name resolved elsewhere: the run checks again and sends nothing.
    team = services.team_create(name="ssrf-team")
    JudgeEndpoint.objects.create(team=team, name="judge", url="http://judge.example.org/judge")
    submission = run(world, django_capture_on_commit_callbacks)
    assert submission.state == Submission.State.FAILED and "does not send judge requests" in submission.error
    assert not Prediction.objects.filter(submission=submission).exists()
