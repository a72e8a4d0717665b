#!/usr/bin/env python
"""Django's command-line utility for Auditorium."""

import os
import sys
from pathlib import Path


def main() -> None:
    # platform/ is a plain folder holding the `auditorium` package; it is put on
    # the path after the repo root so the stdlib `platform` module is never shadowed.
    sys.path.insert(1, str(Path(__file__).resolve().parent / "platform"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
