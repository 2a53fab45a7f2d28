import type { ProcessId, ProcessPlace } from '../policy/process-identity.js';

/**
 * A server process as the files it leaves name it (a shared slot's holder, the state lock's
 * holder): its pid and start time, where it runs, and since when (epoch ms, for people: nothing
 * is judged by it).
 */
export interface Holder extends ProcessId, ProcessPlace {
  readonly at: number;
}

/** A holder as written by a server (JSON), or null when the text is not one. */
export function parseHolder(text: string): Holder | null {
  try {
    const value = JSON.parse(text) as Partial<Holder> | null;
    if (
      value === null ||
      typeof value !== 'object' ||
      !Number.isSafeInteger(value.pid) ||
      !(value.start === null || Number.isSafeInteger(value.start)) ||
      typeof value.host !== 'string' ||
      !(value.boot === null || typeof value.boot === 'string') ||
      !(value.pidns === null || typeof value.pidns === 'string') ||
      typeof value.at !== 'number'
    ) {
      return null;
    }
    return value as Holder;
  } catch {
    return null;
  }
}
