"""Helpers of the configuration's tests: the test-only Celery tasks that the workers those tests
start in processes of their own run (tests/config/worker_tasks.py), by name. The tests send them
by name and never import them: an imported task would be registered in the test process too,
among the shop's own (tests/test_task_names.py)."""

from __future__ import annotations

# The module a worker is started with (`--include`, `-I`) to run them.
WORKER_TASKS = "tests.config.worker_tasks"
SLOW_RECORD_TASK = "tests.config.worker_tasks.slow_record_task"
FAILING_TASK = "tests.error_reports.failing_task"
