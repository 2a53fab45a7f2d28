import { livenessOf, type ProcView } from '../../policy/process-identity.js';
import type { AttemptJournal, OpenAttempt } from '../../store/attempt-journal.js';
import type { SelfIdentity } from '../../store/processes/proc-reader.js';
import { terminalText } from '../../ollama/terminal-text.js';
import { canonicalModelName } from '../../ollama/model-name.js';
import { failure } from './errors.js';
import type { AttemptLedger } from './ledger.js';
import type { AttemptRecorder } from './record.js';
import type { RunResult } from '../reply/run-result.js';
import type { JobFiles } from '../../store/job-files.js';
import type { CallListener } from './types.js';

/** How often the attempts of dead servers are looked for, besides once at start-up. */
const SETTLE_EVERY_MS = 60_000;

interface InterruptedAttemptsDeps {
  readonly journal: AttemptJournal;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
  readonly ledger: AttemptLedger;
  readonly recorder: AttemptRecorder;
  /** Where jobs are kept: a job whose call this attempt ended gets its result. */
  readonly jobs: JobFiles | null;
  /** Epoch ms. */
  readonly clock: () => number;
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
    const request = { model: open.model, prompt: '', taskId: open.taskId ?? undefined };
    // Its place in a fallback chain, for its line (what the chain tried before it is not known here).
    const step = { chainId: open.chainId, chainStep: open.chainStep, busyTry: 0, tried: [], busyRetries: 0 };
    const result = await recorder.record(
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
        step: open.chainId !== null ? step : undefined,
        willRetry: false,
      },
      [],
      { tool: open.tool, batchId: open.batchId ?? undefined },
    );
    await this.#endJob(open.callId ?? null, result);
    const what = terminalText(`${open.model}${open.taskId !== null ? `, task ${open.taskId}` : ''}`);
    warn(`attempt ${open.runId} (${what}) settled as ${status}: ${died}`);
  }

  /** A run job whose server died while it ran ends with the attempt that was under way. */
  async #endJob(callId: string | null, result: RunResult): Promise<void> {
    const { jobs, clock } = this.#deps;
    if (callId === null || jobs === null) return;
    const job = await jobs.read(callId);
    if (job === null || job.kind !== 'run' || job.finishedAt !== null) return;
    await jobs.write({ ...job, finishedAt: clock(), result }).catch(() => {});
  }
}

/**
 * Records each attempt as under way from the moment its CLI is about to start until its line is
 * written (a listener of every call's events), so that the next server settles it if this one dies.
 * A journal that cannot be written costs one warning: the runs go on.
 */
export function recordUnderWay(deps: {
  readonly journal: AttemptJournal;
  readonly identity: SelfIdentity;
  readonly clock: () => number;
  readonly warn: (message: string) => void;
}): CallListener {
  const { journal, identity, clock, warn } = deps;
  const open = new Set<string>();
  let warned = false;
  const problem = (error: Error) => {
    if (warned) return;
    warned = true;
    warn(
      `cannot record the attempts under way (${error.message}): runs go on, but one cut off by a crash of this server will not be settled by the next`,
    );
  };
  return async (event) => {
    const { attempt } = event;
    if (event.type === 'started') {
      const { busyTry: _busyTry, ...info } = attempt;
      const tool = attempt.batchId !== null ? 'ollama_run_many' : 'ollama_run';
      const server = { ...identity.self, ...identity.place };
      await journal.open({ ...info, tool, startedAt: clock(), server }).then(() => void open.add(attempt.runId), problem);
    } else if (event.type === 'ended' && open.delete(attempt.runId)) {
      await journal.close(attempt.runId).catch(problem);
    }
  };
}
