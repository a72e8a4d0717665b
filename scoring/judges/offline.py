"""Score a benchmark export with any judge kind of this platform, on a team's own machine.

    python -m scoring.judges score PACKAGE_DIR --judge KIND --weights PATH [--device cuda] --out predictions.jsonl

The package is what `manage.py benchmark_export` (or the page's export.zip) gives: items.jsonl,
audio/, benchmark.json and MANIFEST.sha256. The manifest is checked first: every file it lists
must be there with that hash, and every clip an item names must be listed; otherwise nothing is
scored and the message names the files. A package is not trusted: only regular files inside
its folder are read, never through a symbolic link, and its sizes, line lengths, nesting and item
count are bounded (the MAX_* figures below, docs/benchmarks.md). Then every item is judged the way an in-platform run
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
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .base import DIMENSIONS, ClipAudio, ConditionInput, JudgeAdapter, PairOutcome, pair_outcome

MANIFEST = "MANIFEST.sha256"
ITEMS = "items.jsonl"
MAX_LISTED = 20

# Bounds on what a package may make this command read. An export of the platform is far inside
# them; a package that passes one is refused, naming the file, before anything is scored.
MAX_MANIFEST_BYTES = 64 << 20  # MANIFEST.sha256
MAX_MANIFEST_ENTRIES = 500_000  # lines of MANIFEST.sha256
MAX_ITEMS_BYTES = 256 << 20  # items.jsonl
MAX_LINE_BYTES = 1 << 20  # one line of items.jsonl
MAX_ITEMS = 200_000  # items in items.jsonl
MAX_DEPTH = 32  # nesting of arrays and objects in one line of items.jsonl
MAX_FILE_BYTES = 1 << 30  # any one file the manifest lists (a clip)
MAX_PACKAGE_BYTES = 64 << 30  # all the files the manifest lists together
MAX_NAME_CHARS = 1024  # a path in the manifest or an item
MAX_ID_CHARS = 200  # an item's id
_BLOCK = 1 << 20


class PackageError(ValueError):
    """The folder is not an intact benchmark export; the message names what is wrong."""


class _Missing(PackageError):
    pass


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


def _shown(name: str) -> str:
    """A name from the package as a message may show it: on one line, and not too long."""
    text = name if len(name) <= 120 else name[:120] + "..."
    return text if text.isprintable() else repr(text)


def _parts(name) -> list[str] | None:
    """The components of a package-relative path, or None for one that is not plainly inside the package
    (absolute, `..`, `.`, empty components, backslashes, control characters, too long)."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS or not name.isprintable() or "\\" in name:
        return None
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


class _Package:
    """The package folder, opened once; files inside it are opened component by component with
    O_NOFOLLOW, so no symbolic link anywhere on a path is followed, and only regular files are read."""

    def __init__(self, folder: Path):
        self.root = Path(os.path.realpath(folder))
        try:
            self.fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise PackageError(f"{folder} is not a folder: give the unpacked benchmark export (items.jsonl, audio/, {MANIFEST})") from None

    def close(self) -> None:
        os.close(self.fd)

    def open(self, name: str) -> tuple[int, int]:
        """(file descriptor, size) of the regular file `name`; PackageError saying what is wrong with it."""
        parts = _parts(name)
        if parts is None:
            raise PackageError(f"{_shown(name)} is not a path inside the package")
        where = os.dup(self.fd)
        try:
            for depth, part in enumerate(parts):
                here = "/".join(parts[: depth + 1])
                last = depth == len(parts) - 1
                try:
                    info = os.stat(part, dir_fd=where, follow_symlinks=False)
                except FileNotFoundError:
                    raise _Missing(f"{_shown(name)} is missing") from None
                except OSError as exc:
                    raise PackageError(f"{_shown(name)} cannot be read ({exc.strerror})") from None
                if stat.S_ISLNK(info.st_mode):
                    raise PackageError(f"{_shown(here)} is a symbolic link; a package holds only regular files and folders, nothing is read through a link")
                if not last:
                    if not stat.S_ISDIR(info.st_mode):
                        raise _Missing(f"{_shown(name)} is missing ({_shown(here)} is not a folder)")
                    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                elif not stat.S_ISREG(info.st_mode):
                    raise PackageError(f"{_shown(name)} is {_kind(info.st_mode)}, not a regular file; nothing was read from it")
                else:
                    # O_NONBLOCK: were a FIFO swapped in after the check, opening it must not wait for a writer.
                    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                try:
                    opened = os.open(part, flags, dir_fd=where)
                except OSError as exc:
                    raise PackageError(f"{_shown(here)} cannot be opened ({exc.strerror}); a package holds only regular files and folders") from None
                os.close(where)
                where = opened
                now = os.fstat(where)
                if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                    raise PackageError(f"{_shown(here)} changed while it was being opened")
            if not stat.S_ISREG(now.st_mode):
                raise PackageError(f"{_shown(name)} is {_kind(now.st_mode)}, not a regular file; nothing was read from it")
            fd, where = where, -1
            return fd, now.st_size
        finally:
            if where >= 0:
                os.close(where)

    def path(self, name: str) -> str:
        """The full path of a checked file, confirmed to resolve inside the package."""
        full = os.path.join(self.root, *name.split("/"))
        resolved = os.path.realpath(full)
        if resolved != full or os.path.commonpath([resolved, self.root]) != str(self.root):
            raise PackageError(f"{_shown(name)} resolves outside the package")
        return full

    def read(self, name: str, limit: int) -> bytes:
        """The whole of a small file (the manifest, items.jsonl), at most `limit` bytes."""
        fd, size = self.open(name)
        try:
            if size > limit:
                raise PackageError(f"{_shown(name)} is {size:,} bytes, over the limit of {limit:,}")
            chunks, total = [], 0
            while chunk := os.read(fd, min(_BLOCK, limit + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise PackageError(f"{_shown(name)} is over the limit of {limit:,} bytes")
            return b"".join(chunks)
        finally:
            os.close(fd)

    def sha256(self, name: str, limit: int) -> tuple[str, int]:
        """(hash, bytes) of a file the manifest lists, reading at most `limit` bytes of it."""
        fd, size = self.open(name)
        try:
            if size > limit:
                raise PackageError(f"{_shown(name)} is {size:,} bytes, over the limit of {limit:,} per file")
            digest, total = hashlib.sha256(), 0
            while block := os.read(fd, _BLOCK):
                total += len(block)
                if total > limit:
                    raise PackageError(f"{_shown(name)} is over the limit of {limit:,} bytes per file")
                digest.update(block)
            return digest.hexdigest(), total
        finally:
            os.close(fd)


def _text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackageError(f"{name} is not UTF-8 text (byte {exc.start:,}); download the export again") from None


def _check(folder: Path) -> tuple[_Package, dict[str, str], bytes]:
    """The opened package, {relative path: sha256} of every file the manifest lists, and the bytes of
    items.jsonl that were hashed (so the items parsed are the ones checked); PackageError naming the failures."""
    package = _Package(Path(folder))
    try:
        try:
            manifest = package.read(MANIFEST, MAX_MANIFEST_BYTES)
        except _Missing:
            raise PackageError(f"{folder} has no {MANIFEST}: it is not a benchmark export (unpack export.zip, or run `manage.py benchmark_export`)") from None
        except PackageError as exc:
            raise PackageError(f"the package in {folder} failed its manifest check, nothing was scored: {exc}") from None
        lines = _text(manifest, MANIFEST).splitlines()
        if len(lines) > MAX_MANIFEST_ENTRIES:
            raise PackageError(f"{MANIFEST} has {len(lines):,} lines, over the limit of {MAX_MANIFEST_ENTRIES:,}; nothing was scored")
        sums: dict[str, str] = {}
        problems: list[str] = []
        items_bytes = b""
        total = 0
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            digest, sep, name = line.partition("  ")
            if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                problems.append(f"{MANIFEST} line {number} is not '<sha256>  <path>'")
                continue
            if _parts(name) is None:
                problems.append(f"{MANIFEST} line {number} names a path outside the package: {_shown(name)}")
                continue
            try:
                if name == ITEMS:
                    items_bytes = package.read(ITEMS, MAX_ITEMS_BYTES)
                    actual, size = hashlib.sha256(items_bytes).hexdigest(), len(items_bytes)
                else:
                    actual, size = package.sha256(name, MAX_FILE_BYTES)
            except PackageError as exc:
                problems.append(str(exc))
                continue
            total += size
            if total > MAX_PACKAGE_BYTES:
                problems.append(f"the files {MANIFEST} lists are over the limit of {MAX_PACKAGE_BYTES:,} bytes in all (at {_shown(name)}); the rest were not read")
                break
            if actual != digest:
                problems.append(f"{_shown(name)} does not match its checksum (changed or truncated; download the export again)")
            else:
                sums[name] = digest
        if ITEMS not in sums and not any(ITEMS in p for p in problems):
            problems.append(f"{MANIFEST} does not list {ITEMS}")
        if problems:
            more = f" (and {len(problems) - MAX_LISTED} more)" if len(problems) > MAX_LISTED else ""
            raise PackageError(f"the package in {folder} failed its manifest check, nothing was scored: " + "; ".join(problems[:MAX_LISTED]) + more)
        return package, sums, items_bytes
    except BaseException:
        package.close()
        raise


def read_manifest(folder: Path) -> dict[str, str]:
    """{relative path: sha256} from MANIFEST.sha256, every file checked; PackageError naming the failures."""
    package, sums, _ = _check(folder)
    package.close()
    return sums


def _depth(line: str) -> int:
    """How deeply arrays and objects nest in one JSON line (brackets inside strings do not count)."""
    if line.count("[") + line.count("{") <= MAX_DEPTH:
        return 0  # cannot be deeper than the limit: skip the scan
    bare = _STRINGS.sub('""', line)
    depth = deepest = 0
    for char in bare:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _string_field(row: dict, key: str, where: str, problems: list[str]) -> str:
    value = row.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"{where}: {key} is not a string")
        return ""
    return value


def read_items(folder: Path) -> list[Item]:
    """The export's items, after the manifest check, with each clip's hash from the manifest."""
    folder = Path(folder)
    package, sums, data = _check(folder)
    try:
        return _parse_items(package, sums, data, folder)
    finally:
        package.close()


def _parse_items(package: _Package, sums: dict[str, str], data: bytes, folder: Path) -> list[Item]:
    items, problems, seen = [], [], set()

    def clip(name, where: str) -> ClipAudio | None:
        if not isinstance(name, str) or name not in sums:
            problems.append(f"{where}: {_shown(str(name))} is not a file listed in {MANIFEST}")
            return None
        try:
            return ClipAudio(path=package.path(name), sha256=sums[name])
        except PackageError as exc:
            problems.append(f"{where}: {exc}")
            return None

    count = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if len(problems) > MAX_LISTED:
            break
        where = f"{ITEMS} line {number}"
        if len(raw) > MAX_LINE_BYTES:
            raise PackageError(f"{where} is {len(raw):,} bytes, over the limit of {MAX_LINE_BYTES:,} per line; nothing was scored")
        line = _text(raw, where)
        if not line.strip():
            continue
        count += 1
        if count > MAX_ITEMS:
            raise PackageError(f"{folder / ITEMS} holds more than {MAX_ITEMS:,} items, the limit; nothing was scored")
        if _depth(line) > MAX_DEPTH:
            raise PackageError(f"{where} nests arrays or objects more than {MAX_DEPTH} deep, the limit; nothing was scored")
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not valid JSON ({exc.msg})")
            continue
        except (ValueError, RecursionError) as exc:  # e.g. an integer of more digits than Python converts
            problems.append(f"{where}: not valid JSON ({str(exc)[:100]})")
            continue
        if not isinstance(row, dict) or not row.get("id") or isinstance(row["id"], bool) or not isinstance(row["id"], str | int):
            problems.append(f"{where}: not an item (a JSON object with an id)")
            continue
        item_id = str(row["id"])
        if len(item_id) > MAX_ID_CHARS:
            problems.append(f"{where}: the id is longer than {MAX_ID_CHARS} characters")
            continue
        if item_id in seen:
            problems.append(f"{where}: the id {_shown(item_id)} is used by an earlier line")
            continue
        seen.add(item_id)
        before = len(problems)
        prompt = _string_field(row, "prompt", where, problems)
        lyrics = _string_field(row, "lyrics", where, problems)
        a = clip(row.get("audio_a", ""), where)
        b = clip(row.get("audio_b", ""), where)
        reference = clip(row["reference_audio"], where) if row.get("reference_audio") else None
        if len(problems) > before or a is None or b is None:
            continue
        condition = ConditionInput(prompt=prompt, lyrics=lyrics, reference=reference)
        items.append(Item(id=item_id, clip_a=a, clip_b=b, condition=condition))
    if problems:
        more = " (and more)" if len(problems) > MAX_LISTED else ""
        raise PackageError("the package's items do not fit it, nothing was scored: " + "; ".join(problems[:MAX_LISTED]) + more)
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
