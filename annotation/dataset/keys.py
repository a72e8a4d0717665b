"""The CMI-RewardBench / CMI-Pref JSONL format as import and export share it: keys, labels, folders, the request error."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from common.errors import ServiceError

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
# A pair exported without a vote has these keys empty: import then makes the pair alone, and an
# evaluator counting only model_a / model_b / both / neither leaves the row out.
UNVOTED_EMPTY_KEYS = (
    "user id",
    "preference-musicality",
    "preference-alignment",
    "confidence_preference-musicality",
    "confidence_preference-alignment",
    "feedback",
)
# Longest text each field may hold, in characters: a prompt is a sentence or a paragraph, lyrics a
# song; the ids and labels fit their database columns. A longer value is a bad row, named by line.
TEXT_LIMITS = {
    "prompt": 5000,
    "lyrics": 20000,
    "feedback": 10000,
    "model_a": 120,
    "model_b": 120,
    "prompt id": 200,
    "user id": 100,
    "split": 10,
    "modality": 20,
    "source": 200,
    "audio-path": 500,
    "audio2": 500,
    "ref-audio-path": 500,
}
# A zip with more entries than this is refused before any is read (each costs a stat and a file).
MAX_ZIP_ENTRIES = 50000
REQUIRED_KEYS = ("audio-path", "audio2", "model_a", "model_b", "split")
VOTE_KEYS = (
    "preference-musicality",
    "preference-alignment",
    "confidence_preference-musicality",
    "confidence_preference-alignment",
)
# both / neither name no single clip (CMI-RewardBench's evaluator scores either as 0.5); kept as given.
PREFERENCE_LABELS = {"model_a": "a", "a": "a", "model_b": "b", "b": "b", "both": "both", "neither": "neither"}
TIE_LABELS = ("both", "neither")
GENERATED_DIR = "gen-audio"
REFERENCE_DIR = "ref-audio"
# A Windows drive prefix ("C:"): an absolute path, whatever the separators.
WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
# Exported clip names: a 16-hex prefix of the content hash, or all 64 where prefixes would clash.
EXPORT_STEM = re.compile(r"^(?:[0-9a-f]{16}|[0-9a-f]{64})$")


def export_hash_stem(path: str) -> str | None:
    """The hash (or hash prefix) an exported path names its clip by (`<any folder>/gen-audio/<hash><ext>`), else None."""
    name = PurePosixPath(path)
    if name.parent.name in (GENERATED_DIR, REFERENCE_DIR) and EXPORT_STEM.match(name.stem):
        return name.stem
    return None


def export_path_names(path: str, *, sha256: str, extension: str) -> bool:
    """Whether `path` is how an export names the clip with this content hash and extension."""
    stem = export_hash_stem(path)
    return stem is not None and sha256.startswith(stem) and PurePosixPath(path).suffix == extension


class DatasetError(ServiceError):
    """A problem with the whole request (missing file, bad archive), not with one row."""

