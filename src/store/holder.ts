import * as z from 'zod';
import type { ProcessId, ProcessPlace } from '../policy/process-identity.js';

/**
 * A server process as the files it leaves name it (a shared slot's holder, the state lock's
 * holder): its pid and start time, where it runs, and since when (epoch ms, for people: nothing
 * is judged by it).
 */
export interface Holder extends ProcessId, ProcessPlace {
  readonly at: number;
}

const holderSchema = z.looseObject({
  pid: z.number().int(),
  start: z.number().int().nullable(),
  host: z.string(),
  boot: z.string().nullable(),
  pidns: z.string().nullable(),
  at: z.number(),
});

/** A holder as written by a server (JSON; other fields kept), or null when the text is not one. */
export function parseHolder(text: string): Holder | null {
  try {
    return holderSchema.safeParse(JSON.parse(text)).data ?? null;
  } catch {
    return null;
  }
}
