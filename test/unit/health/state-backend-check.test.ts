import { describe, expect, it } from 'vitest';
import { checkStateBackend, stateFixHint } from '../../../src/health/state-backend-check.js';
import type { StateBackendStatus } from '../../../src/store/state-backend.js';

describe('checkStateBackend', () => {
  it('describes the state files without probing them (the ledger check does)', async () => {
    const status = await checkStateBackend({ snapshot: async () => ({}) }, { telemetryDir: '/data/t', stateUrl: undefined });
    expect(status).toEqual({ kind: 'files', location: '/data/t/state.json', reachable: null, error: null });
    expect(stateFixHint({ telemetryDir: '/data/t', stateUrl: undefined })).toMatch(/Fix the telemetry dir \/data\/t/);
  });

  it('asks a backend that reports on itself, and redacts the URL when there is none to ask', async () => {
    const redis: StateBackendStatus = { kind: 'redis', location: 'redis://u:***@h:6379/0', reachable: true, error: null };
    const backend = { status: async () => redis, close: async () => {} };
    expect(await checkStateBackend(backend, { telemetryDir: '/t', stateUrl: 'redis://u:pw@h:6379/0' })).toBe(redis);
    const notBuilt = await checkStateBackend({}, { telemetryDir: '/t', stateUrl: 'redis://u:pw@h:6379/0' });
    expect(notBuilt).toMatchObject({ kind: 'redis', location: 'redis://u:***@h:6379/0', reachable: false });
    expect(stateFixHint({ telemetryDir: '/t', stateUrl: 'redis://u:pw@h:6379/0' })).toBe(
      'Check that the Redis at redis://u:***@h:6379/0 (OLLAMA_MCP_STATE_URL) is up and reachable from this machine; the server reconnects by itself.',
    );
  });
});
