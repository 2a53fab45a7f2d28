import { livenessOf, type ProcView } from '../policy/process-identity.js';
import type { AttemptJournal, OpenAttempt } from '../store/attempt-journal.js';
import type { SelfIdentity } from '../store/processes/proc-reader.js';
import { terminalText } from '../ollama/terminal-text.js';
import { canonicalModelName } from '../ollama/model-name.js';
import { failure } from './attempt.js';
import type { AttemptLedger } from './attempt-ledger.js';
import type { AttemptRecorder } from './attempt-record.js';
import { STOP, type CallStep } from './call-runner.js';

/** How often the attempts of dead servers are looked for, besides once at start-up. */
export const SETTLE_EVERY_MS = 60_000;

export interface InterruptedAttemptsDeps {
  readonly journal: AttemptJournal;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
  readonly ledger: AttemptLedger;
  readonly recorder: AttemptRecorder;
  readonly warn: (message: string) => void;
}

/**
 * The attempts a server left under way when it died (SIGKILL, out of memory): each one's record is
 * settled by the next server as `interrupted`, counted for its task (unless the task already holds its
 * verdict) and given its runs.jsonl line, so the ledger and the log agree after any crash. A record
 * is settled once, by whichever server claims it first; a live server's records are left alone.
 */
export class InterruptedAttempts {
  readonly #deps: InterruptedAttemptsDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | null = null;

  constructor(deps: InterruptedAttemptsDeps) {
    this.#deps = deps;
  }

  /** Settle now and every {@link SETTLE_EVERY_MS}. */
  start(): void {
    if (this.#timer) return;
    void this.settleNow();
    this.#timer = setInterval(() => void this.settleNow(), SETTLE_EVERY_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Settle every attempt of a dead server now (one pass at a time); how many. Never rejects. */
  settleNow(): Promise<number> {
    this.#running ??= this.#settleAll()
      .catch((error: unknown) => {
        this.#deps.warn(`settling the attempts of stopped servers failed: ${(error as Error).message}`);
        return 0;
      })
      .finally(() => (this.#running = null));
    return this.#running;
  }

  async #settleAll(): Promise<number> {
    const { journal, identity, proc } = this.#deps;
    let settled = 0;
    for (const attempt of await journal.list()) {
      if (livenessOf(attempt.server, identity.place, proc) !== 'dead') continue;
      // Claimed by a server that died while settling it: take it over (the ledger never counts it twice).
      if (attempt.claimedBy !== null && (attempt.claimedBy === process.pid || proc.exists(attempt.claimedBy))) continue;
      if (!(await journal.claim(attempt.runId, process.pid, attempt.claimedBy))) continue; // another server took it
      await this.#settle(attempt);
      await journal.settled(attempt.runId, process.pid);
      settled += 1;
    }
    return settled;
  }

  async #settle(open: OpenAttempt): Promise<void> {
    const { ledger, recorder, warn } = this.#deps;
    const { settled, status } = await ledger.settleInterrupted({ ...open, modelKey: canonicalModelName(open.model) });
    const died = `the server running it (pid ${open.server.pid}) stopped before the attempt ended (killed, or out of memory); settled by pid ${process.pid}`;
    const error =
      status === 'interrupted'
        ? died
        : `it ended ${status}, but ${died.replace('before the attempt ended', 'before logging it')}`;
    const request = { model: open.model, prompt: '', ...(open.taskId !== null ? { taskId: open.taskId } : {}) };
    await recorder.record(
      {
        runId: open.runId,
        request,
        timeoutMs: open.timeoutMs,
        startTimeoutMs: open.startTimeoutMs,
        maxRetries: open.maxRetries,
        status,
        classification: failure(status, error),
        settled,
        promptChars: open.promptChars,
      },
      { warnings: [], tool: open.tool, ...(open.chainId !== null ? { step: stepOf(open) } : {}), willRetry: false },
      open.batchId !== null ? { batchId: open.batchId } : {},
    );
    const what = terminalText(`${open.model}${open.taskId !== null ? `, task ${open.taskId}` : ''}`);
    warn(`attempt ${open.runId} (${what}) settled as ${status}: ${died}`);
  }
}

/** Its place in a fallback chain, for its line (what the chain tried before it is not known here). */
function stepOf(open: OpenAttempt): CallStep {
  return {
    chainId: open.chainId,
    chainStep: open.chainStep,
    busyTry: 0,
    timeoutMs: open.timeoutMs,
    startTimeoutMs: open.startTimeoutMs,
    maxRetries: open.maxRetries,
    tried: [],
    busyRetries: 0,
    after: async () => STOP,
  };
}
