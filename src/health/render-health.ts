import { terminalText } from '../ollama/terminal-text.js';
import { formatBytes } from '../ollama/human-bytes.js';
import type { HealthReport } from './health-report-schema.js';

const PASS = '✓';
const FAIL = '✗';
/** Worth a look, but does not make the report unhealthy (an open circuit, nothing running yet). */
const NOTE = '!';
const MAX_LISTED_MODELS = 12;

/**
 * The report as compact text, one line per check (✓ works, ✗ broken, ! worth a look), then the
 * problems with their fixes. Used as the `ollama_health` text content and by `doctor`. Each line
 * goes through `terminalText`: a version, an error or a path may hold characters a terminal would
 * act on, and a newline inside one could forge a line of the report.
 */
export function renderHealth(report: HealthReport): string {
  const count = report.problems.length;
  const lines = [
    report.ok
      ? 'Ollama runner health: OK, models can be run.'
      : `Ollama runner health: NOT OK, ${count} problem${count === 1 ? '' : 's'} (see below).`,
    ...renderOllama(report),
    renderCircuits(report),
    renderRuns(report.runs),
    ...renderSharedQueue(report.runs),
    ...renderHosts(report.hosts),
    ...renderProcesses(report.processes),
    ...renderState(report),
    `  config: ${Object.entries(report.config)
      .map(([key, value]) => `${key}=${value === null ? '-' : String(value)}`)
      .join(', ')}`,
  ];
  if (report.problems.length > 0) lines.push('', 'Problems:', ...report.problems.map((problem) => `${FAIL} ${problem}`));
  if (report.warnings.length > 0) lines.push('', 'Warnings:', ...report.warnings.map((warning) => `${NOTE} ${warning}`));
  lines.push('', `checked at ${report.checked_at}`);
  return lines.map(terminalText).join('\n');
}

/** The CLI, the server and the installed models. */
function renderOllama({ cli, server, models }: HealthReport): string[] {
  const lines = [
    cli.found
      ? `${PASS} ollama CLI: ${cli.bin}${cli.version ? ` (version ${cli.version})` : ' (version unknown)'}`
      : `${FAIL} ollama CLI: ${cli.bin} cannot be run`,
    server.reachable === true
      ? `${PASS} Ollama server: reachable at ${server.host}${server.version ? ` (version ${server.version})` : ''}`
      : server.reachable === false
        ? `${FAIL} Ollama server: not reachable at ${server.host}`
        : `${FAIL} Ollama server: unknown (${server.host}; the CLI did not tell)`,
  ];
  const installed = models.installed;
  if (server.reachable !== true) lines.push(`${FAIL} models: unknown (the model list could not be read)`);
  else if (installed.length === 0) lines.push(`${FAIL} models: none installed`);
  else {
    const more = installed.length > MAX_LISTED_MODELS ? `, and ${installed.length - MAX_LISTED_MODELS} more` : '';
    lines.push(`${PASS} models: ${installed.length} installed: ${installed.slice(0, MAX_LISTED_MODELS).join(', ')}${more}`);
  }
  return lines;
}

function renderCircuits({ circuits, ledger }: HealthReport): string {
  const blocked = circuits.filter((c) => c.state !== 'closed');
  // Nothing could be read, or nothing can be saved: "none on record" would be a false all-clear.
  if (!ledger.ok && circuits.length === 0)
    return `${FAIL} circuits: unknown (the circuit state cannot be used; see the problems)`;
  if (blocked.length === 0)
    return `${PASS} circuits: ${circuits.length === 0 ? 'none on record' : `all ${circuits.length} closed`}`;
  const listed = blocked
    .map(
      (c) =>
        `${c.model} ${c.state} after ${c.consecutive_failures} failures${c.retry_after_seconds !== null ? `, retry in ${c.retry_after_seconds} s` : ''}`,
    )
    .join('; ');
  return `${NOTE} circuits: ${blocked.length} of ${circuits.length} refusing runs: ${listed}`;
}

function renderRuns(runs: HealthReport['runs']): string {
  const loaded = runs.loaded_models.join(', ') || 'none known';
  const fit =
    runs.memory_budget_bytes === null
      ? `${runs.max_loaded_models} fit together`
      : `models fit together in ${formatBytes(runs.memory_budget_bytes)}, as learned from ollama ps`;
  return `${PASS} runs: ${runs.in_flight} in flight, ${runs.running} running, ${runs.queued} queued, concurrency ${runs.concurrency}, ${runs.parallel} per model; loaded: ${loaded} (${fit})`;
}

/** Every Ollama host, one line each, when there are several. */
function renderHosts(hosts: HealthReport['hosts']): string[] {
  if (hosts === undefined || hosts.length < 2) return [];
  return hosts.map((host) => {
    const mark = host.reachable === false || host.down_until !== null ? NOTE : PASS;
    const state =
      host.down_until !== null
        ? `down until ${host.down_until}`
        : host.reachable === false
          ? 'not reachable'
          : `reachable${host.version ? `, Ollama ${host.version}` : ''}`;
    const installed = host.installed_models === null ? '' : `, ${host.installed_models} models installed`;
    const loaded = host.loaded_models.join(', ') || 'none known';
    return `${mark} host ${host.name} (weight ${host.weight}): ${state}${installed}; loaded: ${loaded}; ${host.running} running, ${host.queued} queued here`;
  });
}

/** The queue shared with the other servers of the same Ollama, when there is one. */
function renderSharedQueue(runs: HealthReport['runs']): string[] {
  const shared = runs.shared_queue;
  if (!shared) return [];
  if (shared.error !== null) return [`${NOTE} shared queue: cannot be read (${shared.error}); this server dispatches on its own`];
  const others = shared.other_servers === 1 ? '1 other server' : `${shared.other_servers} other servers`;
  return [
    `${PASS} shared queue: ${others} in front of the same Ollama, ${shared.running_elsewhere} of their calls running, ${shared.waiting_elsewhere} waiting (${shared.location})`,
  ];
}

/** The telemetry dir, the ledger, and (team mode) the Redis that holds the state. */
function renderState({ telemetry, ledger, state_backend: backend }: HealthReport): string[] {
  const lines = [
    telemetry.writable
      ? `${PASS} telemetry: ${telemetry.dir} is writable (log: ${telemetry.runs_log})`
      : `${FAIL} telemetry: ${telemetry.dir} is not writable`,
  ];
  if (ledger.ok) lines.push(`${PASS} ledger: the retry ledger and circuit files can be read and written`);
  else {
    const since = ledger.last_write_failure ? `not updated since ${ledger.last_write_failure.at}` : 'cannot be used';
    lines.push(`${FAIL} ledger: ${since}${ledger.problems.length > 0 ? ` (${ledger.problems.join('; ')})` : ''}`);
  }
  if (backend?.kind === 'redis') {
    lines.push(
      backend.reachable
        ? `${PASS} state: shared in Redis at ${backend.location} (team mode), reachable`
        : `${FAIL} state: Redis at ${backend.location} not reachable${backend.error ? ` (${backend.error})` : ''}; runs go on without the shared ledger`,
    );
  }
  return lines;
}

/** The orphan sweep and the shared slots, one line each (none when the report has no such section). */
function renderProcesses(processes: HealthReport['processes']): string[] {
  if (processes === null) return [];
  const lines: string[] = [];
  const sweep = processes.orphan_sweep;
  if (sweep.enabled) {
    const last = sweep.last
      ? `; last sweep ${sweep.last.at}: ${sweep.last.ended} orphan(s) ended, ${sweep.last.forgotten} stale record(s) removed`
      : '';
    lines.push(`${PASS} orphan sweep: on, at start-up and every ${sweep.interval_seconds} s${last}`);
  } else {
    lines.push(`${NOTE} orphan sweep: off (${sweep.reason ?? 'unavailable'})`);
  }
  const shared = processes.shared_slots;
  if (shared) {
    const team = shared.across === 'machines';
    const holders = shared.slots
      .map(
        (s) =>
          `slot ${s.slot}: ${s.pid === null ? 'unreadable' : `pid ${s.pid}`}${team && s.host ? ` on ${s.host}` : ''}${s.holder === 'this_server' ? ' (this server)' : s.holder === 'dead' ? ' (dead, to be reclaimed)' : ''}`,
      )
      .join(', ');
    const mark = shared.error ? NOTE : PASS;
    lines.push(
      `${mark} shared cap: ${shared.in_use} of ${shared.limit} slots in use across ${team ? 'the servers on every machine (in Redis, team mode)' : 'server processes'}${holders ? ` (${holders})` : ''}, ${shared.waiting_here} waiting here${shared.error ? `; cannot be used: ${shared.error}` : ''}`,
    );
  }
  return lines;
}
