-- wrk script of the benchmark's load function (bench/lib/wrk.ts). Every request is already a complete HTTP
-- request, written by wrk.ts to $WRK_REQUESTS.<thread> as records "<byte length>\n<bytes>"; each thread sends
-- its own list in order, over again from the start when it runs out. With WRK_ONCE=1 the list is a pool of
-- requests each meant to be sent once (a new pet, the next account): wrapping round is counted as `exhausted`.
-- WRK_DELAY_MS paces every connection (one request per that many ms). No response() function: wrk then skips
-- handing headers and bodies to Lua, and counts statuses >= 400 itself (summary.errors.status).
-- done() prints one line "WRKJSON {...}" (totals, errors, requests taken per thread) and one line
-- "WRKQUANTILES q1 .. q1000": the latency (µs) at every 0.1 % of the responses, the last one the maximum.
local prefix = os.getenv("WRK_REQUESTS")
local once = os.getenv("WRK_ONCE") == "1"
local delayMs = tonumber(os.getenv("WRK_DELAY_MS") or "")
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  local file = assert(io.open(prefix .. "." .. tid, "rb"))
  local data = file:read("*a")
  file:close()
  list = {}
  local pos = 1
  while pos <= #data do
    local nl = data:find("\n", pos, true)
    local len = tonumber(data:sub(pos, nl - 1))
    list[#list + 1] = data:sub(nl + 1, nl + len)
    pos = nl + len + 1
  end
  taken = 0
  exhausted = 0
end

function request()
  taken = taken + 1
  if once and taken > #list then exhausted = exhausted + 1 end
  return list[(taken - 1) % #list + 1]
end

if delayMs then
  function delay()
    return delayMs
  end
end

function done(summary, latency, requests)
  local taken, exhausted = {}, 0
  for _, thread in ipairs(threads) do
    taken[#taken + 1] = thread:get("taken")
    exhausted = exhausted + thread:get("exhausted")
  end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"exhausted":%d,"taken":[%s]}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    exhausted, table.concat(taken, ",")))
  local q = {}
  for k = 1, 999 do q[k] = string.format("%d", latency:percentile(k / 10)) end
  q[1000] = string.format("%d", latency.max)
  io.write("WRKQUANTILES ", table.concat(q, " "), "\n")
end
