"""Import from the admin's upload form: a JSONL file and a zip of the audio, unpacked safely into a scratch folder."""

from __future__ import annotations

import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from django.conf import settings

from .importer import ImportReport, pairs_import
from .keys import DEFAULT_STUDY, MAX_ZIP_ENTRIES, WINDOWS_DRIVE, DatasetError


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
    """Extract a zip only if it has at most MAX_ZIP_ENTRIES entries, every one stays inside dest, none is a link, and the total fits max_bytes.

    Every entry is checked before anything is written, so a bad archive leaves dest empty.
    Sizes are counted while copying too: a zip's header may understate what it expands to.
    """
    try:
        handle = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError):
        raise DatasetError("The audio archive is not a valid zip file.", code="bad_zip") from None
    dest = dest.resolve()
    with handle:
        listed = handle.infolist()
        if len(listed) > MAX_ZIP_ENTRIES:
            raise DatasetError(
                f"The archive holds {len(listed):,} entries; the limit is {MAX_ZIP_ENTRIES:,}. Split the dataset into several imports.", code="zip_too_many_entries"
            )
        entries, declared = [], 0
        for info in listed:
            name = info.filename.replace("\\", "/")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise DatasetError(f"Archive entry {info.filename!r} is a symbolic link; links are not accepted.", code="zip_link")
            if name.startswith("/") or WINDOWS_DRIVE.match(name):
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

