"""The four adapters: HTTP server (timeout, retry, health), transformers MusicGen (tiny random model, offline), catalog, demo."""

from __future__ import annotations

import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import soundfile as sf

from arena.adapters import GenerationRequest, HttpAdapter, adapter_for, prompt_key
from arena.models import AdapterKind, ArenaPrompt, Battle, CatalogClip, Health
from arena.selectors import systems_eligible
from arena.services import battle_generate_side, system_health_check
from auditorium import runtime
from tests.audio import write_tone

from .conftest import arena_system, visitor_with_terms


class FakeGenerationServer:
    """A generation server on 127.0.0.1 following docs/arena.md: POST /generate -> WAV, GET /health."""

    def __init__(self):
        self.requests: list[dict] = []
        self.fail_next = 0
        self.delay = 0.0
        self.healthy = True
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == "/health":
                    self.send_response(200 if owner.healthy else 503)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"status": "ok"}' if owner.healthy else b'{"status": "loading"}')
                else:
                    self.send_error(404)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                if owner.fail_next:
                    owner.fail_next -= 1
                    self.send_error(500, "out of GPU memory")
                    return
                time.sleep(owner.delay)
                rate = 16000  # deliberately not the arena's rate: the arena resamples
                t = np.arange(int(body["duration"] * rate)) / rate
                buffer = io.BytesIO()
                sf.write(buffer, 0.2 * np.sin(2 * np.pi * 330 * t), rate, format="WAV")
                data = buffer.getvalue()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "audio/wav")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gen_server():
    with FakeGenerationServer() as server:
        yield server


def http_battle(url, *, timeout=5.0):
    visitor, _ = visitor_with_terms()
    remote = arena_system("remote", adapter_kind=AdapterKind.HTTP, adapter_config={"url": url, "timeout": timeout})
    local = arena_system("local")
    battle = Battle.objects.create(
        visitor=visitor, prompt="calm ambient pads", duration_requested=2.0, seed=42, system_a=remote, system_b=local, status=Battle.Status.GENERATING
    )
    return battle, remote


def test_http_adapter_generates_from_the_documented_request(db, gen_server):
    battle, remote = http_battle(gen_server.url)
    battle_generate_side(battle_id=battle.pk, side="a")
    battle.refresh_from_db()
    assert battle.status == Battle.Status.GENERATING  # side b is not there yet: not ready
    assert battle.clip_a.sample_rate == 32000 and battle.clip_a.duration == pytest.approx(2.0, abs=0.01)
    assert gen_server.requests == [{"prompt": "calm ambient pads", "lyrics": "", "instrumental": True, "duration": 2.0, "seed": 42, "sample_rate": 32000}]
    battle_generate_side(battle_id=battle.pk, side="b")
    battle.refresh_from_db()
    assert battle.status == Battle.Status.READY and battle.ready_at is not None
    # Idempotent: running a side again (a redelivered task) does not call the server again.
    battle_generate_side(battle_id=battle.pk, side="a")
    assert len(gen_server.requests) == 1
    remote.refresh_from_db()
    assert remote.health == Health.HEALTHY


def test_http_adapter_retries_once(db, gen_server):
    gen_server.fail_next = 1
    battle, _ = http_battle(gen_server.url)
    battle_generate_side(battle_id=battle.pk, side="a")
    battle.refresh_from_db()
    assert battle.clip_a is not None and len(gen_server.requests) == 2


def test_http_timeout_fails_the_battle_and_drops_the_system_until_healthy(db, gen_server):
    gen_server.delay = 1.5
    battle, remote = http_battle(gen_server.url, timeout=0.3)
    started = time.monotonic()
    battle_generate_side(battle_id=battle.pk, side="a")
    assert time.monotonic() - started < 1.5  # two attempts of 0.3 s, not the server's 3 s
    battle.refresh_from_db()
    assert battle.status == Battle.Status.FAILED and len(gen_server.requests) == 2
    remote.refresh_from_db()
    assert remote.health == Health.UNHEALTHY
    pool = lambda: {s.name for s in systems_eligible(is_instrumental=True, seconds=2.0, key=prompt_key("x"))}
    assert "remote" not in pool()
    assert system_health_check(arena_system=remote) is True
    assert "remote" in pool()


def test_failing_health_check_takes_a_system_out_of_sampling(db, gen_server):
    remote = arena_system("remote", adapter_kind=AdapterKind.HTTP, adapter_config={"url": gen_server.url})
    gen_server.healthy = False
    assert system_health_check(arena_system=remote) is False
    remote.refresh_from_db()
    assert remote.health == Health.UNHEALTHY and "503" in remote.health_detail
    assert "remote" not in {s.name for s in systems_eligible(is_instrumental=True, seconds=2.0, key="k")}


def test_http_adapter_refuses_a_bad_url(db):
    system = arena_system("bad", adapter_kind=AdapterKind.HTTP, adapter_config={"url": "file:///etc/passwd"})
    ok, detail = HttpAdapter(system).health()
    assert ok is False and "http(s)" in detail


def test_generation_goes_to_the_gpu_queue_only_for_transformers(db, monkeypatch, django_capture_on_commit_callbacks):
    from arena import services, tasks

    queued = []
    monkeypatch.setattr(tasks.battle_generate_side, "apply_async", lambda args, queue: queued.append((args[1], queue)))
    arena_system("mg", adapter_kind=AdapterKind.TRANSFORMERS, adapter_config={"model": "/nonexistent"})
    arena_system("demo")
    visitor, _ = visitor_with_terms()
    with django_capture_on_commit_callbacks(execute=True):
        battle = services.battle_create(visitor=visitor, prompt="calm ambient pads")
    queues = dict(queued)
    side_mg = "a" if battle.system_a.name == "mg" else "b"
    assert queues[side_mg] == "gpu" and queues["b" if side_mg == "a" else "a"] == "cpu"


@pytest.fixture(scope="module")
def tiny_musicgen(tmp_path_factory):
    """A random MusicGen (T5 + EnCodec + decoder) small enough for CPU, saved like a hub checkpoint."""
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        EncodecConfig,
        EncodecFeatureExtractor,
        MusicgenConfig,
        MusicgenDecoderConfig,
        MusicgenForConditionalGeneration,
        MusicgenProcessor,
        PreTrainedTokenizerFast,
        T5Config,
    )

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for word in "calm ambient piano pads song slow soft".split():
        vocab[word] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    audio = EncodecConfig(
        target_bandwidths=[2.0], sampling_rate=8000, audio_channels=1, num_filters=4, hidden_size=8, upsampling_ratios=[16, 16], codebook_size=32, num_lstm_layers=1, codebook_dim=8
    )
    decoder = MusicgenDecoderConfig(
        vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, ffn_dim=32, num_codebooks=2, max_position_embeddings=256, pad_token_id=32, bos_token_id=32
    )
    text = T5Config(vocab_size=32, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2)
    torch.manual_seed(0)
    model = MusicgenForConditionalGeneration(MusicgenConfig(text_encoder=text.to_dict(), audio_encoder=audio.to_dict(), decoder=decoder.to_dict()))
    model.generation_config.pad_token_id = 32
    model.generation_config.decoder_start_token_id = 32
    path = tmp_path_factory.mktemp("tiny-musicgen")
    model.save_pretrained(path)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    MusicgenProcessor(feature_extractor=EncodecFeatureExtractor(feature_size=1, sampling_rate=8000), tokenizer=fast).save_pretrained(path)
    return str(path)


@pytest.mark.slow
def test_transformers_adapter_generates_offline_and_loads_once(db, settings, tiny_musicgen, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    settings.ARENA_CLIP_SECONDS = 1.0
    system = arena_system("tiny-mg", adapter_kind=AdapterKind.TRANSFORMERS, adapter_config={"model": tiny_musicgen, "device": "cpu", "guidance_scale": 1.0})
    runtime.cache_clear()
    result = adapter_for(system).generate(GenerationRequest(prompt="calm piano", seconds=0.5, seed=3, sample_rate=32000))
    assert result.sample_rate == 8000 and result.audio.ndim == 1 and len(result.audio) >= 0.4 * 8000 and np.isfinite(result.audio).all()
    musicgen_keys = [k for k in runtime.cached_keys() if k[0] == "musicgen"]
    assert len(musicgen_keys) == 1
    loaded = runtime.cached_model(musicgen_keys[0], lambda: None)

    visitor, _ = visitor_with_terms()
    battle = Battle.objects.create(visitor=visitor, prompt="soft ambient pads", duration_requested=1.0, seed=5, system_a=system, system_b=arena_system("other"))
    battle_generate_side(battle_id=battle.pk, side="a")
    battle.refresh_from_db()
    assert battle.clip_a is not None and battle.clip_a.sample_rate == 32000 and battle.clip_a.duration <= 1.0
    # Second use in the same worker process: the same model object, not a reload.
    assert [k for k in runtime.cached_keys() if k[0] == "musicgen"] == musicgen_keys
    assert runtime.cached_model(musicgen_keys[0], lambda: None) is loaded


def test_transformers_adapter_reports_a_missing_model_clearly(db, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    system = arena_system("ghost", adapter_kind=AdapterKind.TRANSFORMERS, adapter_config={"model": str(tmp_path / "missing"), "device": "cpu"})
    visitor, _ = visitor_with_terms()
    battle = Battle.objects.create(visitor=visitor, prompt="calm", duration_requested=1.0, seed=5, system_a=system, system_b=arena_system("other"))
    battle_generate_side(battle_id=battle.pk, side="a")
    battle.refresh_from_db()
    assert battle.status == Battle.Status.FAILED and "ghost" in battle.error


def test_catalog_import_from_folder_and_serving(db, tmp_path, settings):
    settings.ARENA_CLIP_SECONDS = 2.0
    (tmp_path / "prompts.json").write_text(json.dumps({"p1": "calm ambient pads", "p2": {"prompt": "folk song", "lyrics": "la la"}}))
    write_tone(tmp_path / "cat-one" / "p1.wav", 3.0, freq=220, sr=44100)
    write_tone(tmp_path / "cat-one" / "p2.wav", 3.0, freq=330, sr=44100)
    write_tone(tmp_path / "cat-two" / "p1.flac", 3.0, freq=440, sr=22050, fmt="FLAC")
    write_tone(tmp_path / "cat-two" / "orphan.wav", 1.0)
    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    call_command("arena_import_catalog", str(tmp_path), stdout=out, stderr=err)
    assert "3 catalog clips" in out.getvalue() and "orphan" in err.getvalue()
    one = CatalogClip.objects.filter(arena_system__system__name="cat-one")
    assert one.count() == 2 and one.first().arena_system.supports_vocals is True
    clip = CatalogClip.objects.get(arena_system__system__name="cat-two").clip
    assert clip.sample_rate == 32000 and clip.duration == pytest.approx(2.0, abs=0.01)
    assert ArenaPrompt.objects.filter(prompt_key=prompt_key("calm ambient pads"), is_prebaked=True).exists()
    # Served for its prompt (case and spacing do not matter), eligible only there.
    system = one.first().arena_system
    result = adapter_for(system).generate(GenerationRequest(prompt="Calm  ambient pads"))
    assert result.clip_id == CatalogClip.objects.get(arena_system=system, prompt_key=prompt_key("calm ambient pads")).clip_id
    # Importing again adds nothing.
    call_command("arena_import_catalog", str(tmp_path), stdout=io.StringIO(), stderr=io.StringIO())
    assert CatalogClip.objects.count() == 3


def test_catalog_import_from_cmi_jsonl(db, tmp_path, settings):
    settings.ARENA_CLIP_SECONDS = 2.0
    write_tone(tmp_path / "audio" / "x.wav", 2.5, freq=200)
    write_tone(tmp_path / "audio" / "y.wav", 2.5, freq=300)
    row = {"audio-path": "audio/x.wav", "audio2": "audio/y.wav", "prompt": "lofi beat", "lyrics": "", "model_a": "musicgen", "model_b": "stable-audio"}
    (tmp_path / "pairs.jsonl").write_text(json.dumps(row) + "\n")
    from django.core.management import call_command

    call_command("arena_import_catalog", str(tmp_path / "pairs.jsonl"), stdout=io.StringIO())
    assert set(CatalogClip.objects.values_list("arena_system__system__name", flat=True)) == {"musicgen", "stable-audio"}


def test_catalog_import_rejects_a_broken_file_with_a_clear_message(db, tmp_path):
    (tmp_path / "prompts.json").write_text(json.dumps({"p1": "calm"}))
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "p1.wav").write_bytes(b"not audio at all")
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="cannot be decoded"):
        call_command("arena_import_catalog", str(tmp_path), stdout=io.StringIO())
    assert not CatalogClip.objects.exists()


def test_demo_adapter_health_knows_its_systems(db):
    assert adapter_for(arena_system("aurora", adapter_config={"demo": "aurora"})).health()[0] is True
    assert adapter_for(arena_system("nope", adapter_config={"demo": "nope"})).health()[0] is False
