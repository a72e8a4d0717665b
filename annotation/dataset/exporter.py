"""Export: one JSONL row per vote in the exact key order of the public files, the audio and a datasheet.

The audio is copied under content-addressed paths and the output is deterministic:
the same database gives byte-identical JSONL, and so does export -> import into an
empty database -> export.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Callable

from django.db import transaction
from django.db.models import F, Q

from common.csvfile import csv_text
from common.loudness import PEAK_CEILING_DBTP

from ..models import Clip, Condition, Judgment, Modality, Pair, Study
from ..questionnaire_selectors import datasheet_lines
from .aggregates import AGGREGATE_HELP, AGGREGATE_KEYS, aggregate_columns
from .keys import EXPORT_KEYS, EXPORT_SOURCE, GENERATED_DIR, REFERENCE_DIR, UNVOTED_EMPTY_KEYS, DatasetError
from .provenance import PROVENANCE_HELP, PROVENANCE_KEYS, provenance_for, provenance_row

CONSENT_STATEMENT = (
    "Annotators on this platform gave informed consent before their first judgment and may withdraw at any time; "
    "only votes made after the annotator's consent are included, and votes of annotators who withdrew consent "
    "or were excluded by a researcher are not. "
    "Annotators appear only under pseudonyms. Imported votes keep the pseudonymous ids of the dataset they came from "
    "and remain under that dataset's terms."
)


# (step, done, total): what a long export reports while it copies and zips the audio.
Progress = Callable[[str, int, int], None]


@dataclass
class ExportReport:
    rows: Counter = field(default_factory=Counter)
    files: int = 0
    left_out: Counter = field(default_factory=Counter)
    test_pairs: int = 0
    unvoted_pairs: int = 0

    def summary(self) -> str:
        lines = [f"rows: {self.rows['train']} train, {self.rows['test']} test; {self.files} audio files"]
        if self.left_out:
            lines.append("votes left out: " + ", ".join(f"{n} ({why})" for why, n in sorted(self.left_out.items())))
        if self.test_pairs:
            lines.append(f"balanced test split: {self.test_pairs} pairs")
        if self.unvoted_pairs:
            lines.append(f"pairs without votes: {self.unvoted_pairs} rows with empty preferences and user id")
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


# Row `source` of the demo's seeded votes when an export asks for them: never the platform's own label,
# which CMI-RewardBench's evaluator counts as real CMI-Pref data.
SEEDED_SOURCE = "auditorium-seeded-demo"


def _exportable_judgments(pairs, *, include_seeded: bool = False):
    base = Judgment.objects.filter(pair__in=pairs)
    left_out = Counter()
    if not include_seeded:
        left_out["seeded demo votes (no one listened); ask for them with include_seeded"] = base.filter(source=Judgment.Source.SEEDED).count()
        base = base.exclude(source=Judgment.Source.SEEDED)
    # Votes made here count only from the annotator's consent on; imported votes come under their dataset's terms.
    consented_then = Q(source=Judgment.Source.IMPORT) | Q(annotator__annotator_profile__consented_at__lte=F("created_at"))
    keep = base.filter(
        consented_then,
        annotator__annotator_profile__isnull=False,
        annotator__annotator_profile__withdrawn_at__isnull=True,
        annotator__annotator_profile__excluded_at__isnull=True,
    )
    left_out["annotator had not consented when voting"] = base.filter(
        annotator__annotator_profile__isnull=False,
        annotator__annotator_profile__withdrawn_at__isnull=True,
        annotator__annotator_profile__excluded_at__isnull=True,
    ).exclude(consented_then).count()
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


# --- Listening time (CMI-Pref's total_listening_time_a/_b) ---------------------------------
# Seconds each clip was heard, as the server counted them when the vote was accepted
# (annotation/services/listening.py); null where the server holds no such record
# (imported votes, votes from before the server kept one).
LISTENING_KEYS = ("total_listening_time_a", "total_listening_time_b")


def _listening_seconds(judgment: Judgment) -> dict:
    log = judgment.listening_log or {}
    if log.get("source") != "server":
        return dict.fromkeys(LISTENING_KEYS)
    return {key: (log.get(side) or {}).get("seconds") for key, side in zip(LISTENING_KEYS, ("A", "B"))}


# --- Recruited accounts: a participant id that entered the study more than once without its resume code -----
DUPLICATE_KEY = "duplicate_claim"
DUPLICATE_HELP = (
    f"`{DUPLICATE_KEY}`: true where the vote's account came from a recruitment participant id that had already started the "
    "study and came back without its resume code (the same person twice, or someone else using the id): kept as an account "
    "of its own, never merged; false for every other vote; null on rows without a vote."
)
# Separate screens (annotation/services/passes.py): the dimensions in the order they were asked; null when both were
# asked on one screen, for imported votes and on rows without a vote.
PASSES_KEY = "dimension_passes"
PASSES_HELP = (
    f"`{PASSES_KEY}`: where the study asked the two dimensions on separate screens, the dimensions in the order they "
    "were answered (e.g. `[\"alignment\", \"musicality\"]`); null where both were asked on one screen."
)


def _duplicate_claim(judgment: Judgment) -> bool:
    participant = getattr(judgment.annotator, "external_participant", None)
    return bool(participant is not None and participant.duplicate_claim)


# ---------------------------------------------------------------------------------------------


# --- Loudness-matched playback: what each clip was played at ----------------------------------
LOUDNESS_FILE = "loudness.csv"
LOUDNESS_COLUMNS = ["study", "audio-path", "loudness_lufs", "true_peak_dbtp", "gain_db"]


def _figure(value: float | None):
    return "" if value is None else round(value, 3)


def loudness_rows(*, study: Study, clips, path_of) -> list[dict]:
    """One row per clip the study played: its measured loudness and true peak (empty: none) and the gain its pages applied."""
    rows = [
        {
            "study": study.name,
            "audio-path": path_of(clip),
            "loudness_lufs": _figure(clip.loudness_lufs),
            "true_peak_dbtp": _figure(clip.true_peak_dbtp),
            "gain_db": study.clip_gain_db(clip),
        }
        for clip in clips
    ]
    return sorted(rows, key=lambda row: row["audio-path"])


def loudness_setting(study: Study) -> str:
    """The study's loudness matching in one sentence of the datasheet."""
    if not study.loudness_match:
        text = f"`{study.name}`: loudness matching off; every clip was played as stored (gain 0 dB)."
    else:
        text = f"`{study.name}`: loudness matching on; target {study.loudness_target_lufs:g} LUFS, true-peak ceiling {PEAK_CEILING_DBTP:g} dBTP."
    if study.loudness_changed_at is not None:
        text += f" The setting was last changed on {study.loudness_changed_at.date().isoformat()} (UTC): votes from before then were heard at the earlier setting's levels."
    return text


LOUDNESS_RULE = (
    "The gain of a clip is the target minus its integrated loudness (ITU-R BS.1770-4, measured on the stored file), "
    f"lowered where it would lift the clip's true peak (4x oversampled) above {PEAK_CEILING_DBTP:g} dBTP; attenuation is never limited; "
    "a clip with no measured loudness (silent, shorter than 400 ms, or never measured) plays at 0 dB. Gains are in 0.1 dB steps. "
    "The player applied the gain; the audio files here are the stored files, unchanged."
)


def _confidence_text(value) -> str:
    return f"{Decimal(value):.1f}"


def _datasheet(*, studies: list[Study], rows: list[dict], judgments: list[Judgment], left_out: Counter, loudness: list[dict]) -> str:
    all_rows, rows = rows, [r for r in rows if r["user id"]]
    unvoted = len(all_rows) - len(rows)
    by_split = Counter(r["split"] for r in rows)
    pairs_by_split = {s: len({(r["prompt id"], frozenset((r["audio-path"], r["audio2"]))) for r in rows if r["split"] == s}) for s in ("train", "test")}
    modality = Counter((r["modality"], r["split"]) for r in rows)
    row_sources = Counter(r["source"] for r in all_rows)
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
        "`total_listening_time_a` / `_b`: seconds the server counted each clip as heard (null where it kept no record).",
        AGGREGATE_HELP,
        DUPLICATE_HELP,
        PROVENANCE_HELP,
        PASSES_HELP,
        "",
        "## Files",
        "",
        "- `train.jsonl`, `test.jsonl`: the votes; audio paths are relative to this folder.",
        f"- `{GENERATED_DIR}/`: generated clips; `{REFERENCE_DIR}/`: reference audio. File names are content hashes.",
        f"- `{LOUDNESS_FILE}`: per study and clip, the measured loudness (LUFS), true peak (dBTP) and the playback gain (dB) its pages applied.",
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
        f"Annotators: {len({r['user id'] for r in rows})} (pseudonymous ids in `user id`); "
        f"votes from duplicate claims of a recruitment participant id (`{DUPLICATE_KEY}`): {sum(1 for r in rows if r[DUPLICATE_KEY])}.",
        f"Votes collected on this platform: {sources[Judgment.Source.PLATFORM]}; imported from earlier datasets: {sources[Judgment.Source.IMPORT]}.",
        *(
            [
                f"DEMO DATA: {sources[Judgment.Source.SEEDED]} rows are seeded demo votes (`source` {SEEDED_SOURCE}): made up by the demo's "
                "set-up, no one listened. They are not preference data; leave them out of any evaluation."
            ]
            if sources[Judgment.Source.SEEDED]
            else []
        ),
        f"Collection dates (UTC): {dates[0]} to {dates[-1]}." if dates else "Collection dates: no votes.",
        "Only regular pairs are included (no gold or catch trials).",
        "Rows by `source` (kept as imported; `" + EXPORT_SOURCE + "` for what was made here): "
        + ", ".join(f"{name} {n}" for name, n in sorted(row_sources.items())) + "." if row_sources else "Rows by `source`: none.",
        *(
            [
                f"Pairs without votes: {unvoted}, one row each with empty `user id`, `preference-*`, `confidence_preference-*` "
                "and `feedback`; evaluators that need votes skip them (an empty label is not counted)."
            ]
            if unvoted
            else []
        ),
        "",
        "## Loudness",
        "",
        *(f"- {loudness_setting(s)}" for s in sorted(studies, key=lambda s: s.name)),
        "",
        LOUDNESS_RULE,
        "",
        f"Clips without a measured loudness: {sum(1 for r in loudness if r['loudness_lufs'] == '')} of {len(loudness)} rows of `{LOUDNESS_FILE}`.",
        "",
        *datasheet_lines(studies=studies, annotators={j.annotator_id for j in judgments}),
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


def _row_source(label: str, *, seeded: bool = False) -> str:
    # Rows keep the `source` they were imported with; what was made here carries the platform's label; seeded votes their own.
    if seeded:
        return SEEDED_SOURCE
    return label or EXPORT_SOURCE


def stored_pair_keys(pair: Pair, names: dict[int, str]) -> dict:
    """A row's audio, condition and system keys for a pair in its stored order (clip_a first)."""
    condition = pair.condition
    return {
        "audio-path": names[pair.clip_a_id],
        "audio2": names[pair.clip_b_id],
        "ref-audio-path": names[condition.reference_id] if condition.reference_id else "",
        "prompt": condition.prompt,
        "lyrics": condition.lyrics,
        "model_a": pair.clip_a.system.name if pair.clip_a.system else "",
        "model_b": pair.clip_b.system.name if pair.clip_b.system else "",
        "prompt id": prompt_id_for(condition),
    }


def _unvoted_row(pair: Pair, names: dict[int, str]) -> dict:
    """A pair with no exported vote: the vote's keys are empty, so an import makes the pair alone and the
    CMI-RewardBench evaluator (which counts only model_a / model_b / both / neither) skips the row."""
    condition = pair.condition
    return {
        **stored_pair_keys(pair, names),
        **dict.fromkeys(UNVOTED_EMPTY_KEYS, ""),
        "source": _row_source(pair.dataset_source),
        "split": pair.split,
        "modality": condition.modality,
        **dict.fromkeys(LISTENING_KEYS),
        DUPLICATE_KEY: None,
        **provenance_row(None, shown_a_is_clip_a=True),
        PASSES_KEY: None,
    }


def dataset_export(
    *,
    out_dir: Path | str,
    studies: list[Study] | None = None,
    balanced_test: int | None = None,
    seed: int | None = None,
    include_unvoted: bool = False,
    include_seeded: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Write train.jsonl, test.jsonl, the audio and README.md into out_dir (new or empty).

    include_unvoted adds one row per pair without an exported vote (see `_unvoted_row`); include_seeded
    adds the demo's seeded votes, labelled as demo data (left out by default).
    progress, if given, is called as (step, done, total) while the audio is copied.
    """
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
        judgments, report.left_out = _exportable_judgments(pairs, include_seeded=include_seeded)
        if balanced_test is not None:
            chosen = _balanced_test_draw(pairs=pairs, judgments=judgments, n=balanced_test, seed=seed)
            # Persisted, so later exports (and the annotation app) see the same split.
            pairs.exclude(pk__in=chosen).update(split=Pair.Split.TRAIN)
            Pair.objects.filter(pk__in=chosen).update(split=Pair.Split.TEST)
            report.test_pairs = len(chosen)
        judgments = list(
            judgments.select_related(
                "pair__condition__reference", "pair__clip_a__system", "pair__clip_b__system", "annotator__annotator_profile",
                "annotator__external_participant",
            )
        )
        unvoted = []
        if include_unvoted:
            voted = {j.pair_id for j in judgments}
            unvoted = [
                p for p in pairs.select_related("condition__reference", "clip_a__system", "clip_b__system") if p.pk not in voted
            ]
    clips, compared = {}, set()
    played = defaultdict(dict)  # study id -> {clip id: clip}: what each study's pages played
    for pair in [j.pair for j in judgments] + unvoted:
        compared |= {pair.clip_a_id, pair.clip_b_id}
        for clip in (pair.clip_a, pair.clip_b, pair.condition.reference):
            if clip is not None:
                clips[clip.pk] = clip
                played[pair.study_id][clip.pk] = clip
    names = _audio_names(list(clips.values()), compared)

    aggregated = aggregate_columns(judgments)
    settled = provenance_for(judgments)
    rows = []
    for j in judgments:
        pair, condition = j.pair, j.pair.condition
        a = pair.clip_a if j.a_clip_id == pair.clip_a_id else pair.clip_b
        b = pair.clip_b if a is pair.clip_a else pair.clip_a
        label = lambda dim: getattr(j, f"{dim}_tie") or ("model_a" if getattr(j, f"{dim}_choice_id") == a.pk else "model_b")  # noqa: E731
        row = {
            "audio-path": names[a.pk],
            "audio2": names[b.pk],
            "ref-audio-path": names[condition.reference_id] if condition.reference_id else "",
            "prompt": j.source_text.get("prompt", condition.prompt),
            "lyrics": j.source_text.get("lyrics", condition.lyrics),
            "model_a": a.system.name if a.system else "",
            "model_b": b.system.name if b.system else "",
            "prompt id": prompt_id_for(condition),
            "user id": j.annotator.annotator_profile.pseudonym,
            "preference-musicality": label("musicality"),
            "preference-alignment": label("alignment"),
            "confidence_preference-musicality": _confidence_text(j.musicality_confidence),
            "confidence_preference-alignment": _confidence_text(j.alignment_confidence),
            "feedback": j.rationale,
            "source": _row_source(j.dataset_source, seeded=j.source == Judgment.Source.SEEDED),
            "split": pair.split,
            "modality": condition.modality,
            **_listening_seconds(j),
            **aggregated.get(j.pk, {}),
            DUPLICATE_KEY: _duplicate_claim(j),
            **provenance_row(settled.get(pair.pk), shown_a_is_clip_a=a.pk == pair.clip_a_id),
            PASSES_KEY: (j.passes or {}).get("order") or None,
        }
        rows.append(row)
    rows += [_unvoted_row(pair, names) for pair in unvoted]
    report.unvoted_pairs = len(unvoted)
    lines = {split: [] for split in Pair.Split.values}
    for row in rows:
        lines[row["split"]].append(json.dumps({**{k: row[k] for k in EXPORT_KEYS + LISTENING_KEYS}, **{k: row.get(k) for k in AGGREGATE_KEYS}, DUPLICATE_KEY: row[DUPLICATE_KEY], **{k: row[k] for k in PROVENANCE_KEYS}, PASSES_KEY: row[PASSES_KEY]}, ensure_ascii=False))
    out.mkdir(parents=True, exist_ok=True)
    for split, split_lines in lines.items():
        # Sorting the serialised lines orders by audio path first: content-derived, so stable across databases.
        split_lines.sort()
        (out / f"{split}.jsonl").write_text("".join(line + "\n" for line in split_lines), encoding="utf-8")
        report.rows[split] = len(split_lines)
    ordered = sorted(clips.values(), key=lambda c: names[c.pk])
    for index, clip in enumerate(ordered):
        if progress is not None:
            progress("copying audio", index, len(ordered))
        target = out / names[clip.pk]
        target.parent.mkdir(parents=True, exist_ok=True)
        with clip.file.open("rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        report.files += 1
    chosen_studies = list(studies) if studies is not None else list(Study.objects.filter(pairs__in=pairs).distinct())
    loudness = [
        row
        for study in sorted(chosen_studies, key=lambda s: s.name)
        for row in loudness_rows(study=study, clips=played[study.pk].values(), path_of=lambda clip: names[clip.pk])
    ]
    (out / LOUDNESS_FILE).write_text(csv_text(loudness, columns=LOUDNESS_COLUMNS) or ",".join(LOUDNESS_COLUMNS) + "\r\n", encoding="utf-8")
    (out / "README.md").write_text(
        _datasheet(studies=chosen_studies, rows=rows, judgments=judgments, left_out=report.left_out, loudness=loudness), encoding="utf-8"
    )
    return report


def dataset_export_archive(
    *,
    studies: list[Study] | None = None,
    include_unvoted: bool = False,
    balanced_test: int | None = None,
    seed: int | None = None,
    include_seeded: bool = False,
    progress: Progress | None = None,
):
    """The export as a zip in an anonymous temporary file (removed when closed), positioned at its start.

    progress, if given, is called as (step, done, total): copying the audio, then zipping the files.
    """
    archive = tempfile.TemporaryFile(suffix=".zip")
    with tempfile.TemporaryDirectory(prefix="auditorium-export-") as tmp:
        root = Path(tmp) / "dataset"
        dataset_export(out_dir=root, studies=studies, include_unvoted=include_unvoted, balanced_test=balanced_test, seed=seed, include_seeded=include_seeded, progress=progress)
        files = sorted(p for p in root.rglob("*") if p.is_file())
        with zipfile.ZipFile(archive, "w") as zf:
            for index, path in enumerate(files):
                if progress is not None:
                    progress("zipping", index, len(files))
                arcname = path.relative_to(root).as_posix()
                # Audio is already compressed (or incompressible PCM noise); deflating it costs time for little.
                method = zipfile.ZIP_DEFLATED if path.suffix in (".jsonl", ".md") else zipfile.ZIP_STORED
                zf.write(path, arcname, compress_type=method)
    archive.seek(0)
    return archive
