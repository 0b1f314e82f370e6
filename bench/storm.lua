-- wrk script of the storm: post each notification of a file once, as fast as the server
-- answers, then stop.
--   wrk -tN -cN -d300s -s bench/storm.lua URL -- notifications.jsonl N
-- Use one connection per thread (-t = -c): thread i posts lines i, i+N, i+2N, ... of the file,
-- one after the other, and stops after its last answer. The benchmark interrupts wrk once every
-- notification is stored (wrk itself waits for its whole duration). Prints `BENCH {json}`.

local threads = {}
local headers = { ["Content-Type"] = "application/json" }
local mine = {}
local answered = 0

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local path, count = args[1], tonumber(args[2])
  local index = 0
  for line in io.lines(path) do
    if line ~= "" then
      if index % count == id then
        table.insert(mine, line)
      end
      index = index + 1
    end
  end
end

-- One connection per thread, so the next request is the one after the answers so far. (wrk
-- also calls request() once on the first thread to check the script, before it starts: that
-- call must not use a notification up; a request lost to a socket error or answered with an
-- error is sent again.)
function request()
  local next = answered + 1
  if next <= #mine then
    return wrk.format("POST", nil, headers, mine[next])
  end
  -- Nothing left: an answer that stores nothing, until the thread stops.
  return wrk.format("POST", "/bench/bare/", headers, "{}")
end

-- A notification that was not answered 2xx is sent again, as the provider would.
function response(status, headers, body)
  if status >= 200 and status < 300 then
    answered = answered + 1
  end
  if answered >= #mine then
    wrk.thread:stop()
  end
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
