"""Import, first phase (part one): read the JSONL files and parse each row on its own.

Every audio file is opened, decoded and hashed once. Nothing is written here; a row
that cannot be used is reported by file and line.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cached_property
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

from common.parsers import JsonTooDeep, loads_bounded

from ..models import Modality, Pair, modality_for
from ..services import AudioError, AudioInfo, audio_probe, condition_content_key, file_sha256
from .keys import PREFERENCE_LABELS, REQUIRED_KEYS, TEXT_LIMITS, TIE_LABELS, VOTE_KEYS, WINDOWS_DRIVE


@dataclass(frozen=True)
class RowError:
    source: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.source} line {self.line}: {self.message}"


# A file with millions of bad lines must not cost millions of messages: the first ones and a count say enough.
MAX_REPORTED_ERRORS = 100


class BoundedErrors(list):
    """The first MAX_REPORTED_ERRORS errors, and `total`, how many there were."""

    def __init__(self, *args):
        super().__init__(*args)
        self.total = len(self)

    def append(self, item) -> None:
        self.total += 1
        if len(self) < MAX_REPORTED_ERRORS:
            super().append(item)

    def __bool__(self) -> bool:
        return self.total > 0


@dataclass
class ImportReport:
    rows: int = 0
    valid_rows: int = 0
    errors: BoundedErrors = field(default_factory=BoundedErrors)
    warnings: list[str] = field(default_factory=list)
    imported: bool = False
    created: Counter = field(default_factory=Counter)
    existing: Counter = field(default_factory=Counter)

    @property
    def error_count(self) -> int:
        return getattr(self.errors, "total", len(self.errors))

    def summary(self) -> str:
        c, e = self.created, self.existing
        lines = [
            f"rows: {self.rows} read, {self.valid_rows} valid, {self.error_count} invalid"
            + (f" (the first {len(self.errors)} listed)" if self.error_count > len(self.errors) else ""),
            f"created: {c['systems']} systems, {c['clips']} clips, {c['conditions']} conditions, {c['pairs']} pairs, "
            f"{c['annotators']} annotators, {c['judgments']} judgments",
            f"skipped (already present): {e['clips']} clips, {e['conditions']} conditions, {e['pairs']} pairs, {e['judgments']} judgments",
        ]
        if not self.imported:
            lines.append("nothing was imported")
        return "\n".join(lines)


class RowInvalid(Exception):
    pass


# --- Parsing one row -----------------------------------------------------------------


@dataclass(frozen=True)
class AudioFile:
    rel: str
    path: Path
    sha256: str
    info: AudioInfo


@dataclass(frozen=True)
class _Vote:
    user_id: str
    alignment: str  # "a" or "b" (the side as shown, a = audio-path), or "both" / "neither"
    musicality: str
    alignment_confidence: Decimal
    musicality_confidence: Decimal
    feedback: str


@dataclass
class Row:
    source: str
    line: int
    a: AudioFile
    b: AudioFile
    ref: AudioFile | None
    model_a: str
    model_b: str
    prompt: str
    lyrics: str
    prompt_id: str
    split: str
    vote: _Vote | None
    # The row's `source` label as given (the benchmark subset or collection it came from); "" when absent.
    dataset_source: str = ""

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
        winner = {"a": self.a.sha256, "b": self.b.sha256, **{label: label for label in TIE_LABELS}}
        return (self.a.sha256, winner[v.alignment], winner[v.musicality], v.alignment_confidence, v.musicality_confidence, v.feedback)

def _text(obj: dict, key: str, *, max_length: int | None = None, exact: bool = False) -> str:
    """A text field; ids and labels lose surrounding whitespace, `exact` texts (prompt, lyrics, feedback) keep every byte."""
    max_length = max_length or TEXT_LIMITS.get(key)
    value = obj.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RowInvalid(f"{key} must be a string, not {type(value).__name__}")
    text = str(value) if exact else str(value).strip()
    if "\x00" in text:
        raise RowInvalid(f"{key} contains a NUL character, which a database text field cannot hold")
    if max_length is not None and len(text) > max_length:
        raise RowInvalid(f"{key} is {len(text):,} characters long; the limit is {max_length:,}")
    return text


def _relative_path(root: Path, raw, key: str) -> tuple[str, Path]:
    if not isinstance(raw, str):
        raise RowInvalid(f"{key} must be a path string, not {type(raw).__name__}")
    if not raw.strip():
        raise RowInvalid(f"{key} is empty")
    if len(raw) > TEXT_LIMITS[key]:
        raise RowInvalid(f"{key} is {len(raw):,} characters long; the limit is {TEXT_LIMITS[key]:,}")
    if raw.startswith(("/", "\\", "~")) or WINDOWS_DRIVE.match(raw):
        raise RowInvalid(f"{key} {raw!r} is an absolute path; give paths relative to the audio root")
    rel = PurePosixPath(raw)
    if ".." in rel.parts:
        raise RowInvalid(f"{key} {raw!r} leaves the audio root ('..' is not allowed)")
    resolved = (root / rel).resolve()
    if not resolved.is_relative_to(root):
        raise RowInvalid(f"{key} {raw!r} leaves the audio root through a symbolic link")
    return rel.as_posix(), resolved


def _confidence(obj: dict, key: str) -> Decimal:
    value = obj.get(key)
    if value is None or value == "":
        raise RowInvalid(f"missing {key} (a vote needs both preferences and both confidences)")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RowInvalid(f"{key} must be a number or a string like \"3.0\"")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise RowInvalid(f"{key} {value!r} is not a number; use 1.0 to 5.0 in steps of 0.5") from None
    if not number.is_finite() or number < 1 or number > 5:
        raise RowInvalid(f"{key} {value!r} is out of range; use 1.0 to 5.0 in steps of 0.5")
    if (number * 2) % 1 != 0:
        raise RowInvalid(f"{key} {value!r} is not a half step; use 1.0, 1.5, 2.0, ... 5.0")
    return number.quantize(Decimal("0.1"))


def _preference(obj: dict, key: str) -> str:
    value = obj.get(key)
    if value is None or value == "":
        raise RowInvalid(f"missing {key} (a vote needs both preferences and both confidences)")
    label = PREFERENCE_LABELS.get(str(value).strip().lower()) if isinstance(value, str) else None
    if label is None:
        raise RowInvalid(f"{key} has unknown label {value!r}; use model_a or model_b (a / b, both / neither also accepted)")
    return label


class _AudioCache:
    """Each file is opened, decoded and hashed once, however many rows name it.

    `fetch(rel)`, where given, brings the file into place first (an upload unpacks a zip entry only when a row names it).
    """

    def __init__(self, fetch=None):
        self._seen: dict[Path, AudioFile | str] = {}
        self._fetch = fetch

    def get(self, rel: str, path: Path, key: str) -> AudioFile:
        if path not in self._seen:
            if self._fetch is not None:
                self._fetch(rel)
            try:
                info = audio_probe(path)
                self._seen[path] = AudioFile(rel=rel, path=path, sha256=file_sha256(path), info=info)
            except AudioError as exc:
                self._seen[path] = exc.message
        found = self._seen[path]
        if isinstance(found, str):
            raise RowInvalid(f"{key} {rel!r}: {found}")
        return found


def _parse_row(obj, *, root: Path, audio: _AudioCache, source: str, line: int) -> Row:
    if not isinstance(obj, dict):
        raise RowInvalid(f"each line must be a JSON object, not {type(obj).__name__}")
    missing = [key for key in REQUIRED_KEYS if key not in obj]
    if missing:
        raise RowInvalid("missing required key " + ", ".join(repr(k) for k in missing))

    split = _text(obj, "split").lower()
    if split not in Pair.Split.values:
        raise RowInvalid(f"split {obj.get('split')!r} is not train or test")
    model_a = _text(obj, "model_a", max_length=120)
    model_b = _text(obj, "model_b", max_length=120)
    prompt, lyrics = _text(obj, "prompt", exact=True), _text(obj, "lyrics", exact=True)
    prompt_id = _text(obj, "prompt id", max_length=200)

    rel_a, path_a = _relative_path(root, obj["audio-path"], "audio-path")
    rel_b, path_b = _relative_path(root, obj["audio2"], "audio2")
    if path_a == path_b:
        raise RowInvalid(f"audio-path and audio2 are the same file ({rel_a!r}); a pair needs two different clips")
    ref_raw = obj.get("ref-audio-path") or ""
    ref_rel = ref_path = None
    if ref_raw:
        ref_rel, ref_path = _relative_path(root, ref_raw, "ref-audio-path")

    a = audio.get(rel_a, path_a, "audio-path")
    b = audio.get(rel_b, path_b, "audio2")
    if a.sha256 == b.sha256:
        raise RowInvalid(f"audio-path {rel_a!r} and audio2 {rel_b!r} have identical content; a pair needs two different clips")
    ref = audio.get(ref_rel, ref_path, "ref-audio-path") if ref_path else None
    if ref is not None and ref.sha256 in (a.sha256, b.sha256):
        raise RowInvalid("ref-audio-path has the same content as one of the clips being compared")
    if not (prompt.strip() or lyrics.strip() or ref):
        raise RowInvalid("the row has no prompt, lyrics or reference audio; a condition needs at least one")

    dataset_source = _text(obj, "source")
    modality = _text(obj, "modality")
    if modality:
        inferred = modality_for(has_lyrics=bool(lyrics.strip()), has_reference=ref is not None)
        if modality not in Modality.values:
            raise RowInvalid(f"modality {modality!r} is unknown; use one of {', '.join(Modality.values)}")
        if modality != inferred:
            raise RowInvalid(f"modality {modality!r} does not match the row: its lyrics and reference audio make it {inferred!r}")

    vote = None
    if any(obj.get(key) not in (None, "") for key in VOTE_KEYS):
        user_id = _text(obj, "user id", max_length=100)
        if not user_id:
            raise RowInvalid("missing user id: a row with preferences must say who voted")
        vote = _Vote(
            user_id=user_id,
            musicality=_preference(obj, "preference-musicality"),
            alignment=_preference(obj, "preference-alignment"),
            musicality_confidence=_confidence(obj, "confidence_preference-musicality"),
            alignment_confidence=_confidence(obj, "confidence_preference-alignment"),
            feedback=_text(obj, "feedback", exact=True),
        )
    return Row(source, line, a, b, ref, model_a, model_b, prompt, lyrics, prompt_id, split, vote, dataset_source)


# Longest JSONL line read, in bytes: a row's longest texts (TEXT_LIMITS) fit many times over,
# even written as \u escapes; a longer line is reported by number and skipped unread.
MAX_LINE_BYTES = 1024 * 1024


def _lines(handle, cap: int):
    """(line number, bytes) per line, read at most cap + 1 bytes at a time; a longer line gives (number, None) and is skipped."""
    line_no = 0
    while True:
        raw = handle.readline(cap + 1)
        if not raw:
            return
        line_no += 1
        if len(raw) > cap and not raw.endswith(b"\n"):
            while True:
                rest = handle.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield line_no, None
        else:
            yield line_no, raw


def read_rows(sources: list[tuple[str, Path]], *, root: Path, report: ImportReport, fetch=None) -> list[Row]:
    audio = _AudioCache(fetch)
    rows = []
    for name, path in sources:
        with open(path, "rb") as handle:
            for line_no, raw in _lines(handle, MAX_LINE_BYTES):
                if raw is None:
                    report.rows += 1
                    report.errors.append(RowError(name, line_no, f"the line is longer than {MAX_LINE_BYTES:,} bytes; a row is one object of short texts"))
                    continue
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
                    obj = loads_bounded(text)
                except json.JSONDecodeError as exc:
                    report.errors.append(RowError(name, line_no, f"malformed JSON: {exc.msg} (column {exc.colno})"))
                    continue
                except JsonTooDeep as exc:
                    report.errors.append(RowError(name, line_no, f"{exc}; a row is one flat object"))
                    continue
                except ValueError as exc:  # e.g. an integer longer than Python's 4300-digit limit
                    report.errors.append(RowError(name, line_no, f"malformed JSON: {exc}"))
                    continue
                try:
                    rows.append(_parse_row(obj, root=root, audio=audio, source=name, line=line_no))
                except RowInvalid as exc:
                    report.errors.append(RowError(name, line_no, str(exc)))
    return rows

