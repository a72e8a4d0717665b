"""A hostile package given to `python -m scoring.judges score`: links out of it, devices, FIFOs, and
lines or files past the documented bounds are refused with one line naming the file and the problem,
and nothing outside the package is opened."""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.judges import offline
from scoring.judges.offline import PackageError, read_items

ROOT = Path(__file__).resolve().parents[2]


def _write_package(folder: Path, *, items: bytes | None = None, extra: dict[str, bytes] | None = None, listed: dict[str, str] | None = None) -> Path:
    """A small package of the export's layout: two clips, one item, the manifest over everything."""
    (folder / "audio").mkdir(parents=True)
    clips = {"audio/a.wav": b"RIFF-clip-a" * 10, "audio/b.wav": b"RIFF-clip-b" * 10, **(extra or {})}
    for name, data in clips.items():
        (folder / name).write_bytes(data)
    if items is None:
        items = (json.dumps({"id": "i1", "prompt": "p", "lyrics": "", "audio_a": "audio/a.wav", "audio_b": "audio/b.wav"}) + "\n").encode()
    (folder / "items.jsonl").write_bytes(items)
    sums = {name: hashlib.sha256(data).hexdigest() for name, data in clips.items()}
    sums["items.jsonl"] = hashlib.sha256(items).hexdigest()
    sums.update(listed or {})
    (folder / "MANIFEST.sha256").write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items())))
    return folder


@pytest.fixture
def opened(monkeypatch):
    """Every file or folder the reader opens, by the path the kernel opened (so a followed link shows where it led)."""
    seen: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_os_open(path, flags, mode, dir_fd=dir_fd)
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        return fd

    def open_(file, *args, **kwargs):
        handle = real_open(file, *args, **kwargs)
        if not isinstance(file, int):
            seen.append(os.path.realpath(file))
        return handle

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    return seen


def _refused(folder: Path, opened: list[str], *needles: str) -> str:
    with pytest.raises(PackageError) as caught:
        read_items(folder)
    message = str(caught.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    inside = os.path.realpath(folder)
    outside = [path for path in opened if os.path.commonpath([path, inside]) != inside]
    assert not outside, f"opened outside the package: {outside}"
    return message


def test_an_intact_package_reads_its_item(tmp_path, opened):
    folder = _write_package(tmp_path / "pkg")
    items = read_items(folder)
    assert [i.id for i in items] == ["i1"]
    assert items[0].clip_a.path == str(folder.resolve() / "audio" / "a.wav")
    assert items[0].clip_a.sha256 == hashlib.sha256(b"RIFF-clip-a" * 10).hexdigest()
    assert all(os.path.commonpath([p, str(folder.resolve())]) == str(folder.resolve()) for p in opened)


def test_a_clip_linked_to_a_file_outside_is_refused_unread(tmp_path, opened):
    secret = tmp_path / "outside.wav"
    secret.write_bytes(b"RIFF-outside" * 10)
    folder = _write_package(tmp_path / "pkg", listed={"audio/c.wav": hashlib.sha256(secret.read_bytes()).hexdigest()})
    (folder / "audio" / "c.wav").symlink_to(secret)
    _refused(folder, opened, "audio/c.wav is a symbolic link", "nothing was scored")


def test_a_linked_audio_folder_is_refused_unread(tmp_path, opened):
    elsewhere = tmp_path / "elsewhere"
    folder = _write_package(tmp_path / "pkg")
    (folder / "audio").rename(elsewhere)
    (folder / "audio").symlink_to(elsewhere, target_is_directory=True)
    message = _refused(folder, opened, "audio is a symbolic link")
    assert "checksum" not in message


def test_a_linked_items_file_and_manifest_are_refused(tmp_path, opened):
    folder = _write_package(tmp_path / "pkg")
    (tmp_path / "items.jsonl").write_bytes((folder / "items.jsonl").read_bytes())
    (folder / "items.jsonl").unlink()
    (folder / "items.jsonl").symlink_to(tmp_path / "items.jsonl")
    _refused(folder, opened, "items.jsonl is a symbolic link")

    opened.clear()
    other = _write_package(tmp_path / "pkg2")
    (tmp_path / "MANIFEST.sha256").write_bytes((other / "MANIFEST.sha256").read_bytes())
    (other / "MANIFEST.sha256").unlink()
    (other / "MANIFEST.sha256").symlink_to(tmp_path / "MANIFEST.sha256")
    _refused(other, opened, "MANIFEST.sha256 is a symbolic link")


@pytest.mark.parametrize("target", ["/proc/self/pagemap", "/dev/zero"])
def test_a_link_to_an_endless_file_is_refused_at_once(tmp_path, opened, target):
    folder = _write_package(tmp_path / "pkg", listed={"audio/endless.wav": "0" * 64})
    (folder / "audio" / "endless.wav").symlink_to(target)
    _refused(folder, opened, "audio/endless.wav is a symbolic link")


def test_a_fifo_in_the_package_is_refused_without_waiting_for_a_writer(tmp_path, opened):
    folder = _write_package(tmp_path / "pkg", listed={"audio/pipe.wav": "0" * 64})
    os.mkfifo(folder / "audio" / "pipe.wav")
    _refused(folder, opened, "audio/pipe.wav is a FIFO, not a regular file")


def test_a_hundred_thousand_deep_line_is_refused_without_a_traceback(tmp_path, opened):
    deep = ("[" * 100_000 + "]" * 100_000 + "\n").encode()
    folder = _write_package(tmp_path / "pkg", items=deep)
    _refused(folder, opened, "items.jsonl line 1 nests arrays or objects more than 32 deep")


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path):
    row = {"id": "i1", "prompt": "[{" * 1000, "lyrics": '\\"[[[' * 100, "audio_a": "audio/a.wav", "audio_b": "audio/b.wav"}
    folder = _write_package(tmp_path / "pkg", items=(json.dumps(row) + "\n").encode())
    assert read_items(folder)[0].condition.prompt == "[{" * 1000


def test_a_huge_line_is_refused(tmp_path, opened):
    row = {"id": "i1", "prompt": "x" * (offline.MAX_LINE_BYTES + 1), "audio_a": "audio/a.wav", "audio_b": "audio/b.wav"}
    folder = _write_package(tmp_path / "pkg", items=(json.dumps(row) + "\n").encode())
    _refused(folder, opened, "items.jsonl line 1 is 1,048,6", "over the limit of 1,048,576 per line")


def test_a_clip_over_the_file_limit_is_refused_from_its_size(tmp_path, opened):
    folder = _write_package(tmp_path / "pkg", listed={"audio/big.wav": "0" * 64})
    with open(folder / "audio" / "big.wav", "wb") as handle:
        handle.truncate(offline.MAX_FILE_BYTES + 1)  # sparse: nothing to hash, and nothing is
    _refused(folder, opened, "audio/big.wav is 1,073,741,825 bytes, over the limit of 1,073,741,824 per file")


def test_item_count_manifest_and_items_sizes_are_bounded(tmp_path, opened, monkeypatch):
    lines = b"".join((json.dumps({"id": f"i{n}", "audio_a": "audio/a.wav", "audio_b": "audio/b.wav"}) + "\n").encode() for n in range(5))
    folder = _write_package(tmp_path / "pkg", items=lines)
    assert len(read_items(folder)) == 5
    monkeypatch.setattr(offline, "MAX_ITEMS", 4)
    _refused(folder, opened, "holds more than 4 items, the limit")
    monkeypatch.setattr(offline, "MAX_ITEMS_BYTES", 100)
    _refused(folder, opened, "items.jsonl is", "over the limit of 100")
    monkeypatch.setattr(offline, "MAX_MANIFEST_BYTES", 100)
    _refused(folder, opened, "MANIFEST.sha256 is", "over the limit of 100")


@pytest.mark.parametrize(
    "row, needle",
    [
        ({"id": "i1", "audio_a": ["audio/a.wav"], "audio_b": "audio/b.wav"}, "is not a file listed"),
        ({"id": {"x": 1}, "audio_a": "audio/a.wav", "audio_b": "audio/b.wav"}, "not an item"),
        ({"id": "i1", "prompt": 5, "audio_a": "audio/a.wav", "audio_b": "audio/b.wav"}, "prompt is not a string"),
        ({"id": "x" * 201, "audio_a": "audio/a.wav", "audio_b": "audio/b.wav"}, "longer than 200"),
    ],
)
def test_fields_of_the_wrong_type_are_named(tmp_path, row, needle):
    folder = _write_package(tmp_path / "pkg", items=(json.dumps(row) + "\n").encode())
    with pytest.raises(PackageError, match=needle):
        read_items(folder)


def test_numbers_past_python_s_digit_limit_and_bad_utf8_are_named(tmp_path):
    folder = _write_package(tmp_path / "pkg", items=b'{"id": "i1", "n": ' + b"9" * 5000 + b"}\n")
    with pytest.raises(PackageError, match="items.jsonl line 1: not valid JSON"):
        read_items(folder)
    other = _write_package(tmp_path / "pkg2", items=b'{"id": "\xff"}\n')
    with pytest.raises(PackageError, match="items.jsonl line 1 is not UTF-8"):
        read_items(other)


def _command(*args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "scoring.judges", "score", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_command_exits_with_one_line_naming_the_file(tmp_path):
    linked = _write_package(tmp_path / "linked")
    (linked / "audio").rename(tmp_path / "elsewhere")
    (linked / "audio").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    deep = _write_package(tmp_path / "deep", items=("{" * 100_000 + "\n").encode())
    for folder, needle in ((linked, "audio is a symbolic link"), (deep, "items.jsonl line 1 nests")):
        out = tmp_path / f"{folder.name}.jsonl"
        done = _command(str(folder), "--judge", "signal", "--out", str(out), "--quiet")
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], done.stderr
        assert not out.exists()
