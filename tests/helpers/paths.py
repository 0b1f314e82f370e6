"""Where the project is."""

from __future__ import annotations

from pathlib import Path

# The project's root folder (tests/helpers/ is two below it).
ROOT = Path(__file__).resolve().parents[2]
