// Run-time imports stay inside src/telemetry/: the multi-process rotation test runs this folder alone in plain `node`.
import { join, resolve } from 'node:path';

import { JsonlAppender } from './jsonl-appender.js';
import { listRunLogFiles, nextLogFileName, RUN_LOG_FILE_NAME } from './log-files.js';
import { DEFAULT_RETENTION, pruneRunLog, type RetentionPolicy } from './log-retention.js';
import { RETENTION_CLOCK_FILE_NAME, RetentionClockFile } from './retention-clock.js';
import { RUN_RECORD_SCHEMA_VERSION, type ControlEvent, type ControlRecord, type RunRecord } from './run-record.js';

/** Default of {@link RunLogOptions.maxBytes}: 50 MiB, as `OLLAMA_MCP_LOG_MAX_BYTES`. */
const DEFAULT_RUN_LOG_MAX_BYTES = 52_428_800;

export interface RunLogOptions {
  /** Keep `prompt` and `output` in the records (OLLAMA_MCP_LOG_CONTENT=1): they can hold code and secrets. @default false */
  readonly logContent?: boolean;
  /** Where write failures go. @default one line on stderr */
  readonly onError?: (error: unknown, filePath: string) => void;
  /** A record that would take the active file past this many bytes goes to a new file (see `JsonlAppender`). @default 50 MiB */
  readonly maxBytes?: number;
  /** Clock that dates new files (UTC). For tests. @default () => new Date() */
  readonly now?: () => Date;
  /** The wall clock retention reads (see `retention-clock.ts`). For tests. @default () => new Date() */
  readonly retentionNow?: () => Date;
  /** Which rotated files are deleted, checked at this process's first record and each new file. @default 90 days, 1 GiB */
  readonly retention?: RetentionPolicy;
}

/**
 * The run log: one JSON line per `ollama_run` attempt, shared by every server process, in
 * `runs.jsonl` and, once that is full, in `runs-YYYY-MM-DD-NNN.jsonl` files beside it.
 */
export class RunLog {
  /** The telemetry directory, absolute. */
  readonly dir: string;
  /** `<dir>/runs.jsonl`, the first file of the log (not necessarily the one being written). */
  readonly path: string;
  readonly #logContent: boolean;
  readonly #appender: JsonlAppender;
  readonly #retention: RetentionPolicy;
  readonly #retentionNow: () => Date;
  /** The time retention judges ages by, shared with every process and with `answers/`. */
  readonly #retentionClock: RetentionClockFile;
  /** The active file when retention last ran (`null`: not yet in this process). */
  #prunedAt: string | null = null;
  #pruning: Promise<void> = Promise.resolve();

  /** @param dir the telemetry directory (created on first write if missing) */
  constructor(dir: string, options: RunLogOptions = {}) {
    this.dir = resolve(dir);
    this.path = join(this.dir, RUN_LOG_FILE_NAME);
    this.#logContent = options.logContent ?? false;
    this.#retention = options.retention ?? DEFAULT_RETENTION;
    this.#retentionNow = options.retentionNow ?? (() => new Date());
    this.#retentionClock = new RetentionClockFile(join(this.dir, RETENTION_CLOCK_FILE_NAME));
    this.#appender = new JsonlAppender(this.path, {
      onError: options.onError,
      rotation: {
        maxBytes: options.maxBytes ?? DEFAULT_RUN_LOG_MAX_BYTES,
        files: { list: () => listRunLogFiles(this.dir), next: nextLogFileName },
        now: options.now ?? (() => new Date()),
      },
    });
  }

  /** Appends one record, without its prompt and output unless `logContent`. Never rejects. */
  record(rec: RunRecord): Promise<void> {
    // Undefined keys are left out of the line.
    return this.#append(this.#logContent ? rec : { ...rec, prompt: undefined, output: undefined });
  }

  /** Appends a control action (a reset, a status look-up) beside the runs. Never rejects. */
  recordControl(event: ControlEvent): Promise<void> {
    const record: ControlRecord = {
      v: RUN_RECORD_SCHEMA_VERSION,
      kind: 'control',
      ts: new Date().toISOString(),
      ...event,
      server_pid: process.pid,
    };
    return this.#append(record);
  }

  async #append(record: object): Promise<void> {
    await this.#appender.append(record);
    if (this.#appender.activeFile === this.#prunedAt) return;
    // A new active file (or the first record of this process): old files may be past retention.
    this.#prunedAt = this.#appender.activeFile;
    this.#pruning = this.#pruning.then(() => this.#prune());
  }

  /** Deletes what retention no longer keeps; never fails a run (a file it cannot delete is named on stderr, and tried again next time). */
  async #prune(): Promise<void> {
    // A directory that cannot be listed prunes nothing: the append said so already.
    const pruned = await pruneRunLog(this.dir, this.#retention, this.#retentionNow(), this.#retentionClock).catch(() => null);
    for (const { file, error } of pruned?.failed ?? []) {
      const message = error instanceof Error ? error.message : String(error);
      process.stderr.write(`ollama-runner-mcp: could not delete old run log file ${file}: ${message}\n`);
    }
  }

  /** Resolves once every record issued so far is written, and retention is done (call before exiting). */
  async idle(): Promise<void> {
    await this.#appender.idle();
    await this.#pruning;
  }
}
