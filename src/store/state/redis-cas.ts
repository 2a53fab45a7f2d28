/**
 * The pieces of the Redis state that are pure: key names, the compare-and-set script and its
 * arguments, the pause after a conflict. (redis-state-store.ts does the I/O.)
 */

/** In a write list: leave this key as it is. (Never a JSON document, which starts with `{`.) */
export const KEEP = '=';

/**
 * Compare-and-set, run atomically by Redis. KEYS: the circuits key, then one key per task.
 * ARGV: per key the value read ('' = absent), then per key what to write (KEEP, '' = delete, or
 * the new value), then per key its TTL in ms (0: none, as for the circuits). Writes nothing and
 * returns 0 when any key changed since it was read; else writes (each task key with its TTL, so
 * Redis prunes it) and returns 1.
 */
export const CAS_SCRIPT = `local n = #KEYS
for i = 1, n do
  local current = redis.call('GET', KEYS[i]) or ''
  if current ~= ARGV[i] then return 0 end
end
for i = 1, n do
  local value = ARGV[n + i]
  local ttl = tonumber(ARGV[2 * n + i])
  if value == '' then
    redis.call('DEL', KEYS[i])
  elseif value ~= '${KEEP}' then
    if ttl > 0 then redis.call('SET', KEYS[i], value, 'PX', ttl) else redis.call('SET', KEYS[i], value) end
  end
end
return 1`;

/**
 * The keys under a prefix: `circuits` holds every model's circuit (one JSON document, the format of
 * state.json), `task(id)` one task's ledger entry (expiring with the task TTL), `taskPattern` matches
 * every task key (SCAN), and `prefix` is for other team-mode keys (the shared cap's slots).
 */
export function redisKeys(prefix: string) {
  const taskPrefix = `${prefix}task:`;
  return {
    circuits: `${prefix}circuits`,
    task: (taskId: string) => `${taskPrefix}${taskId}`,
    taskPattern: `${taskPrefix.replace(/[*?[\]\\]/g, '\\$&')}*`,
    taskIdOf: (key: string) => key.slice(taskPrefix.length),
    prefix,
  } as const;
}

export type RedisKeys = ReturnType<typeof redisKeys>;

/** The EVAL arguments after the script: numkeys, keys, values read, writes, TTLs (ms; 0: none). */
export function casArguments(
  keys: readonly string[],
  read: readonly string[],
  writes: readonly string[],
  ttlsMs: readonly number[],
): string[] {
  return [
    String(keys.length),
    ...keys,
    ...read,
    ...writes,
    ...ttlsMs.map((ttl) => String(ttl > 0 ? Math.max(1, Math.round(ttl)) : 0)),
  ];
}

/**
 * Pause before try `attempt + 1` of a transaction that met a concurrent writer: grows from ~1 ms
 * to at most 50 ms, scaled by `random` (0-1) so the writers that collided do not collide again.
 */
export function conflictBackoffMs(attempt: number, random: number): number {
  const ceiling = Math.min(2 ** Math.min(attempt, 6), 50);
  return 0.5 + ceiling * random;
}
