import { randomUUID } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AttemptLedger } from '../../../../src/app/attempt/ledger.js';
import { AttemptRecorder } from '../../../../src/app/attempt/record.js';
import { InterruptedAttempts } from '../../../../src/app/attempt/interrupted.js';
import { loadConfig } from '../../../../src/config/config.js';
import type { ProcView } from '../../../../src/policy/process-identity.js';
import { AttemptJournal, type OpenAttempt } from '../../../../src/store/attempt-journal.js';
import type { SelfIdentity } from '../../../../src/store/processes/proc-reader.js';
import { StateStore } from '../../../../src/store/state/state-store.js';
import { RunLog } from '../../../../src/telemetry/run-log.js';
import { readJsonLines } from '../../../helpers/read-json-lines.js';
import { tempDir } from '../../../helpers/temp-dir.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const PLACE = { host: 'here', boot: 'boot-1', pidns: 'pid:[1]' };
const ME: SelfIdentity = { self: { pid: 100, start: 1000 }, place: PLACE, hasProc: true };
/** pids alive here, with their start times. */
const procOf = (alive: Record<number, number>): ProcView => ({
  startOf: (pid) => alive[pid] ?? null,
  exists: (pid) => pid in alive,
  cmdlineOf: () => null,
});

function world(alive: Record<number, number> = { 100: 1000 }) {
  const dir = tempDir('interrupted-');
  dirs.push(dir);
  const config = loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: dir });
  const store = new StateStore(path.join(dir, 'state.json'), { onWarning: () => {} });
  const ledger = new AttemptLedger({ store, clock: Date.now, config, warn: () => {} });
  const log = new RunLog(dir);
  const journal = new AttemptJournal(dir);
  const warnings: string[] = [];
  const settler = () =>
    new InterruptedAttempts({
      journal,
      identity: ME,
      proc: procOf(alive),
      ledger,
      recorder: new AttemptRecorder({ log, clock: Date.now, answers: null }),
      jobs: null,
      clock: Date.now,
      warn: (m) => warnings.push(m),
    });
  const open = (over: Partial<OpenAttempt> = {}): OpenAttempt => ({
    runId: randomUUID(),
    taskId: 't',
    model: 'llama3.2',
    tool: 'ollama_run',
    batchId: null,
    chainId: null,
    chainStep: null,
    maxRetries: 3,
    callerRetryCount: null,
    timeoutMs: 1000,
    startTimeoutMs: 2000,
    promptChars: 42,
    startedAt: Date.now(),
    server: { pid: 7, start: 700, ...PLACE },
    ...over,
  });
  const lines = async () => {
    await log.idle();
    const file = path.join(dir, 'runs.jsonl');
    const out: Record<string, unknown>[] = [];
    try {
      for await (const line of readJsonLines(file)) out.push(line as Record<string, unknown>);
    } catch {
      // no log yet
    }
    return out;
  };
  return { dir, store, journal, settler, open, lines, warnings };
}

describe('InterruptedAttempts', () => {
  it("settles a dead server's attempt once: logged as interrupted, counted for its task, the record gone", async () => {
    const w = world();
    const attempt = w.open();
    await w.journal.open(attempt);
    expect(await w.settler().settleNow()).toBe(1);
    expect(await w.lines()).toEqual([
      expect.objectContaining({ run_id: attempt.runId, status: 'interrupted', task_id: 't', prompt_chars: 42, escalate: false }),
    ]);
    expect((await w.store.snapshot(['t'])).tasks.t).toMatchObject({ failures: 1, lastStatus: 'interrupted' });
    expect(readdirSync(w.journal.dir)).toEqual([]);
    expect(await w.settler().settleNow()).toBe(0);
  });

  it("leaves a live server's attempts alone (its own included)", async () => {
    const w = world({ 100: 1000, 7: 700 });
    await w.journal.open(w.open());
    await w.journal.open(w.open({ server: { ...ME.self, ...PLACE } }));
    expect(await w.settler().settleNow()).toBe(0);
    expect(readdirSync(w.journal.dir)).toHaveLength(2);
  });

  it('does not count twice an attempt its server recorded in the ledger before dying: its line says the recorded verdict', async () => {
    const w = world();
    const attempt = w.open();
    await w.store.transact(['t'], (state) => {
      state.tasks.t = {
        attempts: 1,
        failures: 1,
        totalFailures: 1,
        lastStatus: 'crashed',
        lastRunId: attempt.runId,
        lastModel: 'llama3.2',
        escalated: false,
        escalationReason: null,
        firstSeenAt: Date.now(),
        updatedAt: Date.now(),
        recent: [{ runId: attempt.runId, status: 'crashed', retryCount: 0 }],
      };
    });
    await w.journal.open(attempt);
    await w.settler().settleNow();
    expect((await w.store.snapshot(['t'])).tasks.t).toMatchObject({ failures: 1, attempts: 1 });
    const [line] = await w.lines();
    expect(line).toMatchObject({ status: 'crashed', retry_count: 0 });
    expect(line!.error).toMatch(/^it ended crashed, but the server running it \(pid 7\) stopped before logging it/);
  });

  it('two servers settling at once settle each attempt once', async () => {
    const w = world();
    for (let i = 0; i < 5; i += 1) await w.journal.open(w.open({ taskId: `t${i}` }));
    const [a, b] = await Promise.all([w.settler().settleNow(), w.settler().settleNow()]);
    expect(a + b).toBe(5);
    expect(await w.lines()).toHaveLength(5);
  });

  it('takes over an attempt whose settling server died while settling it', async () => {
    const w = world();
    const attempt = w.open();
    await w.journal.open(attempt);
    expect(await w.journal.claim(attempt.runId, 55)).toBe(true); // pid 55 claimed it, then died
    expect(await w.settler().settleNow()).toBe(1);
    expect(await w.lines()).toHaveLength(1);
    expect(readdirSync(w.journal.dir)).toEqual([]);
  });
});
