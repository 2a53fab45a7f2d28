import { mkdir, readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { ProcessId, ProcessPlace } from '../policy/process-identity.js';
import { readTextIfAny, writeFileAtomic } from './durable-fs.js';

/** The folder of the telemetry dir that holds one file per job (a call that outlasts its reply). */
const JOBS_DIR_NAME = 'jobs';

/** A job as every server on the data dir sees it: who may collect it, who runs it, and its result once it has one. */
export interface JobRecord {
  readonly id: string;
  readonly kind: 'run' | 'batch';
  /** Who may collect or cancel it: `local` for a stdio client, or the HTTP token's digest. */
  readonly owner: string;
  /** The task id of each of its calls (one for a run, one per job of a batch). */
  readonly tasks: readonly (string | null)[];
  /** A run's model, as the call named it; null for a batch. */
  readonly model: string | null;
  /** Epoch ms its work started (before it was handed over). */
  readonly startedAt: number;
  /** The server running it (a job whose server died while it ran is settled as interrupted). */
  readonly server: ProcessId & ProcessPlace;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms it ended; null while it runs. */
  readonly finishedAt: number | null;
  /** What it came to (a run's result, a batch's results), as JSON; a batch's results so far while it runs. */
  readonly result: unknown;
  /** When it was started as an MCP task: the task's own fields and its stored tool result. */
  readonly task: JobTask | null;
}

export interface JobTask {
  readonly ttlMs: number;
  readonly pollIntervalMs: number;
  /** The tool's result as the task runtime stored it (a CallToolResult), once it ended. */
  readonly toolResult: unknown;
  readonly status: 'completed' | 'failed' | 'cancelled' | null;
}

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * One file per job (`jobs/<id>.json`, 0600), written atomically, so any server on the data dir can
 * answer for a job another one runs or ran, and a job's result outlives the server that ran it. A
 * cancel asked of another server is a marker file beside it (`<id>.cancel`) that the running server
 * looks for.
 */
export class JobFiles {
  readonly dir: string;
  #dirReady = false;

  constructor(telemetryDir: string) {
    this.dir = path.join(telemetryDir, JOBS_DIR_NAME);
  }

  async write(job: JobRecord): Promise<void> {
    await this.#ensureDir();
    await writeFileAtomic(this.#file(job.id), JSON.stringify(job));
  }

  /** The job, or null when there is none of that id (or its file cannot be read as one). */
  async read(id: string): Promise<JobRecord | null> {
    if (!ID.test(id)) return null;
    return parseJob(await readTextIfAny(this.#file(id)).catch(() => null));
  }

  async list(): Promise<JobRecord[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const ids = names.filter((name) => name.endsWith('.json')).map((name) => name.slice(0, -'.json'.length));
    const jobs = await Promise.all(ids.map((id) => this.read(id)));
    return jobs.filter((job): job is JobRecord => job !== null);
  }

  /** Ask the server running the job to cancel it. */
  async requestCancel(id: string): Promise<void> {
    if (!ID.test(id)) return;
    await this.#ensureDir();
    await writeFileAtomic(this.#file(id, '.cancel'), '');
  }

  async cancelRequested(id: string): Promise<boolean> {
    if (!ID.test(id)) return false;
    return stat(this.#file(id, '.cancel')).then(
      () => true,
      () => false,
    );
  }

  /** Remove the jobs that ended more than `keepMs` before `now` (epoch ms), and their cancel markers. */
  async prune(now: number, keepMs: number): Promise<void> {
    for (const job of await this.list()) {
      if (job.finishedAt === null || now - job.finishedAt < keepMs) continue;
      await unlink(this.#file(job.id)).catch(() => {});
      await unlink(this.#file(job.id, '.cancel')).catch(() => {});
    }
  }

  async #ensureDir(): Promise<void> {
    if (this.#dirReady) return;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    this.#dirReady = true;
  }

  #file(id: string, suffix = '.json'): string {
    return path.join(this.dir, `${id}${suffix}`);
  }
}

function parseJob(text: string | null): JobRecord | null {
  if (text === null) return null;
  try {
    const value = JSON.parse(text) as Partial<JobRecord> | null;
    const valid =
      typeof value?.id === 'string' &&
      ID.test(value.id) &&
      (value.kind === 'run' || value.kind === 'batch') &&
      typeof value.owner === 'string' &&
      typeof value.createdAt === 'number' &&
      (value.finishedAt === null || typeof value.finishedAt === 'number') &&
      typeof value.server?.pid === 'number';
    return valid ? ({ task: null, tasks: [], model: null, startedAt: value.createdAt, ...value } as JobRecord) : null;
  } catch {
    return null;
  }
}
