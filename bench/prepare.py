"""Get the benchmark database ready: create it if it is missing, then migrate it.

python -m bench.prepare
"""

from __future__ import annotations

import os
import subprocess
import sys

from bench import runtime


def main() -> None:
    runtime.configure()
    runtime.ensure_database(os.environ["DATABASE_URL"])
    runtime.check_redis()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=runtime.ROOT,
        check=True,
    )
    print(f"benchmark database ready: {runtime.database_name(os.environ['DATABASE_URL'])}")


if __name__ == "__main__":
    main()
