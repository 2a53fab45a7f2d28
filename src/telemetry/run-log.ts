// Run-time imports stay inside src/telemetry/ (type-only ones may come from anywhere): the
// multi-process rotation test transpiles this folder alone and runs it in plain `node` children.
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { JsonlAppender } from './jsonl-appender.js';
import { listRunLogFiles, nextLogFileName, RUN_LOG_FILE_NAME, sortRunLogNames } from './log-files.js';
import { RUN_RECORD_SCHEMA_VERSION, type ControlEvent, type ControlRecord, type RunRecord } from './run-record.js';

/** File name of the first file of the run log inside the telemetry directory. */
export { RUN_LOG_FILE_NAME };

/** Default of {@link RunLogOptions.maxBytes}: 50 MiB, as `OLLAMA_MCP_LOG_MAX_BYTES`. */
const DEFAULT_RUN_LOG_MAX_BYTES = 52_428_800;

/** Options of {@link RunLog}. */
export interface RunLogOptions {
  /**
   * Keep `prompt` and `output` in the records (OLLAMA_MCP_LOG_CONTENT=1). Off by default:
   * prompts and answers can hold code and secrets that have no business in an audit log.
   * @default false
   */
  readonly logContent?: boolean;
  /** Where write failures go. @default one line on stderr */
  readonly onError?: (error: unknown, filePath: string) => void;
  /**
   * A record that would take the active file past this many bytes goes to a new file
   * (`runs-YYYY-MM-DD-NNN.jsonl`, see `log-files.ts`); nothing is ever renamed. With several server
   * processes a file can pass it by up to one line per other process (see `JsonlAppender`).
   * A record bigger than this goes alone into a file.
   * @default 52428800 (50 MiB; `OLLAMA_MCP_LOG_MAX_BYTES`)
   */
  readonly maxBytes?: number;
  /** Clock that dates new files (UTC). For tests. @default () => new Date() */
  readonly now?: () => Date;
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

  /**
   * @param dir the telemetry directory (created on first write if missing)
   * @throws RangeError when `maxBytes` is not a number from 1 and up
   */
  constructor(dir: string, options: RunLogOptions = {}) {
    this.dir = resolve(dir);
    this.path = join(this.dir, RUN_LOG_FILE_NAME);
    this.#logContent = options.logContent ?? false;
    this.#appender = new JsonlAppender(this.path, {
      onError: options.onError,
      rotation: {
        maxBytes: options.maxBytes ?? DEFAULT_RUN_LOG_MAX_BYTES,
        files: { list: () => listRunLogFiles(this.dir), listSync: () => listRunLogFilesSync(this.dir), next: nextLogFileName },
        now: options.now,
      },
    });
  }

  /**
   * Appends one record, without its prompt and output unless `logContent`. Never rejects. Written
   * before this returns in the common case (see `JsonlAppender`); await it to be sure.
   */
  record(rec: RunRecord): Promise<void> {
    if (this.#logContent) return this.#appender.append(rec);
    // Undefined keys are left out of the line; a copy with them unset costs a fraction of a rest
    // destructuring, which V8 does key by key.
    return this.#appender.append({ ...rec, prompt: undefined, output: undefined });
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
    return this.#appender.append(record);
  }

  /**
   * Every file of the log, absolute paths in reading order (`runs.jsonl` first, the active file
   * last); `[]` before the first record. Read them in this order, e.g. with `readJsonLines`.
   */
  files(): Promise<string[]> {
    return listRunLogFiles(this.dir);
  }

  /** Resolves once every record issued so far is written (call before exiting). */
  idle(): Promise<void> {
    return this.#appender.idle();
  }
}

/** `listRunLogFiles`, synchronously: lets a record that needs a fresh listing be written at once. */
function listRunLogFilesSync(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const names = entries.filter((entry) => !entry.isDirectory()).map((entry) => entry.name);
  return sortRunLogNames(names).map((name) => join(dir, name));
}
