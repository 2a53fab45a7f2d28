import type { CliRunOptions } from '../../ollama/cli-args.js';
import type { BreakerSettings, CircuitView } from '../../policy/breaker.js';
import type { CircuitTransition } from '../../policy/breaker-state.js';
import type { EscalationDecision } from '../../policy/escalation.js';
import type { EscalationReason, RunStatus } from '../../policy/run-status.js';
import type { QueueReason } from '../queue/queue-reason.js';
import type { FallbackEntry, RunResult } from '../reply/run-result.js';

// The shapes a call and its attempts share: a call's request and context, an attempt's step and
// events, what the ledger says of it, and the two phases the call's loop drives.

/** A validated `ollama_run` call. */
export interface RunRequest extends CliRunOptions {
  readonly model: string;
  readonly prompt: string;
  readonly taskId?: string;
  readonly retryCount?: number;
  readonly maxRetries?: number;
  /** Limit of the answer, from its first byte. */
  readonly timeoutMs?: number;
  /** Limit of the wait for the answer's first byte (Ollama's queue, the load, reading the prompt). */
  readonly startTimeoutMs?: number;
  readonly includeThinking?: boolean;
  /** Let the CLI pull a model that is not installed (skips the preflight check). */
  readonly allowPull?: boolean;
  /** Models tried in order when the one before cannot serve; undefined = the tier rule's chain, [] = none. */
  readonly fallbackModels?: readonly string[];
  /** The whole call (every model of the chain, busy waits included) ends within this many ms. */
  readonly deadlineMs?: number;
  /** The Ollama host the call must run on (its `host` argument, as OLLAMA_MCP_HOSTS names it); undefined: routed. */
  readonly host?: string;
}

/** What the caller of a call gives besides its arguments. */
export interface RunContext {
  /** Aborts the call (client cancel, server shutdown): the process is killed, the slot freed. */
  readonly signal?: AbortSignal | undefined;
  /** Set for the jobs of one `ollama_run_many` call; logged as `batch_id`. */
  readonly batchId?: string | undefined;
  /** The batch's limit on its jobs at once (its `concurrency`), kept by the dispatcher. */
  readonly batchLimit?: number | undefined;
  /** Epoch ms by which the call ends (a batch's deadline); its own `deadline_ms` may end it sooner. */
  readonly deadlineAt?: number | undefined;
  /** How many results share the reply (a batch's job count): each gets that share of its size. @default 1 */
  readonly replyShare?: number | undefined;
  /** Told every event of the call, for progress and a live view of it. */
  readonly listen?: CallListener | undefined;
  /** The request's `_meta`, passed down with it (a `traceparent` arrives there). */
  readonly meta?: Readonly<Record<string, unknown>> | undefined;
}

/** A call as its attempts see it: its caller's context with the call's own deadline, and its event stream. */
export interface CallContext extends Omit<RunContext, 'listen'> {
  readonly events: EventStream;
  /** The call's id in the registry of calls in flight. */
  readonly callId?: string | undefined;
}

/** A call's event stream (`CallEvents`): its attempts and its loop emit, listeners are told. */
export interface EventStream {
  emit(event: CallEvent): Promise<void>;
  listen(listener: CallListener): void;
}

/** Is the model installed? `unknown`: the list could not be read, so the run goes ahead and speaks for itself. */
export type PreflightResult =
  | { readonly kind: 'installed' }
  | { readonly kind: 'missing'; readonly installed: readonly string[] }
  | { readonly kind: 'unknown'; readonly reason: string };

/** A model of the chain that could not serve the call, as the final result and its error tell it. */
export interface TriedModel extends FallbackEntry {
  /** Its error text, null when it had none. */
  readonly error: string | null;
  /** Its own escalation (policy/task-verdict.ts), which the call's verdict weighs with the models after it. */
  readonly own: EscalationReason | null;
}

/** An attempt's limits, resolved once for its model by the call's plan. */
export interface Limits {
  /** Limit of the answer, from its first byte. */
  readonly timeoutMs: number;
  /** Limit of the wait for the first byte (a busy retry gets what is left of its model's). */
  readonly startTimeoutMs: number;
  /** The call's max_retries (the caller's, or its first model's), for every model of the chain. */
  readonly maxRetries: number;
  /** Requests of the model Ollama runs at once. */
  readonly parallel: number;
  readonly breaker: BreakerSettings;
  /** The keep-alive the call asks Ollama for, in ms (negative: forever); undefined: Ollama's default. */
  readonly keepAliveMs: number | undefined;
}

/** Where one attempt stands in its call, and everything it needs to run: its request, model and limits. */
export interface Step {
  /** The call's request, for this attempt's model. */
  readonly request: RunRequest;
  readonly modelKey: string;
  readonly limits: Limits;
  /** Shared by every model's attempt of a call with a fallback chain; null without a chain. */
  readonly chainId: string | null;
  /** 0 for the chain's first model, 1 for the next...; null without a chain. */
  readonly chainStep: number | null;
  /** 0 for a model's first attempt in the call, n for its n-th retry after a "not now". */
  readonly busyTry: number;
  /** Models tried before this one, in order. */
  readonly tried: readonly TriedModel[];
  /** Busy retries done so far in the call. */
  readonly busyRetries: number;
}

/** The status an attempt ended with, for its call to decide what next. */
export interface AttemptOutcome {
  readonly status: RunStatus;
  /** Its host could not be reached and another host can serve: the call goes on there at once, not counted. */
  readonly failover?: boolean;
}

/** What an attempt's call learns when it ends: its result, and its own escalation for the call's verdict. */
export interface Ended {
  readonly result: RunResult;
  readonly own: EscalationReason | null;
}

/** One attempt as its call drives it (app/attempt/attempt.ts): run, then end once the call decided whether it goes on. */
export interface AttemptDriver {
  readonly info: AttemptInfo;
  run(): Promise<AttemptOutcome>;
  /** The call stopped before this attempt could run (cancelled while it waited to retry a "not now"). */
  stopBeforeRun(error: string): void;
  end(willRetry: boolean): Promise<Ended>;
}

/** Where a call's attempts come from. */
export interface AttemptSource {
  begin(step: Step, context: CallContext): AttemptDriver;
}

/** Who an event is about: one attempt of one call. Every event of the attempt carries the same object. */
export interface AttemptInfo
  extends Pick<Step, 'chainId' | 'chainStep' | 'busyTry'>, Pick<Limits, 'maxRetries' | 'timeoutMs' | 'startTimeoutMs'> {
  readonly runId: string;
  /** Its call's id (a job's id, when the call was handed over as one). */
  readonly callId: string | null;
  readonly model: string;
  readonly taskId: string | null;
  /** The caller's own retry_count, if it passed one. */
  readonly callerRetryCount: number | null;
  /** `ollama_run_many`'s batch, null for `ollama_run`. */
  readonly batchId: string | null;
  readonly promptChars: number;
}

/**
 * What happens to a call, in order, as its attempts do it:
 * - `queued`: the attempt waits in this server's queue; `reason()` says why (null once it leaves it);
 * - `waiting_for_probe`: its model's circuit is half-open and it waits for the probe run's verdict;
 * - `started`: the CLI is about to be spawned; `cold`: its model was not loaded as far as this server knew;
 * - `first_byte`: the answer began (the start allowance is over, `timeout_ms` counts from here);
 * - `output`: `bytes` of stdout received so far;
 * - `busy_wait`: a "not now" (`status`); the call waits `waitMs`, then makes busy retry `retry` of `of`;
 * - `next_model`: the model could not serve; the call moves on to `next`, the next of its chain;
 * - `ended`: the attempt has its status, its runs.jsonl line and its `result`; `willRetry`: the call goes on.
 */
export type CallEvent = { readonly attempt: AttemptInfo } & (
  | { readonly type: 'queued'; readonly reason: () => QueueReason | null }
  | { readonly type: 'waiting_for_probe' }
  /** `host`: the Ollama host it was sent to (null: none known). */
  | { readonly type: 'started'; readonly cold: boolean; readonly host?: string | null }
  | { readonly type: 'first_byte' }
  | { readonly type: 'output'; readonly bytes: number }
  | {
      readonly type: 'busy_wait';
      readonly retry: number;
      readonly of: number;
      readonly waitMs: number;
      readonly status: RunStatus;
    }
  | { readonly type: 'next_model'; readonly next: string }
  | { readonly type: 'ended'; readonly status: RunStatus; readonly willRetry: boolean; readonly result: RunResult }
);

/** Told every event of a call; a listener that returns a promise is waited for (the journal records `started` before the spawn). */
export type CallListener = (event: CallEvent) => void | Promise<void>;

/** What the ledger and the circuit said of an attempt. */
export interface Settled {
  readonly retryCount: number;
  readonly escalation: EscalationDecision;
  /**
   * The status the task records for the call when it is an earlier model's (a fallback after it could
   * not serve, or the call stopped before it ran): what decides whether the result is retryable.
   */
  readonly standing?: RunStatus;
  readonly circuit: CircuitView;
  readonly transition: CircuitTransition;
  /** The failure is this server's own misjudgement: recorded for the task, not counted (absent: counted as its status says). */
  readonly excused?: boolean;
}
