-- wrk script for scripts/bench-webhook.sh: POSTs AdmissionReviews read from a file (one JSON
-- body per line). Each wrk thread walks its own slice of the file, so with as many distinct
-- bodies as requests no body is sent twice. Prints one JSON summary line at the end.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  thread:set("count", 0)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  bodies = {}
  for line in io.lines(args[1]) do
    bodies[#bodies + 1] = line
  end
  local nthreads = tonumber(args[2])
  local slice = math.floor(#bodies / nthreads)
  first = id * slice + 1
  last = first + slice - 1
  if slice == 0 then first, last = 1, #bodies end
  next_index = first
  headers = { ["Content-Type"] = "application/json" }
end

function request()
  local body = bodies[next_index]
  next_index = next_index + 1
  if next_index > last then next_index = first end
  return wrk.format("POST", "/validate", headers, body)
end

function response(status, hdrs, body)
  if status ~= 200 then
    io.stderr:write("HTTP " .. status .. ": " .. string.sub(body, 1, 200) .. "\n")
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"rps":%.0f,"p50_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    e.connect, e.read, e.write, e.status, e.timeout))
end
