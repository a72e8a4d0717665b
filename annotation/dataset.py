"""CMI-RewardBench / CMI-Pref JSONL: import and export of pairwise votes.

Import runs in two phases. The first reads every row, opens every audio file and
checks it against the other rows and the database without writing anything; the
second writes all valid rows in one transaction. So a file with one bad row
imports nothing (unless the caller asks to skip invalid rows), and importing the
same file twice changes nothing.

Export writes one row per vote in the exact key order of the public files, with
the audio copied under content-addressed paths, and is deterministic: the same
database gives byte-identical JSONL, and so does export -> import into an empty
database -> export.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import stat
import tempfile
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cached_property
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from .models import AnnotatorProfile, Clip, Condition, Judgment, Modality, Pair, Study, System, modality_for
from .services import (
    AudioError,
    AudioInfo,
    ServiceError,
    audio_probe,
    clip_ingest,
    condition_content_key,
    condition_get_or_create,
    file_sha256,
    pair_get_or_create,
    planner_stats_refresh,
    profile_ensure,
)

DEFAULT_STUDY = "cmi-pref"
EXPORT_SOURCE = "cmi-arena-annotation"
# The public files' key order; exports keep it so a diff against them is readable.
EXPORT_KEYS = (
    "audio-path",
    "audio2",
    "ref-audio-path",
    "prompt",
    "lyrics",
    "model_a",
    "model_b",
    "prompt id",
    "user id",
    "preference-musicality",
    "preference-alignment",
    "confidence_preference-musicality",
    "confidence_preference-alignment",
    "feedback",
    "source",
    "split",
    "modality",
)
REQUIRED_KEYS = ("audio-path", "audio2", "model_a", "model_b", "split")
VOTE_KEYS = (
    "preference-musicality",
    "preference-alignment",
    "confidence_preference-musicality",
    "confidence_preference-alignment",
)
PREFERENCE_LABELS = {"model_a": "a", "a": "a", "model_b": "b", "b": "b"}
GENERATED_DIR = "gen-audio"
REFERENCE_DIR = "ref-audio"
CONSENT_STATEMENT = (
    "Annotators on this platform gave informed consent before their first judgment and may withdraw at any time; "
    "votes of annotators who withdrew consent or were excluded by a researcher are not included. "
    "Annotators appear only under pseudonyms. Imported votes keep the pseudonymous ids of the dataset they came from "
    "and remain under that dataset's terms."
)


class DatasetError(ServiceError):
    """A problem with the whole request (missing file, bad archive), not with one row."""


# --- Import: results ---------------------------------------------------------------


@dataclass(frozen=True)
class RowError:
    source: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.source} line {self.line}: {self.message}"


@dataclass
class ImportReport:
    rows: int = 0
    valid_rows: int = 0
    errors: list[RowError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    imported: bool = False
    created: Counter = field(default_factory=Counter)
    existing: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        c, e = self.created, self.existing
        lines = [
            f"rows: {self.rows} read, {self.valid_rows} valid, {len(self.errors)} invalid",
            f"created: {c['systems']} systems, {c['clips']} clips, {c['conditions']} conditions, {c['pairs']} pairs, "
            f"{c['annotators']} annotators, {c['judgments']} judgments",
            f"skipped (already present): {e['clips']} clips, {e['conditions']} conditions, {e['pairs']} pairs, {e['judgments']} judgments",
        ]
        if not self.imported:
            lines.append("nothing was imported")
        return "\n".join(lines)


class _RowInvalid(Exception):
    pass


# --- Import: parsing one row -----------------------------------------------------------


@dataclass(frozen=True)
class _Audio:
    rel: str
    path: Path
    sha256: str
    info: AudioInfo


@dataclass(frozen=True)
class _Vote:
    user_id: str
    alignment: str  # "a" or "b": the side as shown, a = audio-path
    musicality: str
    alignment_confidence: Decimal
    musicality_confidence: Decimal
    feedback: str


@dataclass
class _Row:
    source: str
    line: int
    a: _Audio
    b: _Audio
    ref: _Audio | None
    model_a: str
    model_b: str
    prompt: str
    lyrics: str
    prompt_id: str
    split: str
    vote: _Vote | None

    @cached_property
    def condition_key(self) -> str:
        # The service's own key function, fed only the reference's hash: no clip row is needed yet.
        reference = SimpleNamespace(sha256=self.ref.sha256) if self.ref else None
        return condition_content_key(prompt=self.prompt, lyrics=self.lyrics, reference=reference)

    @cached_property
    def pair_key(self) -> tuple[str, frozenset]:
        return self.condition_key, frozenset((self.a.sha256, self.b.sha256))

    def vote_signature(self) -> tuple:
        v = self.vote
        winner = {"a": self.a.sha256, "b": self.b.sha256}
        return (self.a.sha256, winner[v.alignment], winner[v.musicality], v.alignment_confidence, v.musicality_confidence, v.feedback)


_DRIVE = re.compile(r"^[A-Za-z]:")


def _text(obj: dict, key: str, *, max_length: int | None = None) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _RowInvalid(f"{key} must be a string, not {type(value).__name__}")
    text = str(value).strip()
    if max_length is not None and len(text) > max_length:
        raise _RowInvalid(f"{key} is longer than {max_length} characters")
    return text


def _relative_path(root: Path, raw, key: str) -> tuple[str, Path]:
    if not isinstance(raw, str):
        raise _RowInvalid(f"{key} must be a path string, not {type(raw).__name__}")
    if not raw.strip():
        raise _RowInvalid(f"{key} is empty")
    if raw.startswith(("/", "\\", "~")) or _DRIVE.match(raw):
        raise _RowInvalid(f"{key} {raw!r} is an absolute path; give paths relative to the audio root")
    rel = PurePosixPath(raw)
    if ".." in rel.parts:
        raise _RowInvalid(f"{key} {raw!r} leaves the audio root ('..' is not allowed)")
    resolved = (root / rel).resolve()
    if not resolved.is_relative_to(root):
        raise _RowInvalid(f"{key} {raw!r} leaves the audio root through a symbolic link")
    return rel.as_posix(), resolved


def _confidence(obj: dict, key: str) -> Decimal:
    value = obj.get(key)
    if value is None or value == "":
        raise _RowInvalid(f"missing {key} (a vote needs both preferences and both confidences)")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _RowInvalid(f"{key} must be a number or a string like \"3.0\"")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise _RowInvalid(f"{key} {value!r} is not a number; use 1.0 to 5.0 in steps of 0.5") from None
    if not number.is_finite() or number < 1 or number > 5:
        raise _RowInvalid(f"{key} {value!r} is out of range; use 1.0 to 5.0 in steps of 0.5")
    if (number * 2) % 1 != 0:
        raise _RowInvalid(f"{key} {value!r} is not a half step; use 1.0, 1.5, 2.0, ... 5.0")
    return number.quantize(Decimal("0.1"))


def _preference(obj: dict, key: str) -> str:
    value = obj.get(key)
    if value is None or value == "":
        raise _RowInvalid(f"missing {key} (a vote needs both preferences and both confidences)")
    label = PREFERENCE_LABELS.get(str(value).strip().lower()) if isinstance(value, str) else None
    if label is None:
        raise _RowInvalid(f"{key} has unknown label {value!r}; use model_a or model_b (a / b also accepted)")
    return label


class _AudioCache:
    """Each file is opened, decoded and hashed once, however many rows name it."""

    def __init__(self):
        self._seen: dict[Path, _Audio | str] = {}

    def get(self, rel: str, path: Path, key: str) -> _Audio:
        if path not in self._seen:
            try:
                info = audio_probe(path)
                self._seen[path] = _Audio(rel=rel, path=path, sha256=file_sha256(path), info=info)
            except AudioError as exc:
                self._seen[path] = exc.message
        found = self._seen[path]
        if isinstance(found, str):
            raise _RowInvalid(f"{key} {rel!r}: {found}")
        return found


def _parse_row(obj, *, root: Path, audio: _AudioCache, source: str, line: int) -> _Row:
    if not isinstance(obj, dict):
        raise _RowInvalid(f"each line must be a JSON object, not {type(obj).__name__}")
    missing = [key for key in REQUIRED_KEYS if key not in obj]
    if missing:
        raise _RowInvalid("missing required key " + ", ".join(repr(k) for k in missing))

    split = _text(obj, "split").lower()
    if split not in Pair.Split.values:
        raise _RowInvalid(f"split {obj.get('split')!r} is not train or test")
    model_a = _text(obj, "model_a", max_length=120)
    model_b = _text(obj, "model_b", max_length=120)
    prompt, lyrics = _text(obj, "prompt"), _text(obj, "lyrics")
    prompt_id = _text(obj, "prompt id", max_length=200)

    rel_a, path_a = _relative_path(root, obj["audio-path"], "audio-path")
    rel_b, path_b = _relative_path(root, obj["audio2"], "audio2")
    if path_a == path_b:
        raise _RowInvalid(f"audio-path and audio2 are the same file ({rel_a!r}); a pair needs two different clips")
    ref_raw = obj.get("ref-audio-path") or ""
    ref_rel = ref_path = None
    if ref_raw:
        ref_rel, ref_path = _relative_path(root, ref_raw, "ref-audio-path")

    a = audio.get(rel_a, path_a, "audio-path")
    b = audio.get(rel_b, path_b, "audio2")
    if a.sha256 == b.sha256:
        raise _RowInvalid(f"audio-path {rel_a!r} and audio2 {rel_b!r} have identical content; a pair needs two different clips")
    ref = audio.get(ref_rel, ref_path, "ref-audio-path") if ref_path else None
    if ref is not None and ref.sha256 in (a.sha256, b.sha256):
        raise _RowInvalid("ref-audio-path has the same content as one of the clips being compared")
    if not (prompt or lyrics or ref):
        raise _RowInvalid("the row has no prompt, lyrics or reference audio; a condition needs at least one")

    modality = _text(obj, "modality")
    if modality:
        inferred = modality_for(has_lyrics=bool(lyrics), has_reference=ref is not None)
        if modality not in Modality.values:
            raise _RowInvalid(f"modality {modality!r} is unknown; use one of {', '.join(Modality.values)}")
        if modality != inferred:
            raise _RowInvalid(f"modality {modality!r} does not match the row: its lyrics and reference audio make it {inferred!r}")

    vote = None
    if any(obj.get(key) not in (None, "") for key in VOTE_KEYS):
        user_id = _text(obj, "user id", max_length=100)
        if not user_id:
            raise _RowInvalid("missing user id: a row with preferences must say who voted")
        vote = _Vote(
            user_id=user_id,
            musicality=_preference(obj, "preference-musicality"),
            alignment=_preference(obj, "preference-alignment"),
            musicality_confidence=_confidence(obj, "confidence_preference-musicality"),
            alignment_confidence=_confidence(obj, "confidence_preference-alignment"),
            feedback=obj["feedback"] if isinstance(obj.get("feedback"), str) else _text(obj, "feedback"),
        )
    return _Row(source, line, a, b, ref, model_a, model_b, prompt, lyrics, prompt_id, split, vote)


def _read_rows(sources: list[tuple[str, Path]], *, root: Path, report: ImportReport) -> list[_Row]:
    audio = _AudioCache()
    rows = []
    for name, path in sources:
        with open(path, "rb") as handle:
            for line_no, raw in enumerate(handle, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    report.rows += 1
                    report.errors.append(RowError(name, line_no, "the line is not valid UTF-8"))
                    continue
                if line_no == 1:
                    text = text.lstrip("\ufeff")
                if not text.strip():
                    continue
                report.rows += 1
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as exc:
                    report.errors.append(RowError(name, line_no, f"malformed JSON: {exc.msg} (column {exc.colno})"))
                    continue
                try:
                    rows.append(_parse_row(obj, root=root, audio=audio, source=name, line=line_no))
                except _RowInvalid as exc:
                    report.errors.append(RowError(name, line_no, str(exc)))
    return rows


# --- Import: checks across rows and against the database ------------------------------------


class _Stored:
    """What the database already holds for the rows' clips, conditions, pairs, annotators and votes.

    Read in a few bulk queries before any row is checked; nothing is written.
    """

    def __init__(self, rows: list[_Row], study_name: str):
        shas = {r.a.sha256 for r in rows} | {r.b.sha256 for r in rows} | {r.ref.sha256 for r in rows if r.ref}
        self.clips = {c.sha256: c for c in Clip.objects.filter(sha256__in=shas).select_related("system")}
        keys = {r.condition_key for r in rows}
        self.conditions = {c.content_key: c for c in Condition.objects.filter(content_key__in=keys)}
        self.pairs: dict[tuple[str, str], Pair] = {}
        self.votes: dict[tuple[int, int], Judgment] = {}
        study = Study.objects.filter(name=study_name).first()
        if study is not None and self.conditions:
            by_id = {c.pk: key for key, c in self.conditions.items()}
            for pair in Pair.objects.filter(study=study, condition_id__in=by_id):
                self.pairs[(by_id[pair.condition_id], pair.clip_key)] = pair
        users = {r.vote.user_id for r in rows if r.vote}
        self.profiles = {p.pseudonym: p for p in AnnotatorProfile.objects.filter(pseudonym__in=users)}
        if self.pairs and self.profiles:
            judgments = Judgment.objects.filter(
                pair__in=self.pairs.values(), annotator_id__in=[p.user_id for p in self.profiles.values()]
            ).select_related("a_clip", "alignment_choice", "musicality_choice")
            self.votes = {(j.annotator_id, j.pair_id): j for j in judgments}

    def pair_for(self, row: _Row) -> Pair | None:
        clip_a, clip_b = self.clips.get(row.a.sha256), self.clips.get(row.b.sha256)
        if clip_a is None or clip_b is None:
            return None
        return self.pairs.get((row.condition_key, Pair.key_for(clip_a.pk, clip_b.pk)))

    def vote_for(self, row: _Row) -> Judgment | None:
        profile, pair = self.profiles.get(row.vote.user_id), self.pair_for(row)
        if profile is None or pair is None:
            return None
        return self.votes.get((profile.user_id, pair.pk))


def _judgment_signature(j: Judgment) -> tuple:
    return (j.a_clip.sha256, j.alignment_choice.sha256, j.musicality_choice.sha256, j.alignment_confidence, j.musicality_confidence, j.rationale)


def _describe(sig: tuple, a_sha: str) -> str:
    side = lambda sha: "A" if sha == a_sha else "B"  # noqa: E731
    return f"alignment {side(sig[1])} ({sig[3]}), musicality {side(sig[2])} ({sig[4]}), feedback {sig[5][:40]!r}"


def _check_rows(rows: list[_Row], stored: _Stored, report: ImportReport) -> list[_Row]:
    """Keep the rows that agree with each other and with the database; report the rest by line.

    A row's claims are registered only once it passes, so with skip_invalid a
    rejected row never blocks a later valid one.
    """
    systems: dict[str, tuple[str, tuple]] = {}  # sha -> (system name, where the claim was made)
    splits: dict[tuple, tuple[str, tuple]] = {}
    votes: dict[tuple, tuple[tuple, tuple]] = {}
    prompt_ids: dict[str, str] = {}
    kept = []
    for row in rows:
        here = (row.source, row.line)
        at = lambda where: f"line {where[1]}" if where[0] == row.source else f"{where[0]} line {where[1]}"  # noqa: E731
        try:
            for audio, model, key in ((row.a, row.model_a, "audio-path"), (row.b, row.model_b, "audio2")):
                clip = stored.clips.get(audio.sha256)
                if clip is not None and (clip.system.name if clip.system else "") != model:
                    owner = f"system {clip.system.name!r}" if clip.system else f"a {clip.get_kind_display().lower()} clip without a system"
                    raise _RowInvalid(f"{key} {audio.rel!r} is already stored as {owner}, but this row says {model!r}")
                if audio.sha256 in systems and systems[audio.sha256][0] != model:
                    name, where = systems[audio.sha256]
                    raise _RowInvalid(f"{key} {audio.rel!r} has the same audio as a clip of {name!r} on {at(where)}, but this row says {model!r}")
            pair = stored.pair_for(row)
            if pair is not None and pair.split != row.split:
                raise _RowInvalid(f"this pair is already stored in the study with split {pair.split!r}; the row says {row.split!r}")
            if row.pair_key in splits and splits[row.pair_key][0] != row.split:
                raise _RowInvalid(f"the same pair has split {splits[row.pair_key][0]!r} on {at(splits[row.pair_key][1])}; the row says {row.split!r}")
            duplicate = False
            if row.vote is not None:
                sig = row.vote_signature()
                existing = stored.vote_for(row)
                if existing is not None:
                    old = _judgment_signature(existing)
                    if old != sig:
                        raise _RowInvalid(
                            f"user id {row.vote.user_id!r} already has a different vote on this pair "
                            f"(stored: {_describe(old, row.a.sha256)}; this row: {_describe(sig, row.a.sha256)})"
                        )
                vote_key = (row.vote.user_id, row.pair_key)
                if vote_key in votes:
                    old, where = votes[vote_key]
                    if old != sig:
                        raise _RowInvalid(f"user id {row.vote.user_id!r} already voted differently on this pair on {at(where)}")
                    duplicate = True
        except _RowInvalid as exc:
            report.errors.append(RowError(row.source, row.line, str(exc)))
            continue
        for audio, model in ((row.a, row.model_a), (row.b, row.model_b)):
            systems.setdefault(audio.sha256, (model, here))
        splits.setdefault(row.pair_key, (row.split, here))
        if row.vote is not None:
            if duplicate:
                report.existing["judgments"] += 1
                row.vote = None
            else:
                votes[(row.vote.user_id, row.pair_key)] = (row.vote_signature(), here)
        stored_condition = stored.conditions.get(row.condition_key)
        first_id = (stored_condition.external_id if stored_condition is not None else "") or prompt_ids.get(row.condition_key)
        if row.prompt_id and first_id and first_id != row.prompt_id:
            report.warnings.append(
                f"{row.source} line {row.line}: prompt id {row.prompt_id!r} names a condition already known as {first_id!r}; the first id is kept"
            )
        if row.prompt_id and not first_id:
            prompt_ids[row.condition_key] = row.prompt_id
        kept.append(row)
    return kept


# --- Import: writing ---------------------------------------------------------------------


def _imported_user(user_id: str):
    User = get_user_model()
    username = f"imported-{user_id}"[:150]
    if User.objects.filter(username=username).exists():
        # The readable name is taken by someone else: a hashed one cannot collide by accident.
        username = f"imported-{hashlib.sha256(user_id.encode()).hexdigest()[:24]}"
    user = User(username=username, is_active=True)
    user.set_unusable_password()
    user.save()
    return user


@transaction.atomic
def _write(rows: list[_Row], *, study_name: str, stored: _Stored, report: ImportReport) -> None:
    """Create what is missing. What the check phase already found stored is reused, not looked up again row by row."""
    study, created = Study.objects.get_or_create(name=study_name, defaults={"title": study_name})
    report.created["studies"] += int(created)

    systems: dict[str, System] = {}
    for name in sorted(({r.model_a for r in rows} | {r.model_b for r in rows}) - {""}):
        systems[name], created = System.objects.get_or_create(name=name)
        report.created["systems"] += int(created)

    # A file used as a generated clip anywhere is generated (with its system); references need no system.
    roles: dict[str, tuple[_Audio, str | None]] = {}
    for r in rows:
        if r.ref is not None:
            roles.setdefault(r.ref.sha256, (r.ref, None))
        for audio, model in ((r.a, r.model_a), (r.b, r.model_b)):
            roles[audio.sha256] = (audio, model)
    clips: dict[str, Clip] = {}
    for sha, (audio, model) in roles.items():
        created = False
        clips[sha] = stored.clips.get(sha)
        if clips[sha] is None:
            kind = Clip.Kind.REFERENCE if model is None else Clip.Kind.GENERATED
            clips[sha], created = clip_ingest(
                path=audio.path, system=systems.get(model) if model else None, kind=kind, original_name=audio.rel, info=audio.info
            )
        report.created["clips"] += int(created)
        report.existing["clips"] += int(not created)

    conditions: dict[str, Condition] = {}
    for r in rows:
        key = r.condition_key
        if key in conditions:
            continue
        condition, created = stored.conditions.get(key), False
        if condition is None:
            condition, created = condition_get_or_create(
                prompt=r.prompt, lyrics=r.lyrics, reference=clips[r.ref.sha256] if r.ref else None, external_id=r.prompt_id
            )
        if not created and not condition.external_id and r.prompt_id:
            condition.external_id = r.prompt_id
            condition.save(update_fields=["external_id"])
        conditions[key] = condition
        report.created["conditions"] += int(created)
        report.existing["conditions"] += int(not created)

    pairs: dict[tuple, Pair] = {}
    for r in rows:
        if r.pair_key in pairs:
            continue
        pair, created = stored.pair_for(r), False
        if pair is None:
            pair, created = pair_get_or_create(
                study=study, condition=conditions[r.condition_key], clip_a=clips[r.a.sha256], clip_b=clips[r.b.sha256], split=r.split
            )
        pairs[r.pair_key] = pair
        report.created["pairs"] += int(created)
        report.existing["pairs"] += int(not created)

    annotators = {}
    for user_id in sorted({r.vote.user_id for r in rows if r.vote}):
        profile = stored.profiles.get(user_id)
        if profile is None:
            profile = profile_ensure(user=_imported_user(user_id), pseudonym=user_id, is_imported=True)
            report.created["annotators"] += 1
        annotators[user_id] = profile.user_id

    new = []
    for r in rows:
        if r.vote is None:
            continue
        if stored.vote_for(r) is not None:
            report.existing["judgments"] += 1  # the check phase found it identical
            continue
        v = r.vote
        pick = {"a": clips[r.a.sha256], "b": clips[r.b.sha256]}
        new.append(
            Judgment(
                annotator_id=annotators[v.user_id],
                pair=pairs[r.pair_key],
                a_clip=pick["a"],
                alignment_choice=pick[v.alignment],
                alignment_confidence=v.alignment_confidence,
                musicality_choice=pick[v.musicality],
                musicality_confidence=v.musicality_confidence,
                rationale=v.feedback,
                source=Judgment.Source.IMPORT,
            )
        )
    Judgment.objects.bulk_create(new, batch_size=500)
    report.created["judgments"] += len(new)


def pairs_import(*, files: list[Path | str], audio_root: Path | str, study_name: str = DEFAULT_STUDY, skip_invalid: bool = False, names: list[str] | None = None) -> ImportReport:
    """Import CMI-RewardBench JSONL rows: validate every row, then write all of them (or, with skip_invalid, the valid ones).

    `names` are how the files are called in error messages (default: their file names).
    """
    try:
        validate_slug(study_name)
    except ValidationError:
        raise DatasetError(f"Study name {study_name!r} is not valid: use letters, digits, hyphens and underscores.", code="bad_study") from None
    root = Path(audio_root)
    if not root.is_dir():
        raise DatasetError(f"Audio root {str(root)!r} is not a directory.", code="bad_audio_root")
    root = root.resolve()
    paths = [Path(f) for f in files]
    for path in paths:
        if not path.is_file():
            raise DatasetError(f"File not found: {path}", code="missing_file")
    names = names or [p.name for p in paths]

    report = ImportReport()
    rows = _read_rows(list(zip(names, paths)), root=root, report=report)
    stored = _Stored(rows, study_name)
    rows = _check_rows(rows, stored, report)
    report.errors.sort(key=lambda e: (names.index(e.source), e.line))
    report.valid_rows = len(rows)
    if report.rows == 0:
        raise DatasetError("No rows found: the file is empty.", code="empty_file")
    if report.errors and not skip_invalid:
        return report
    if rows:
        try:
            _write(rows, study_name=study_name, stored=stored, report=report)
            planner_stats_refresh(Pair, Clip, Judgment)
        except IntegrityError:
            # Something else wrote the same rows between the check and the write; the transaction rolled back.
            raise DatasetError("The database changed during the import (another import running?); nothing was imported. Run it again.", code="conflict") from None
    report.imported = bool(rows)
    return report


# --- Uploads (admin) -------------------------------------------------------------------------


def max_upload_bytes() -> int:
    return int(getattr(settings, "AUDITORIUM_MAX_UPLOAD_BYTES", 512 * 1024 * 1024))


def _save_upload(upload, dest: Path, *, limit: int, what: str) -> Path:
    written = 0
    with open(dest, "wb") as out:
        for chunk in upload.chunks() if hasattr(upload, "chunks") else iter(lambda: upload.read(1 << 20), b""):
            written += len(chunk)
            if written > limit:
                raise DatasetError(f"The {what} is larger than the upload limit of {limit:,} bytes.", code="too_large")
            out.write(chunk)
    return dest


def zip_extract_safely(*, archive: Path, dest: Path, max_bytes: int) -> list[str]:
    """Extract a zip only if every entry stays inside dest, none is a link, and the total fits max_bytes.

    Every entry is checked before anything is written, so a bad archive leaves dest empty.
    Sizes are counted while copying too: a zip's header may understate what it expands to.
    """
    try:
        handle = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError):
        raise DatasetError("The audio archive is not a valid zip file.", code="bad_zip") from None
    dest = dest.resolve()
    with handle:
        entries, declared = [], 0
        for info in handle.infolist():
            name = info.filename.replace("\\", "/")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise DatasetError(f"Archive entry {info.filename!r} is a symbolic link; links are not accepted.", code="zip_link")
            if name.startswith("/") or _DRIVE.match(name):
                raise DatasetError(f"Archive entry {info.filename!r} has an absolute path; it was refused.", code="zip_absolute")
            if ".." in PurePosixPath(name).parts:
                raise DatasetError(f"Archive entry {info.filename!r} points outside the archive ('..'); it was refused.", code="zip_traversal")
            if info.flag_bits & 0x1:
                raise DatasetError(f"Archive entry {info.filename!r} is encrypted; upload an unencrypted zip.", code="zip_encrypted")
            target = (dest / name).resolve()
            if not target.is_relative_to(dest):
                raise DatasetError(f"Archive entry {info.filename!r} points outside the archive; it was refused.", code="zip_traversal")
            declared += info.file_size
            if declared > max_bytes:
                raise DatasetError(f"The archive expands to more than the limit of {max_bytes:,} bytes.", code="too_large")
            entries.append((info, target))
        written, names = 0, []
        for info, target in entries:
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with handle.open(info) as src, open(target, "wb") as out:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    written += len(chunk)
                    if written > max_bytes:
                        raise DatasetError(f"The archive expands to more than the limit of {max_bytes:,} bytes.", code="too_large")
                    out.write(chunk)
            names.append(info.filename)
    return names


def pairs_import_upload(*, archive, jsonl=None, study_name: str = DEFAULT_STUDY, skip_invalid: bool = False) -> ImportReport:
    """Import an uploaded JSONL plus a zip of the audio it names (paths relative to the zip's root).

    Without a JSONL upload, the .jsonl files at the zip's top level are imported.
    """
    limit = max_upload_bytes()
    with tempfile.TemporaryDirectory(prefix="auditorium-import-") as tmp:
        tmp = Path(tmp)
        archive_path = _save_upload(archive, tmp / "upload.zip", limit=limit, what="audio archive")
        root = tmp / "root"
        root.mkdir()
        zip_extract_safely(archive=archive_path, dest=root, max_bytes=limit)
        archive_path.unlink()
        if jsonl is not None:
            name = Path(getattr(jsonl, "name", "") or "upload.jsonl").name
            files, names = [_save_upload(jsonl, tmp / "rows.jsonl", limit=limit, what="JSONL file")], [name]
        else:
            files = sorted(p for p in root.glob("*.jsonl") if p.is_file())
            names = [p.name for p in files]
            if not files:
                raise DatasetError("No JSONL file: upload one, or put train.jsonl / test.jsonl at the top of the zip.", code="missing_file")
        return pairs_import(files=files, names=names, audio_root=root, study_name=study_name, skip_invalid=skip_invalid)


# --- Export --------------------------------------------------------------------------------


@dataclass
class ExportReport:
    rows: Counter = field(default_factory=Counter)
    files: int = 0
    left_out: Counter = field(default_factory=Counter)
    test_pairs: int = 0

    def summary(self) -> str:
        lines = [f"rows: {self.rows['train']} train, {self.rows['test']} test; {self.files} audio files"]
        if self.left_out:
            lines.append("votes left out: " + ", ".join(f"{n} ({why})" for why, n in sorted(self.left_out.items())))
        if self.test_pairs:
            lines.append(f"balanced test split: {self.test_pairs} pairs")
        return "\n".join(lines)


def _audio_names(clips: list[Clip], compared: set[int]) -> dict[int, str]:
    """Content-addressed relative paths; a 16-hex prefix, or the full hash where two prefixes would clash.

    The folder follows the clip's role in this export (compared in a pair, or only a
    reference), not its stored kind, so a re-imported export names every file the same way.
    """
    prefixes = Counter(c.sha256[:16] for c in clips)
    names = {}
    for clip in clips:
        folder = GENERATED_DIR if clip.pk in compared else REFERENCE_DIR
        stem = clip.sha256[:16] if prefixes[clip.sha256[:16]] == 1 else clip.sha256
        names[clip.pk] = f"{folder}/{stem}{clip.extension}"
    return names


def prompt_id_for(condition: Condition) -> str:
    # Content-derived so it survives a round trip through another database.
    return condition.external_id or f"c-{condition.content_key[:12]}"


def _exportable_judgments(pairs):
    base = Judgment.objects.filter(pair__in=pairs)
    keep = base.filter(
        annotator__annotator_profile__isnull=False,
        annotator__annotator_profile__withdrawn_at__isnull=True,
        annotator__annotator_profile__excluded_at__isnull=True,
    )
    left_out = Counter()
    left_out["annotator withdrew consent"] = base.filter(annotator__annotator_profile__withdrawn_at__isnull=False).count()
    left_out["annotator excluded"] = base.filter(
        annotator__annotator_profile__withdrawn_at__isnull=True, annotator__annotator_profile__excluded_at__isnull=False
    ).count()
    left_out["annotator has no pseudonym"] = base.filter(annotator__annotator_profile__isnull=True).count()
    return keep, +left_out


def _balanced_test_draw(*, pairs, judgments, n: int, seed: int) -> list[int]:
    if n <= 0 or n % len(Modality.values):
        raise DatasetError(f"--balanced-test must be a positive multiple of {len(Modality.values)} (one quarter per modality); got {n}.", code="bad_balance")
    per = n // len(Modality.values)
    voted = set(judgments.values_list("pair_id", flat=True))
    candidates = defaultdict(list)
    for pair in pairs.filter(pk__in=voted).select_related("condition", "clip_a", "clip_b"):
        # Sorted by content, not by id, so the same seed draws the same pairs in any database.
        key = (pair.condition.content_key, *sorted((pair.clip_a.sha256, pair.clip_b.sha256)))
        candidates[pair.condition.modality].append((key, pair.pk))
    rng = random.Random(seed)
    chosen = []
    for modality in Modality.values:
        found = sorted(candidates[modality])
        if len(found) < per:
            raise DatasetError(f"Only {len(found)} {modality} pairs have votes; a balanced test split of {n} needs {per} of each modality.", code="bad_balance")
        chosen += [pk for _, pk in rng.sample(found, per)]
    return chosen


def _confidence_text(value) -> str:
    return f"{Decimal(value):.1f}"


def _datasheet(*, studies: list[Study], rows: list[dict], judgments: list[Judgment], left_out: Counter) -> str:
    by_split = Counter(r["split"] for r in rows)
    pairs_by_split = {s: len({(r["prompt id"], frozenset((r["audio-path"], r["audio2"]))) for r in rows if r["split"] == s}) for s in ("train", "test")}
    modality = Counter((r["modality"], r["split"]) for r in rows)
    systems = Counter()
    for r in rows:
        for key in ("model_a", "model_b"):
            systems[r[key] or "(unknown)"] += 1
    dates = sorted(j.created_at.date().isoformat() for j in judgments)
    sources = Counter(j.source for j in judgments)
    licences = sorted({s.licence for s in studies}) or ["(none stated)"]
    lines = [
        f"# {', '.join(s.title or s.name for s in studies) or 'Auditorium'} dataset",
        "",
        "Pairwise music preferences in the CMI-RewardBench / CMI-Pref JSONL format: one row per vote,",
        "two dimensions (`preference-alignment`: instruction following; `preference-musicality`),",
        "each with the annotator's confidence (1.0 to 5.0 in half steps) and a free-text `feedback`.",
        "`model_a` / `audio-path` is the clip the annotator heard as A.",
        "",
        "## Files",
        "",
        "- `train.jsonl`, `test.jsonl`: the votes; audio paths are relative to this folder.",
        f"- `{GENERATED_DIR}/`: generated clips; `{REFERENCE_DIR}/`: reference audio. File names are content hashes.",
        "",
        "## Counts",
        "",
        "| split | votes | pairs |",
        "|---|---|---|",
        *(f"| {s} | {by_split[s]} | {pairs_by_split[s]} |" for s in ("train", "test")),
        "",
        "| modality | train votes | test votes |",
        "|---|---|---|",
        *(f"| {m} | {modality[(m, 'train')]} | {modality[(m, 'test')]} |" for m in Modality.values),
        "",
        "| system | clip appearances in votes |",
        "|---|---|",
        *(f"| {name} | {n} |" for name, n in sorted(systems.items())),
        "",
        f"Annotators: {len({r['user id'] for r in rows})} (pseudonymous ids in `user id`).",
        f"Votes collected on this platform: {sources[Judgment.Source.PLATFORM]}; imported from earlier datasets: {sources[Judgment.Source.IMPORT]}.",
        f"Collection dates (UTC): {dates[0]} to {dates[-1]}." if dates else "Collection dates: no votes.",
        "Only regular pairs are included (no gold or catch trials).",
        "",
        "## Licence",
        "",
        "; ".join(licences),
        "",
        "## Consent",
        "",
        CONSENT_STATEMENT,
    ]
    if left_out:
        lines += ["", "Left out of this export: " + ", ".join(f"{n} votes ({why})" for why, n in sorted(left_out.items())) + "."]
    return "\n".join(lines) + "\n"


def dataset_export(*, out_dir: Path | str, studies: list[Study] | None = None, balanced_test: int | None = None, seed: int | None = None) -> ExportReport:
    """Write train.jsonl, test.jsonl, the audio and README.md into out_dir (new or empty)."""
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DatasetError(f"{out} is not an empty directory; export into a new or empty one.", code="out_not_empty")
    if balanced_test is not None and seed is None:
        raise DatasetError("--balanced-test needs --seed, so the draw can be repeated.", code="bad_balance")
    report = ExportReport()
    pairs = Pair.objects.filter(kind=Pair.Kind.REGULAR)
    if studies is not None:
        pairs = pairs.filter(study__in=studies)
    with transaction.atomic():
        judgments, report.left_out = _exportable_judgments(pairs)
        if balanced_test is not None:
            chosen = _balanced_test_draw(pairs=pairs, judgments=judgments, n=balanced_test, seed=seed)
            # Persisted, so later exports (and the annotation app) see the same split.
            pairs.exclude(pk__in=chosen).update(split=Pair.Split.TRAIN)
            Pair.objects.filter(pk__in=chosen).update(split=Pair.Split.TEST)
            report.test_pairs = len(chosen)
        judgments = list(
            judgments.select_related(
                "pair__condition__reference", "pair__clip_a__system", "pair__clip_b__system", "annotator__annotator_profile"
            )
        )
    clips, compared = {}, set()
    for j in judgments:
        pair = j.pair
        compared |= {pair.clip_a_id, pair.clip_b_id}
        for clip in (pair.clip_a, pair.clip_b, pair.condition.reference):
            if clip is not None:
                clips[clip.pk] = clip
    names = _audio_names(list(clips.values()), compared)

    rows = []
    for j in judgments:
        pair, condition = j.pair, j.pair.condition
        a = pair.clip_a if j.a_clip_id == pair.clip_a_id else pair.clip_b
        b = pair.clip_b if a is pair.clip_a else pair.clip_a
        side = lambda clip_id: "model_a" if clip_id == a.pk else "model_b"  # noqa: E731
        row = {
            "audio-path": names[a.pk],
            "audio2": names[b.pk],
            "ref-audio-path": names[condition.reference_id] if condition.reference_id else "",
            "prompt": condition.prompt,
            "lyrics": condition.lyrics,
            "model_a": a.system.name if a.system else "",
            "model_b": b.system.name if b.system else "",
            "prompt id": prompt_id_for(condition),
            "user id": j.annotator.annotator_profile.pseudonym,
            "preference-musicality": side(j.musicality_choice_id),
            "preference-alignment": side(j.alignment_choice_id),
            "confidence_preference-musicality": _confidence_text(j.musicality_confidence),
            "confidence_preference-alignment": _confidence_text(j.alignment_confidence),
            "feedback": j.rationale,
            "source": EXPORT_SOURCE,
            "split": pair.split,
            "modality": condition.modality,
        }
        rows.append(row)
    lines = {split: [] for split in Pair.Split.values}
    for row in rows:
        lines[row["split"]].append(json.dumps({k: row[k] for k in EXPORT_KEYS}, ensure_ascii=False))
    out.mkdir(parents=True, exist_ok=True)
    for split, split_lines in lines.items():
        # Sorting the serialised lines orders by audio path first: content-derived, so stable across databases.
        split_lines.sort()
        (out / f"{split}.jsonl").write_text("".join(line + "\n" for line in split_lines), encoding="utf-8")
        report.rows[split] = len(split_lines)
    for clip in sorted(clips.values(), key=lambda c: names[c.pk]):
        target = out / names[clip.pk]
        target.parent.mkdir(parents=True, exist_ok=True)
        with clip.file.open("rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        report.files += 1
    chosen_studies = list(studies) if studies is not None else list(Study.objects.filter(pairs__in=pairs).distinct())
    (out / "README.md").write_text(_datasheet(studies=chosen_studies, rows=rows, judgments=judgments, left_out=report.left_out), encoding="utf-8")
    return report


def dataset_export_archive(*, studies: list[Study] | None = None):
    """The export as a zip in an anonymous temporary file (removed when closed), positioned at its start."""
    archive = tempfile.TemporaryFile(suffix=".zip")
    with tempfile.TemporaryDirectory(prefix="auditorium-export-") as tmp:
        root = Path(tmp) / "dataset"
        dataset_export(out_dir=root, studies=studies)
        with zipfile.ZipFile(archive, "w") as zf:
            for path in sorted(p for p in root.rglob("*") if p.is_file()):
                arcname = path.relative_to(root).as_posix()
                # Audio is already compressed (or incompressible PCM noise); deflating it costs time for little.
                method = zipfile.ZIP_DEFLATED if path.suffix in (".jsonl", ".md") else zipfile.ZIP_STORED
                zf.write(path, arcname, compress_type=method)
    archive.seek(0)
    return archive
