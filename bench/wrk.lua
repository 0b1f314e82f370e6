-- wrk script of the benchmarks; prints one `BENCH {json}` line. Arguments after `--`: none: GET;
-- `DELAY_MS PER_PAYMENT`: random notifications, PER_PAYMENT a payment, DELAY_MS (mean) apart;
-- `FILE N` (N threads of a connection): thread i posts lines i, i+N... once each (until 2xx).
-- A last argument `close`: a new connection for each request.
local threads, mine, answered, delay_ms, per_payment, sent, payment = 0, nil, 0, 0, 1, 0, nil
local get, headers, get_headers = false, { ["Content-Type"] = "application/json" }, {}

function setup(thread) thread:set("id", threads); threads = threads + 1 end

function init(args)
  math.randomseed(os.time() * 1000 + id * 7919 + math.floor(os.clock() * 1000000))
  if args[#args] == "close" then
    args[#args] = nil
    headers["Connection"], get_headers["Connection"] = "close", "close"
  end
  get = not args[1]
  if args[1] and not tonumber(args[1]) then
    mine = {}
    local index = 0
    for line in io.lines(args[1]) do
      if index % tonumber(args[2]) == id then table.insert(mine, line) end
      index = index + 1
    end
  elseif args[1] then
    delay_ms, per_payment = tonumber(args[1]), tonumber(args[2])
  end
end

local function hex(n) return string.format("%0" .. n .. "x", math.random(0, 16 ^ n - 1)) end

function request()
  if get then return wrk.format("GET", nil, get_headers) end
  if mine then return wrk.format("POST", nil, headers, mine[math.min(answered + 1, #mine)]) end
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
