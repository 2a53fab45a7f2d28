import { setTimeout as delay } from 'node:timers/promises';
import { livenessOf, type ProcView } from '../../policy/process-identity.js';
import type { JobFiles, JobRecord, JobTask } from '../../store/job-files.js';
import type { SelfIdentity } from '../../store/processes/proc-reader.js';
import type { RunResult } from '../reply/run-result.js';
import type { LiveCall } from './live-call.js';
import type { BatchResult } from './run-batch.js';

/** How long a job's result stays collectable after it ended, also after it was collected once. */
export const JOB_KEEP_MS = 60 * 60 * 1000;
/** How often a server looks for cancels asked of its jobs by other servers, and polls a job another server runs. */
const POLL_MS = 250;

/** A job's result: a run's, or a batch's. */
export type JobResult = RunResult | BatchResult;

/** A batch job's results so far: `null` for a job still running. */
export interface BatchSoFar {
  readonly batch_id: string;
  readonly results: readonly (RunResult | null)[];
}

/** A job as it is collected. */
export type JobView =
  | {
      readonly state: 'running';
      readonly record: JobRecord;
      /** Where it stands, when this server runs it; null when another one does. */
      readonly live: LiveCall | null;
      /** A batch's results so far; null for a run. */
      readonly soFar: BatchSoFar | null;
    }
  | { readonly state: 'done'; readonly record: JobRecord; readonly result: JobResult }
  /** Its server stopped while it ran (killed, out of memory): what it ran is settled as interrupted. */
  | { readonly state: 'lost'; readonly record: JobRecord };

/** What a job's record says of it from its start. */
type JobStart = Pick<JobRecord, 'id' | 'kind' | 'owner' | 'tasks' | 'model' | 'startedAt'>;

/** A call (or batch) handed over: it goes on after the reply that named it, until it ends or is cancelled. */
export interface Adopted extends JobStart {
  readonly result: Promise<JobResult>;
  readonly live: LiveCall | null;
  /** Aborts it: its model processes are killed, and nothing is counted. */
  readonly cancel: AbortController;
}

/** A job this server runs: its work, its latest record, the end of its last write, and its end (result kept). */
interface LiveJob {
  readonly job: Adopted;
  record: JobRecord;
  kept: Promise<void>;
  ended?: Promise<void>;
}

export interface JobsDeps {
  readonly files: JobFiles;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
  /** Epoch ms. */
  readonly clock: () => number;
  /** Settle the attempts of dead servers now (app/attempt/interrupted.ts): a lost job's result is written then. */
  readonly settleInterrupted: () => Promise<number>;
  readonly warn: (message: string) => void;
}

/**
 * Calls that outlast their reply. A job is collected (`wait`) or cancelled by its id, from any server
 * on the data dir, by the owner that started it; its record and, once it ended, its result are kept in
 * the data dir for {@link JOB_KEEP_MS}, so a job outlives its client, its connection and the server
 * that ran it.
 */
export class Jobs {
  readonly #deps: JobsDeps;
  readonly #live = new Map<string, LiveJob>();
  #cancelWatch: NodeJS.Timeout | null = null;
  #warned = false;

  constructor(deps: JobsDeps) {
    this.#deps = deps;
  }

  /** Jobs this server runs now. */
  get running(): number {
    return this.#live.size;
  }

  /** Resolves when every job this server runs has ended and its result is kept. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#live.values()].map((entry) => entry.ended));
  }

  /** Record a job before its work starts (an MCP task, whose id is given first). */
  async reserve(id: string, kind: 'run' | 'batch', owner: string, task: JobTask): Promise<void> {
    const now = this.#deps.clock();
    await this.#write(this.#newRecord({ id, kind, owner, tasks: [], model: null, startedAt: now, task }, now));
  }

  /** Hand a call (or a batch) over as a job: recorded now, its result kept when it ends. */
  async adopt(job: Adopted): Promise<void> {
    const reserved = await this.#deps.files.read(job.id);
    const record = this.#newRecord({ ...job, task: reserved?.task ?? null });
    const entry: LiveJob = { job, record, kept: this.#write(record) };
    this.#live.set(job.id, entry);
    await entry.kept;
    this.#watchCancels();
    entry.ended = job.result.then(
      (result) => this.#ended(job.id, result),
      () => this.#ended(job.id, null),
    );
  }

  /** A batch job's results so far, kept for a collect from another server. */
  async progress(id: string, soFar: BatchSoFar): Promise<void> {
    await this.#update(id, (record) => (record.finishedAt === null ? { ...record, result: soFar } : record));
  }

  /** The job, if `owner` may see it and it has not expired. */
  async get(id: string, owner: string): Promise<JobView | null> {
    const here = this.#live.get(id);
    // A job running here is known from memory too, when its file cannot be written.
    const record = (await this.#deps.files.read(id)) ?? here?.record ?? null;
    if (record === null || record.owner !== owner || this.#expired(record)) return null;
    if (record.finishedAt !== null) {
      return record.result === null ? { state: 'lost', record } : { state: 'done', record, result: record.result as JobResult };
    }
    const soFar = (record.result as BatchSoFar | null) ?? null;
    if (here !== undefined) return { state: 'running', record, live: here.job.live, soFar };
    if (livenessOf(record.server, this.#deps.identity.place, this.#deps.proc) !== 'dead') {
      return { state: 'running', record, live: null, soFar };
    }
    // Its server died: settling its attempts writes the result of a run job; a batch's stays partial.
    await this.#deps.settleInterrupted();
    const settled = await this.#deps.files.read(id);
    if (settled !== null && settled.finishedAt !== null && settled.result !== null)
      return { state: 'done', record: settled, result: settled.result as JobResult };
    return { state: 'lost', record: settled ?? record };
  }

  /** The job once it ended, or as it stands after `waitMs` (or when `signal` aborts). */
  async wait(id: string, owner: string, waitMs: number, signal?: AbortSignal): Promise<JobView | null> {
    const until = performance.now() + waitMs;
    for (;;) {
      const view = await this.get(id, owner);
      if (view === null || view.state !== 'running' || signal?.aborted) return view;
      const left = until - performance.now();
      if (left <= 0) return view;
      const here = this.#live.get(id);
      await (here !== undefined ? settledOrAfter(here.job.result, left, signal) : sleep(Math.min(POLL_MS, left), signal));
    }
  }

  /** Cancel the job: its model processes are killed and nothing is counted. False when `owner` has no such job running. */
  async cancel(id: string, owner: string): Promise<boolean> {
    const view = await this.get(id, owner);
    if (view?.state !== 'running') return false;
    const here = this.#live.get(id);
    if (here !== undefined) here.job.cancel.abort(new Error('cancelled with ollama_wait'));
    else await this.#deps.files.requestCancel(id);
    return true;
  }

  /** Record what the task runtime stored for a job started as an MCP task. */
  async storeTask(id: string, task: JobTask): Promise<void> {
    await this.#update(id, (record) => ({ ...record, task }));
  }

  /** The jobs `owner` started as MCP tasks, newest first. */
  async tasks(owner: string): Promise<JobRecord[]> {
    const jobs = await this.#deps.files.list();
    return jobs
      .filter((job) => job.owner === owner && job.task !== null && !this.#expired(job))
      .sort((a, b) => b.createdAt - a.createdAt);
  }

  async #ended(id: string, result: JobResult | null): Promise<void> {
    await this.#update(id, (record) => ({ ...record, finishedAt: this.#deps.clock(), result }));
    this.#live.delete(id);
    await this.#deps.files.prune(this.#deps.clock(), JOB_KEEP_MS).catch(() => {});
  }

  /**
   * Change a job's record. The writes of a job this server runs follow one another (a batch's
   * progress never lands after its end); another job's record is read from its file first.
   */
  async #update(id: string, change: (record: JobRecord) => JobRecord): Promise<void> {
    const here = this.#live.get(id);
    if (here === undefined) {
      const record = await this.#deps.files.read(id);
      if (record !== null) await this.#write(change(record));
      return;
    }
    here.kept = here.kept.then(() => {
      here.record = change(here.record);
      return this.#write(here.record);
    });
    await here.kept;
  }

  #expired(record: JobRecord): boolean {
    return record.finishedAt !== null && this.#deps.clock() - record.finishedAt >= JOB_KEEP_MS;
  }

  /** The record of a job this server starts running. */
  #newRecord(job: JobStart & Pick<JobRecord, 'task'>, now = this.#deps.clock()): JobRecord {
    const { id, kind, owner, tasks, model, startedAt, task } = job;
    const server = { ...this.#deps.identity.self, ...this.#deps.identity.place };
    return { id, kind, owner, tasks, model, startedAt, server, createdAt: now, finishedAt: null, result: null, task };
  }

  async #write(record: JobRecord): Promise<void> {
    await this.#deps.files.write(record).catch((error: Error) => {
      if (this.#warned) return;
      this.#warned = true;
      this.#deps.warn(
        `cannot keep the jobs' records (${error.message}): a job is collectable from this server only while it runs here`,
      );
    });
  }

  /** While jobs run here, look for cancels other servers asked of them. */
  #watchCancels(): void {
    if (this.#cancelWatch !== null) return;
    this.#cancelWatch = setInterval(() => {
      if (this.#live.size === 0) {
        clearInterval(this.#cancelWatch!);
        this.#cancelWatch = null;
        return;
      }
      for (const [id, { job }] of this.#live) {
        void this.#deps.files
          .cancelRequested(id)
          .then((asked) => asked && job.cancel.abort(new Error('cancelled with ollama_wait')));
      }
    }, POLL_MS * 4);
    this.#cancelWatch.unref();
  }
}

/** Resolves after `ms`, or as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return delay(ms, undefined, { signal }).catch(noop);
}

function settledOrAfter(promise: Promise<unknown>, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return Promise.race([promise.then(noop, noop), sleep(ms, signal)]);
}

function noop(): void {}
