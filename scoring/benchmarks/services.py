"""Writes for judge benchmarks: create (freeze items), close, export, teams and submissions."""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from datetime import timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Clip, Judgment, Pair, Study
from annotation.selectors import study_writable_by
from common.errors import ServiceError
from common.roles import is_researcher
from scoring.evaluation import ALIGNMENT, CODE, DIMENSIONS, MODEL_A, MODEL_B, MUSICALITY, NO_LABEL, label_code, pair_majority

from . import formats
from .models import Benchmark, BenchmarkItem, Prediction, Submission, Team
from .selectors import can_close, submitting_team

# --- Creating a benchmark ---------------------------------------------------------------------------

# Paths under /benchmarks/ that a benchmark's name would hide.
RESERVED_NAMES = {"new", "teams", "audio", "submissions"}
RATED_SOURCE = "Auditorium rating study"


def _clip_label(pair: Pair, clip_id: int | None, tie: str) -> int:
    if tie:
        return CODE["both"]
    if clip_id == pair.clip_a_id:
        return CODE[MODEL_A]
    if clip_id == pair.clip_b_id:
        return CODE[MODEL_B]
    return NO_LABEL


def _label_block(codes: list[int], confidences: list[float]) -> dict:
    table = pair_majority([0] * len(codes), codes, confidences or None) if codes else None
    truth = int(table["majority"][0]) if table is not None and len(table["majority"]) else NO_LABEL
    confidence = float(table["confidence"][0]) if truth != NO_LABEL and np.isfinite(table["confidence"][0]) else None
    return {"votes": codes, "confidences": confidences, "truth": truth, "confidence": confidence}


def _study_candidates(study: Study, split: str = Pair.Split.TEST, *, seeded: bool = False) -> list[dict]:
    """The study's regular pairs of one split with at least one counted vote, and their frozen labels. Seeded demo
    votes count only with `seeded` (a demo benchmark, marked as such): no one listened to those pairs."""
    pairs = {p.pk: p for p in Pair.objects.filter(study=study, split=split, kind=Pair.Kind.REGULAR).select_related("condition")}
    votes: dict[int, dict] = {}
    counted = Judgment.objects.filter(pair_id__in=pairs.keys())
    if not seeded:
        counted = counted.exclude(source=Judgment.Source.SEEDED)
    judgments = (
        counted
        .exclude(Q(annotator__annotator_profile__withdrawn_at__isnull=False) | Q(annotator__annotator_profile__excluded_at__isnull=False))
        .order_by("id")
        .values_list("pair_id", "alignment_choice_id", "alignment_tie", "alignment_confidence", "musicality_choice_id", "musicality_tie", "musicality_confidence")
    )
    for pair_id, a_choice, a_tie, a_conf, m_choice, m_tie, m_conf in judgments:
        pair = pairs[pair_id]
        entry = votes.setdefault(pair_id, {ALIGNMENT: ([], []), MUSICALITY: ([], [])})
        for dim, choice, tie, conf in ((ALIGNMENT, a_choice, a_tie, a_conf), (MUSICALITY, m_choice, m_tie, m_conf)):
            code = _clip_label(pair, choice, tie)
            if code != NO_LABEL:
                entry[dim][0].append(code)
                entry[dim][1].append(float(conf))
    out = []
    for pair_id, entry in sorted(votes.items()):
        pair = pairs[pair_id]
        labels = {dim: _label_block(*entry[dim]) for dim in DIMENSIONS}
        if all(labels[d]["truth"] == NO_LABEL for d in DIMENSIONS):
            continue
        condition = pair.condition
        out.append(
            {
                "pair": pair,
                "battle": None,
                "source": formats.CMI_SOURCE,
                "prompt": condition.prompt,
                "lyrics": condition.lyrics,
                "modality": condition.modality,
                "clip_a_id": pair.clip_a_id,
                "clip_b_id": pair.clip_b_id,
                "reference_id": condition.reference_id,
                "cluster": condition.content_key,
                "labels": labels,
            }
        )
    return out


def _arena_candidates() -> list[dict]:
    """Voted arena battles with a clear vote (A or B); ties and both-bad name no better clip and are left out.

    Seeded demo votes are no one's judgement (arena/seed_votes.py) and never become benchmark labels.
    """
    from arena.models import Battle, Vote

    battles = Battle.objects.filter(
        status=Battle.Status.VOTED,
        clip_a__isnull=False,
        clip_b__isnull=False,
        vote__choice__in=[Vote.Choice.A, Vote.Choice.B],
        vote__source=Vote.Source.VISITOR,
    )
    out = []
    for battle in battles.select_related("vote").order_by("id"):
        code = CODE[MODEL_A] if battle.vote.choice == Vote.Choice.A else CODE[MODEL_B]
        labels = {MUSICALITY: _label_block([code], []), ALIGNMENT: _label_block([], [])}
        lyrics = battle.lyrics or ""
        out.append(
            {
                "pair": None,
                "battle": battle,
                "source": formats.ARENA_SOURCE,
                "prompt": battle.prompt,
                "lyrics": lyrics,
                "modality": "text+lyrics" if lyrics.strip() else "text",
                "clip_a_id": battle.clip_a_id,
                "clip_b_id": battle.clip_b_id,
                "reference_id": None,
                "cluster": hashlib.sha256(f"{battle.prompt}\x00{lyrics}".encode()).hexdigest(),
                "labels": labels,
            }
        )
    return out


def _mos_candidates(study: Study, *, seeded: bool = False) -> list[dict]:
    """The rating study's rated clips (regular items, rated role) with their MOS per dimension, from the ratings the
    study's report counts: withdrawn and excluded annotators left out, and raters that fail the post-screening or a trap
    (scoring.ratings.screened). Seeded demo ratings count only with `seeded`."""
    from annotation.ratings.models import RatingItemClip
    from scoring import ratings
    from scoring.ratings_report import ratings_frame

    rated = ratings.screened(ratings_frame(study=study, include_seeded=seeded))[0]
    if rated.empty:
        return []
    mos = ratings.mos_by(rated, "clip_id")
    # The benchmark's own rater numbers: user ids do not travel into a benchmark.
    rater_number = {rater: n for n, rater in enumerate(sorted(rated["annotator_id"].unique()))}
    given: dict = {}
    for clip_id, dim, rater, value in zip(rated["clip_id"], rated["dimension"], rated["annotator_id"], rated["value"]):
        given.setdefault(int(clip_id), {}).setdefault(dim, []).append([rater_number[rater], float(value)])
    labels: dict = {}
    for clip_id, dim, n, value in zip(mos["clip_id"], mos["dimension"], mos["n"], mos["mos"]):
        labels.setdefault(int(clip_id), {})[dim] = {"mos": float(value), "n": int(n), "ratings": given[int(clip_id)][dim]}
    # A clip's condition: the first item that rates it (its prompt, lyrics and reference are what the raters were given).
    conditions = {}
    members = RatingItemClip.objects.filter(item__study=study, clip_id__in=labels, role=RatingItemClip.Role.TEST).select_related("item__condition").order_by("item_id", "id")
    for member in members:
        conditions.setdefault(member.clip_id, member.item.condition)
    out = []
    for clip_id in sorted(labels):
        condition = conditions[clip_id]
        out.append(
            {
                "pair": None,
                "battle": None,
                "source": RATED_SOURCE,
                "prompt": condition.prompt,
                "lyrics": condition.lyrics,
                "modality": condition.modality,
                "clip_a_id": clip_id,
                "clip_b_id": None,
                "reference_id": condition.reference_id,
                "cluster": condition.content_key,
                "labels": labels[clip_id],
            }
        )
    return out


def _clip_pair(clip_a_id: int, clip_b_id: int, sha: dict) -> frozenset:
    # By audio, either order: the same two clips under another id (or another prompt) are the same listening task.
    return frozenset((sha[clip_a_id], sha[clip_b_id]))


def _overlap_refusal(candidates: list[dict], *, is_dev: bool) -> None:
    """A dev benchmark ships labels: none of its items may be an item of a test benchmark, and no test benchmark may
    take an item a dev benchmark has shipped. Refuses the whole benchmark, naming where the overlap is."""
    # MOS items are single clips whose labels never leave the server: they cannot clash with a pair.
    others = BenchmarkItem.objects.filter(benchmark__is_dev=not is_dev, benchmark__kind=Benchmark.Kind.PAIRS)
    ids = {c["clip_a_id"] for c in candidates} | {c["clip_b_id"] for c in candidates} | set(others.values_list("clip_a_id", flat=True)) | set(others.values_list("clip_b_id", flat=True))
    sha = dict(Clip.objects.filter(pk__in=ids).values_list("pk", "sha256"))
    taken: dict[frozenset, str] = {}
    for a, b, name in others.values_list("clip_a_id", "clip_b_id", "benchmark__name"):
        taken.setdefault(_clip_pair(a, b, sha), name)
    clashes = [taken[key] for c in candidates if (key := _clip_pair(c["clip_a_id"], c["clip_b_id"], sha)) in taken]
    if clashes:
        names = ", ".join(sorted(set(clashes))[:5])
        if is_dev:
            why = f"{len(clashes)} of its items (the same two clips) are items of the test benchmark(s) {names}, and a dev benchmark's export carries its labels"
        else:
            why = f"{len(clashes)} of its items (the same two clips) were shipped with their labels by the dev benchmark(s) {names}"
        raise ServiceError(f"Refused: {why}. Build dev benchmarks from a study's train split, which test benchmarks never use.", code="overlap", status=409)


def benchmark_create(
    *,
    name: str,
    study: Study | None = None,
    include_arena: bool = False,
    title: str = "",
    description: str = "",
    version: int = 1,
    seed: int = 0,
    public_share: float = 0.5,
    is_dev: bool = False,
    demo: bool = False,
    max_items: int | None = None,
    bootstrap_rounds: int = 1000,
    kind: str = Benchmark.Kind.PAIRS,
    user=None,
) -> Benchmark:
    """Freeze a benchmark: draw the items, copy their labels, split them into public and private parts.

    Labels are people's votes only. With `demo`, the demo's seeded votes count as well and the benchmark is marked
    demo data wherever it shows; without it, a study whose pairs carry seeded votes only is refused. A MOS benchmark
    (`kind="mos"`) freezes a rating study's rated clips with their MOS per dimension instead."""
    if name in RESERVED_NAMES:
        raise ServiceError(f"{name!r} is the name of a page under /benchmarks/; pick another name.", code="reserved")
    if Benchmark.objects.filter(name=name).exists():
        raise ServiceError(f"A benchmark named {name!r} exists already; a new version needs a new name (e.g. {name}-v{version + 1}).", code="exists", status=409)
    if kind not in Benchmark.Kind.values:
        raise ServiceError(f"The kind must be one of {', '.join(Benchmark.Kind.values)}.", code="bad_kind")
    if kind == Benchmark.Kind.MOS:
        if study is None or not hasattr(study, "rating_task"):
            raise ServiceError("A MOS benchmark freezes the rated clips of a rating study (acr or multi): pick one.", code="no_source")
        if include_arena or is_dev:
            raise ServiceError("A MOS benchmark takes a rating study's clips only, and is a test benchmark (its MOS never leave the server).", code="bad_kind")
    elif study is not None and hasattr(study, "rating_task"):
        raise ServiceError(f"Study {study.name} collects ratings, not pairwise votes: make a MOS benchmark from it.", code="bad_kind")
    if study is None and not include_arena:
        raise ServiceError("Pick a study (its test split, or its train split for a dev benchmark) and/or the arena's battles: a benchmark needs items.", code="no_source")
    if not 0.0 < public_share < 1.0:
        raise ServiceError("The public share must be between 0 and 1 (exclusive), e.g. 0.5.", code="bad_share")
    if bootstrap_rounds < 100:
        raise ServiceError("Use at least 100 bootstrap rounds.", code="bad_rounds")
    # The study rule (annotation.selectors.study_writable_by): freezing a study's votes into a benchmark is a use of
    # its data that only its owner, the collaborators the owner names, and admins make. The command line has no user.
    if study is not None and getattr(user, "is_authenticated", False) and not study_writable_by(study=study, user=user):
        raise ServiceError(f"You may not build a benchmark from study {study.name}: only its owner, the collaborators the owner names, and admins may.", code="forbidden", status=403)
    # A dev benchmark's labels leave the server: it draws from the train split, never from the test split.
    split = Pair.Split.TRAIN if is_dev else Pair.Split.TEST
    if kind == Benchmark.Kind.MOS:
        candidates = _mos_candidates(study, seeded=demo)
        if not candidates:
            seeded_only = not demo and _mos_candidates(study, seeded=True)
            raise ServiceError(
                f"No item to freeze: study {study.name} has no rated clip with a counted rating"
                + (" (it holds only the demo's seeded ratings, which are never labels)." if seeded_only else "."),
                code="seeded_only" if seeded_only else "empty",
            )
    else:
        candidates = (_study_candidates(study, split, seeded=demo) if study is not None else []) + (_arena_candidates() if include_arena else [])
    if not candidates and study is not None and not demo and _study_candidates(study, split, seeded=True):
        raise ServiceError(
            f"Study {study.name}'s {split} split holds only the demo's seeded votes, and seeded votes are never labels. "
            "Collect real votes first, or make it a demo benchmark (marked demo data everywhere it shows).",
            code="seeded_only",
        )
    if not candidates:
        where = f"study {study.name}'s {split} split" if study is not None else "the arena"
        raise ServiceError(f"No item to freeze: {where} has no pair with a counted human vote.", code="empty")
    if kind == Benchmark.Kind.PAIRS:
        _overlap_refusal(candidates, is_dev=is_dev)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(candidates))
    if max_items is not None:
        order = order[:max_items]
    n_public = max(1, min(len(order) - 1, round(public_share * len(order)))) if len(order) > 1 else len(order)
    private = np.zeros(len(order), dtype=bool)
    private[rng.permutation(len(order))[n_public:]] = True
    with transaction.atomic():
        benchmark = Benchmark.objects.create(
            name=name,
            title=title[:200],
            description=description,
            version=version,
            seed=seed,
            public_share=public_share,
            is_dev=is_dev,
            is_demo=demo,
            kind=kind,
            study=study,
            includes_arena=include_arena,
            bootstrap_rounds=bootstrap_rounds,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        items = []
        for position, index in enumerate(order):
            c = candidates[int(index)]
            items.append(
                BenchmarkItem(
                    benchmark=benchmark,
                    item_id=f"{name}-{position + 1:05d}",
                    position=position,
                    pair=c["pair"],
                    battle=c["battle"],
                    source=c["source"],
                    prompt=c["prompt"],
                    lyrics=c["lyrics"],
                    modality=c["modality"],
                    clip_a_id=c["clip_a_id"],
                    clip_b_id=c["clip_b_id"],
                    reference_id=c["reference_id"],
                    cluster=c["cluster"],
                    is_private=bool(private[position]),
                    labels=c["labels"],
                )
            )
        BenchmarkItem.objects.bulk_create(items, batch_size=1000)
        benchmark.n_items = len(items)
        benchmark.manifest = _manifest(benchmark)
        benchmark.save(update_fields=["n_items", "manifest"])
    return benchmark


def _audio_name(clip) -> str:
    return f"audio/{clip.sha256}{clip.extension or '.wav'}"


def _manifest(benchmark: Benchmark) -> dict:
    manifest = {}
    for item in benchmark.items.select_related("clip_a", "clip_b", "reference"):
        for clip in (item.clip_a, item.clip_b, item.reference):
            if clip is not None:
                manifest[_audio_name(clip)] = clip.sha256
    return dict(sorted(manifest.items()))


def benchmark_close(*, benchmark: Benchmark, user=None, operator: bool = False) -> Benchmark:
    """Close: the leaderboard switches to the private part; no more submissions. Its creator and admins may close it
    (`operator`: the command line, which acts for whoever runs the server)."""
    if not operator and not can_close(user, benchmark):
        raise ServiceError(f"Only the benchmark's creator and admins may close {benchmark.name}.", code="forbidden", status=403)
    if benchmark.state == Benchmark.State.CLOSED:
        return benchmark
    benchmark.state, benchmark.closed_at = Benchmark.State.CLOSED, timezone.now()
    benchmark.save(update_fields=["state", "closed_at"])
    return benchmark


# --- Export ------------------------------------------------------------------------------------------


def export_rows(benchmark: Benchmark) -> list[dict]:
    """items.jsonl rows, in item order; labels only on a dev benchmark."""
    rows = []
    for item in benchmark.items.select_related("clip_a", "clip_b", "reference").order_by("position"):
        if benchmark.is_mos:
            rows.append(
                formats.mos_export_row(
                    item_id=item.item_id,
                    prompt=item.prompt,
                    lyrics=item.lyrics,
                    modality=item.modality,
                    audio=_audio_name(item.clip_a),
                    reference=_audio_name(item.reference) if item.reference else "",
                    cluster=hashlib.sha256(item.cluster.encode()).hexdigest()[:12],
                )
            )
            continue
        rows.append(
            formats.export_row(
                item_id=item.item_id,
                source=item.source,
                prompt=item.prompt,
                lyrics=item.lyrics,
                modality=item.modality,
                audio_a=_audio_name(item.clip_a),
                audio_b=_audio_name(item.clip_b),
                reference=_audio_name(item.reference) if item.reference else "",
                cluster=hashlib.sha256(item.cluster.encode()).hexdigest()[:12],
                labels=item.labels if benchmark.is_dev else None,
            )
        )
    return rows


def _export_files(benchmark: Benchmark):
    """(name, bytes or clip) for every file of the package, the manifest last."""
    rows = export_rows(benchmark)
    items = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    info = {
        "name": benchmark.name,
        "version": benchmark.version,
        "title": benchmark.title,
        "dev": benchmark.is_dev,
        "demo": benchmark.is_demo,
        "labels_included": benchmark.is_dev,
        "n_items": len(rows),
        "created_at": benchmark.created_at.isoformat(),
        "kind": benchmark.kind,
        "prediction_layouts": [layout.name for layout in formats.layouts_for(benchmark.kind)],
    }
    meta = (json.dumps(info, indent=2) + "\n").encode()
    clips = {}
    for item in benchmark.items.select_related("clip_a", "clip_b", "reference"):
        for clip in (item.clip_a, item.clip_b, item.reference):
            if clip is not None:
                clips[_audio_name(clip)] = clip
    sums = {"items.jsonl": hashlib.sha256(items).hexdigest(), "benchmark.json": hashlib.sha256(meta).hexdigest()}
    sums.update({name: clip.sha256 for name, clip in clips.items()})
    manifest = "".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items())).encode()
    yield "items.jsonl", items
    yield "benchmark.json", meta
    for name, clip in sorted(clips.items()):
        yield name, clip
    yield "MANIFEST.sha256", manifest


def _clip_bytes(clip) -> bytes:
    with clip.file.open("rb") as handle:
        data = handle.read()
    if hashlib.sha256(data).hexdigest() != clip.sha256:
        raise ServiceError(f"Clip {clip.public_id} on disk does not match its checksum; the export was stopped.", code="checksum", status=500)
    return data


def export_to_dir(*, benchmark: Benchmark, out: str | Path) -> Path:
    """Write the input package into `out` (created; must be empty if it exists)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ServiceError(f"{out} is not empty; give a new or empty folder.", code="not_empty")
    for name, content in _export_files(benchmark):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else _clip_bytes(content))
    return out


def export_zip(*, benchmark: Benchmark) -> bytes:
    """The same package as one zip (the download on the benchmark's page)."""
    buffer = io.BytesIO()
    root = f"{benchmark.name}-v{benchmark.version}"
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in _export_files(benchmark):
            archive.writestr(f"{root}/{name}", content if isinstance(content, bytes) else _clip_bytes(content))
    return buffer.getvalue()


# --- Teams and submissions ----------------------------------------------------------------------------


def team_create(*, name: str, members=()) -> Team:
    team, _ = Team.objects.get_or_create(name=name)
    if members:
        team.members.add(*members)
    return team


def _check_can_submit(*, benchmark: Benchmark, team: Team, user=None) -> None:
    if not benchmark.is_open:
        raise ServiceError(f"Benchmark {benchmark.name} is closed; it takes no more submissions.", code="closed", status=409)
    # Researchers run judges for any team (the page's "As team"); everyone else only for their own teams.
    if user is not None and not is_researcher(user) and not team.members.filter(pk=user.pk).exists():
        raise ServiceError(f"You are not a member of team {team.name}.", code="not_member", status=403)
    if team.benchmark_id is not None and team.benchmark_id != benchmark.pk:
        raise ServiceError(f"Team {team.name} was made for another benchmark; it submits only there.", code="other_benchmark", status=403)
    limit = settings.BENCHMARK_DAILY_SUBMISSIONS
    day_start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    used = Submission.objects.filter(team=team, benchmark=benchmark, created_at__gte=day_start).count()
    if used >= limit:
        retry = int((day_start + timedelta(days=1) - timezone.now()).total_seconds()) + 1
        raise ServiceError(
            f"Team {team.name} has used its {limit} submissions to {benchmark.name} for today (UTC); the count starts again at midnight UTC.",
            code="daily_limit",
            status=429,
            retry_after=retry,
        )


def submission_create(*, benchmark: Benchmark, team: Team, user=None, label: str = "", **fields) -> Submission:
    """A new submission of `team` once the benchmark takes it (open, the user a member, the team entered, under the
    daily limit). Call it inside the transaction that also stores or queues the submission's work."""
    with transaction.atomic():
        # Locks the team's row so two submissions at once cannot both pass the daily limit.
        Team.objects.select_for_update().get(pk=team.pk)
        _check_can_submit(benchmark=benchmark, team=team, user=user)
        return Submission.objects.create(
            benchmark=benchmark,
            team=team,
            label=label[:200],
            created_by=user if getattr(user, "is_authenticated", False) else None,
            **fields,
        )


def submission_from_file(*, benchmark: Benchmark, team: Team, data: bytes, label: str = "", user=None) -> Submission:
    """Store a prediction file as a scored submission, or refuse it whole (PredictionFileError / ServiceError)."""
    if len(data) > settings.BENCHMARK_MAX_FILE_BYTES:
        raise ServiceError(f"The file is larger than {settings.BENCHMARK_MAX_FILE_BYTES} bytes.", code="too_large", status=413)
    items = dict(benchmark.items.values_list("item_id", "id"))
    try:
        parsed = formats.parse_predictions(data, item_ids=set(items), kind=benchmark.kind)
    except formats.PredictionFileError as exc:
        raise ServiceError(str(exc), code="bad_file", extra={"errors": exc.errors}) from None
    with transaction.atomic():
        submission = submission_create(
            benchmark=benchmark,
            team=team,
            user=user,
            label=label,
            kind=Submission.Kind.FILE,
            state=Submission.State.DONE,
            file_format=parsed.layout,
            file_sha256=hashlib.sha256(data).hexdigest(),
            finished_at=timezone.now(),
        )
        predictions_store(submission=submission, rows=parsed.rows, items=items)
    return submission


def submission_upload(*, benchmark: Benchmark, user, team: str, upload, label: str = "") -> Submission:
    """A prediction file uploaded on the page or through the API: the team named (one of the user's), the file
    attached, then submission_from_file."""
    found = submitting_team(user, team)
    if upload is None:
        raise ServiceError("Attach the prediction file as `file`.", code="no_file")
    return submission_from_file(benchmark=benchmark, team=found, data=upload.read(), label=label or "", user=user)


def predictions_store(*, submission: Submission, rows: dict, items: dict) -> int:
    """Write (replace) a submission's predictions: rows {item_id: {dim: code, prob_<dim>: p, "error": str}}."""
    Prediction.objects.filter(submission=submission).delete()
    objects = [
        Prediction(
            submission=submission,
            item_id=items[item_id],
            alignment=int(values.get(ALIGNMENT, NO_LABEL)),
            musicality=int(values.get(MUSICALITY, NO_LABEL)),
            prob_alignment=values.get(f"prob_{ALIGNMENT}"),
            prob_musicality=values.get(f"prob_{MUSICALITY}"),
            score_alignment=values.get(f"score_{ALIGNMENT}"),
            score_musicality=values.get(f"score_{MUSICALITY}"),
            error=str(values.get("error", ""))[:200],
        )
        for item_id, values in rows.items()
    ]
    Prediction.objects.bulk_create(objects, batch_size=2000)
    return len(objects)


def labels_from_verdict(verdict) -> dict:
    """A stored judge verdict as prediction values (its labels are in the pair's order, like items)."""
    labels = (verdict.details or {}).get("labels", {}) if verdict.status == "ok" else {}
    return {dim: label_code(labels.get(dim)) for dim in DIMENSIONS}


def submission_read_file(path: str | os.PathLike) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ServiceError(f"Cannot read {path}: {exc.strerror}.", code="no_file") from None
