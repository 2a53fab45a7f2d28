import path from 'node:path';
import type { Config } from '../config/config.js';
import { hostNameOf } from '../config/hosts.js';
import { collectHealth, type HealthStateSource } from '../health/collect-health.js';
import { renderHealth } from '../health/render-health.js';
import { cliEnvironment } from '../ollama/child-env.js';
import { InstalledModels } from '../ollama/installed-models.js';
import { terminalText } from '../ollama/terminal-text.js';
import { prepareTelemetryDir } from '../config/telemetry-dir.js';
import { NO_PROC_REASON, teamConnectionOf, type ProcessesStatus } from '../app/hygiene/process-hygiene.js';
import { SWEEP_INTERVAL_MS } from '../app/hygiene/orphan-sweep.js';
import { liveProcView, selfIdentity } from '../store/processes/proc-reader.js';
import { type SlotView } from '../store/slots/shared-slots.js';
import { SLOTS_DIR_NAME, viewSlots } from '../store/slots/file-slot-table.js';
import { RedisSlotTable } from '../store/slots/redis-slot-table.js';
import { isDescribedBackend } from '../store/state-backend.js';
import { openStateBackend } from '../store/state/open-state-backend.js';

/**
 * `ollama-runner-mcp doctor`: check the setup the way the server sees it, print the report to
 * `out`, and return the exit code (0 when everything needed to run works, 1 otherwise).
 * Runs no model and writes nothing but a temporary file in the telemetry dir (removed at once),
 * creating that dir (0700) when it is missing.
 */
export async function runDoctor(config: Config, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const storeWarnings: string[] = [];
  // Create the dir as the server would (0700) before the store creates it with default modes; a
  // failure is not fatal here: the writability check below reports it with the fix.
  await prepareTelemetryDir(config.telemetryDir).catch(() => {});
  const store: HealthStateSource = await openStateBackend(config, (message) => storeWarnings.push(message)).catch(
    // The telemetry dir cannot be created or used: the report says so (the writability check fails too).
    (error: Error) => ({ snapshot: () => Promise.reject(error) }),
  );
  // Every Ollama host (OLLAMA_MCP_HOSTS), each asked with OLLAMA_HOST set to it.
  const hostModels = config.hosts.map((spec) => {
    const env = cliEnvironment({ ollamaHost: spec.host === '' ? config.ollamaHost : spec.host });
    return {
      name: hostNameOf(spec),
      installed: new InstalledModels({ bin: config.ollamaBin, env, ttlMs: config.modelListTtlMs }),
    };
  });
  const installedModels = hostModels[0]!.installed;
  const hosts = config.hosts.map((spec) => ({
    ...{ name: hostNameOf(spec), weight: spec.weight, downUntil: null, lastError: null },
    ...{ running: 0, waiting: 0, loaded: [] },
  }));
  let code: number;
  let text: string;
  try {
    const report = await collectHealth({
      config,
      store,
      runs: {
        inFlight: 0,
        queue: { running: 0, waiting: 0, limit: config.concurrency, loaded: [], capacity: 1, memoryBudget: null },
        hosts,
      },
      installedModels,
      hostModels,
      processes: () => processesNow(config, store),
    });
    const withStore = storeWarnings.length > 0 ? { ...report, warnings: [...report.warnings, ...storeWarnings] } : report;
    text = withTelemetryReason(renderHealth(withStore), config.telemetryDirReason);
    code = withStore.ok ? 0 : 1;
  } catch (error) {
    text = terminalText(`doctor: the check itself failed: ${(error as Error).message}`);
    code = 1;
  }
  // Team mode: stop the Redis client, or its reconnection timer keeps the process alive.
  if (isDescribedBackend(store)) await store.close();
  await new Promise((resolve) => out.write(`${text}\n`, resolve));
  return code;
}

/** The orphan sweep and the shared cap as a server started now would see them (no sweep has run). */
async function processesNow(config: Config, store: HealthStateSource): Promise<ProcessesStatus> {
  const identity = selfIdentity();
  const limit = config.sharedConcurrency;
  const team = teamConnectionOf(store);
  let slots: SlotView[] = [];
  let error: string | null = null;
  if (limit !== null && team !== null) {
    // Team mode: the slots are in Redis, held by servers on every machine.
    const table = new RedisSlotTable({ connection: team, limit, identity, proc: liveProcView, warn: () => {} });
    slots = await table.view().catch((cause: Error) => {
      error = `${team.location}: ${cause.message}`;
      return [];
    });
  } else if (limit !== null) {
    slots = viewSlots(path.join(config.telemetryDir, SLOTS_DIR_NAME), limit, identity.place, liveProcView);
  }
  return {
    orphanSweep: {
      enabled: identity.hasProc,
      reason: identity.hasProc ? null : NO_PROC_REASON,
      intervalMs: SWEEP_INTERVAL_MS,
      last: null,
    },
    shared:
      limit === null
        ? null
        : { limit, inUse: slots.length, slots, waitingHere: 0, error, across: team === null ? 'processes' : 'machines' },
  };
}

/** Say why the telemetry dir is where it is, under the report's telemetry line. */
function withTelemetryReason(text: string, reason: string): string {
  const lines = text.split('\n');
  const at = lines.findIndex((line) => /^\S+ telemetry: /.test(line));
  lines.splice(at === -1 ? lines.length : at + 1, 0, terminalText(`  telemetry dir chosen because: ${reason}`));
  return lines.join('\n');
}
