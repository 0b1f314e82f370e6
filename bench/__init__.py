"""The benchmarks (`make bench`, bench/README.md; methods and figures: docs/benchmarks.md): the
webhook receiver, a storm of notifications, a provider brownout, the sale day, the admin and the
schedules on a year of orders, each beside baselines measured in the same run; `make profile`
(where the time goes) and the read-capacity model (read_capacity.py). Not part of the tests."""
