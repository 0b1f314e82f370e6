-- wrk script of the benchmarks: GET the URL as is; prints one `BENCH {json}` line.
function done(summary, latency)
  local e = summary.errors
  io.write(string.format('BENCH {"requests": %d, "seconds": %.3f, "errors": %d, '
    .. '"timeouts": %d, "p50_ms": %.2f, "p99_ms": %.2f, "max_ms": %.2f}\n', summary.requests,
    summary.duration / 1e6, e.status + e.connect + e.read + e.write + e.timeout, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
