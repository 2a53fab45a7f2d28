import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Config } from '../config/config.js';
import { registerTools } from './tool-registry.js';
import { loadModelTiers, type ModelTiers } from '../config/model-tiers.js';
import { RunService } from '../app/run-service.js';
import { ProcessHygiene, teamConnectionOf } from '../app/process-hygiene.js';
import { runModelProcess } from '../ollama/model-process.js';
import { openStateBackend, type StateBackend } from '../store/state-backend.js';
import { RunLog } from '../telemetry/run-log.js';
import { cliEnvironment } from '../ollama/child-env.js';
import { InstalledModels } from '../ollama/installed-models.js';
import type { ControlEvent, ControlLogger } from '../tools/control-log.js';
import { ollamaHealthTool } from '../tools/ollama-health.js';
import { ollamaResetTool } from '../tools/ollama-reset.js';
import { ollamaRunManyTool } from '../tools/ollama-run-many.js';
import { ollamaRunTool } from '../tools/ollama-run.js';
import { ollamaRunsSummaryTool } from '../tools/ollama-runs-summary.js';
import { ollamaTaskStatusTool } from '../tools/ollama-task-status.js';
import { createRequire } from 'node:module';

const packageJson = createRequire(import.meta.url)('../../package.json') as { name: string; version: string };

export const SERVER_NAME = packageJson.name;
export const SERVER_VERSION = packageJson.version;

/** Everything one server process shares between its connections. */
export interface App {
  readonly config: Config;
  readonly tiers: ModelTiers;
  readonly store: StateBackend;
  readonly log: RunLog;
  readonly runs: RunService;
  readonly installedModels: InstalledModels;
  readonly logControl: ControlLogger;
  /** Child records, the orphan sweep and the shared cap: `start()` after start-up, `stop()` at shutdown. */
  readonly hygiene: ProcessHygiene;
}

/**
 * Build the shared parts. Throws ConfigError when OLLAMA_MCP_CONFIG (the tier file) is invalid,
 * so start-up stops with the path and the offending key.
 */
export async function createApp(config: Config, warn: (message: string) => void): Promise<App> {
  const tiers = await loadModelTiers(config);
  const store = await openStateBackend(config, warn);
  const log = new RunLog(config.telemetryDir, {
    logContent: config.logContent,
    maxBytes: config.logMaxBytes,
    onError: (error, file) => warn(`could not append to ${file}: ${error instanceof Error ? error.message : String(error)}`),
  });
  // The CLI's children get the server's whole environment, plus OLLAMA_HOST when configured.
  const env = cliEnvironment(config);
  // One list of installed models per process, shared by the preflight check and ollama_health.
  const installedModels = new InstalledModels({ bin: config.ollamaBin, env, ttlMs: config.modelListTtlMs });
  const hygiene = new ProcessHygiene(config, warn, { team: teamConnectionOf(store) });
  const runs = new RunService({
    config,
    store,
    log,
    env,
    // In team mode one Redis outage fails every run's ledger update: one stderr line a minute, not one per run.
    onWarning: config.stateUrl
      ? (await import('../store/redis-warning-limiter.js')).limitWarnings(warn, { windowMs: 60_000 })
      : warn,
    spawn: hygiene.trackSpawns(runModelProcess),
    sharedSlots: hygiene.sharedSlots,
    settingsFor: (model) => tiers.settingsFor(model),
    ...(config.preflight ? { preflight: (model: string) => installedModels.check(model) } : {}),
  });
  const logControl = async (event: ControlEvent) => log.recordControl(event);
  return { config, tiers, store, log, runs, installedModels, logControl, hygiene };
}

const INSTRUCTIONS = `This server runs tasks on local Ollama models.
Every ollama_run / ollama_run_many result has metadata.escalate. When it is true, stop retrying that task and hand it upwards; metadata.escalation_reason says why.
Pass the same task_id on every retry of the same work so the server can count failures for you.
Call ollama_health before delegating to see which models are installed and usable.`;

/** An MCP server exposing the tools over one connection. */
export function createMcpServer(app: App): Server {
  const server = new Server(
    { name: SERVER_NAME, version: SERVER_VERSION, title: 'Ollama runner' },
    { capabilities: { tools: {}, logging: {} }, instructions: INSTRUCTIONS },
  );
  const blockMode = app.config.escalationMode === 'block';
  registerTools(server, [
    ollamaRunTool(app.runs, app.config),
    ollamaRunManyTool(app.runs, app.config),
    ollamaHealthTool({
      config: app.config,
      store: app.store,
      runs: app.runs,
      installedModels: app.installedModels,
      processes: () => app.hygiene.status(),
    }),
    ollamaTaskStatusTool({ store: app.store, blockMode, logControl: app.logControl }),
    ollamaResetTool({
      store: app.store,
      blockMode,
      settingsFor: (model) => app.tiers.settingsFor(model),
      logControl: app.logControl,
    }),
    ollamaRunsSummaryTool({ telemetryDir: app.config.telemetryDir }),
  ]);
  return server;
}
