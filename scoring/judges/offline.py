"""Score a benchmark export with any judge kind of this platform, on a team's own machine.

    python -m scoring.judges score PACKAGE_DIR --judge KIND --weights PATH [--device cuda] --out predictions.jsonl

The package is what `manage.py benchmark_export` (or the page's export.zip) gives: items.jsonl,
audio/, benchmark.json and MANIFEST.sha256. The manifest is checked first: every file it lists
must be there with that hash, and every clip an item names must be listed; otherwise nothing is
scored and the message names the files. Then every item is judged the way an in-platform run
judges a study pair:

- a per-clip judge scores each distinct clip once per condition (prompt, lyrics, reference),
  `batch_size` clips per call, and the two scores of an item give its label with the
  tie-goes-to-B rule (`base.pair_outcome`, the rule the platform's runs use);
- a pairwise judge (the LLM judge) gets the items `batch_size` pairs per call (compare_many).

The output is the MIREX prediction layout the benchmark upload accepts: one line per item,
`{"id", "preferred_<dimension>": "model_a" | "model_b" | "both" | "neither", "scores_<dimension>":
[score_a, score_b]}` for the dimensions the judge answers (the upload ignores the scores). An
item the judge could not score (an undecodable clip, a malformed answer) is left out, so the
upload counts it as missing, as the platform counts a failed verdict; the command lists them.

Plain library code: no Django, no database, no network.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .base import DIMENSIONS, ClipAudio, ConditionInput, JudgeAdapter, PairOutcome, pair_outcome

MANIFEST = "MANIFEST.sha256"
ITEMS = "items.jsonl"
MAX_LISTED = 20


class PackageError(ValueError):
    """The folder is not an intact benchmark export; the message names what is wrong."""


@dataclass
class Item:
    id: str
    clip_a: ClipAudio
    clip_b: ClipAudio
    condition: ConditionInput


@dataclass
class Scored:
    """Outcomes by item id, and the items that failed with the reason."""

    outcomes: dict[str, PairOutcome] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _inside(folder: Path, name: str) -> Path | None:
    """The file `name` names inside `folder`, or None when it points outside (absolute, ..)."""
    if not name or name.startswith(("/", "\\")) or ".." in Path(name).parts:
        return None
    return folder / name


def read_manifest(folder: Path) -> dict[str, str]:
    """{relative path: sha256} from MANIFEST.sha256, every file checked; PackageError naming the failures."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PackageError(f"{folder} is not a folder: give the unpacked benchmark export (items.jsonl, audio/, {MANIFEST})")
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise PackageError(f"{folder} has no {MANIFEST}: it is not a benchmark export (unpack export.zip, or run `manage.py benchmark_export`)")
    sums: dict[str, str] = {}
    problems: list[str] = []
    for number, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            problems.append(f"{MANIFEST} line {number} is not '<sha256>  <path>'")
            continue
        path = _inside(folder, name)
        if path is None:
            problems.append(f"{MANIFEST} line {number} names a path outside the package: {name!r}")
        elif not path.is_file():
            problems.append(f"{name} is missing")
        elif _sha256(path) != digest:
            problems.append(f"{name} does not match its checksum (changed or truncated; download the export again)")
        else:
            sums[name] = digest
    if ITEMS not in sums and not any(ITEMS in p for p in problems):
        problems.append(f"{MANIFEST} does not list {ITEMS}")
    if problems:
        more = f" (and {len(problems) - MAX_LISTED} more)" if len(problems) > MAX_LISTED else ""
        raise PackageError(f"the package in {folder} failed its manifest check, nothing was scored: " + "; ".join(problems[:MAX_LISTED]) + more)
    return sums


def read_items(folder: Path) -> list[Item]:
    """The export's items, after the manifest check, with each clip's hash from the manifest."""
    folder = Path(folder)
    sums = read_manifest(folder)
    items, problems = [], []

    def clip(name: str, where: str) -> ClipAudio | None:
        if name not in sums:
            problems.append(f"{where}: {name!r} is not a file listed in {MANIFEST}")
            return None
        return ClipAudio(path=str(folder / name), sha256=sums[name])

    for number, line in enumerate((folder / ITEMS).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{ITEMS} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(row, dict) or not row.get("id"):
            problems.append(f"{where}: not an item (a JSON object with an id)")
            continue
        a = clip(row.get("audio_a", ""), where)
        b = clip(row.get("audio_b", ""), where)
        reference = clip(row["reference_audio"], where) if row.get("reference_audio") else None
        if a is None or b is None or (row.get("reference_audio") and reference is None):
            continue
        condition = ConditionInput(prompt=row.get("prompt") or "", lyrics=row.get("lyrics") or "", reference=reference)
        items.append(Item(id=str(row["id"]), clip_a=a, clip_b=b, condition=condition))
    if problems:
        raise PackageError("the package's items do not fit it, nothing was scored: " + "; ".join(problems[:MAX_LISTED]))
    if not items:
        raise PackageError(f"{folder / ITEMS} holds no items")
    return items


class MemoryStore:
    """The clip cache of one command run (get_many / put_many by content hash and context), so a judge
    that caches intermediate results (CLAP's and MuQ-MuLan's audio embeddings) encodes a clip once."""

    def __init__(self):
        self.rows: dict[tuple[str, str], dict] = {}

    def get_many(self, shas: list[str], context: str) -> dict[str, dict]:
        return {sha: self.rows[(sha, context)] for sha in shas if (sha, context) in self.rows}

    def put_many(self, scores: dict[str, dict], context: str) -> None:
        for sha, value in scores.items():
            self.rows[(sha, context)] = value


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def score_items(judge: JudgeAdapter, items: list[Item], *, batch_size: int = 16, progress: Callable[[int], None] | None = None) -> Scored:
    """Every item's outcome (in the pair's order, A = audio_a). Errors that concern one batch's audio
    or answers fail those items only; a judge that cannot run at all raises (JudgeUnavailable)."""
    from .base import AudioDecodeError, JudgeOutputError

    judge.require()
    result = Scored()
    batch_size = max(1, int(batch_size))
    tick = progress or (lambda n: None)
    per_item = (AudioDecodeError, JudgeOutputError, ValueError)
    if judge.pairwise:
        for start in range(0, len(items), batch_size):
            part = items[start : start + batch_size]
            try:
                outcomes = judge.compare_many([(i.clip_a, i.clip_b, i.condition) for i in part])
            except per_item as exc:
                result.failed.update({i.id: _failure(exc) for i in part})
            else:
                for item, outcome in zip(part, outcomes):
                    if outcome.status == "ok":
                        result.outcomes[item.id] = outcome
                    else:
                        result.failed[item.id] = str(outcome.details.get("error") or outcome.status)
            tick(len(part))
        return result

    groups: dict[str, list[Item]] = {}
    for item in items:
        groups.setdefault(item.condition.content_key(), []).append(item)
    for group in groups.values():
        condition = group[0].condition
        clips: dict[str, ClipAudio] = {}
        for item in group:
            clips.setdefault(item.clip_a.sha256, item.clip_a)
            clips.setdefault(item.clip_b.sha256, item.clip_b)
        distinct = list(clips.values())
        scores: dict[str, dict] = {}
        errors: dict[str, str] = {}
        for start in range(0, len(distinct), batch_size):
            part = distinct[start : start + batch_size]
            try:
                rows = judge.score_clips(part, condition)
            except per_item as exc:
                # One bad file must not cost the batch: score its clips one at a time to find it.
                rows = []
                for clip in part:
                    try:
                        rows.append(judge.score_clips([clip], condition)[0])
                    except per_item as single:
                        errors[clip.sha256] = _failure(single)
                        rows.append(None)
            for clip, row in zip(part, rows):
                if row is not None:
                    scores[clip.sha256] = row
        for item in group:
            bad = errors.get(item.clip_a.sha256) or errors.get(item.clip_b.sha256)
            if bad:
                result.failed[item.id] = bad
                continue
            outcome = pair_outcome(judge, scores[item.clip_a.sha256], scores[item.clip_b.sha256])
            if outcome.status == "ok":
                result.outcomes[item.id] = outcome
            else:
                result.failed[item.id] = "the judge gave no score"
        tick(len(group))
    return result


def prediction_rows(items: Iterable[Item], scored: Scored) -> list[dict]:
    """MIREX-layout rows in item order; failed items are left out (the upload counts them as missing)."""
    rows = []
    for item in items:
        outcome = scored.outcomes.get(item.id)
        if outcome is None:
            continue
        row: dict = {"id": item.id}
        for dim in DIMENSIONS:
            if dim in outcome.labels:
                row[f"preferred_{dim}"] = outcome.labels[dim]
                if dim in outcome.scores:
                    row[f"scores_{dim}"] = list(outcome.scores[dim])
        rows.append(row)
    return rows


def write_jsonl(rows: list[dict], out: Path) -> None:
    """Written to a temporary name and renamed, so an interrupted run never leaves half a file to upload."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with open(partial, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(partial, out)
