import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import type { Config } from '../config/config.js';
import { registerTools, toCallToolResult } from './tool-registry.js';
import { JobTaskStore } from './job-task-store.js';
import type { JobView } from '../app/call/jobs.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { loadModelTiers, type ModelTiers } from '../config/model-tiers.js';
import type { RunService } from '../app/run-service.js';
import type { ProcessHygiene } from '../app/hygiene/process-hygiene.js';
import type { StateBackend } from '../store/state-backend.js';
import type { RunLog } from '../telemetry/run-log.js';
import type { InstalledModels, ModelListResult } from '../ollama/installed-models.js';
import type { HostListing } from '../app/queue/host-pool.js';
import type { PreflightResult } from '../app/attempt/types.js';
import { hostNameOf } from '../config/hosts.js';
import type { ControlLogger } from '../tools/tool-definition.js';
import { ollamaHealthTool, preloadHealthCheck } from '../tools/ollama-health.js';
import { ollamaResetTool } from '../tools/ollama-reset.js';
import { ollamaRunManyTool } from '../tools/ollama-run-many.js';
import { ollamaRunTool } from '../tools/ollama-run.js';
import { ollamaRunsSummaryTool } from '../tools/ollama-runs-summary.js';
import { ollamaTaskStatusTool } from '../tools/ollama-task-status.js';
import { ollamaWaitTool, presentEnded } from '../tools/ollama-wait.js';
import type { JobScope } from '../tools/job-reply.js';
import { SERVER_NAME, SERVER_VERSION } from './server-identity.js';
import type { Observer } from '../otel/observer.js';

/** Everything one server process shares between its connections. */
export interface App {
  readonly config: Config;
  readonly tiers: ModelTiers;
  /**
   * The state store, the run log, the run service and the process hygiene, built once on the first
   * call: a stdio start answers `initialize` before loading them (the CLI starts them right after).
   * Rejects with a StateStoreError when the state cannot be used.
   */
  services(): Promise<AppServices>;
  /** The services if building them has begun, else null (shutdown has nothing of them to stop). */
  readonly servicesStarted: Promise<AppServices> | null;
  readonly logControl: ControlLogger;
  /** OpenTelemetry, when it is on (otel/start-otel.ts); null: nothing observed, nothing of it loaded. */
  readonly observer: Observer | null;
}

/** The parts of the App that load and open things: what the first call needs. */
export interface AppServices {
  readonly store: StateBackend;
  readonly log: RunLog;
  readonly runs: RunService;
  /** The first host's installed models (the only host's, with one). */
  readonly installedModels: InstalledModels;
  /** Every host's installed models (OLLAMA_MCP_HOSTS). */
  readonly hostModels: readonly { readonly name: string; readonly installed: InstalledModels }[];
  /** Child records, the orphan sweep and the shared cap: `start()` after start-up, `stop()` at shutdown. */
  readonly hygiene: ProcessHygiene;
}

/**
 * The start-up checks (the tier file), with the services left to the first call. Throws
 * ConfigError when OLLAMA_MCP_CONFIG (the tier file) is invalid, so start-up stops with the path
 * and the offending key.
 */
export async function createApp(config: Config, warn: (message: string) => void, observer: Observer | null = null): Promise<App> {
  const tiers = await loadModelTiers(config);
  let started: Promise<AppServices> | null = null;
  const services = () => (started ??= buildServices(config, tiers, warn, observer));
  return {
    config,
    tiers,
    services,
    get servicesStarted() {
      return started;
    },
    logControl: async (event) => (await services()).log.recordControl(event),
    observer,
  };
}

async function buildServices(
  config: Config,
  tiers: ModelTiers,
  warn: (message: string) => void,
  observer: Observer | null,
): Promise<AppServices> {
  // Loaded here, not at start: a stdio client waits for `initialize`, which needs none of this.
  const [
    { RunService },
    { ProcessHygiene, teamConnectionOf },
    { runModelProcess },
    { openStateBackend },
    { RunLog },
    { cliEnvironment },
    { InstalledModels },
    { readLoadedModels },
    { preloadExeca },
    { openQueueStore },
    { selfIdentity, liveProcView },
  ] = await Promise.all([
    import('../app/run-service.js'),
    import('../app/hygiene/process-hygiene.js'),
    import('../ollama/model-process.js'),
    import('../store/state/open-state-backend.js'),
    import('../telemetry/run-log.js'),
    import('../ollama/child-env.js'),
    import('../ollama/installed-models.js'),
    import('../ollama/loaded-models.js'),
    import('../ollama/load-execa.js'),
    import('../app/queue/open-queue-store.js'),
    import('../store/processes/proc-reader.js'),
  ]);
  // Now, while descriptors are plenty: a module that could not be opened stays failed (load-execa.ts).
  await Promise.all([preloadExeca(), preloadHealthCheck()]);
  const store = await openStateBackend(config, warn);
  const log = new RunLog(config.telemetryDir, {
    logContent: config.logContent,
    maxBytes: config.logMaxBytes,
    retention: { maxAgeMs: config.logRetentionMs, maxTotalBytes: config.logMaxTotalBytes },
    onError: (error, file) => warn(`could not append to ${file}: ${error instanceof Error ? error.message : String(error)}`),
  });
  // The CLI's children get the server's whole environment, plus OLLAMA_HOST when configured.
  const env = cliEnvironment(config);
  const team = teamConnectionOf(store);
  const hygiene = new ProcessHygiene(config, warn, { team });
  const place = { identity: selfIdentity(), proc: liveProcView, team };
  // Each Ollama host has its own `ollama list` (shared by the preflight check and ollama_health), `ollama ps` and queue.
  const hosts = config.hosts.map((spec) => {
    const hostEnv = cliEnvironment({ ollamaHost: spec.host === '' ? config.ollamaHost : spec.host });
    const installed = new InstalledModels({ bin: config.ollamaBin, env: hostEnv, ttlMs: config.modelListTtlMs });
    return {
      spec,
      name: hostNameOf(spec),
      env: hostEnv,
      installed,
      readLoaded: () => readLoadedModels({ bin: config.ollamaBin, env: hostEnv }),
      fileBytesOf: (model: string) => installed.fileBytesOf(model),
      queueStore: openQueueStore(config, place, spec.host === '' ? config.ollamaHost : spec.host),
      list: () => installed.list().then(hostListing),
    };
  });
  const installedModels = hosts[0]!.installed;
  const runs = new RunService({
    config,
    store,
    log,
    env,
    hosts,
    // In team mode one Redis outage fails every run's ledger update: one stderr line a minute, not one per run.
    onWarning: config.stateUrl
      ? (await import('../store/state/redis-warning-limiter.js')).limitWarnings(warn, { windowMs: 60_000 })
      : warn,
    spawn: hygiene.trackSpawns(runModelProcess),
    sharedSlots: hygiene.sharedSlots,
    // A server the queue found dead may have left model processes holding Ollama: end them now.
    onServerGone: () => void hygiene.sweeper.sweepNow(),
    settingsFor: (model) => tiers.settingsFor(model),
    ...(config.preflight ? { preflight: (model: string, host?: string) => checkOnHosts(hosts, model, host) } : {}),
    observe: observer?.callListener,
  });
  hygiene.attempts = runs.interrupted;
  observer?.watchQueue(() => runs.queue);
  return { store, log, runs, installedModels, hostModels: hosts.map(({ name, installed }) => ({ name, installed })), hygiene };
}

/** A host's `ollama list` as the host pool needs it: a host that did not answer is down. */
function hostListing(result: ModelListResult): HostListing {
  if (result.ok) return { ok: true, models: result.models };
  return { ok: false, unreachable: result.cause === 'unreachable' || result.cause === 'timeout', reason: result.reason };
}

/**
 * Is the model installed where the call may run: on its pinned host, else on any host. Missing only
 * when every host's list says so (a list that could not be read counts as maybe).
 */
async function checkOnHosts(
  hosts: readonly { readonly name: string; readonly installed: InstalledModels }[],
  model: string,
  pinned: string | undefined,
): Promise<PreflightResult> {
  const where = pinned === undefined ? hosts : hosts.filter((host) => host.name === pinned);
  const checks = await Promise.all(where.map((host) => host.installed.check(model)));
  const found = checks.find((check) => check.kind !== 'missing');
  if (found !== undefined) return found;
  const installed = [...new Set(checks.flatMap((check) => (check.kind === 'missing' ? check.installed : [])))];
  return { kind: 'missing', installed };
}

/** The Floor Manager protocol, in five lines: clients show it to the model once per session (cut at 2 KB). */
const INSTRUCTIONS = `This server runs tasks on local Ollama models. The protocol:
1. Before delegating, call ollama_health: it lists the installed models and warns of models refusing runs.
2. Give each piece of work a stable task_id and pass the same one on every retry; add fallback_models when another model would do.
3. Read escalate on every result (each job's in a batch). true: STOP, never run that task again; hand it to a human or a stronger model with escalation_reason and error.
4. Otherwise do what next says (retry with the same task_id while retries_left allows, or change the call). model_available_in_seconds is when a model takes runs again, never an invitation to retry an escalated task.
5. After a human fixed the cause, ollama_reset clears the task or closes the model's circuit. Add response_format: "detailed" for the full record.`;

/** The tool result of a task whose stored result is missing (its server died): rebuilt from its job. */
function taskResultOf(view: JobView): CallToolResult {
  if (view.state === 'done') return toCallToolResult(presentEnded(view, 'concise'));
  const text =
    'INTERRUPTED: the server running this task stopped before it ended; run it again (ollama_task_status says what was counted).';
  return { isError: true, content: [{ type: 'text', text }] };
}

/**
 * The SDK's Ajv validator, made at its first use (only `elicitInput` uses it, which this server never
 * calls): the SDK would otherwise build one per Server, before the `initialize` reply and for every
 * HTTP session. One per process.
 */
let ajv: AjvJsonSchemaValidator | null = null;
const lazyJsonSchemaValidator: jsonSchemaValidator = {
  getValidator: (schema) => (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema),
};

/**
 * An MCP server exposing the tools over one connection. `owner`: who may collect the jobs this
 * connection starts (`local` for stdio; over HTTP, the token's digest).
 */
export function createMcpServer(app: App, owner = 'local'): Server {
  const runs = async () => (await app.services()).runs;
  const server = new Server(
    { name: SERVER_NAME, version: SERVER_VERSION, title: 'Ollama runner' },
    {
      // MCP Tasks: ollama_run and ollama_run_many may run as tasks, kept as jobs (mcp/job-task-store.ts).
      capabilities: { tools: {}, logging: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: new JobTaskStore(runs, owner, taskResultOf),
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: lazyJsonSchemaValidator,
    },
  );
  const blockMode = app.config.escalationMode === 'block';
  const store = async () => (await app.services()).store;
  const scope: JobScope = { owner, clientName: () => server.getClientVersion()?.name };
  registerTools(
    server,
    [
      ollamaRunTool(runs, app.config, scope),
      ollamaRunManyTool(runs, app.config, scope),
      ollamaWaitTool({ service: runs, store, config: app.config, scope }),
      ollamaHealthTool(async () => {
        const { store, runs, installedModels, hostModels, hygiene } = await app.services();
        return { config: app.config, store, runs, installedModels, hostModels, processes: () => hygiene.status() };
      }),
      ollamaTaskStatusTool({
        store,
        inFlight: async (taskId) => (await runs()).inFlightFor(taskId),
        blockMode,
        logControl: app.logControl,
      }),
      ollamaResetTool({
        store,
        blockMode,
        settingsFor: (model) => app.tiers.settingsFor(model),
        logControl: app.logControl,
      }),
      // A review tool: listed only when asked for, so that an agent's session does not pay for it.
      ...(app.config.runsSummaryTool ? [ollamaRunsSummaryTool({ telemetryDir: app.config.telemetryDir })] : []),
    ],
    app.observer,
  );
  return server;
}
