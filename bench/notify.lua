-- wrk script: POST a valid payment notification with a fresh random payment id per request.
--   wrk -t2 -c8 -d10s -s bench/notify.lua http://127.0.0.1:PORT/webhooks/payments/TOKEN/
-- Optional argument after `--`: a delay in milliseconds before each request on a connection
-- (used for the half-load run). The summary is printed as one `BENCH {json}` line.

local threads = {}
local delay_ms = 0
local headers = { ["Content-Type"] = "application/json" }

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() * 1000 + id * 7919 + math.floor(os.clock() * 1000000))
  delay_ms = tonumber(args[1] or "0") or 0
end

local function hex(digits, max)
  return string.format("%0" .. digits .. "x", math.random(0, max))
end

local function uuid4()
  return hex(4, 0xffff) .. hex(4, 0xffff) .. "-" .. hex(4, 0xffff) .. "-4" .. hex(3, 0xfff)
    .. "-" .. string.format("%04x", 0x8000 + math.random(0, 0x3fff)) .. "-"
    .. hex(4, 0xffff) .. hex(4, 0xffff) .. hex(4, 0xffff)
end

function request()
  local body = '{"id": "' .. uuid4() .. '", "origin": "payments-api", "event_type": "UPDATE"}'
  return wrk.format("POST", nil, headers, body)
end

function delay()
  -- wrk waits whole milliseconds: round up or down at random so that the mean is delay_ms.
  local whole = math.floor(delay_ms)
  if math.random() < delay_ms - whole then
    return whole + 1
  end
  return whole
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "non2xx": %d, "socket_errors": %d, '
      .. '"p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, "mean_us": %.1f}\n',
    summary.requests, summary.duration, errors.status,
    errors.connect + errors.read + errors.write + errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean
  ))
end
