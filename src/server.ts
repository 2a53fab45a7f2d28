import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Config } from './config.js';
import { registerTools } from './mcp/tool-registry.js';
import { loadModelTiers, type ModelTiers } from './model-tiers.js';
import { RunService } from './run-service.js';
import { StateStore } from './store/state-store.js';
import { RunLog } from './telemetry/run-log.js';
import { ollamaRunTool } from './tools/ollama-run.js';
import path from 'node:path';
import { createRequire } from 'node:module';

const packageJson = createRequire(import.meta.url)('../package.json') as { name: string; version: string };

export const SERVER_NAME = packageJson.name;
export const SERVER_VERSION = packageJson.version;

/** Everything one server process shares between its connections. */
export interface App {
  readonly config: Config;
  readonly tiers: ModelTiers;
  readonly store: StateStore;
  readonly log: RunLog;
  readonly runs: RunService;
}

/**
 * Build the shared parts. Throws ConfigError when OLLAMA_MCP_CONFIG (the tier file) is invalid,
 * so start-up stops with the path and the offending key.
 */
export async function createApp(config: Config, warn: (message: string) => void): Promise<App> {
  const tiers = await loadModelTiers(config);
  const store = new StateStore(path.join(config.telemetryDir, 'state.json'), { onWarning: warn });
  const log = new RunLog(config.telemetryDir, {
    logContent: config.logContent,
    onError: (error, file) => warn(`could not append to ${file}: ${error instanceof Error ? error.message : String(error)}`),
  });
  const runs = new RunService({ config, store, log, onWarning: warn, settingsFor: (model) => tiers.settingsFor(model) });
  return { config, tiers, store, log, runs };
}

const INSTRUCTIONS = `This server runs tasks on local Ollama models.
Every ollama_run result has metadata.escalate. When it is true, stop retrying that task and hand it upwards; metadata.escalation_reason says why.
Pass the same task_id on every retry of the same work so the server can count failures for you.`;

/** An MCP server exposing the tools over one connection. */
export function createMcpServer(app: App): Server {
  const server = new Server(
    { name: SERVER_NAME, version: SERVER_VERSION, title: 'Ollama runner' },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  registerTools(server, [ollamaRunTool(app.runs, app.config)]);
  return server;
}
