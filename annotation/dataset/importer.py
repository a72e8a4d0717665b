"""Import: the parsed rows are checked against each other and the database, then written.

The check (the rest of the first phase) reads what is stored in a few bulk queries
and writes nothing; the second phase creates everything that is missing in one
transaction. So a file with one bad row imports nothing (unless the caller asks to
skip invalid rows), and importing the same file twice changes nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.db.models import Q

from ..models import AnnotatorProfile, ChosenBy, Clip, Condition, Judgment, Pair, Study, System
from ..services import clip_ingest, condition_get_or_create, pair_get_or_create, planner_stats_refresh, profile_ensure
from .keys import DEFAULT_STUDY, TIE_LABELS, DatasetError
from .rows import AudioFile, ImportReport, Row, RowError, RowInvalid, read_rows

# --- Checks across rows and against the database ---------------------------------------


class _Stored:
    """What the database already holds for the rows' clips, conditions, pairs, annotators and votes.

    Read in a few bulk queries before any row is checked; nothing is written.
    """

    def __init__(self, rows: list[Row], study_name: str):
        shas = {r.a.sha256 for r in rows} | {r.b.sha256 for r in rows} | {r.ref.sha256 for r in rows if r.ref}
        # Rows name files by the hash of the file as given; a stored clip knows that one as original_sha256.
        self.clips = {}
        for clip in Clip.objects.filter(Q(sha256__in=shas) | Q(original_sha256__in=shas)).select_related("system"):
            self.clips.update({h: clip for h in (clip.sha256, clip.original_sha256) if h in shas})
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

    def pair_for(self, row: Row) -> Pair | None:
        clip_a, clip_b = self.clips.get(row.a.sha256), self.clips.get(row.b.sha256)
        if clip_a is None or clip_b is None:
            return None
        return self.pairs.get((row.condition_key, Pair.key_for(clip_a.pk, clip_b.pk)))

    def vote_for(self, row: Row) -> Judgment | None:
        profile, pair = self.profiles.get(row.vote.user_id), self.pair_for(row)
        if profile is None or pair is None:
            return None
        return self.votes.get((profile.user_id, pair.pk))


def _judgment_signature(j: Judgment) -> tuple:
    # A tie label stands where a clip's hash would: the same shape as Row.vote_signature.
    choice = lambda dim: getattr(j, f"{dim}_tie") or getattr(j, f"{dim}_choice").sha256  # noqa: E731
    return (j.a_clip.sha256, choice("alignment"), choice("musicality"), j.alignment_confidence, j.musicality_confidence, j.rationale)


def _describe(sig: tuple, a_sha: str) -> str:
    side = lambda sha: sha if sha in TIE_LABELS else "A" if sha == a_sha else "B"  # noqa: E731
    return f"alignment {side(sig[1])} ({sig[3]}), musicality {side(sig[2])} ({sig[4]}), feedback {sig[5][:40]!r}"


def _check_rows(rows: list[Row], stored: _Stored, report: ImportReport) -> list[Row]:
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
                    raise RowInvalid(f"{key} {audio.rel!r} is already stored as {owner}, but this row says {model!r}")
                if audio.sha256 in systems and systems[audio.sha256][0] != model:
                    name, where = systems[audio.sha256]
                    raise RowInvalid(f"{key} {audio.rel!r} has the same audio as a clip of {name!r} on {at(where)}, but this row says {model!r}")
            pair = stored.pair_for(row)
            if pair is not None and pair.split != row.split:
                raise RowInvalid(f"this pair is already stored in the study with split {pair.split!r}; the row says {row.split!r}")
            if row.pair_key in splits and splits[row.pair_key][0] != row.split:
                raise RowInvalid(f"the same pair has split {splits[row.pair_key][0]!r} on {at(splits[row.pair_key][1])}; the row says {row.split!r}")
            duplicate = False
            if row.vote is not None:
                sig = row.vote_signature()
                existing = stored.vote_for(row)
                if existing is not None:
                    old = _judgment_signature(existing)
                    if old != sig:
                        raise RowInvalid(
                            f"user id {row.vote.user_id!r} already has a different vote on this pair "
                            f"(stored: {_describe(old, row.a.sha256)}; this row: {_describe(sig, row.a.sha256)})"
                        )
                vote_key = (row.vote.user_id, row.pair_key)
                if vote_key in votes:
                    old, where = votes[vote_key]
                    if old != sig:
                        raise RowInvalid(f"user id {row.vote.user_id!r} already voted differently on this pair on {at(where)}")
                    duplicate = True
        except RowInvalid as exc:
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


# --- Writing ---------------------------------------------------------------------------


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


def _write(rows: list[Row], *, study_name: str, stored: _Stored, report: ImportReport) -> None:
    """The write, all or nothing for the stored audio files too: a rollback takes the files its new clips wrote with it."""
    written: list[Clip] = []
    try:
        _write_rows(rows, study_name=study_name, stored=stored, report=report, written=written)
    except BaseException:
        for clip in written:
            # A clip of the same content committed meanwhile by someone else keeps its (identical) file.
            if not Clip.objects.filter(sha256=clip.sha256, file=clip.file.name).exists():
                clip.file.delete(save=False)
        raise


@transaction.atomic
def _write_rows(rows: list[Row], *, study_name: str, stored: _Stored, report: ImportReport, written: list[Clip]) -> None:
    """Create what is missing. What the check phase already found stored is reused, not looked up again row by row."""
    study, created = Study.objects.get_or_create(name=study_name, defaults={"title": study_name})
    report.created["studies"] += int(created)

    systems: dict[str, System] = {}
    for name in sorted(({r.model_a for r in rows} | {r.model_b for r in rows}) - {""}):
        systems[name], created = System.objects.get_or_create(name=name)
        report.created["systems"] += int(created)

    # A file used as a generated clip anywhere is generated (with its system); references need no system.
    roles: dict[str, tuple[AudioFile, str | None]] = {}
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
            if created:
                written.append(clips[sha])
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
                study=study,
                condition=conditions[r.condition_key],
                clip_a=clips[r.a.sha256],
                clip_b=clips[r.b.sha256],
                split=r.split,
                dataset_source=r.dataset_source,
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
        condition = conditions[r.condition_key]
        new.append(
            Judgment(
                annotator_id=annotators[v.user_id],
                pair=pairs[r.pair_key],
                a_clip=pick["a"],
                alignment_choice=pick.get(v.alignment),
                alignment_tie=v.alignment if v.alignment in TIE_LABELS else "",
                alignment_confidence=v.alignment_confidence,
                musicality_choice=pick.get(v.musicality),
                musicality_tie=v.musicality if v.musicality in TIE_LABELS else "",
                musicality_confidence=v.musicality_confidence,
                rationale=v.feedback,
                # The condition keeps one text per content (surrounding whitespace aside); the
                # row's own bytes ride with the vote where they differ, for an exact export.
                source_text={key: text for key, text in (("prompt", r.prompt), ("lyrics", r.lyrics)) if text != getattr(condition, key)},
                source=Judgment.Source.IMPORT,
                dataset_source=r.dataset_source,
                selection=ChosenBy.IMPORT,
            )
        )
    Judgment.objects.bulk_create(new, batch_size=500)
    report.created["judgments"] += len(new)


def pairs_import(
    *, files: list[Path | str], audio_root: Path | str, study_name: str = DEFAULT_STUDY, skip_invalid: bool = False, names: list[str] | None = None, fetch_audio=None
) -> ImportReport:
    """Import CMI-RewardBench JSONL rows: validate every row, then write all of them (or, with skip_invalid, the valid ones).

    `names` are how the files are called in error messages (default: their file names); `fetch_audio(rel)`
    brings a file the rows name under audio_root before it is read (the upload's zip, unpacked on demand).
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
    rows = read_rows(list(zip(names, paths)), root=root, report=report, fetch=fetch_audio)
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

