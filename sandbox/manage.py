#!/usr/bin/env python
"""Command-line utility of the provider sandbox (its own Django project)."""

import os
import sys
from pathlib import Path


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    # Always the sandbox's own settings, even where the shop's are exported.
    os.environ["DJANGO_SETTINGS_MODULE"] = "sandbox.settings"
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
