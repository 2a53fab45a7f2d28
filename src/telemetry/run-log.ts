import { join } from 'node:path';

import { JsonlAppender } from './jsonl-appender.js';
import type { RunRecord } from './run-record.js';

/** File name of the run log inside the telemetry directory. */
export const RUN_LOG_FILE_NAME = 'runs.jsonl';

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
}

/** The `runs.jsonl` audit log: one line per `ollama_run` attempt, shared by every server process. */
export class RunLog {
  /** `<dir>/runs.jsonl`. */
  readonly path: string;
  readonly #logContent: boolean;
  readonly #appender: JsonlAppender;

  /** @param dir the telemetry directory (created on first write if missing) */
  constructor(dir: string, options: RunLogOptions = {}) {
    this.path = join(dir, RUN_LOG_FILE_NAME);
    this.#logContent = options.logContent ?? false;
    this.#appender = new JsonlAppender(this.path, { onError: options.onError });
  }

  /** Appends one record, without its prompt and output unless `logContent`. Never rejects. */
  record(rec: RunRecord): Promise<void> {
    if (this.#logContent) return this.#appender.append(rec);
    const { prompt: _prompt, output: _output, ...rest } = rec;
    return this.#appender.append(rest);
  }

  /** Resolves once every record issued so far is written (call before exiting). */
  idle(): Promise<void> {
    return this.#appender.idle();
  }
}
