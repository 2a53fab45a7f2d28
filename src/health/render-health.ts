import type { HealthReport } from './collect-health.js';

const PASS = '✓';
const FAIL = '✗';
/** Worth a look, but does not make the report unhealthy (an open circuit, nothing running yet). */
const NOTE = '!';
const MAX_LISTED_MODELS = 12;

/**
 * The report as compact text, one line per check (✓ works, ✗ broken, ! worth a look), then the
 * problems with their fixes. Used as the `ollama_health` text content and by `doctor`.
 */
export function renderHealth(report: HealthReport): string {
  const lines: string[] = [];
  const count = report.problems.length;
  lines.push(
    report.ok
      ? 'Ollama runner health: OK, models can be run.'
      : `Ollama runner health: NOT OK, ${count} problem${count === 1 ? '' : 's'} (see below).`,
  );

  const { cli, server, models, circuits, runs, telemetry, ledger } = report;
  lines.push(
    cli.found
      ? `${PASS} ollama CLI: ${cli.bin}${cli.version ? ` (version ${cli.version})` : ' (version unknown)'}`
      : `${FAIL} ollama CLI: ${cli.bin} cannot be run`,
  );
  lines.push(
    server.reachable === true
      ? `${PASS} Ollama server: reachable at ${server.host}${server.version ? ` (version ${server.version})` : ''}`
      : server.reachable === false
        ? `${FAIL} Ollama server: not reachable at ${server.host}`
        : `${FAIL} Ollama server: unknown (${server.host}; the CLI did not tell)`,
  );
  if (server.reachable === true) {
    const shown = models.installed.slice(0, MAX_LISTED_MODELS).join(', ');
    const more = models.installed.length > MAX_LISTED_MODELS ? `, and ${models.installed.length - MAX_LISTED_MODELS} more` : '';
    lines.push(
      models.installed.length > 0
        ? `${PASS} models: ${models.installed.length} installed: ${shown}${more}`
        : `${FAIL} models: none installed`,
    );
  } else {
    lines.push(`${FAIL} models: unknown (the model list could not be read)`);
  }
  const blocked = circuits.filter((c) => c.state !== 'closed');
  if (!ledger.ok && circuits.length === 0) {
    // Nothing could be read, or nothing can be saved: "none on record" would be a false all-clear.
    lines.push(`${FAIL} circuits: unknown (the circuit state cannot be used; see the problems)`);
  } else if (blocked.length === 0) {
    lines.push(`${PASS} circuits: ${circuits.length === 0 ? 'none on record' : `all ${circuits.length} closed`}`);
  } else {
    const listed = blocked
      .map(
        (c) =>
          `${c.model} ${c.state} after ${c.consecutive_failures} failures${c.retry_after_seconds !== null ? `, retry in ${c.retry_after_seconds} s` : ''}`,
      )
      .join('; ');
    lines.push(`${NOTE} circuits: ${blocked.length} of ${circuits.length} refusing runs: ${listed}`);
  }
  lines.push(
    `${PASS} runs: ${runs.in_flight} in flight, ${runs.running} running, ${runs.queued} queued, concurrency ${runs.concurrency}, ${runs.parallel} per model; loaded: ${runs.loaded_models.join(', ') || 'none known'} (${runs.max_loaded_models} fit together)`,
  );
  lines.push(...renderProcesses(report.processes));
  lines.push(
    telemetry.writable
      ? `${PASS} telemetry: ${telemetry.dir} is writable (log: ${telemetry.runs_log})`
      : `${FAIL} telemetry: ${telemetry.dir} is not writable`,
  );
  lines.push(
    ledger.ok
      ? `${PASS} ledger: the retry ledger and circuit files can be read and written`
      : `${FAIL} ledger: ${ledger.last_write_failure ? `not updated since ${ledger.last_write_failure.at}` : 'cannot be used'}${
          ledger.problems.length > 0 ? ` (${ledger.problems.join('; ')})` : ''
        }`,
  );
  const backend = report.state_backend;
  if (backend?.kind === 'redis') {
    lines.push(
      backend.reachable
        ? `${PASS} state: shared in Redis at ${backend.location} (team mode), reachable`
        : `${FAIL} state: Redis at ${backend.location} not reachable${backend.error ? ` (${backend.error})` : ''}; runs go on without the shared ledger`,
    );
  }
  lines.push(
    `  config: ${Object.entries(report.config)
      .map(([key, value]) => `${key}=${value === null ? '-' : String(value)}`)
      .join(', ')}`,
  );

  if (report.problems.length > 0) {
    lines.push('', 'Problems:');
    for (const problem of report.problems) lines.push(`${FAIL} ${problem}`);
  }
  if (report.warnings.length > 0) {
    lines.push('', 'Warnings:');
    for (const warning of report.warnings) lines.push(`${NOTE} ${warning}`);
  }
  lines.push('', `checked at ${report.checked_at}`);
  return lines.join('\n');
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
