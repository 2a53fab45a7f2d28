/**
 * Whether an Ollama host is down, and until when. Pure (time passed in): a host that could not be
 * reached is skipped for a backed-off time, 5 s at first, doubling with each failure in a row up to
 * 60 s; a call that reaches it again, or an `ollama list`/`ps` that works, makes it healthy at once.
 * Once the time is up the host takes calls again: the next one is the probe.
 */

export const FIRST_DOWN_MS = 5_000;
export const MAX_DOWN_MS = 60_000;

export interface HostHealth {
  /** Epoch ms until which the host is skipped; null: up. */
  readonly downUntil: number | null;
  /** Failures to reach it in a row. */
  readonly failures: number;
  /** What the last failure said; null once it worked. */
  readonly lastError: string | null;
}

export const HEALTHY: HostHealth = { downUntil: null, failures: 0, lastError: null };

/** The host could not be reached at `now`: skipped for 5 s, 10 s, 20 s ... at most 60 s. */
export function markDown(health: HostHealth, now: number, error: string): HostHealth {
  const failures = health.failures + 1;
  const downMs = Math.min(MAX_DOWN_MS, FIRST_DOWN_MS * 2 ** Math.min(failures - 1, 16));
  return { downUntil: now + downMs, failures, lastError: error };
}

/** The host answered: up, and the backoff starts again from 5 s. */
export function markUp(health: HostHealth): HostHealth {
  return health.failures === 0 && health.downUntil === null ? health : HEALTHY;
}

/** Is the host skipped at `now`? */
export function isDown(health: HostHealth, now: number): boolean {
  return health.downUntil !== null && now < health.downUntil;
}
