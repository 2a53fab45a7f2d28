import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sharedPs } from '../../../../src/app/queue/shared-ps.js';
import type { LoadedModelsResult } from '../../../../src/ollama/loaded-models.js';
import type { ProcView } from '../../../../src/policy/process-identity.js';
import type { SelfIdentity } from '../../../../src/store/processes/proc-reader.js';
import { FileQueueStore } from '../../../../src/store/queue/file-queue-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const proc: ProcView = { startOf: (pid) => pid, exists: () => true, cmdlineOf: () => null };
const identity = (pid: number): SelfIdentity => ({
  self: { pid, start: pid },
  place: { host: 'box', boot: 'b', pidns: null },
  hasProc: true,
});

/** `ollama ps` that takes 100 ms and counts its runs. */
function fakePs() {
  let runs = 0;
  const read = async (): Promise<LoadedModelsResult> => {
    runs += 1;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { ok: true, models: ['sim-a:latest'], sizes: new Map([['sim-a:latest', 4e9]]) };
  };
  return { read, runs: () => runs };
}

describe('one `ollama ps` per Ollama for every server of the queue', () => {
  it('three servers asking at once run it once and all get its answer; a fresh answer after a load asks again', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'shared-ps-'));
    dirs.push(dir);
    const ps = fakePs();
    const readers = [1, 2, 3].map((pid) =>
      sharedPs({
        store: new FileQueueStore({ telemetryDir: dir, ollamaKey: 'k', identity: identity(pid), proc }),
        server: `s${pid}`,
        read: ps.read,
        settle: (queue) => queue,
        defaultKeepAliveMs: 300_000,
      }),
    );
    const answers = await Promise.all(readers.map((read) => read(false)));
    expect(ps.runs()).toBe(1);
    for (const answer of answers) expect(answer).toMatchObject({ ok: true, models: ['sim-a:latest'] });
    // A recent answer does for a look at the queue; after a load, only a new one does.
    await readers[1]!(false);
    expect(ps.runs()).toBe(1);
    await readers[2]!(true);
    expect(ps.runs()).toBe(2);
  });
});
