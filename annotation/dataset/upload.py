"""Import from an upload form: a JSONL file and a zip of the audio.

The zip's directory is checked whole before a byte is unpacked (count, names, sizes, methods,
links, clashes), and then only the entries the rows name are unpacked, each when its row is
read: a zip of fifty thousand entries or half a gigabyte costs nothing for the entries no row
names, and a row that fails before its audio unpacks nothing.
"""

from __future__ import annotations

import stat
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from django.conf import settings

from .importer import ImportReport, pairs_import
from .keys import DEFAULT_STUDY, MAX_ZIP_ENTRIES, WINDOWS_DRIVE, DatasetError

# Longest entry name, per folder or file name and whole, in characters: file systems refuse names past 255 bytes.
MAX_NAME_PART = 200
MAX_NAME = 1000
# What zipfile can decompress; anything else (PPMd is method 98) is refused by name up front.
ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}


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


def _entry_name(info: zipfile.ZipInfo) -> str:
    name = info.filename.replace("\\", "/")
    shown = info.filename if len(info.filename) <= 80 else info.filename[:60] + "…"
    if stat.S_ISLNK(info.external_attr >> 16):
        raise DatasetError(f"Archive entry {shown!r} is a symbolic link; links are not accepted.", code="zip_link")
    if name.startswith("/") or WINDOWS_DRIVE.match(name):
        raise DatasetError(f"Archive entry {shown!r} has an absolute path; it was refused.", code="zip_absolute")
    parts = PurePosixPath(name).parts
    if ".." in parts:
        raise DatasetError(f"Archive entry {shown!r} points outside the archive ('..'); it was refused.", code="zip_traversal")
    if "\x00" in name or len(name) > MAX_NAME or any(len(part) > MAX_NAME_PART for part in parts):
        raise DatasetError(
            f"Archive entry {shown!r} has a name longer than the limit ({MAX_NAME_PART} characters per folder or file name, {MAX_NAME} in all); rename it.",
            code="zip_name",
        )
    if info.flag_bits & 0x1:
        raise DatasetError(f"Archive entry {shown!r} is encrypted; upload an unencrypted zip.", code="zip_encrypted")
    if not info.is_dir() and info.compress_type not in ZIP_METHODS:
        raise DatasetError(
            f"Archive entry {shown!r} uses compression method {info.compress_type}, which cannot be read; "
            f"use {', '.join(sorted(ZIP_METHODS.values()))} (a plain zip uses deflate).",
            code="zip_method",
        )
    return PurePosixPath(name).as_posix()


class ZipAudio:
    """A zip whose whole directory has been checked; entries are unpacked into `dest` only when asked for."""

    def __init__(self, *, archive: Path, dest: Path, max_bytes: int):
        try:
            self.handle = zipfile.ZipFile(archive)
            listed = self.handle.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            raise DatasetError("The audio archive is not a valid zip file.", code="bad_zip") from None
        self.dest, self.max_bytes, self.written = dest.resolve(), max_bytes, 0
        try:
            self.entries = self._check(listed)
        except BaseException:
            self.handle.close()
            raise
        self.unpacked: set[str] = set()

    def _check(self, listed: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
        if len(listed) > MAX_ZIP_ENTRIES:
            raise DatasetError(
                f"The archive holds {len(listed):,} entries; the limit is {MAX_ZIP_ENTRIES:,}. Split the dataset into several imports.", code="zip_too_many_entries"
            )
        files: dict[str, zipfile.ZipInfo] = {}
        folders: set[str] = set()
        declared = 0
        for info in listed:
            name = _entry_name(info)
            if name in (".", ""):
                continue
            parents = {parent.as_posix() for parent in PurePosixPath(name).parents if parent.as_posix() != "."}
            if info.is_dir():
                folders.add(name)
            else:
                if name in files:
                    raise DatasetError(f"The archive holds {name!r} twice; each file may appear once.", code="zip_duplicate")
                files[name] = info
                declared += info.file_size
                if declared > self.max_bytes:
                    raise DatasetError(f"The archive expands to more than the limit of {self.max_bytes:,} bytes.", code="too_large")
            folders |= parents
        clash = sorted(set(files) & folders)
        if clash:
            raise DatasetError(f"The archive holds {clash[0]!r} both as a file and as a folder of other entries; rename one.", code="zip_clash")
        return files

    def extract(self, name: str) -> Path | None:
        """Unpack the entry named `name` (as a row names it: relative, '/'-separated); None if the zip has no such file."""
        info = self.entries.get(name)
        if info is None:
            return None
        target = self.dest / name
        if name in self.unpacked:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self.handle.open(info) as src, open(target, "wb") as out:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    self.written += len(chunk)
                    if self.written > self.max_bytes:
                        raise DatasetError(f"The archive expands to more than the limit of {self.max_bytes:,} bytes.", code="too_large")
                    out.write(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as exc:
            target.unlink(missing_ok=True)
            reason = "its checksum (CRC) does not match its contents" if "CRC" in str(exc) else "its compressed data is damaged"
            raise DatasetError(f"Archive entry {name!r} cannot be unpacked: {reason}. Rebuild the zip and upload it again; nothing was imported.", code="zip_damaged") from None
        self.unpacked.add(name)
        return target

    def close(self) -> None:
        self.handle.close()


def zip_extract_safely(*, archive: Path, dest: Path, max_bytes: int) -> list[str]:
    """Extract every file of a zip whose whole directory passes the checks (ZipAudio); a bad archive leaves dest empty."""
    dest.mkdir(parents=True, exist_ok=True)
    zipped = ZipAudio(archive=archive, dest=dest, max_bytes=max_bytes)
    try:
        names = []
        for name, info in zipped.entries.items():
            zipped.extract(name)
            names.append(info.filename)
        return names
    finally:
        zipped.close()


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
        zipped = ZipAudio(archive=archive_path, dest=root, max_bytes=limit)
        try:
            if jsonl is not None:
                name = Path(getattr(jsonl, "name", "") or "upload.jsonl").name
                files, names = [_save_upload(jsonl, tmp / "rows.jsonl", limit=limit, what="JSONL file")], [name]
            else:
                top = sorted(name for name in zipped.entries if "/" not in name and name.endswith(".jsonl"))
                if not top:
                    raise DatasetError("No JSONL file: upload one, or put train.jsonl / test.jsonl at the top of the zip.", code="missing_file")
                files, names = [zipped.extract(name) for name in top], top
            return pairs_import(files=files, names=names, audio_root=root, study_name=study_name, skip_invalid=skip_invalid, fetch_audio=zipped.extract)
        finally:
            zipped.close()
