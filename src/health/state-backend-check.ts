import path from 'node:path';
import type { Config } from '../config/config.js';
import { isDescribedBackend, type StateBackendStatus } from '../store/state-backend.js';
import { redactRedisUrl } from '../config/redis-url.js';

/**
 * Where the ledger and circuits live, and (team mode) whether that Redis answers now. The state
 * files are described, not probed here: the ledger check already says whether they work.
 */
export async function checkStateBackend(
  store: unknown,
  config: Pick<Config, 'telemetryDir' | 'stateUrl'>,
): Promise<StateBackendStatus> {
  if (isDescribedBackend(store)) return store.status();
  if (config.stateUrl) {
    // A Redis backend that could not even be built (doctor reports it through the ledger check).
    return {
      kind: 'redis',
      location: redactRedisUrl(config.stateUrl),
      reachable: false,
      error: 'the client could not be set up',
    };
  }
  return { kind: 'files', location: path.join(config.telemetryDir, 'state.json'), reachable: null, error: null };
}

/** How to fix a ledger that cannot be used, for the backend in use. */
export function stateFixHint(config: Pick<Config, 'telemetryDir' | 'stateUrl'>): string {
  return config.stateUrl
    ? `Check that the Redis at ${redactRedisUrl(config.stateUrl)} (OLLAMA_MCP_STATE_URL) is up and reachable from this machine; the server reconnects by itself.`
    : `Fix the telemetry dir ${config.telemetryDir} (OLLAMA_MCP_TELEMETRY_DIR).`;
}
