-- wrk script of the overload scenario: one request in ten a POST /v1/pets, the others GET /v1/pets?limit=20.
-- Counts answers by status per thread, writes the ids of created pets (201) to $WRK_IDS.<thread>, and
-- prints one line "WRKJSON {...}" with the totals, socket errors and latency percentiles (µs).
local auth = os.getenv("WRK_AUTH") or ""
local idsFile = os.getenv("WRK_IDS")
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  n = 0
  ok = 0
  created = 0
  refused = 0
  other = 0
  get = wrk.format("GET", "/v1/pets?limit=20", { Authorization = auth })
  if idsFile then
    out = io.open(idsFile .. "." .. tid, "w")
    out:setvbuf("line")
  end
end

function request()
  n = n + 1
  if n % 10 == 0 then
    local body = '{"name":"flood-' .. tid .. "-" .. n .. '","categoryId":1,"status":"available"}'
    return wrk.format("POST", "/v1/pets", { Authorization = auth, ["Content-Type"] = "application/json" }, body)
  end
  return get
end

function response(status, headers, body)
  if status == 201 then
    created = created + 1
    if out then
      local id = body:match('"id":(%d+)')
      if id then out:write(id, "\n") end
    end
  elseif status >= 200 and status < 300 then
    ok = ok + 1
  elseif status == 503 then
    refused = refused + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local t = { ok = 0, created = 0, refused = 0, other = 0 }
  for _, thread in ipairs(threads) do
    for k, _ in pairs(t) do t[k] = t[k] + thread:get(k) end
  end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50":%d,"p99":%d,"max":%d,"ok":%d,"created":%d,"refused":%d,"other":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, t.ok, t.created, t.refused, t.other))
end
