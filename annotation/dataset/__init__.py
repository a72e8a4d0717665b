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

- keys.py: the format's keys, labels and folders; `DatasetError`
- rows.py: reading and parsing rows (import, first phase)
- importer.py: checks across rows and against the database, then the write; `pairs_import`
- upload.py: the admin's upload (JSONL + zip of audio, unpacked safely); `pairs_import_upload`
- exporter.py: `dataset_export` and the zip the pages and the API serve
"""

from .exporter import ExportReport, dataset_export, dataset_export_archive, prompt_id_for
from .importer import pairs_import
from .keys import DEFAULT_STUDY, EXPORT_KEYS, DatasetError
from .rows import ImportReport, RowError
from .upload import max_upload_bytes, pairs_import_upload, zip_extract_safely

__all__ = [
    "DEFAULT_STUDY",
    "EXPORT_KEYS",
    "DatasetError",
    "ExportReport",
    "ImportReport",
    "RowError",
    "dataset_export",
    "dataset_export_archive",
    "max_upload_bytes",
    "pairs_import",
    "pairs_import_upload",
    "prompt_id_for",
    "zip_extract_safely",
]
