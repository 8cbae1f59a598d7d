import { luaScript } from '../redis/lua-script.ts';

// The scripts of the controls' sealed writes (ControlsStore): a field's generation and a
// compare-and-set, so two writers (an operator and the re-sealer of another replica) cannot undo
// each other.

/** The field's next generation: the writer's clock in ms, forced above the field's last one. */
export const NEXT_GEN = luaScript(
  'volumeMedicNextGen',
  `
local last = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') or 0
local gen = tonumber(ARGV[2])
if gen <= last then gen = last + 1 end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d', gen))
return gen`,
  1,
);

/** HSET field only while it holds ARGV[2] ('' = absent). */
export const CAS_FIELD = luaScript(
  'volumeMedicCasField',
  `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1`,
  1,
);
