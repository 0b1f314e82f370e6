"""Benchmarks of the webhook receiver and its processing (`make bench`); not part of the tests."""
