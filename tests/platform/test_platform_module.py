"""`platform/` must stay a plain folder: a package of that name would shadow the stdlib module."""

import importlib
import platform
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_platform_import_is_the_standard_library():
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    assert Path(platform.__file__).resolve().parent == stdlib
    assert isinstance(platform.system(), str) and platform.system()


def test_platform_folder_is_not_a_package():
    assert (ROOT / "platform").is_dir()
    assert not (ROOT / "platform" / "__init__.py").exists()


def test_project_package_is_importable_under_its_own_name():
    module = importlib.import_module("auditorium.settings")
    assert Path(module.__file__).resolve().parent == ROOT / "platform" / "auditorium"


@pytest.mark.engine
def test_manage_py_entry_point_keeps_stdlib_platform():
    # A fresh interpreter started the way manage.py is: the repo root first on the path.
    code = "import manage, sys, platform; manage.sys.path.insert(1, 'platform'); import uuid, auditorium; print(platform.system())"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == platform.system()
