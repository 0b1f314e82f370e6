-- wrk script of the benchmarks; prints one `BENCH {json}` line.
--   `-- DELAY_MS PER_PAYMENT`: valid notifications, PER_PAYMENT in a row for each new random
--   payment, each DELAY_MS (mean) after the last answer on its connection (0: at once).
--   `-- FILE N` (one connection per thread, N threads): the lines of FILE, each posted once (again
--   if not answered 2xx, as the provider would), thread i taking lines i, i+N, ...; then it stops.
local threads, mine, answered, delay_ms, per_payment, sent, payment = {}, nil, 0, 0, 1, 0, nil
local headers = { ["Content-Type"] = "application/json" }

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() * 1000 + id * 7919 + math.floor(os.clock() * 1000000))
  if args[2] and not tonumber(args[1]) then
    mine = {}
    local index = 0
    for line in io.lines(args[1]) do
      if index % tonumber(args[2]) == id then table.insert(mine, line) end
      index = index + 1
    end
  else
    delay_ms, per_payment = tonumber(args[1] or "0") or 0, tonumber(args[2] or "1") or 1
  end
end

local function hex(n) return string.format("%0" .. n .. "x", math.random(0, 16 ^ n - 1)) end

function request()
  if mine then
    return wrk.format("POST", nil, headers, mine[math.min(answered + 1, #mine)])
  end
  if sent % per_payment == 0 then
    payment = hex(8) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-a" .. hex(3) .. "-" .. hex(12)
  end
  sent = sent + 1
  return wrk.format("POST", nil, headers,
    '{"id": "' .. payment .. '", "origin": "payments-api", "event_type": "UPDATE"}')
end

function delay()
  local whole = math.floor(delay_ms)
  return math.random() < delay_ms - whole and whole + 1 or whole
end

function response(status)
  if not mine then return end
  if status >= 200 and status < 300 then answered = answered + 1 end
  if answered >= #mine then wrk.thread:stop() end
end

function done(summary, latency)
  local e = summary.errors
  io.write(string.format('BENCH {"requests": %d, "seconds": %.3f, "errors": %d, '
    .. '"timeouts": %d, "p50_ms": %.2f, "p99_ms": %.2f, "max_ms": %.2f}\n', summary.requests,
    summary.duration / 1e6, e.status + e.connect + e.read + e.write + e.timeout, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
