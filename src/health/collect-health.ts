import { randomBytes } from 'node:crypto';
import { open, readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/config.js';
import { probeCli, type CliProbe } from '../ollama/cli-probe.js';
import { withDeadline } from '../ollama/cli-command.js';
import type { InstalledModels } from '../ollama/installed-models.js';
import { viewCircuit, type BreakerSettings } from '../policy/breaker.js';
import type { StateData, StoreWriteFailure, TaskScope } from '../store/state-backend.js';
import type { ProcessesStatus } from '../app/hygiene/process-hygiene.js';
import type { QueueView } from '../app/run-service.js';
import type { HostStatus } from '../app/queue/host-pool.js';
import type { SharedQueueStatus } from '../app/queue/shared-dispatcher.js';
import { RUN_LOG_FILE_NAME } from '../telemetry/log-files.js';
import { redactRedisUrl } from '../config/redis-url.js';
import { checkStateBackend, stateFixHint } from './state-backend-check.js';
import type { HealthReport } from './health-report-schema.js';

/** Where the CLI looks for the server when OLLAMA_HOST is unset. */
const DEFAULT_OLLAMA_HOST = 'http://127.0.0.1:11434';
/** Limit for each CLI command of the check (`--version` and `list` run side by side). */
const HEALTH_CLI_TIMEOUT_MS = 5_000;
/** The whole check gives up waiting after this (a hung CLI, a stuck disk). */
const HEALTH_DEADLINE_MS = 9_000;
/** The writability probe writes this much: an empty file is created even on a full disk. */
const PROBE_BYTES = 4096;

/** The part of StateStore the check needs (a StateStore will do). */
export interface HealthStateSource {
  snapshot(scope?: TaskScope): Promise<StateData>;
  /** One line per state file that cannot be read or written. */
  inspect?(): Promise<string[]>;
  readonly lastWriteFailure?: StoreWriteFailure | null;
}

export interface HealthDeps {
  readonly config: Config;
  readonly store: HealthStateSource;
  readonly runs: {
    readonly inFlight: number;
    readonly queue: QueueView;
    /** The queue shared with the other servers of this Ollama, read now; null: this server dispatches alone. */
    sharedQueue?(): Promise<SharedQueueStatus | null>;
    /** Every Ollama host: down or not, its queue, what it has loaded. @default none shown */
    readonly hosts?: readonly HostStatus[];
  };
  readonly installedModels: InstalledModels;
  /** Every host's installed models (OLLAMA_MCP_HOSTS), the first being `installedModels`. @default the first only */
  readonly hostModels?: readonly { readonly name: string; readonly installed: InstalledModels }[];
  /** The orphan sweep and the shared slots, read when the check runs. @default none shown */
  readonly processes?: () => ProcessesStatus | Promise<ProcessesStatus>;
  /** Epoch ms. @default Date.now */
  readonly clock?: () => number;
  /** Limit for each CLI command. @default HEALTH_CLI_TIMEOUT_MS */
  readonly cliTimeoutMs?: number;
}

/**
 * Check, without running a model, everything a run needs: the CLI, the server, the installed
 * models, the circuits, the run queue and the telemetry dir. Never throws; bounded in time.
 */
export async function collectHealth(deps: HealthDeps): Promise<HealthReport> {
  const clock = deps.clock ?? Date.now;
  const { config, runs } = deps;
  const checks = await runChecks(deps, clock);
  const { cli, circuits, telemetry, ledgerProblems, writeFailure } = checks;
  const processes = deps.processes ? viewProcesses(await deps.processes()) : null;
  const shared = (await runs.sharedQueue?.()) ?? null;
  const hosts = await hostsReport(deps, cli, clock);
  // With several hosts, the first one down is a warning (hostWarnings) while another answers: calls go there.
  const anotherHostUp = hosts.length > 1 && hosts.some((host) => host.reachable === true);
  const cliFound = cliFindings(cli, config, anotherHostUp);
  const problems = [...cliFound.problems, ...stateProblems(checks, config), ...telemetryProblems(telemetry, config)];
  const warnings = [
    ...cliFound.warnings,
    ...circuitWarnings(circuits.circuits),
    ...sharedSlotsWarnings(processes),
    ...hostWarnings(hosts),
  ];
  return {
    ok: problems.length === 0,
    problems,
    warnings,
    cli: { bin: config.ollamaBin, found: cli.found, version: cli.version },
    server: {
      reachable: cli.found ? cli.serverReachable : null,
      version: cli.found ? cli.serverVersion : null,
      host: redactUserInfo(config.ollamaHost ?? DEFAULT_OLLAMA_HOST),
    },
    models: { installed: cli.installed ?? [] },
    circuits: circuits.circuits,
    runs: {
      in_flight: runs.inFlight,
      running: runs.queue.running,
      queued: runs.queue.waiting,
      concurrency: runs.queue.limit,
      parallel: config.parallel,
      loaded_models: [...runs.queue.loaded],
      max_loaded_models: runs.queue.capacity,
      memory_budget_bytes: runs.queue.memoryBudget,
      shared_queue: shared && {
        location: shared.location,
        other_servers: shared.otherServers,
        waiting_elsewhere: shared.waitingElsewhere,
        running_elsewhere: shared.runningElsewhere,
        error: shared.error,
      },
    },
    ...(hosts.length > 0 ? { hosts } : {}),
    processes,
    telemetry: {
      dir: config.telemetryDir,
      writable: telemetry.writable,
      runs_log: path.join(config.telemetryDir, RUN_LOG_FILE_NAME),
    },
    ledger: {
      ok: ledgerProblems.length === 0 && writeFailure === null,
      problems: ledgerProblems,
      last_write_failure: writeFailure && { at: new Date(writeFailure.at).toISOString(), message: writeFailure.message },
    },
    state_backend: checks.stateBackend,
    config: publicConfig(config),
    checked_at: new Date(clock()).toISOString(),
  };
}

type HostReport = NonNullable<HealthReport['hosts']>[number];

/** Every host: the first as the CLI check found it, each other probed the same way, side by side; and its queue here. */
async function hostsReport(deps: HealthDeps, first: CliProbe, clock: () => number): Promise<HostReport[]> {
  const statuses = deps.runs.hosts ?? [];
  const timeoutMs = deps.cliTimeoutMs ?? HEALTH_CLI_TIMEOUT_MS;
  const deadline = Math.max(HEALTH_DEADLINE_MS, timeoutMs + 2_000);
  const probes = await Promise.all(
    statuses.map((status, i) => {
      const models = deps.hostModels?.find((host) => host.name === status.name)?.installed;
      if (i === 0 || models === undefined) return first;
      const probe = probeCli({ bin: models.bin, env: models.env, timeoutMs, installedModels: models });
      return withDeadline(probe, deadline, () => hungCli(deps.config.ollamaBin, deadline));
    }),
  );
  return statuses.map((status, i) => {
    const probe = probes[i]!;
    return {
      name: redactUserInfo(status.name),
      weight: status.weight,
      reachable: probe.found ? probe.serverReachable : null,
      version: probe.serverVersion,
      installed_models: probe.installed?.length ?? null,
      loaded_models: [...status.loaded],
      queued: status.waiting,
      running: status.running,
      down_until: status.downUntil === null || status.downUntil <= clock() ? null : new Date(status.downUntil).toISOString(),
      last_error: status.lastError,
    };
  });
}

/** With several hosts: one that cannot be reached is worth knowing (calls go to the others). */
function hostWarnings(hosts: readonly HostReport[]): string[] {
  if (hosts.length < 2) return [];
  return hosts
    .filter((host) => host.reachable === false || host.down_until !== null)
    .map((host) => `Ollama host ${host.name} cannot be reached: calls go to the other hosts until it answers again`);
}

type Checks = Awaited<ReturnType<typeof runChecks>>;

/** The CLI, the circuits, the telemetry dir, the state files and the state backend, each within the deadline. */
async function runChecks(deps: HealthDeps, clock: () => number) {
  const { config } = deps;
  const cliTimeoutMs = deps.cliTimeoutMs ?? HEALTH_CLI_TIMEOUT_MS;
  const deadline = Math.max(HEALTH_DEADLINE_MS, cliTimeoutMs + 2_000);
  const { bin, env } = deps.installedModels;
  const [cli, circuits, telemetry] = await Promise.all([
    withDeadline(probeCli({ bin, env, timeoutMs: cliTimeoutMs, installedModels: deps.installedModels }), deadline, () =>
      hungCli(config.ollamaBin, deadline),
    ),
    withDeadline(readCircuits(deps, clock()), deadline, () => ({
      error: `reading the state took longer than ${deadline} ms`,
      circuits: [],
    })),
    withDeadline(checkTelemetry(config.telemetryDir), deadline, () => ({
      writable: false,
      error: `no answer within ${deadline} ms`,
    })),
  ]);
  const ledgerProblems = await withDeadline(
    deps.store.inspect?.().catch((error: Error) => [error.message]) ?? Promise.resolve([]),
    deadline,
    () => [`checking the state files took longer than ${deadline} ms`],
  );
  const stateBackend = await withDeadline(checkStateBackend(deps.store, config), deadline, () => ({
    kind: config.stateUrl ? ('redis' as const) : ('files' as const),
    location: config.stateUrl ? redactRedisUrl(config.stateUrl) : config.telemetryDir,
    reachable: config.stateUrl ? false : null,
    error: `no answer within ${deadline} ms`,
  }));
  if (circuits.error) ledgerProblems.unshift(`cannot read the circuit state: ${circuits.error}`);
  return { cli, circuits, telemetry, ledgerProblems, stateBackend, writeFailure: deps.store.lastWriteFailure ?? null };
}

function hungCli(bin: string, deadline: number): CliProbe {
  return {
    found: true,
    version: null,
    serverVersion: null,
    serverReachable: null,
    warnings: [],
    error: `\`${bin}\` did not answer within ${deadline} ms`,
    errorCause: 'timeout',
    installed: null,
    latencyMs: deadline,
  };
}

/** Whether the CLI runs, the server answers and a model is installed, each problem with its fix. */
function cliFindings(cli: CliProbe, config: Config, anotherHostUp = false): { problems: string[]; warnings: string[] } {
  const bin = config.ollamaBin;
  const problems: string[] = [];
  const warnings: string[] = [];
  const hostSetting = config.ollamaHost
    ? `OLLAMA_HOST=${redactUserInfo(config.ollamaHost)}`
    : `${DEFAULT_OLLAMA_HOST} (the default: OLLAMA_HOST is unset)`;
  if (!cli.found) {
    problems.push(
      `the ollama CLI cannot be run (OLLAMA_BIN=${bin}): ${cli.error ?? 'not found'}. Install Ollama, or set OLLAMA_BIN to the CLI's full path in the MCP client's env (clients pass a minimal PATH).`,
    );
  } else if (cli.serverReachable === false) {
    if (!anotherHostUp)
      problems.push(
        `the Ollama server is not reachable at ${hostSetting}: start it with \`ollama serve\`, or set OLLAMA_HOST in the MCP client's env if it runs elsewhere. The CLI said: ${cli.error ?? 'could not connect'}`,
      );
  } else if (cli.serverReachable === null && cli.errorCause === 'spawn_failed') {
    problems.push(
      `${cli.error ?? 'the CLI could not be started'}. Runs fail with spawn_failed (retried, never escalated at once) until it passes; if it lasts, raise this server's open-file or process limit (ulimit -n / -u, a container's pids limit), or end what holds them.`,
    );
  } else if (cli.serverReachable === null) {
    problems.push(
      `cannot tell whether the Ollama server is up: ${cli.error ?? 'no answer from the CLI'}. Check that \`${bin} list\` works in a terminal (server at ${hostSetting}).`,
    );
  } else if (cli.error) {
    // `list` worked but `--version` did not: runs can go ahead.
    warnings.push(`\`${bin} --version\` failed: ${cli.error}`);
  }
  if (cli.installed !== null && cli.installed.length === 0) {
    problems.push('no model is installed: pull one with `ollama pull MODEL` (for example `ollama pull llama3.2`).');
  }
  for (const warning of cli.warnings) {
    // With the server down the CLI says so and prints its own version: both are in the problem already.
    if (cli.serverReachable === false && /could not connect|client version is/i.test(warning)) continue;
    const mismatch = /client version is/i.test(warning) && cli.version !== null && cli.serverVersion !== null;
    warnings.push(
      mismatch
        ? `the ollama CLI (${cli.version}) and the Ollama server (${cli.serverVersion}) are different versions: update the older one (a CLI older than its server may lack flags and print errors this server does not know).`
        : `the CLI warns: ${warning}`,
    );
  }
  return { problems, warnings };
}

/** The retry ledger and circuits: files that cannot be used, and updates that could not be saved. */
function stateProblems({ ledgerProblems, writeFailure }: Checks, config: Config): string[] {
  const problems: string[] = [];
  if (ledgerProblems.length > 0) {
    problems.push(
      `the retry ledger and circuit state cannot be used (${ledgerProblems.join('; ')}): retry counts and circuits are not saved, so escalation lags. ${stateFixHint(config)}`,
    );
  }
  if (writeFailure) {
    problems.push(
      `the retry ledger has not been updated since ${new Date(writeFailure.at).toISOString()} (${writeFailure.message}): runs go ahead but are not counted, so tasks may not escalate. ${stateFixHint(config)}`,
    );
  }
  return problems;
}

/** Models refusing runs: when they take runs again, and what to do meanwhile. */
function circuitWarnings(circuits: HealthReport['circuits']): string[] {
  return circuits
    .filter((circuit) => circuit.state !== 'closed')
    .map((circuit) => {
      const when =
        circuit.retry_after_seconds === null
          ? 'the next call will probe it'
          : `runs are refused for ${circuit.retry_after_seconds} s more, then one probe run is let through`;
      return `model ${circuit.model}: circuit ${circuit.state === 'open' ? 'open' : 'half-open'} after ${circuit.consecutive_failures} failures in a row; ${when}. Use another model meanwhile, or fix the model and wait.`;
    });
}

function sharedSlotsWarnings(processes: HealthReport['processes']): string[] {
  const shared = processes?.shared_slots;
  if (!shared?.error) return [];
  const across = shared.across === 'machines' ? 'machines (team mode)' : 'server processes';
  return [
    `the shared concurrency slots cannot be used (${shared.error}): runs go ahead without the cap across ${across} (OLLAMA_MCP_SHARED_CONCURRENCY).`,
  ];
}

function telemetryProblems(telemetry: { writable: boolean; error: string | null }, config: Config): string[] {
  if (telemetry.writable) return [];
  return [
    `the telemetry dir ${config.telemetryDir} is not writable (${telemetry.error}): runs.jsonl and the retry/circuit state cannot be saved. Fix its permissions, or set OLLAMA_MCP_TELEMETRY_DIR to a writable folder.`,
  ];
}

function viewProcesses(status: ProcessesStatus): HealthReport['processes'] {
  const { orphanSweep, shared } = status;
  const last = orphanSweep.last;
  return {
    orphan_sweep: {
      enabled: orphanSweep.enabled,
      reason: orphanSweep.reason,
      interval_seconds: Math.round(orphanSweep.intervalMs / 1000),
      last: last && { at: new Date(last.at).toISOString(), ended: last.ended, forgotten: last.forgotten, kept: last.kept },
    },
    shared_slots: shared && {
      limit: shared.limit,
      in_use: shared.inUse,
      across: shared.across ?? 'processes',
      waiting_here: shared.waitingHere,
      slots: shared.slots.map((slot) => ({ ...slot })),
      error: shared.error,
    },
  };
}

async function readCircuits(
  deps: HealthDeps,
  now: number,
): Promise<{ error: string | null; circuits: HealthReport['circuits'] }> {
  const settings: BreakerSettings = { threshold: deps.config.breakerThreshold, cooldownMs: deps.config.breakerCooldownMs };
  try {
    const state = await deps.store.snapshot([]);
    const circuits = Object.entries(state.breakers)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([model, breaker]) => ({ model, ...viewCircuit(breaker, now, settings) }));
    return { error: null, circuits };
  } catch (error) {
    return { error: (error as Error).message, circuits: [] };
  }
}

/**
 * Write real bytes to a temporary file in `dir` and remove it (an empty file is still created on
 * a full disk); never touches runs.jsonl or the state files.
 */
async function checkWritable(dir: string): Promise<{ writable: boolean; error: string | null }> {
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) return { writable: false, error: 'it is not a directory' };
    const probe = path.join(dir, `.health-${process.pid}-${randomBytes(6).toString('hex')}.tmp`);
    const handle = await open(probe, 'wx', 0o600);
    try {
      await handle.write(Buffer.alloc(PROBE_BYTES, 0x20));
      await handle.sync();
    } finally {
      await handle.close();
      await unlink(probe).catch(() => {});
    }
    return { writable: true, error: null };
  } catch (error) {
    const code = errorCode(error);
    return { writable: false, error: code === 'ENOENT' ? 'it does not exist' : code };
  }
}

/**
 * The dir takes real bytes, and every existing file of the run log can be opened for appending
 * (a directory named runs.jsonl, or a file that cannot be written, loses every run line).
 */
async function checkTelemetry(dir: string): Promise<{ writable: boolean; error: string | null }> {
  const probe = await checkWritable(dir);
  if (!probe.writable) return probe;
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => /^runs(-.*)?\.jsonl$/.test(name));
  } catch (error) {
    return { writable: false, error: errorCode(error) };
  }
  for (const name of names) {
    try {
      await (await open(path.join(dir, name), 'a')).close();
    } catch (error) {
      return { writable: false, error: `${name}: ${errorCode(error)}` };
    }
  }
  return probe;
}

const errorCode = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? (error as Error).message;

/** Names that hold a secret: shown only as "set"/"unset". */
const SECRET_KEY = /token|secret|password|passwd|api_?key|credential/i;

/** The configuration as snake_case keys, secrets replaced by "set"/"unset". */
export function publicConfig(config: Config): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(config) as [string, Config[keyof Config]][]) {
    const name = key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
    if (SECRET_KEY.test(name)) out[name] = value === undefined || value === null || value === '' ? 'unset' : 'set';
    else if (value === undefined || value === null) out[name] = null;
    else if (name === 'state_url' && typeof value === 'string') out[name] = redactRedisUrl(value);
    else if (typeof value === 'string') out[name] = name === 'ollama_host' ? redactUserInfo(value) : value;
    else if (Array.isArray(value)) out[name] = hostsSetting(value as Config['hosts']);
    else out[name] = value as number | boolean;
  }
  return out;
}

/** OLLAMA_MCP_HOSTS as it would be written, user info hidden. */
function hostsSetting(hosts: Config['hosts']): string {
  return hosts
    .map((h) => {
      const settings = [
        h.weight !== 1 ? `weight=${h.weight}` : null,
        h.maxLoaded !== null ? `max_loaded=${h.maxLoaded}` : null,
        h.parallel !== null ? `parallel=${h.parallel}` : null,
      ].filter((x) => x !== null);
      return [redactUserInfo(h.host === '' ? '(default)' : h.host), ...settings].join(';');
    })
    .join(',');
}

/** `https://user:pass@host` -> `https://***@host`. */
function redactUserInfo(host: string): string {
  return host.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1***@');
}
