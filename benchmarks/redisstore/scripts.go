package redisstore

import "github.com/redis/go-redis/v9"

// clockLua reads the server's clock as 20 decimal digits of microseconds
// since the store's epoch (see the package documentation), clamped by the
// floor key so that it never goes backwards, and raises the floor. The
// digits are joined as text, never added: Lua's numbers are float64.
const clockLua = `
local function clock(floorKey)
  local t = redis.call('TIME')
  local now = '01' .. string.rep('0', 12 - #t[1]) .. t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
  local floor = redis.call('GET', floorKey)
  if floor and floor > now then
    return floor
  end
  redis.call('SET', floorKey, now)
  return now
end
`

// readScript: KEYS = floor, then a count and an index for each of the
// batch's ARGV[1] partitions, then the counter keys. It returns the clock,
// each partition's count and earliest expiry ("" when none), and each
// key's text ("" when absent), reading the clock last.
var readScript = redis.NewScript(clockLua + `
local m = tonumber(ARGV[1])
local values = {}
for i = 2 + 2 * m, #KEYS do
  values[#values + 1] = redis.call('GET', KEYS[i]) or ''
end
local parts = {}
for j = 1, m do
  parts[#parts + 1] = redis.call('GET', KEYS[2 * j]) or '0'
  local first = redis.call('ZRANGE', KEYS[2 * j + 1], 0, 0)
  parts[#parts + 1] = first[1] and string.sub(first[1], 1, 20) or ''
end
local reply = {clock(KEYS[1])}
for i = 1, #parts do
  reply[#reply + 1] = parts[i]
end
for i = 1, #values do
  reply[#reply + 1] = values[i]
end
return reply
`)

// writeScript: KEYS = a count and an index for each of the batch's ARGV[1]
// partitions, then the counter keys; ARGV = that number, the capacity of
// a partition, the slots claimed in each, then for each key the number of
// its partition (from 1), the text read ("" for absent), the new text, its
// index entry read ("" for absent) and its new one. It writes nothing and
// returns 0 when a key's text changed or a partition's claimed slots no
// longer fit; otherwise it writes every key and returns 1.
var writeScript = redis.NewScript(`
local m = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local first = 2 * m + 1
local function arg(i, k)
  return ARGV[2 + m + (i - first) * 5 + k]
end
for i = first, #KEYS do
  if (redis.call('GET', KEYS[i]) or '') ~= arg(i, 2) then
    return 0
  end
end
for j = 1, m do
  local claimed = tonumber(ARGV[2 + j])
  if claimed > 0 and tonumber(redis.call('GET', KEYS[2 * j - 1]) or '0') + claimed > capacity then
    return 0
  end
end
for j = 1, m do
  local claimed = tonumber(ARGV[2 + j])
  if claimed > 0 then
    redis.call('INCRBY', KEYS[2 * j - 1], claimed)
  end
end
for i = first, #KEYS do
  local index = KEYS[2 * tonumber(arg(i, 1))]
  redis.call('SET', KEYS[i], arg(i, 3))
  if arg(i, 4) ~= '' then
    redis.call('ZREM', index, arg(i, 4))
  end
  redis.call('ZADD', index, 0, arg(i, 5))
end
return 1
`)

// cleanupScript: KEYS = floor, then a count and an index for every
// partition; ARGV = the most to remove and the counter-key prefix. It
// removes the counters whose expiry is at or before the clock, earliest
// first in each partition: the index entries below now..";" (":" follows
// the digits of an entry, and sorts before ";").
var cleanupScript = redis.NewScript(clockLua + `
local now = clock(KEYS[1])
local left = tonumber(ARGV[1])
local removed = 0
for j = 2, #KEYS, 2 do
  if left == 0 then
    break
  end
  local ended = redis.call('ZRANGE', KEYS[j + 1], '-', '(' .. now .. ';', 'BYLEX', 'LIMIT', 0, left)
  for _, e in ipairs(ended) do
    redis.call('DEL', ARGV[2] .. string.sub(e, 22))
    redis.call('ZREM', KEYS[j + 1], e)
  end
  if #ended > 0 then
    redis.call('DECRBY', KEYS[j], #ended)
  end
  left = left - #ended
  removed = removed + #ended
end
return removed
`)
