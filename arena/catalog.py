"""Importing pre-generated clips for catalog systems, from a folder or a CMI-RewardBench JSONL.

Folder layout:  ROOT/prompts.json  ({"<stem>": "prompt text"} or {"<stem>": {"prompt": ..., "lyrics": ...}})
                ROOT/<system name>/<stem>.wav|flac|ogg|mp3
Clips are re-encoded to the arena's format (mono FLAC, one sample rate, one
loudness, the arena clip length) so a catalog clip looks like any other.
"""

from __future__ import annotations

import json
from pathlib import Path

import soundfile as sf
from django.conf import settings
from django.db import transaction

from annotation.services import SUPPORTED_AUDIO, audio_probe, clip_ingest_array, system_get_or_create
from common.errors import ServiceError

from .adapters import prompt_key
from .models import AdapterKind, ArenaPrompt, ArenaSystem, CatalogClip
from .levelling import prepare_audio


def _catalog_system(name: str) -> ArenaSystem:
    system = system_get_or_create(name=name)
    arena_system, _ = ArenaSystem.objects.get_or_create(system=system, defaults={"adapter_kind": AdapterKind.CATALOG})
    if arena_system.adapter_kind != AdapterKind.CATALOG:
        raise ServiceError(f"System {name!r} already uses the {arena_system.adapter_kind} adapter; catalog clips would never be served.", code="adapter_mismatch")
    return arena_system


def catalog_add(*, system_name: str, prompt: str, lyrics: str, path: Path, add_to_pool: bool = True) -> CatalogClip:
    audio_probe(path)  # readable error for a broken file before anything is stored
    audio, rate = sf.read(str(path), dtype="float32", always_2d=False)
    seconds = float(settings.ARENA_CLIP_SECONDS)
    prepared, generated = prepare_audio(audio, int(rate), seconds=seconds)
    arena_system = _catalog_system(system_name)
    clip, _ = clip_ingest_array(audio=prepared, sample_rate=int(settings.ARENA_SAMPLE_RATE), system=arena_system.system, original_name=str(path))
    key = prompt_key(prompt, lyrics)
    entry, _ = CatalogClip.objects.get_or_create(
        arena_system=arena_system,
        prompt_key=key,
        clip=clip,
        defaults={"prompt": prompt, "lyrics": lyrics, "loudness_lufs": generated.lufs, "true_peak_dbtp": generated.true_peak_dbtp},
    )
    if lyrics.strip() and not arena_system.supports_vocals:
        ArenaSystem.objects.filter(pk=arena_system.pk).update(supports_vocals=True)
    if add_to_pool:
        ArenaPrompt.objects.get_or_create(prompt_key=key, defaults={"text": prompt, "lyrics": lyrics, "is_prebaked": True})
    return entry


@transaction.atomic
def catalog_import_folder(*, root: Path | str, add_to_pool: bool = True) -> dict:
    root = Path(root)
    manifest = root / "prompts.json"
    if not manifest.is_file():
        raise ServiceError(f"{manifest} is missing: it maps each file stem to its prompt.", code="missing_manifest")
    try:
        prompts = json.loads(manifest.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ServiceError(f"{manifest} is not valid JSON: {exc}", code="bad_manifest") from None
    added, skipped = 0, []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.iterdir()):
            if path.suffix.lower() not in SUPPORTED_AUDIO:
                continue
            spec = prompts.get(path.stem)
            if spec is None:
                skipped.append(f"{folder.name}/{path.name}: no entry for {path.stem!r} in prompts.json")
                continue
            prompt, lyrics = (spec, "") if isinstance(spec, str) else (spec.get("prompt", ""), spec.get("lyrics", ""))
            catalog_add(system_name=folder.name, prompt=prompt, lyrics=lyrics or "", path=path, add_to_pool=add_to_pool)
            added += 1
    return {"added": added, "skipped": skipped}


@transaction.atomic
def catalog_import_jsonl(*, path: Path | str, root: Path | str | None = None, add_to_pool: bool = True) -> dict:
    """CMI-RewardBench rows: `audio-path` is model_a's clip, `audio2` model_b's, for the row's prompt and lyrics."""
    path = Path(path)
    root = Path(root) if root else path.parent
    added, skipped = 0, []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ServiceError(f"line {number}: not JSON ({exc})", code="bad_jsonl") from None
            prompt, lyrics = (row.get("prompt") or "").strip(), (row.get("lyrics") or "").strip()
            if not prompt:
                skipped.append(f"line {number}: no prompt")
                continue
            for audio_key, model_key in (("audio-path", "model_a"), ("audio2", "model_b")):
                if not row.get(audio_key) or not row.get(model_key):
                    continue
                catalog_add(system_name=row[model_key], prompt=prompt, lyrics=lyrics, path=root / row[audio_key], add_to_pool=add_to_pool)
                added += 1
    return {"added": added, "skipped": skipped}
