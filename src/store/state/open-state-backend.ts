import path from 'node:path';
import type { Config } from '../../config/config.js';
import type { StateBackend } from '../state-backend.js';
import { StateStore } from './state-store.js';

/**
 * The ledger's and circuits' home: the files in the telemetry dir, or (OLLAMA_MCP_STATE_URL) a
 * Redis shared with other servers, whose client is only loaded then. Never waits for Redis.
 * @throws StateStoreError when the state files' dir cannot be used.
 */
export async function openStateBackend(
  config: Pick<Config, 'telemetryDir' | 'stateUrl' | 'statePrefix' | 'taskTtlMs'>,
  warn: (message: string) => void,
): Promise<StateBackend> {
  if (!config.stateUrl) return new StateStore(path.join(config.telemetryDir, 'state.json'), { onWarning: warn });
  const { RedisStateStore } = await import('./redis-state-store.js');
  return new RedisStateStore({ url: config.stateUrl, prefix: config.statePrefix, taskTtlMs: config.taskTtlMs, warn });
}
