# Two commands for a new user: `make demo` runs everything, `make test` runs the tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export SHOP_PORT ?= 8000
export SANDBOX_PORT ?= 8001

.PHONY: demo sandbox test lint install migrate seed clean bench profile soak volume release-check

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,demo]"
	touch $(STAMP)

## A command from Debian's packages, installed when missing (as root or through sudo -n).
APT_ENSURE := bin/apt-ensure

install: $(STAMP)

migrate: install
	mkdir -p var
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python -m sandbox.manage migrate --noinput

seed: migrate
	$(BIN)/python manage.py seed_demo
	$(BIN)/python -m sandbox.manage seed_sandbox

## The whole demo in the foreground: sandbox, shop, Celery worker and beat. Ctrl-C stops all.
## Its processes count into one metrics directory (/metrics with METRICS_TOKEN=... make demo).
demo: seed
	@echo "Shop:    http://127.0.0.1:$(SHOP_PORT)  (admin: admin / tienda-demo-2026, then the code"
	@echo "         of '.venv/bin/python manage.py staff_demo_code admin', or add the secret"
	@echo "         JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP to an authenticator app)"
	@echo "Sandbox: http://127.0.0.1:$(SANDBOX_PORT)  (keys: pk_sandbox_demo / sk_sandbox_demo)"
	metrics="$$(realpath -m "$${SHOP_VAR_DIR:-var}/metrics")"; rm -rf "$$metrics" \
		&& mkdir -p "$$metrics" && PROMETHEUS_MULTIPROC_DIR="$$metrics" \
		PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/honcho start

## The provider sandbox alone (migrated, seeded), on SANDBOX_PORT.
sandbox: install
	mkdir -p var
	$(BIN)/python -m sandbox.manage runsandbox --port $(SANDBOX_PORT)

## The alert rules' unit tests (docs/monitoring; promtool: Debian's `prometheus` package, whose
## server is stopped if the package starts it), then the whole suite on PostgreSQL and Redis:
## DATABASE_URL and REDIS_URL when set (CI), else a PostgreSQL and a Redis of the run's own,
## started and removed by tools/services_for_tests.py. The browser tests drive Debian's chromium.
## The tests run in TEST_PROCESSES processes (pytest-xdist; a file's tests in one of them), each
## with its own databases and Redis database (tests/worker_services.py).
TEST_PROCESSES ?= 2
test: install
	@$(APT_ENSURE) chromium
	@$(APT_ENSURE) --no-recommends --stop prometheus promtool prometheus
	promtool check rules docs/monitoring/alerts.yml
	promtool test rules docs/monitoring/alerts_test.yml
	$(BIN)/python -m tools.services_for_tests -- \
		$(BIN)/python -m pytest --numprocesses $(TEST_PROCESSES) --dist loadfile $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

## Benchmarks (bench/README.md; methods and figures: docs/benchmarks.md): the webhook receiver
## beside three others, the storm and calm traffic, a provider brownout, a sale day (shoppers at
## rising concurrency, a limited provider, a flash rush), then the admin and the schedules on a
## 1k and a 1M year of orders. Needs PostgreSQL and Redis; a database and a Redis db of their own
## (emptied). Options: BENCH_ARGS (all, e.g. --strict), BENCH_RECEIVER_ARGS, BENCH_STORM_ARGS,
## BENCH_BROWNOUT_ARGS, BENCH_SALE_DAY_ARGS (e.g. --seconds 20), BENCH_VOLUME_ARGS (e.g. --reuse).
bench: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/shop_bench
bench: export REDIS_URL ?= redis://127.0.0.1:6379/6
bench: install
	@$(APT_ENSURE) wrk
	status=0; \
	$(BIN)/python -m bench.receiver $(BENCH_ARGS) $(BENCH_RECEIVER_ARGS) || status=$$?; \
	$(BIN)/python -m bench.storm $(BENCH_ARGS) $(BENCH_STORM_ARGS) || status=$$?; \
	$(BIN)/python -m bench.brownout $(BENCH_ARGS) $(BENCH_BROWNOUT_ARGS) || status=$$?; \
	$(BIN)/python -m bench.sale_day $(BENCH_ARGS) $(BENCH_SALE_DAY_ARGS) || status=$$?; \
	$(BIN)/python -m bench.volume $(BENCH_ARGS) $(BENCH_VOLUME_ARGS) || status=$$?; \
	exit $$status

## Where the time goes (bench/profile.py): one sale-day level with no queue, every service
## sampled by py-spy, the busiest functions per process group. Options: PROFILE_ARGS (e.g.
## --shoppers 64 --seconds 30). Needs PostgreSQL and Redis, as `make bench`.
profile: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/shop_bench
profile: export REDIS_URL ?= redis://127.0.0.1:6379/6
profile: install
	$(BIN)/python -m bench.profile $(PROFILE_ARGS)

## A year of a busy shop to try the admin on (README, "A year of orders"): a database of its own
## (created if missing; refused if it holds orders), filled by `fill_volume $(VOLUME_ARGS)`
## (default 1,000,000 orders; e.g. VOLUME_ARGS="--orders 10000").
volume: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/shop_volume
volume: install
	$(BIN)/python -c 'import os, sys; sys.path.insert(0, "."); from bench.runtime import \
		database, database_name; u = os.environ["DATABASE_URL"]; database(u, database_name(u))'
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py fill_volume $(VOLUME_ARGS)
	@echo "Admin on it: DATABASE_URL=$$DATABASE_URL $(BIN)/python manage.py runserver," \
		"then http://127.0.0.1:8000/admin/ (admin / tienda-demo-2026, code:" \
		"manage.py staff_demo_code admin)"

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache

## The demo driven for 15 minutes by shoppers, staff and notifications (SOAK_ARGS=--minutes 5):
## every process must stay alive and every order end right (tools/soak.py).
soak: install
	$(BIN)/python -m tools.soak $(SOAK_ARGS)

## The new release deployed while the previous one serves (docs/deployment.md, "Upgrading"): the
## previous release (PREVIOUS=<commit or tag>, else the newest in CHANGELOG.md) runs from a clone
## of its own under shoppers, staff and notifications; this tree's migrations are applied, then
## its processes replace the previous ones one by one. Fails on any 5xx or unanswered request,
## any error in the processes' logs, or any order that does not end right. A database and a
## Redis db of its own (emptied). Options: RELEASE_CHECK_ARGS (e.g. --seconds 60).
release-check: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/shop_release_check
release-check: export REDIS_URL ?= redis://127.0.0.1:6379/8
release-check: install
	$(BIN)/python -m tools.release_check $(if $(PREVIOUS),--previous $(PREVIOUS)) $(RELEASE_CHECK_ARGS)
