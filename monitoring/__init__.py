"""Monitoring the shop: the health probes, /metrics with the gauges read at scrape time, the
workers' and beat's heartbeats, and the browsers' Content-Security-Policy reports. It reads every
app; no app reads it."""
