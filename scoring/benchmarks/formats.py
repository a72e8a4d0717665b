"""The files a benchmark reads and writes: export rows (the task's input) and prediction files.

Plain Python: no database. docs/benchmarks.md describes both layouts; the rules for a prediction
file are:

- One JSON object per line (JSONL), or a JSON array of objects / {"predictions": [...]}; for an
  array, "line" in a message means the entry's 1-based position.
- Every row needs an `id` of the benchmark. An unknown id, an id given twice, a line that is not
  a JSON object, a label outside the vocabulary or a probability outside [0, 1] refuses the whole
  file, with every offending line named (up to MAX_ERRORS); nothing is stored.
- An id of the benchmark that the file does not give is a **missing** item: it is counted wrong,
  and the submission's coverage shows how many there were.
- A row may answer one dimension only: the other counts as missing for that item.
- The layouts are the table LAYOUTS: a pair benchmark takes MIREX rows and CMI-RewardBench's results.jsonl, a MOS
  benchmark a score per clip (`score`, `score_<dimension>`) or CMI-RewardBench's per-row MOS results; the first
  layout of the benchmark's kind that recognises a row reads it, and one file keeps one layout.
- Bounds, each checked before the work it would make costly, so no file costs more than reading it once: at most
  the benchmark's items + ROW_MARGIN rows, MAX_LINE_CHARS per line, MAX_DEPTH levels of nesting, MAX_NUMBER_CHARS
  per number; the file is read lazily, line by line (or entry by entry), and the first bound crossed or MAX_ERRORS
  problems stop the reading.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from scoring.evaluation import ALIGNMENT, CODE, DIMENSIONS, MODEL_A, MODEL_B, MUSICALITY, NO_LABEL, label_code, prefer

MIREX, CMI_RESULTS = "mirex", "cmi-results"
MOS_SCORES, CMI_MOS = "mos-scores", "cmi-mos"
PAIRS, MOS = "pairs", "mos"  # Benchmark.Kind: what a layout answers
MAX_ERRORS = 20
CMI_SOURCE, ARENA_SOURCE = "cmi-arena-annotation", "Music Arena"

# CMI-RewardBench's results.jsonl: the label its inference writes per dimension, and the per-clip
# scores it writes beside them (A's under the plain key, B's under "<key>_b").
CMI_LABEL_KEYS = {ALIGNMENT: "predicted_preference-alignment", MUSICALITY: "predicted_preference-musicality"}
CMI_SCORE_KEYS = {ALIGNMENT: "predicted_text-music alignment", MUSICALITY: "predicted_musicality"}
# Its Music Arena rows carry one prediction, from the musicality scores; so does our arena item.
CMI_ARENA_KEY = "predicted_preference"

_SPELLINGS_HELP = "A, B, model_a, model_b, both or neither"


class PredictionFileError(ValueError):
    """A refused prediction file; `errors` lists one message per offending line."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        more = "" if len(errors) < MAX_ERRORS else f" (only the first {MAX_ERRORS} problems are listed)"
        super().__init__("The file was refused and nothing was stored: " + "; ".join(errors) + more)


@dataclass
class ParsedPredictions:
    """Predictions keyed by item id: {id: {"alignment": code, "musicality": code, "prob_alignment": p, ...}}."""

    layout: str
    rows: dict = field(default_factory=dict)


def _label(value, where: str, key: str, errors: list) -> int:
    if value is None or value == "":
        return NO_LABEL
    code = label_code(value)
    if code == NO_LABEL:
        errors.append(f"{where}: {key} {str(value)[:40]!r} is not one of {_SPELLINGS_HELP}")
    return code


def _probability(value, where: str, key: str, errors: list) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        errors.append(f"{where}: {key} must be a number from 0 to 1")
        return None
    return float(value)


def _mirex_row(row: dict, where: str, errors: list) -> dict:
    out: dict = {}
    both = _label(row.get("preferred"), where, "preferred", errors)
    prob_both = _probability(row.get("probability_a"), where, "probability_a", errors)
    for dim in DIMENSIONS:
        code = _label(row.get(f"preferred_{dim}"), where, f"preferred_{dim}", errors)
        prob = _probability(row.get(f"probability_a_{dim}"), where, f"probability_a_{dim}", errors)
        code = both if code == NO_LABEL else code
        prob = prob_both if prob is None else prob
        if code == NO_LABEL and prob is not None:
            # A probability alone decides like two scores do: A only when it is above one half.
            code = CODE[MODEL_A] if prob > 0.5 else CODE[MODEL_B]
        out[dim] = code
        out[f"prob_{dim}"] = prob
    return out


def _cmi_row(row: dict, where: str, errors: list) -> dict:
    out: dict = {}
    arena = ARENA_SOURCE in str(row.get("source", ""))
    for dim in DIMENSIONS:
        key = CMI_ARENA_KEY if arena and dim == MUSICALITY else CMI_LABEL_KEYS[dim]
        code = _label(row.get(key), where, key, errors)
        if code == NO_LABEL and not (arena and dim == ALIGNMENT):
            # The label is written whenever both scores exist; rebuild it from them when a tool
            # kept the scores only, with the same tie rule.
            score_key = CMI_SCORE_KEYS[dim]
            code = label_code(prefer(row.get(score_key), row.get(f"{score_key}_b")))
        out[dim] = code
        out[f"prob_{dim}"] = None
    return out


def _is_cmi(row: dict) -> bool:
    return any(str(key).startswith("predicted_") for key in row)


def _score(value, where: str, key: str, errors: list) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        errors.append(f"{where}: {key} must be a finite number")
        return None
    return float(value)


def _mos_row(row: dict, where: str, errors: list) -> dict:
    both = _score(row.get("score"), where, "score", errors)
    out: dict = {}
    for dim in DIMENSIONS:
        own = _score(row.get(f"score_{dim}"), where, f"score_{dim}", errors)
        out[f"score_{dim}"] = both if own is None else own
    return out


def _cmi_mos_row(row: dict, where: str, errors: list) -> dict:
    # CMI-RewardBench's per-row results on its MOS sets: the judge's score per clip under the ground truth's key.
    return {f"score_{dim}": _score(row.get(CMI_SCORE_KEYS[dim]), where, CMI_SCORE_KEYS[dim], errors) for dim in DIMENSIONS}


def _has_label(values: dict) -> bool:
    return any(values[d] != NO_LABEL for d in DIMENSIONS)


def _has_score(values: dict) -> bool:
    return any(values[f"score_{d}"] is not None for d in DIMENSIONS)


@dataclass(frozen=True)
class Layout:
    """One prediction file layout: which benchmarks take it, how a row is recognised and read, and what a row that
    answers nothing is told."""

    name: str
    kind: str  # PAIRS or MOS
    detect: Callable[[dict], bool]  # row -> bool; a benchmark's layouts are tried in table order
    read: Callable[[dict, str, list], dict]  # (row, where, errors) -> values
    answers: Callable[[dict], bool]
    empty: str


LAYOUTS = (
    Layout(CMI_RESULTS, PAIRS, _is_cmi, _cmi_row, _has_label, "no preference for any dimension (give `preferred`, `preferred_<dimension>` or `probability_a`)"),
    Layout(MIREX, PAIRS, lambda row: True, _mirex_row, _has_label, "no preference for any dimension (give `preferred`, `preferred_<dimension>` or `probability_a`)"),
    Layout(CMI_MOS, MOS, _is_cmi, _cmi_mos_row, _has_score, f"no score for any dimension (give `{CMI_SCORE_KEYS[MUSICALITY]}` or `{CMI_SCORE_KEYS[ALIGNMENT]}`)"),
    Layout(MOS_SCORES, MOS, lambda row: True, _mos_row, _has_score, "no score for any dimension (give `score` or `score_<dimension>`)"),
)


def layouts_for(kind: str) -> tuple[Layout, ...]:
    return tuple(layout for layout in LAYOUTS if layout.kind == kind)


def layout_of(row: dict, kind: str) -> Layout:
    return next(layout for layout in layouts_for(kind) if layout.detect(row))


# Bounds that a file cannot talk its way past: each is checked before the work it would make costly.
MAX_LINE_CHARS = 256 * 1024  # a CMI-RewardBench results row with long lyrics is a few KB
MAX_DEPTH = 8  # a prediction row is a flat object; CMI rows nest a list or two
MAX_NUMBER_CHARS = 40  # a probability needs 17 significant digits at most
ROW_MARGIN = 100  # rows beyond the benchmark's items that a file may hold before it is refused unread


class _Refused(ValueError):
    pass


def _number(kind):
    def parse(text: str):
        if len(text) > MAX_NUMBER_CHARS:
            raise _Refused(f"a number with more than {MAX_NUMBER_CHARS} characters")
        return kind(text)

    return parse


_DECODER = json.JSONDecoder(parse_float=_number(float), parse_int=_number(int))


def _depth_ok(value, depth: int = 1) -> bool:
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, dict):
        return all(_depth_ok(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return all(_depth_ok(v, depth + 1) for v in value)
    return True


def _decode(text: str, start: int = 0) -> tuple[object, int]:
    """One JSON value from `start`: (value, end). Raises ValueError with a message a person can act on."""
    try:
        value, end = _DECODER.raw_decode(text, start)
    except _Refused as exc:
        raise ValueError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    if not _depth_ok(value):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return value, end


def loads_bounded(text: str):
    """json.loads with the file's bounds (depth, digits), for one answer or one line."""
    value, end = _decode(text, len(text) - len(text.lstrip()))
    if text[end:].strip():
        raise ValueError("not valid JSON (extra data after the value)")
    return value


_PREDICTIONS_OBJECT = re.compile(r'\s*\{\s*"predictions"\s*:\s*\[')


def _array_entries(text: str, start: int, closing: str):
    """Entries of a JSON array whose "[" ends at `start`, one at a time: (position, value, error)."""
    length, pos, number = len(text), start, 0
    while True:
        while pos < length and text[pos] in " \t\r\n":
            pos += 1
        if pos < length and text[pos] == "]" and number == 0:
            pos += 1
            break
        number += 1
        try:
            value, pos = _decode(text, pos)
        except ValueError as exc:
            yield number, None, f"line {number}: {exc}"
            return
        yield number, value, None
        while pos < length and text[pos] in " \t\r\n":
            pos += 1
        if pos < length and text[pos] == ",":
            pos += 1
            continue
        if pos < length and text[pos] == "]":
            pos += 1
            break
        yield number + 1, None, f"line {number + 1}: not valid JSON (expected , or ] after entry {number})"
        return
    if text[pos:].strip() != closing:
        yield number + 1, None, f"line {number + 1}: not valid JSON (extra data after the array)"


def _line_entries(text: str):
    """Non-empty lines, one at a time, without splitting the whole text first: (line number, value, error)."""
    pos, number, length = 0, 0, len(text)
    while pos < length:
        end = text.find("\n", pos)
        end = length if end < 0 else end
        number += 1
        if end - pos > MAX_LINE_CHARS:
            yield number, None, f"line {number}: longer than {MAX_LINE_CHARS} characters"
            return
        line = text[pos:end]
        pos = end + 1
        if not line.strip():
            continue
        try:
            yield number, loads_bounded(line), None
        except ValueError as exc:
            yield number, None, f"line {number}: {exc}"


def _entries(text: str):
    """(line number, decoded value or None, error) per non-empty line or array entry, lazily: a caller that stops
    early (too many errors or rows) leaves the rest of the file unread."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        return _array_entries(text, len(text) - len(stripped) + 1, "")
    match = _PREDICTIONS_OBJECT.match(text)
    if match:
        return _array_entries(text, match.end(), "}")
    return _line_entries(text)


def parse_predictions(data: bytes, *, item_ids: set[str], max_rows: int | None = None, kind: str = PAIRS) -> ParsedPredictions:
    """Read a prediction file in one of the layouts a benchmark of this kind takes (LAYOUTS); raise PredictionFileError.

    Bounded: at most `max_rows` rows (default: the items plus ROW_MARGIN), MAX_LINE_CHARS per line, MAX_DEPTH levels,
    MAX_NUMBER_CHARS per number; the first bound crossed (or MAX_ERRORS problems) stops the reading."""
    max_rows = len(item_ids) + ROW_MARGIN if max_rows is None else max_rows
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PredictionFileError([f"the file is not UTF-8 text (byte {exc.start})"]) from None
    errors: list[str] = []
    seen: dict[str, int] = {}
    parsed = ParsedPredictions(layout="")
    rows = 0
    for number, row, problem in _entries(text):
        if len(errors) >= MAX_ERRORS:
            break
        rows += 1
        if rows > max_rows:
            errors.append(f"line {number}: more rows than the benchmark's {len(item_ids)} items allow ({max_rows}); the rest was not read")
            break
        where = f"line {number}"
        if problem:
            errors.append(problem)
            continue
        if not isinstance(row, dict):
            errors.append(f"{where}: expected a JSON object")
            continue
        item_id = row.get("id")
        if not isinstance(item_id, str) or not item_id:
            errors.append(f"{where}: no `id` (every row needs the item's id from items.jsonl)")
            continue
        if item_id not in item_ids:
            errors.append(f"{where}: id {item_id[:60]!r} is not an item of this benchmark")
            continue
        if item_id in seen:
            errors.append(f"{where}: id {item_id!r} was already given on line {seen[item_id]}")
            continue
        seen[item_id] = number
        layout = layout_of(row, kind)
        if parsed.layout and layout.name != parsed.layout:
            errors.append(f"{where}: mixes the {layout.name} layout with the {parsed.layout} layout of the lines before")
            continue
        parsed.layout = layout.name
        before = len(errors)
        values = layout.read(row, where, errors)
        if len(errors) == before and not layout.answers(values):
            errors.append(f"{where}: {layout.empty}")
        parsed.rows[item_id] = values
    if errors:
        raise PredictionFileError(errors[:MAX_ERRORS])
    if not parsed.rows:
        raise PredictionFileError(["the file holds no predictions"])
    return parsed


# --- Export rows ---------------------------------------------------------------------------------------


def mos_export_row(*, item_id: str, prompt: str, lyrics: str, modality: str, audio: str, reference: str, cluster: str) -> dict:
    """One line of a MOS benchmark's items.jsonl: the clip to score and what it was made from, never its MOS.

    The audio path appears under `audio` and under the name CMI-RewardBench's MOS rows use (`audio-path`)."""
    return {
        "id": item_id,
        "prompt": prompt,
        "lyrics": lyrics,
        "audio": audio,
        "reference_audio": reference,
        "modality": modality,
        "audio-path": audio,
        "ref-audio-path": reference,
        "prompt id": cluster,
    }

_LETTER = {CODE[MODEL_A]: "model_a", CODE[MODEL_B]: "model_b", CODE["both"]: "both"}


def export_row(*, item_id: str, source: str, prompt: str, lyrics: str, modality: str, audio_a: str, audio_b: str, reference: str, cluster: str, labels: dict | None) -> dict:
    """One line of items.jsonl: the task's input (id, prompt, lyrics, audio A/B, reference).

    The audio paths appear twice: under the MIREX/arena names (`audio_a`, `audio_b`,
    `reference_audio`) and under the names CMI-RewardBench's inference reads (`audio-path`,
    `audio2`, `ref-audio-path`), with `source` and `split` set so that its tool selects every item.
    `labels` (dev benchmarks only) adds the human majority per dimension in CMI-Pref's keys.
    """
    row = {
        "id": item_id,
        "prompt": prompt,
        "lyrics": lyrics,
        "audio_a": audio_a,
        "audio_b": audio_b,
        "reference_audio": reference,
        "modality": modality,
        "audio-path": audio_a,
        "audio2": audio_b,
        "ref-audio-path": reference,
        "prompt id": cluster,
        "source": source,
        "split": "test",
    }
    if labels is not None:
        if source == ARENA_SOURCE:
            truth = (labels.get(MUSICALITY) or {}).get("truth", NO_LABEL)
            row["preference"] = {CODE[MODEL_A]: "A", CODE[MODEL_B]: "B"}.get(truth, "")
        else:
            for dim in DIMENSIONS:
                block = labels.get(dim) or {}
                row[f"preference-{dim}"] = _LETTER.get(block.get("truth", NO_LABEL), "")
                confidence = block.get("confidence")
                row[f"confidence_preference-{dim}"] = "" if confidence is None else f"{confidence:.1f}"
    return row
