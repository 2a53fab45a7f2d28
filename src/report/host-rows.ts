import { loadOf } from './model-loads.js';
import type { RunLine } from './run-line.js';
import type { HostRow } from './summary-schema.js';

/** Hosts counted at most; the rest are left out (a log of one server lists a handful). */
const MAX_HOSTS = 100;

/**
 * Runs, loads and failures per Ollama host (`host` of each line, OLLAMA_MCP_HOSTS): which machine
 * served the work, which one reloads models, which one cannot be reached.
 */
export class HostRows {
  readonly #rows = new Map<string, { -readonly [K in keyof HostRow]: HostRow[K] }>();

  add(line: RunLine): void {
    if (line.host === null) return;
    let row = this.#rows.get(line.host);
    if (row === undefined) {
      if (this.#rows.size >= MAX_HOSTS) return;
      row = { host: line.host, attempts: 0, runs: 0, ok: 0, failures: 0, unreachable: 0, loads: 0 };
      this.#rows.set(line.host, row);
    }
    row.attempts += 1;
    if (!line.willRetry) row.runs += 1;
    if (line.status === 'ok') row.ok += 1;
    else row.failures += 1;
    if (line.status === 'ollama_unreachable') row.unreachable += 1;
    if (loadOf(line) !== null) row.loads += 1;
  }

  /** Most attempts first. */
  result(): HostRow[] {
    return [...this.#rows.values()].sort((a, b) => b.attempts - a.attempts || a.host.localeCompare(b.host));
  }
}
