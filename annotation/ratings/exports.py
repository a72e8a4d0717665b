"""A rating study's data set: MOS per clip in CMI-RewardBench's MOS layout, one raw row per rating, implied pairs, a datasheet.

Files (UTF-8 JSON lines, keys in a fixed order, one line each):

- `mos.jsonl`: one row per rated clip (regular items, rated clips), the row shape CMI-RewardBench's
  `evaluate_results.py` reads for its MOS sets: `source` containing "PAM" (scored as a PAM-style
  set, both dimensions; a dimension the study did not ask is null) or, for studies asking musicality
  only, exactly "MusicEval"; `split` "test", `audio-path`, the MOS in `musicality` and `text-music alignment`
  (their ground-truth keys) and again in `musicality_mos` / `alignment_mos` (the keys of per-row
  judge results and of `manage.py compare_judges --import-results`), with the number of ratings
  and the 95 % t-interval beside them.
- `ratings.jsonl`: one row per rating with everything needed to rebuild the study's items and
  answers (import below): export -> import -> export gives the same bytes.
- `implied_pairs.jsonl` (multi-stimulus studies): every two rated clips of one submission as a
  CMI-Pref row. Rule: on each dimension the clip rated higher is preferred; equal ratings give
  "both". Confidence is the margin: 1.0 + 0.5 per full 5 points of difference, at most 5.0
  (a 10-point gap is 2.0, 40 points or more is 5.0). Hidden references and anchors are left out
  (they are not systems' clips).
- `datasheet.json`: the study's task, dimensions, scale, instructions, licence, counts, dates, and its
  loudness matching (on or off, target, ceiling, the rule, when it last changed).
- `loudness.csv`: per clip the measured loudness (LUFS), true peak (dBTP) and the playback gain (dB) the
  rating page applied; the audio files themselves are the stored ones, unchanged.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from itertools import combinations
from pathlib import Path, PurePosixPath

from django.contrib.auth import get_user_model
from django.db import transaction
from scipy import stats as sps

from annotation.dataset.exporter import LOUDNESS_COLUMNS, LOUDNESS_FILE, LOUDNESS_RULE, loudness_rows
from annotation.models import AnnotatorProfile, Clip, Study
from annotation.services import clip_ingest, condition_get_or_create, profile_ensure, system_get_or_create
from common.csvfile import csv_text
from common.errors import ServiceError
from common.loudness import PEAK_CEILING_DBTP

from . import services
from .models import Rating, RatingItem, RatingItemClip, RatingSubmission, RatingTask, TaskType

# Their evaluator scores a row as PAM when "PAM" is in its source (musicality and alignment), as
# MusicEval when the source is exactly "MusicEval" (musicality only).
PAM_SOURCE = "PAM-style MOS (Auditorium rating study)"
MUSICEVAL_SOURCE = "MusicEval"
PAIRS_SOURCE = "auditorium-implied-from-ratings"
CMI_KEY = {"musicality": "musicality", "alignment": "text-music alignment"}
RAW_KEYS = (
    "submission", "user id", "item", "item kind", "overlap", "prompt", "lyrics", "ref-audio-path", "prompt id",
    "audio-path", "model", "role", "position", "dimension", "value", "expected", "feedback", "created_at",
)


def audio_path(clip: Clip) -> str:
    return f"audio/{clip.sha256}{clip.extension}"


def _line(row: dict) -> bytes:
    return (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")


def implied_confidence(margin: float) -> float:
    return min(5.0, 1.0 + 0.5 * math.floor(abs(margin) / 5.0))


def _submissions(study: Study):
    return (
        RatingSubmission.objects.filter(item__study=study)
        .exclude(annotator__annotator_profile__withdrawn_at__isnull=False)
        .exclude(annotator__annotator_profile__excluded_at__isnull=False)
        .exclude(source=RatingSubmission.Source.SEEDED)
        .select_related("annotator__annotator_profile", "item__condition__reference")
        .prefetch_related("ratings__clip__system")
        .order_by("item_id", "created_at", "id")
    )


def ratings_export(*, study: Study) -> dict[str, bytes]:
    """The study's files by name (see the module docstring). Withdrawn, excluded and seeded answers are left out."""
    config = RatingTask.objects.filter(study=study).first()
    if config is None:
        raise ServiceError("This study collects pairwise votes; its export is the CMI-Pref data set.", code="not_rating_study", status=409)
    roles = {(i, c): r for i, c, r in RatingItemClip.objects.filter(item__study=study).values_list("item_id", "clip_id", "role")}
    item_number: dict[int, int] = {}
    raw, per_clip, pairs = [], defaultdict(list), []
    clips: dict[int, Clip] = {}
    conditions = {}
    dates = []
    for n, sub in enumerate(_submissions(study), start=1):
        item = sub.item
        number = item_number.setdefault(item.pk, len(item_number) + 1)
        condition = item.condition
        conditions[condition.pk] = condition
        pseudonym = sub.annotator.annotator_profile.pseudonym
        dates.append(sub.created_at)
        values = {}
        for rating in sorted(sub.ratings.all(), key=lambda r: (r.position if r.position is not None else 99, r.clip_id, r.dimension)):
            clip = rating.clip
            clips[clip.pk] = clip
            role = roles.get((item.pk, clip.pk), "test")
            bounds = (item.expected.get(str(clip.pk)) or {}).get(rating.dimension)
            raw.append({
                "submission": n, "user id": pseudonym, "item": number, "item kind": item.kind, "overlap": item.overlap,
                "prompt": condition.prompt, "lyrics": condition.lyrics,
                "ref-audio-path": audio_path(condition.reference) if condition.reference else "", "prompt id": condition.external_id,
                "audio-path": audio_path(clip), "model": clip.system.name if clip.system else "", "role": role, "position": rating.position,
                "dimension": rating.dimension, "value": rating.value, "expected": bounds, "feedback": sub.rationale,
                "created_at": sub.created_at.isoformat(),
            })
            if item.kind == RatingItem.Kind.REGULAR and role == "test":
                per_clip[(clip.pk, condition.pk)].append((rating.dimension, rating.value))
                values.setdefault(clip.pk, {})[rating.dimension] = rating.value
        if config.task == TaskType.MULTI:
            for a, b in combinations(sorted(values, key=lambda c: audio_path(clips[c])), 2):
                row = {"audio-path": audio_path(clips[a]), "audio2": audio_path(clips[b]), "ref-audio-path": audio_path(condition.reference) if condition.reference else "",
                       "prompt": condition.prompt, "lyrics": condition.lyrics,
                       "model_a": clips[a].system.name if clips[a].system else "", "model_b": clips[b].system.name if clips[b].system else "",
                       "prompt id": condition.external_id, "user id": pseudonym}
                for dim in ("musicality", "alignment"):
                    if dim in values[a] and dim in values[b]:
                        margin = values[a][dim] - values[b][dim]
                        row[f"preference-{dim}"] = "model_a" if margin > 0 else "model_b" if margin < 0 else "both"
                        row[f"confidence_preference-{dim}"] = f"{implied_confidence(margin):.1f}"
                    else:
                        row[f"preference-{dim}"], row[f"confidence_preference-{dim}"] = "", ""
                row.update({"feedback": sub.rationale, "source": PAIRS_SOURCE, "split": "train"})
                pairs.append(row)
    mos_rows = []
    source = MUSICEVAL_SOURCE if config.dimensions == ["musicality"] else PAM_SOURCE
    for (clip_id, condition_id), entries in sorted(per_clip.items(), key=lambda kv: (audio_path(clips[kv[0][0]]), kv[0][1])):
        clip, condition = clips[clip_id], conditions[condition_id]
        row = {"audio-path": audio_path(clip), "ref-audio-path": audio_path(condition.reference) if condition.reference else "",
               "prompt": condition.prompt, "lyrics": condition.lyrics, "model_a": clip.system.name if clip.system else "",
               "prompt id": condition.external_id, "source": source, "split": "test"}
        for dim in ("musicality", "alignment"):
            vals = [v for d, v in entries if d == dim]
            if not vals:
                if source == PAM_SOURCE:
                    row[CMI_KEY[dim]] = None
                continue
            mean = sum(vals) / len(vals)
            row[CMI_KEY[dim]] = round(mean, 6)
            row[f"{dim}_mos"] = round(mean, 6)
            row[f"{dim}_n"] = len(vals)
            if len(vals) >= 2:
                sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
                half = float(sps.t.ppf(0.975, len(vals) - 1)) * sd / math.sqrt(len(vals))
                row[f"{dim}_ci95"] = [round(mean - half, 6), round(mean + half, 6)]
        mos_rows.append(row)
    datasheet = {
        "title": study.title or study.name,
        "task": config.task,
        "dimensions": config.dimensions,
        "scale": list(config.scale),
        "scale_labels": "ITU-T P.808 ACR: 5 Excellent, 4 Good, 3 Fair, 2 Poor, 1 Bad" if config.task == TaskType.ACR else "0-100 (ITU-R BS.1534-3 bands: 80 Excellent, 60 Good, 40 Fair, 20 Poor, 0 Bad)",
        "instructions": study.instructions,
        "min_listen_seconds": study.min_listen_seconds,
        "licence": study.licence,
        "ratings": len(raw),
        "submissions": len({r["submission"] for r in raw}),
        "items": len(item_number),
        "clips_with_mos": len(mos_rows),
        "annotators": len({r["user id"] for r in raw}),
        "collected": [min(dates).date().isoformat(), max(dates).date().isoformat()] if dates else None,
        "consent": "Annotators consented to their ratings and listening records being stored under a pseudonym and published under the study's licence; withdrawn and excluded annotators are left out.",
        "implied_pairs_rule": "multi-stimulus only: higher rating preferred per dimension, equal gives both; confidence 1.0 + 0.5 per full 5 points of margin, at most 5.0",
        "loudness": {
            "match": study.loudness_match,
            "target_lufs": study.loudness_target_lufs,
            "ceiling_dbtp": PEAK_CEILING_DBTP,
            "changed_at": study.loudness_changed_at.isoformat() if study.loudness_changed_at else None,
            "rule": LOUDNESS_RULE if study.loudness_match else "off: every clip was played as stored (gain 0 dB)",
            "per_clip": LOUDNESS_FILE,
        },
    }
    played = ratings_export_audio(study=study).values()
    loudness = loudness_rows(study=study, clips=played, path_of=audio_path)
    files = {
        "datasheet.json": (json.dumps(datasheet, ensure_ascii=False, indent=1) + "\n").encode("utf-8"),
        "mos.jsonl": b"".join(_line(r) for r in mos_rows),
        "ratings.jsonl": b"".join(_line({k: r[k] for k in RAW_KEYS}) for r in raw),
        LOUDNESS_FILE: (csv_text(loudness, columns=LOUDNESS_COLUMNS) or ",".join(LOUDNESS_COLUMNS) + "\r\n").encode("utf-8"),
    }
    if config.task == TaskType.MULTI:
        files["implied_pairs.jsonl"] = b"".join(_line(r) for r in pairs)
    return files


def ratings_export_audio(*, study: Study) -> dict[str, Clip]:
    """{audio/<sha256><ext>: clip} of every clip an export of the study names (rated clips, references, anchors and
    conditions' references): the files an import brings from the export's folder."""
    clips: dict[str, Clip] = {}
    for item in study.rating_items.select_related("condition__reference").prefetch_related("item_clips__clip"):
        for member in item.item_clips.all():
            clips[audio_path(member.clip)] = member.clip
        if item.condition.reference is not None:
            clips[audio_path(item.condition.reference)] = item.condition.reference
    return dict(sorted(clips.items()))


def _rows(data: bytes, name: str) -> list[dict]:
    rows = []
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ServiceError(f"{name} line {number}: not JSON ({exc.msg}).", code="bad_row") from None
        missing = [k for k in RAW_KEYS if k not in row] if name == "ratings.jsonl" else []
        if not isinstance(row, dict) or missing:
            raise ServiceError(f"{name} line {number}: expected an object with {', '.join(missing) or 'the raw keys'}.", code="bad_row")
        rows.append(row)
    return rows


def _sha_of(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def _clip_for(path: str, *, line: int) -> Clip:
    clip = Clip.objects.filter(sha256=_sha_of(path)).first()
    if clip is None:
        raise ServiceError(f"ratings.jsonl line {line}: no clip {path} here; give the export's folder (its audio/ files) as the audio root.", code="missing_clip")
    return clip


def _audio_file(root: Path, path: str, *, line: int) -> Path:
    """The file an export row names under the audio root: audio/<sha256><ext>, never outside the root."""
    rel = PurePosixPath(path)
    if path.startswith(("/", "\\")) or ".." in rel.parts or len(rel.parts) != 2 or rel.parts[0] != "audio":
        raise ServiceError(f"ratings.jsonl line {line}: {path[:120]!r} is not an export's audio/<sha256> path.", code="bad_row")
    resolved = (root / rel).resolve()
    if not resolved.is_relative_to(root) or not resolved.is_file():
        raise ServiceError(f"ratings.jsonl line {line}: {path} is neither a clip here nor a file under the audio root.", code="missing_clip")
    return resolved


def _audio_bring(rows: list[dict], *, root: Path, written: list[Clip]) -> None:
    """Store every clip the rows name that is not here yet from the audio root (annotation.services.clip_ingest, as the
    pair import does): rated clips with their system, hidden references, anchors and conditions' references as references.
    A file whose stored content does not hash to the name the row gives it is refused: the row would name another clip."""
    wanted: dict[str, tuple[int, str, str]] = {}
    for line, row in enumerate(rows, start=1):
        if row["ref-audio-path"]:
            wanted.setdefault(row["ref-audio-path"], (line, "", Clip.Kind.REFERENCE))
        generated = row["role"] == "test"
        wanted[row["audio-path"]] = (line, row["model"] if generated else "", Clip.Kind.GENERATED if generated else Clip.Kind.REFERENCE)
    have = set(Clip.objects.filter(sha256__in=[_sha_of(p) for p in wanted]).values_list("sha256", flat=True))
    for path, (line, model, kind) in sorted(wanted.items()):
        if _sha_of(path) in have:
            continue
        source = _audio_file(root, path, line=line)
        system = system_get_or_create(name=model) if model else None
        clip, created = clip_ingest(path=source, system=system, kind=kind, original_name=path)
        if created:
            written.append(clip)
        if clip.sha256 != _sha_of(path):
            raise ServiceError(f"ratings.jsonl line {line}: the audio in {path} is not the clip its name says (stored as {clip.sha256[:12]}...).", code="audio_mismatch")


def _annotator(pseudonym: str):
    profile = AnnotatorProfile.objects.filter(pseudonym=pseudonym).select_related("user").first()
    if profile is not None:
        return profile.user
    user = get_user_model().objects.create(username=f"imported-{pseudonym}"[:150])
    user.set_unusable_password()
    user.save(update_fields=["password"])
    profile_ensure(user=user, pseudonym=pseudonym, is_imported=True)
    return user


def ratings_import(*, files: dict[str, bytes], name: str, owner=None, audio_root: str | Path | None = None) -> Study:
    """A new rating study from an export's datasheet.json and ratings.jsonl. Clips not here yet are brought from
    `audio_root` (the export's folder, which holds its audio/ files); without it they must be here already. All of it,
    the stored audio files included, or (one refusal) none."""
    written: list[Clip] = []
    try:
        with transaction.atomic():
            return _ratings_import(files=files, name=name, owner=owner, audio_root=audio_root, written=written)
    except BaseException:
        for clip in written:
            # A clip of the same content committed meanwhile by someone else keeps its (identical) file.
            if not Clip.objects.filter(sha256=clip.sha256, file=clip.file.name).exists():
                clip.file.delete(save=False)
        raise


def _ratings_import(*, files: dict[str, bytes], name: str, owner, audio_root, written: list[Clip]) -> Study:
    if "datasheet.json" not in files or "ratings.jsonl" not in files:
        raise ServiceError("An import needs datasheet.json and ratings.jsonl from a rating study's export.", code="missing_file")
    if Study.objects.filter(name=name).exists():
        raise ServiceError(f"A study named {name!r} exists already; choose another name.", code="duplicate_study", status=409)
    sheet = json.loads(files["datasheet.json"])
    rows = _rows(files["ratings.jsonl"], "ratings.jsonl")
    if audio_root is not None:
        root = Path(audio_root).resolve()
        if not root.is_dir():
            raise ServiceError(f"Audio root {str(audio_root)!r} is not a folder.", code="bad_audio_root")
        _audio_bring(rows, root=root, written=written)
    # An export from before loudness matching played every clip as stored.
    loudness = sheet.get("loudness") or {"match": False}
    study = Study.objects.create(
        name=name, title=sheet.get("title", ""), instructions=sheet.get("instructions", ""), licence=sheet.get("licence", ""),
        min_listen_seconds=sheet.get("min_listen_seconds", 10.0), owner=owner, is_active=False,
        loudness_match=bool(loudness.get("match")), loudness_target_lufs=float(loudness.get("target_lufs", Study._meta.get_field("loudness_target_lufs").default)),
    )
    services.rating_task_set(study=study, task=sheet["task"], dimensions=sheet["dimensions"])
    by_item: dict[int, list[tuple[int, dict]]] = defaultdict(list)
    for line, row in enumerate(rows, start=1):
        by_item[row["item"]].append((line, row))
    for number in sorted(by_item):
        entries = by_item[number]
        line, first = entries[0]
        reference = _clip_for(first["ref-audio-path"], line=line) if first["ref-audio-path"] else None
        condition, _ = condition_get_or_create(prompt=first["prompt"], lyrics=first["lyrics"], reference=reference, external_id=first["prompt id"])
        roles, by_path = {}, {}
        expected: dict = {}
        for line, row in entries:
            clip = by_path.get(row["audio-path"]) or _clip_for(row["audio-path"], line=line)
            by_path[row["audio-path"]] = clip
            roles[clip.pk] = (clip, row["role"])
            if row["expected"] is not None:
                expected.setdefault(clip.pk, {})[row["dimension"]] = row["expected"]
        clips = [c for c, role in roles.values() if role == "test"]
        ref = next((c for c, role in roles.values() if role == "reference"), None)
        anchor = next((c for c, role in roles.values() if role == "anchor"), None)
        item = services.rating_item_add(study=study, condition=condition, clips=clips, reference=ref, anchor=anchor, kind=first["item kind"], expected=expected, overlap=first["overlap"])
        by_submission: dict[int, list[dict]] = defaultdict(list)
        for _, row in entries:
            by_submission[row["submission"]].append(row)
        for sub_rows in by_submission.values():
            head = sub_rows[0]
            submission = RatingSubmission.objects.create(annotator=_annotator(head["user id"]), item=item, rationale=head["feedback"], source=RatingSubmission.Source.IMPORT)
            # The row's own time, so a re-export gives the same bytes.
            RatingSubmission.objects.filter(pk=submission.pk).update(created_at=head["created_at"])
            Rating.objects.bulk_create([
                Rating(submission=submission, clip=by_path[r["audio-path"]], dimension=r["dimension"], value=float(r["value"]), position=r["position"]) for r in sub_rows
            ])
        RatingItem.objects.filter(pk=item.pk).update(n_ratings=len(by_submission), overlap=max(item.overlap, len(by_submission)))
    return study

