import { setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import path from 'node:path';
import { AnswerFiles } from './reply/answer-files.js';
import { AttemptLedger } from './attempt/ledger.js';
import { AttemptRecorder, type RecordContext } from './attempt/record.js';
import { Attempts } from './attempt/attempt.js';
import { failure, NOT_STARTED_ERROR } from './attempt/errors.js';
import { runCall, type CallDeps } from './call/run-call.js';
import { Calls, type CallHandle } from './call/calls.js';
import { Jobs } from './call/jobs.js';
import { JobFiles } from '../store/job-files.js';
import { TurnSlots } from './queue/turn-slots.js';
import { CallEvents } from './attempt/events.js';
import { cliContextCheck } from './attempt/context-check.js';
import { Dispatcher, type DispatchQueue } from './queue/dispatcher.js';
import { serverKeyOf, SharedDispatcher, type SharedQueueStatus } from './queue/shared-dispatcher.js';
import { sharedPs } from './queue/shared-ps.js';
import { queueKeepAlive } from '../policy/shared-queue.js';
import type { QueueStore } from '../store/queue/queue-store.js';
import { ledgerReserve } from './reply/disk-room.js';
import { Residency } from './queue/residency.js';
import { HostPool, type HostListing, type HostStatus } from './queue/host-pool.js';
import { hostNameOf, resolveHost, type HostSpec } from '../config/hosts.js';
import { ollamaKeyOf } from '../policy/host-key.js';
import type { WriteUp } from './attempt/write-up.js';
import { salvageRequest } from './attempt/request.js';
import type { RunResult } from './reply/run-result.js';
import { TurnScheduler } from './attempt/turn.js';
import { InterruptedAttempts, recordUnderWay } from './attempt/interrupted.js';
import { AttemptJournal } from '../store/attempt-journal.js';
import { liveProcView, selfIdentity } from '../store/processes/proc-reader.js';
import { livenessOf } from '../policy/process-identity.js';
import type { Config } from '../config/config.js';
import { configSettings, type ModelSettings } from '../config/model-tiers.js';
import { cliEnvironment } from '../ollama/child-env.js';
import type { LoadedModelsResult } from '../ollama/loaded-models.js';
import { canonicalModelName } from '../ollama/model-name.js';
import { runModelProcess, type ModelProcessRequest, type ProcessOutcome } from '../ollama/model-process.js';
import { circuitGate, rebase } from '../policy/breaker.js';
import type { SharedSlots } from '../store/slots/shared-slots.js';
import type { StateBackend } from '../store/state-backend.js';
import type { RunLog } from '../telemetry/run-log.js';
import type { CallListener, PreflightResult, RunContext, RunRequest } from './attempt/types.js';
import { RETENTION_CLOCK_FILE_NAME, RetentionClockFile } from '../telemetry/retention-clock.js';

/** This server's queue, for `ollama_health`. */
export interface QueueView {
  readonly running: number;
  readonly waiting: number;
  /** OLLAMA_MCP_CONCURRENCY. */
  readonly limit: number;
  /** Models this server believes Ollama has loaded, least recently used first. */
  readonly loaded: readonly string[];
  /** Models Ollama keeps loaded together: as set, or the most `ollama ps` has shown at once. */
  readonly capacity: number;
  /** The memory learned to hold models together (bytes); null when the capacity is set, or nothing was seen yet. */
  readonly memoryBudget: number | null;
}

interface RunServiceDeps {
  readonly config: Config;
  readonly store: StateBackend;
  readonly log: RunLog;
  /** Epoch ms. Injected so tests and the store agree on time. @default Date.now */
  readonly clock?: () => number;
  /** `ollama ps`, parsed: which models Ollama has loaded. @default none (only this server's own dispatches count) */
  readonly readLoaded?: (() => Promise<LoadedModelsResult>) | null;
  /** The least a model's file weighs, from `ollama list` as last read (asks nothing). @default none known */
  readonly fileBytesOf?: (model: string) => number | undefined;
  /** @default runModelProcess (execa) */
  readonly spawn?: (request: ModelProcessRequest) => Promise<ProcessOutcome>;
  /** Environment handed to the CLI. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly onWarning?: (message: string) => void;
  /** Per-model limits. @default the environment's, for every model */
  readonly settingsFor?: (model: string) => ModelSettings;
  /** Checks a model is installed before spawning (OLLAMA_MCP_PREFLIGHT). @default none */
  readonly preflight?: (model: string, host?: string) => Promise<PreflightResult>;
  /** The cap shared by every server process (OLLAMA_MCP_SHARED_CONCURRENCY). @default none */
  readonly sharedSlots?: SharedSlots | null;
  /** The queue shared by every server in front of the same Ollama (OLLAMA_MCP_SHARED_QUEUE). @default none: this server's own */
  readonly queueStore?: QueueStore | null;
  /**
   * The Ollama hosts (OLLAMA_MCP_HOSTS), each with its own `ollama ps`, `ollama list`, shared queue and
   * CLI environment. @default one: `config.hosts[0]` with `env`, `readLoaded`, `fileBytesOf` and `queueStore` above
   */
  readonly hosts?: readonly HostDeps[];
  /** Told when the shared queue found servers gone (their model processes are orphans now). @default nothing */
  readonly onServerGone?: () => void;
  /** A listener for each call's events (traces and metrics), made when the call starts. @default none */
  readonly observe?: ((request: RunRequest, context: RunContext) => CallListener) | undefined;
}

/** One Ollama host, as the server's start-up found it. */
export interface HostDeps {
  readonly spec: HostSpec;
  /** Its name in results, health and runs.jsonl. */
  readonly name: string;
  /** Its CLI children's environment (OLLAMA_HOST set to it). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly readLoaded: (() => Promise<LoadedModelsResult>) | null;
  readonly fileBytesOf: (model: string) => number | undefined;
  readonly queueStore: QueueStore | null;
  readonly list?: () => Promise<HostListing>;
}

/**
 * The calls of one server: every `ollama_run` call and `ollama_run_many` job starts here (`start`),
 * is tracked in flight (`Calls`), runs its loop (call/run-call.ts) over attempts (attempt/attempt.ts)
 * that take their turns from the one dispatcher; refusals of invalid input and of batch jobs never
 * started are logged here too.
 */
export class RunService {
  readonly #config: Config;
  readonly #clock: () => number;
  readonly #settingsFor: (model: string) => ModelSettings;
  readonly #ledger: AttemptLedger;
  readonly #dispatcher: HostPool;
  readonly #recorder: AttemptRecorder;
  readonly #answers: AnswerFiles;
  /** The attempts dead servers left under way: settled at start-up and every minute once started. */
  readonly interrupted: InterruptedAttempts;
  /** Calls handed over as jobs: they outlast their reply, and are collected later (ollama_wait, MCP tasks). */
  readonly jobs: Jobs;
  readonly #calls = new Calls();
  /** Told every event of every call: records each attempt in the journal of attempts under way. */
  readonly #underWay: CallListener;
  readonly #journal: AttemptJournal;
  readonly #identity = selfIdentity();
  readonly #shutdown = new AbortController();
  readonly #callDeps: CallDeps;
  readonly #observe: RunServiceDeps['observe'];

  constructor(deps: RunServiceDeps) {
    const config = deps.config;
    this.#config = config;
    setMaxListeners(0, this.#shutdown.signal); // one listener per call in flight, hundreds when many are queued
    this.#clock = deps.clock ?? Date.now;
    this.#observe = deps.observe;
    const defaults = configSettings(config);
    this.#settingsFor = deps.settingsFor ?? (() => defaults);
    const warn = deps.onWarning ?? ((message) => process.stderr.write(`ollama-runner-mcp: ${message}\n`));
    this.#answers = defaultAnswerFiles(config, this.#clock);
    this.#ledger = new AttemptLedger({ store: deps.store, clock: this.#clock, config, warn });
    this.#dispatcher = hostPoolFor(config, deps, warn);
    this.#recorder = new AttemptRecorder({ log: deps.log, clock: this.#clock, answers: this.#answers });
    const env = cliEnvironment(config, deps.env);
    this.#journal = new AttemptJournal(config.telemetryDir);
    this.#underWay = recordUnderWay({ journal: this.#journal, identity: this.#identity, clock: this.#clock, warn });
    const jobFiles = new JobFiles(config.telemetryDir);
    this.interrupted = new InterruptedAttempts({
      journal: this.#journal,
      identity: this.#identity,
      proc: liveProcView,
      ledger: this.#ledger,
      recorder: this.#recorder,
      jobs: jobFiles,
      clock: this.#clock,
      warn,
    });
    this.jobs = new Jobs({
      files: jobFiles,
      identity: this.#identity,
      proc: liveProcView,
      clock: this.#clock,
      settleInterrupted: () => this.interrupted.settleNow(),
      warn,
    });
    const attempts = new Attempts({
      config,
      clock: this.#clock,
      spawn: deps.spawn ?? runModelProcess,
      env,
      preflight: deps.preflight,
      ledger: this.#ledger,
      turns: new TurnScheduler({
        ledger: this.#ledger,
        slots: new TurnSlots(this.#dispatcher, deps.sharedSlots ?? null),
        clock: this.#clock,
      }),
      contextCheck: cliContextCheck(config, env, this.#clock),
      recorder: this.#recorder,
    });
    this.#callDeps = {
      attempts,
      refuses: (model) => this.#refuses(model),
      settingsFor: this.#settingsFor,
      busyRetries: config.busyRetries,
      clock: this.#clock,
      random: Math.random,
      sleep: sleepUnlessAborted,
      newId: randomUUID,
    };
  }

  /** This server's queue: attempts running and waiting, the limit (OLLAMA_MCP_CONCURRENCY), and what it believes Ollama has loaded. */
  get queue(): QueueView {
    const { running, waiting, limit } = this.#dispatcher;
    return { running, waiting, limit, ...this.#dispatcher.residency() };
  }
  /** The queue shared with the other servers of this Ollama, read now; null when this server dispatches alone. */
  async sharedQueue(): Promise<SharedQueueStatus | null> {
    const first = this.#dispatcher.first;
    return first instanceof SharedDispatcher ? first.shared() : null;
  }

  /** Every Ollama host: whether it is down, its queue, what it has loaded. */
  get hosts(): HostStatus[] {
    return this.#dispatcher.status();
  }

  /** Calls started and not yet logged. */
  get inFlight(): number {
    return this.#calls.size;
  }

  /** Resolves when every call started so far has finished and been logged. */
  drain(): Promise<void> {
    return this.#calls.drain();
  }

  /** At shutdown, after `drain`: this server leaves the queue it shares with other servers. */
  async close(): Promise<void> {
    await this.#dispatcher.close?.();
  }

  /** Stop every queued and running call (server shutdown); later calls end as cancelled at once. */
  abortAll(): void {
    this.#shutdown.abort();
  }

  /** The limits in force for a model. */
  settingsFor(model: string): ModelSettings {
    return this.#settingsFor(model);
  }

  /** One call, tracked from now until its result is logged. Unless it is a batch's job, its reply is built next. */
  start(request: RunRequest, context: RunContext = {}, callId?: string): CallHandle {
    if (request.host !== undefined) {
      const host = resolveHost(this.#config.hosts, request.host, (a, b) => ollamaKeyOf(a) === ollamaKeyOf(b));
      if (host === null) return this.#unknownHost(request, context);
      request = { ...request, host };
    }
    const { listen, ...rest } = context;
    const observed = this.#observe?.(request, rest);
    const events = new CallEvents([this.#underWay, ...(listen ? [listen] : []), ...(observed ? [observed] : [])]);
    const { signal, unlink } = eitherAborts(context.signal, this.#shutdown.signal);
    const run = async (id: string) => {
      try {
        const result = await runCall(this.#callDeps, request, { ...rest, signal, events, callId: id });
        if (context.batchId === undefined) await this.replied([result]);
        return result;
      } finally {
        unlink();
      }
    };
    return this.#calls.start(request.taskId, events, run, callId);
  }

  run(request: RunRequest, context: RunContext = {}): Promise<RunResult> {
    return this.start(request, context).result;
  }

  /** The reply naming these results is built: the grace of the answer files they name starts now. */
  async replied(results: readonly RunResult[]): Promise<void> {
    const files = results.flatMap(({ metadata }) => [metadata.output_file, metadata.thinking_file]);
    await this.#answers.replied(files.flatMap((file) => (file ? [file.path] : [])));
  }

  /**
   * Attempts of a task under way now, whose verdicts are not recorded yet: this server's calls, and
   * the attempts other live servers on the same data dir are running.
   */
  async inFlightFor(taskId: string): Promise<number> {
    const here = this.#calls.ofTask(taskId);
    const open = await this.#journal.list().catch(() => []);
    const elsewhere = open.filter(
      (attempt) =>
        attempt.taskId === taskId &&
        attempt.server.pid !== this.#identity.self.pid &&
        livenessOf(attempt.server, this.#identity.place, liveProcView) !== 'dead',
    );
    return here + elsewhere.length;
  }

  /** A call refused before anything ran because its arguments were invalid: logged, never spawned. */
  rejectInvalid(rawArgs: unknown, message: string, tool?: string): Promise<RunResult> {
    const { request, maxRetries, retryCount } = salvageRequest(rawArgs);
    const max = maxRetries ?? this.#config.maxRetries;
    return this.#refuse(request, { tool }, 'invalid_input', message, max, retryCount);
  }

  /** A batch job that never started because the batch deadline passed: logged, never spawned. */
  notStarted(request: RunRequest, context: RunContext): Promise<RunResult> {
    const maxRetries = request.maxRetries ?? this.#settingsFor(request.model).maxRetries;
    return this.#refuse(request, context, 'not_started', NOT_STARTED_ERROR, maxRetries, request.retryCount ?? 0);
  }

  /** A call pinned to a host the server does not send to: refused as invalid input, nothing spawned. */
  #unknownHost(request: RunRequest, context: RunContext): CallHandle {
    const names = this.#config.hosts.map((spec) => hostNameOf(spec)).join(', ');
    const message = `host: unknown Ollama host \`${request.host}\`; this server sends to ${names} (OLLAMA_MCP_HOSTS)`;
    const maxRetries = request.maxRetries ?? this.#settingsFor(request.model).maxRetries;
    const record = { batchId: context.batchId, replyShare: context.replyShare };
    return this.#refuseHandle(request, record, 'invalid_input', message, maxRetries, request.retryCount ?? 0);
  }

  /** Does the model's circuit refuse runs now? (A chain does not move on to models that would all refuse.) */
  async #refuses(model: string): Promise<boolean> {
    const now = this.#clock();
    const circuit = rebase(await this.#ledger.circuitOf(canonicalModelName(model)), now);
    return circuitGate(circuit, now, '').kind === 'refuse';
  }

  /** Log and answer a call that touched neither the ledger nor a circuit, and spawned nothing. */
  #refuse(
    request: RunRequest,
    context: RecordContext,
    status: 'invalid_input' | 'not_started',
    message: string,
    maxRetries: number,
    retryCount: number,
  ): Promise<RunResult> {
    return this.#refuseHandle(request, context, status, message, maxRetries, retryCount).result;
  }

  #refuseHandle(
    request: RunRequest,
    context: RecordContext,
    status: 'invalid_input' | 'not_started',
    message: string,
    maxRetries: number,
    retryCount: number,
  ): CallHandle {
    const settled = this.#ledger.unsettled(retryCount, { escalate: false, reason: null });
    const writeUp: WriteUp = {
      runId: randomUUID(),
      request,
      timeoutMs: null,
      startTimeoutMs: null,
      maxRetries,
      status,
      classification: failure(status, message),
      settled,
      willRetry: false,
    };
    return this.#calls.start(request.taskId, new CallEvents(), () => this.#recorder.record(writeUp, [], context));
  }
}

/** `answers/` in the telemetry dir, aged by the retention clock the run log shares, leaving room for the ledger. */
function defaultAnswerFiles(config: Config, clock: () => number): AnswerFiles {
  return new AnswerFiles({
    dir: path.join(config.telemetryDir, 'answers'),
    clock,
    retentionClock: new RetentionClockFile(path.join(config.telemetryDir, RETENTION_CLOCK_FILE_NAME)),
    reserve: () => ledgerReserve(config.telemetryDir),
  });
}

/**
 * The queues attempts wait in, one per Ollama host, behind the host pool that routes between them.
 * Each host's queue is the one shared by every server in front of that host (when it has a queue
 * store), or this server's own; each has its view of what that host has loaded.
 */
function hostPoolFor(config: Config, deps: RunServiceDeps, warn: (message: string) => void): HostPool {
  const hosts = deps.hosts ?? [defaultHost(config, deps)];
  let pool: HostPool | null = null;
  const observed = (name: string, read: HostDeps['readLoaded']): HostDeps['readLoaded'] =>
    read === null
      ? null
      : async () => {
          const result = await read();
          if (result.ok) pool?.reached(name);
          else if (result.cause === 'unreachable' || result.cause === 'timeout') pool?.unreachable(name, result.reason);
          return result;
        };
  pool = new HostPool({
    hosts: hosts.map((host) => ({
      name: host.name,
      spec: host.spec,
      env: host.env,
      queue: dispatcherFor(config, { ...deps, ...host, readLoaded: observed(host.name, host.readLoaded) }, warn),
      ...(host.list ? { list: host.list } : {}),
    })),
    clock: deps.clock ?? Date.now,
    warn,
  });
  return pool;
}

/** The one host of a server started without OLLAMA_MCP_HOSTS's list (and of tests). */
function defaultHost(config: Config, deps: RunServiceDeps): HostDeps {
  const spec = config.hosts[0] ?? { host: config.ollamaHost ?? '', weight: 1, maxLoaded: null, parallel: null };
  return {
    spec,
    name: hostNameOf(spec),
    env: cliEnvironment(config, deps.env),
    readLoaded: deps.readLoaded ?? null,
    fileBytesOf: deps.fileBytesOf ?? (() => undefined),
    queueStore: deps.queueStore ?? null,
  };
}

/**
 * One host's queue: the one shared by every server in front of it (when `deps.queueStore` is given),
 * or this server's own; and the view of what it has loaded.
 */
function dispatcherFor(
  config: Config,
  deps: Omit<RunServiceDeps, 'hosts'> & Pick<HostDeps, 'spec' | 'readLoaded' | 'fileBytesOf' | 'queueStore'>,
  warn: (message: string) => void,
): DispatchQueue {
  const monotonic = () => performance.now();
  let dispatcher: DispatchQueue | null = null;
  let shared: SharedDispatcher | null = null;
  const store = deps.queueStore ?? null;
  const read = deps.readLoaded ?? null;
  const identity = selfIdentity();
  const residency = new Residency({
    capacity: deps.spec.maxLoaded ?? config.maxLoadedModels,
    fileBytesOf: deps.fileBytesOf ?? (() => undefined),
    keepAliveMs: config.keepAliveMs,
    clock: monotonic,
    readLoaded:
      read === null || store === null
        ? read
        : sharedPs({
            store,
            server: serverKeyOf(identity),
            read,
            settle: (queue, now) => shared?.settle(queue, now).queue ?? queue,
            defaultKeepAliveMs: queueKeepAlive(config.keepAliveMs),
          }),
    warn,
    onChange: () => dispatcher?.look(),
  });
  const local = new Dispatcher({
    concurrency: config.concurrency,
    switchAfterMs: config.switchAfterMs,
    residency,
    clock: monotonic,
  });
  if (store !== null) {
    const { concurrency, switchAfterMs, keepAliveMs } = config;
    const { onServerGone } = deps;
    shared = new SharedDispatcher({
      ...{ store, local, residency, concurrency, switchAfterMs, keepAliveMs, identity, warn },
      ...(onServerGone ? { onServerGone } : {}),
    });
  }
  dispatcher = shared ?? local;
  return dispatcher;
}

function noop(): void {}

/** A signal that aborts when either does (with that one's reason), and `unlink` to drop its listeners once the call is over. */
function eitherAborts(a: AbortSignal | undefined, b: AbortSignal): { signal: AbortSignal; unlink: () => void } {
  if (a === undefined) return { signal: b, unlink: noop };
  if (a.aborted) return { signal: a, unlink: noop };
  if (b.aborted) return { signal: b, unlink: noop };
  const controller = new AbortController();
  const onA = () => controller.abort(a.reason);
  const onB = () => controller.abort(b.reason);
  a.addEventListener('abort', onA, { once: true });
  b.addEventListener('abort', onB, { once: true });
  return {
    signal: controller.signal,
    unlink: () => {
      a.removeEventListener('abort', onA);
      b.removeEventListener('abort', onB);
    },
  };
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return delay(ms, undefined, { signal })
    .then(() => true)
    .catch(() => false);
}
