/**
 * Issue 8, "to keep true": 2,000 sequential runs through one server leak nothing: memory levels
 * off, the open file descriptors stay put, and calls do not get slower. A leak check, not a speed
 * test: the bounds are loose and compare the server with itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { makeSandbox, readRuns, startServer } from '../e2e/harness.js';
import { writeQuickOllama } from './quick-ollama.js';

const RUNS = 2_000;
const MiB = 1024 * 1024;

function residentBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match![1]) * 1024;
}

const openFds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

describe('2,000 sequential runs', () => {
  it('memory levels off, no descriptor is leaked, latency does not drift', async () => {
    const sandbox = makeSandbox();
    // A 32 KiB answer per run: a result kept by mistake would cost 50+ MiB over 1,000 runs.
    const bin = writeQuickOllama(sandbox.fakeStateDir, 32 * 1024);
    // A small old space makes the collector keep the heap tight (steadier RSS), and makes a leak of
    // the answers (2,000 x 32 KiB) end the server out of memory instead of hiding in a big heap.
    const server = await startServer(sandbox, {
      OLLAMA_BIN: bin,
      OLLAMA_MCP_PREFLIGHT: '0',
      FAKE_OLLAMA_TRACE_DIR: '',
      NODE_OPTIONS: '--max-old-space-size=64',
    });
    const pid = server.transport.pid!;
    const latencies: number[] = [];
    const rss = new Map<number, number>();
    let fdsAfterWarmUp = 0;
    try {
      for (let i = 1; i <= RUNS; i += 1) {
        const started = performance.now();
        // Every 5th run goes through the ledger (lock, read, write): leak-prone, but the slowest path.
        const task = i % 5 === 0 ? { task_id: `endurance-${i % 50}` } : {};
        const result = await server.run({ model: 'llama3.2', prompt: `run ${i}`, ...task });
        latencies.push(performance.now() - started);
        if (result.metadata.status !== 'ok') throw new Error(`run ${i}: ${result.text}`);
        if (i === 100) fdsAfterWarmUp = openFds(pid);
        if (i % 50 === 0) rss.set(i, residentBytes(pid));
      }
      const fdsAtEnd = openFds(pid);
      const first = median(latencies.slice(100, 400));
      const last = median(latencies.slice(-300));
      // For the report: `npx vitest run test/faults/keep-endurance.e2e.test.ts` prints these.
      // One sample is noisy (it may fall just before or after a collection): compare the peaks of
      // a window after warm-up with those of the last window. A leak grows the peaks with it.
      const peak = (from: number, to: number) => Math.max(...[...rss].filter(([i]) => i >= from && i <= to).map(([, b]) => b));
      const plateau = peak(500, 1_000);
      const end = peak(1_500, 2_000);
      console.log(
        `endurance: peak rss MiB 500-1000 ${(plateau / MiB).toFixed(1)}, 1500-2000 ${(end / MiB).toFixed(1)}; fds ${fdsAfterWarmUp} -> ${fdsAtEnd}; median ms ${first.toFixed(1)} -> ${last.toFixed(1)}`,
      );
      expect(fdsAtEnd).toBeLessThanOrEqual(fdsAfterWarmUp + 3);
      expect(end - plateau).toBeLessThan(16 * MiB);
      expect(last).toBeLessThan(first * 2 + 10);
      expect(readRuns(sandbox)).toHaveLength(RUNS);
    } finally {
      await server.close();
    }
  }, 120_000);
});
