import { mkdir, readdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import type { ProcessId, ProcessPlace } from '../policy/process-identity.js';
import { orIfMissing, readTextIfAny, writeFileAtomic } from './durable-fs.js';
import { removeAbandonedTemps } from './temp-files.js';

/** The folder of the telemetry dir that holds one file per attempt whose model process runs. */
const ATTEMPTS_DIR_NAME = 'attempts';
const RUN_ID = /^[0-9a-f-]{36}$/;

/** An attempt whose model process was started and whose runs.jsonl line is not written yet. */
export interface OpenAttempt {
  readonly runId: string;
  /** Its call's id: a job of that id gets the attempt's result when a dead server's attempt is settled. */
  readonly callId?: string | null;
  readonly taskId: string | null;
  readonly model: string;
  readonly tool: string;
  readonly batchId: string | null;
  readonly chainId: string | null;
  readonly chainStep: number | null;
  /** The call's max_retries, for the verdict the next server gives it. */
  readonly maxRetries: number;
  /** The caller's own retry_count, if it passed one. */
  readonly callerRetryCount: number | null;
  readonly timeoutMs: number;
  readonly startTimeoutMs: number;
  readonly promptChars: number;
  /** Epoch ms the model process was started. */
  readonly startedAt: number;
  readonly server: ProcessId & ProcessPlace;
}

/**
 * The attempts under way, one small file each (`attempts/<run_id>.json`), written before the model
 * process starts and removed once the attempt's runs.jsonl line is written. A server that dies in
 * between (SIGKILL, out of memory) leaves its file, and the next server settles the attempt as
 * `interrupted` (app/attempt/interrupted.ts): so no attempt a model ran vanishes, and the ledger
 * and the log agree.
 */
export class AttemptJournal {
  readonly dir: string;
  #dirReady = false;

  constructor(telemetryDir: string) {
    this.dir = path.join(telemetryDir, ATTEMPTS_DIR_NAME);
  }

  async open(attempt: OpenAttempt): Promise<void> {
    if (!this.#dirReady) {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      this.#dirReady = true;
    }
    await writeFileAtomic(this.#file(attempt.runId), JSON.stringify(attempt));
  }

  async close(runId: string): Promise<void> {
    await orIfMissing(unlink(this.#file(runId)), undefined);
  }

  /**
   * Every attempt recorded as under way, and the pid of the server settling it if one claimed it
   * (unreadable files are skipped: one written this instant, say). The temp files of records whose
   * server was killed while writing them are removed on the way.
   */
  async list(): Promise<(OpenAttempt & { readonly claimedBy: number | null })[]> {
    await removeAbandonedTemps(this.dir);
    const names = await orIfMissing(readdir(this.dir), []);
    const attempts: (OpenAttempt & { claimedBy: number | null })[] = [];
    for (const name of names) {
      const match = /^[0-9a-f-]{36}\.json(?:\.settling-(\d+))?$/.exec(name);
      if (match === null) continue;
      const attempt = parseOpenAttempt(await readTextIfAny(path.join(this.dir, name)));
      if (attempt !== null) attempts.push({ ...attempt, claimedBy: match[1] === undefined ? null : Number(match[1]) });
    }
    return attempts;
  }

  /**
   * Take an attempt to settle it, from its server (`from` null) or from a settling server that died:
   * true for exactly one of several servers trying at once (the file is renamed, atomically); call
   * {@link settled} once it is settled.
   */
  claim(runId: string, by: number, from: number | null = null): Promise<boolean> {
    const before = this.#file(runId, from === null ? '' : `.settling-${from}`);
    return rename(before, this.#file(runId, `.settling-${by}`))
      .then(() => true)
      .catch(() => false);
  }

  async settled(runId: string, by: number): Promise<void> {
    await unlink(this.#file(runId, `.settling-${by}`)).catch(() => {});
  }

  #file(runId: string, suffix = ''): string {
    return path.join(this.dir, `${runId}.json${suffix}`);
  }
}

const openAttemptSchema = z.looseObject({
  runId: z.string().regex(RUN_ID),
  model: z.string(),
  startedAt: z.number(),
  server: z.looseObject({ pid: z.number(), host: z.string() }),
});

function parseOpenAttempt(text: string | null): OpenAttempt | null {
  try {
    return text === null ? null : ((openAttemptSchema.safeParse(JSON.parse(text)).data as OpenAttempt | undefined) ?? null);
  } catch {
    return null;
  }
}
