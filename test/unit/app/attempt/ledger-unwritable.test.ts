import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/config/config.js';
import { RunService } from '../../../../src/app/run-service.js';
import type { ModelProcessRequest, ProcessOutcome } from '../../../../src/ollama/model-process.js';
import { StateStore } from '../../../../src/store/state/state-store.js';
import { StateStoreError } from '../../../../src/store/state/state-store-error.js';
import { RunLog } from '../../../../src/telemetry/run-log.js';
import { processOutcome } from '../../../helpers/process-outcome.js';
import { tempDir } from '../../../helpers/temp-dir.js';

/**
 * A RunService whose ledger holds some history, then stops accepting writes (as on a read-only or
 * full disk): reads still work.
 */
async function unwritable(env: Record<string, string>, history: (store: StateStore, now: number) => Promise<void>) {
  const dir = tempDir('ledger-unwritable-');
  const config = loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: dir, ...env });
  const now = Date.UTC(2026, 10, 1);
  const store = new StateStore(path.join(dir, 'state.json'), { onWarning: () => {} });
  await history(store, now);
  store.transact = () =>
    Promise.reject(new StateStoreError(`cannot lock ${store.file}: EROFS: read-only file system`, { step: 'lock' }));
  const spawned: ModelProcessRequest[] = [];
  const spawn = async (request: ModelProcessRequest): Promise<ProcessOutcome> => {
    spawned.push(request);
    return processOutcome({ exitCode: 1, stdout: '', stderrTail: 'Error: boom\n', timeoutMs: request.timeoutMs });
  };
  const warnings: string[] = [];
  const runs = new RunService({
    config,
    store,
    log: new RunLog(dir),
    clock: () => now,
    spawn,
    env: {},
    onWarning: (m) => warnings.push(m),
  });
  return { runs, spawned, warnings };
}

const failedTwice = {
  attempts: 2,
  failures: 2,
  totalFailures: 2,
  lastStatus: 'crashed' as const,
  lastRunId: 'r2',
  lastModel: 'm',
  escalated: false,
  escalationReason: null,
  firstSeenAt: 1,
  updatedAt: 2,
  recent: [],
};

describe('RunService when the ledger cannot be written', () => {
  it('counts from the saved ledger, escalates at max_retries, and says the ledger was not updated', async () => {
    const s = await unwritable({}, (store) => store.transact(['t'], (state) => void (state.tasks.t = failedTwice)));
    const result = await s.runs.run({ model: 'm', prompt: 'x', taskId: 't', maxRetries: 2 });
    expect(result.metadata).toMatchObject({ retry_count: 2, escalate: true, escalation_reason: 'max_retries_exceeded' });
    expect(result.metadata.warnings).toEqual([{ kind: 'ledger_not_updated', message: expect.stringMatching(/EROFS/) }]);
    expect(s.warnings.join('\n')).toMatch(/ledger not updated/);
  });

  it('an open circuit still refuses without spawning, and says it could not be updated', async () => {
    const s = await unwritable({}, (store, now) =>
      store.transact(
        [],
        (state) =>
          void (state.breakers['m:latest'] = { state: 'open', consecutiveFailures: 5, openedAt: now, retryAt: now + 60_000 }),
      ),
    );
    const result = await s.runs.run({ model: 'm', prompt: 'x', taskId: 't' });
    expect(result.metadata).toMatchObject({
      status: 'circuit_open',
      escalate: true,
      circuit: { state: 'open', retry_after_seconds: 60 },
    });
    expect(result.metadata.warnings.map((w) => w.kind)).toContain('circuit_not_updated');
    expect(s.spawned).toHaveLength(0);
  });

  it('block mode still refuses an escalated task', async () => {
    const s = await unwritable({ OLLAMA_MCP_ESCALATION: 'block' }, (store) =>
      store.transact(
        ['t'],
        (state) => void (state.tasks.t = { ...failedTwice, escalated: true, escalationReason: 'max_retries_exceeded' }),
      ),
    );
    const result = await s.runs.run({ model: 'm', prompt: 'x', taskId: 't' });
    expect(result.metadata).toMatchObject({ status: 'blocked', escalate: true, escalation_reason: 'max_retries_exceeded' });
    expect(s.spawned).toHaveLength(0);
  });
});
