// Shared helpers for the benchmarks: statistics, machine description, temp dirs, the MCP client.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(BENCH_DIR, '..');
export const SERVER_ENTRY = path.join(ROOT, 'dist/cli.js');
export const NODE_FAKE = path.join(ROOT, 'test/fixtures/fake-ollama.mjs');
export const SH_FAKE = path.join(BENCH_DIR, 'fake-min.sh');
export const SH_FAKE_100MS = path.join(BENCH_DIR, 'fake-100ms.sh');
/** Exactly what the server passes to `ollama` (src/ollama/cli-args.ts buildRunArgs with no options). */
export const RUN_ARGS = ['run', 'llama3.2', '--nowordwrap'];
export const MODEL = 'llama3.2';

// ------------------------------------------------------------------------------------------ stats

/** Percentile by linear interpolation between closest ranks (R type 7, numpy default). */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

export function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / (sorted.length || 1);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    mean,
    min: sorted[0] ?? NaN,
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

export const ms = (x, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

export function shuffle(items) {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

// ------------------------------------------------------------------------------------ environment

function sh(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5_000 }).trim();
  } catch {
    return null;
  }
}

export function machineInfo() {
  const read = (file) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(read('/proc/cpuinfo'))?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  const memKb = Number(/^MemTotal:\s*(\d+)/m.exec(read('/proc/meminfo'))?.[1] ?? 0);
  const osName = /^PRETTY_NAME="?([^"\n]+)"?/m.exec(read('/etc/os-release'))?.[1] ?? os.type();
  return {
    nproc: sh('nproc', []) ?? String(os.availableParallelism()),
    cpuModel,
    memory: memKb ? `${(memKb / 1024 / 1024).toFixed(1)} GiB` : `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
    os: `${osName}, ${os.type()} ${os.release()} ${os.arch()}`,
    loadavg: os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
    date: new Date().toISOString(),
  };
}

/** Share of all CPUs busy over `windowMs`, from /proc/stat (null where there is none). */
export async function cpuBusyPercent(windowMs = 1000) {
  const sample = () => {
    try {
      const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
      const idle = fields[3] + (fields[4] ?? 0); // idle + iowait
      return { idle, total: fields.reduce((a, b) => a + b, 0) };
    } catch {
      return null;
    }
  };
  const a = sample();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const b = sample();
  if (!a || !b || b.total === a.total) return null;
  return 100 * (1 - (b.idle - a.idle) / (b.total - a.total));
}

/**
 * CPU ticks (USER_HZ) used so far by the whole machine and by this process plus its reaped
 * descendants (the servers, the fakes they ran, the hammer). The difference over the run is what
 * other processes took: the noise indicator reported with the figures.
 */
export function cpuTicks() {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const machineBusy = fields.reduce((a, b) => a + b, 0) - fields[3] - (fields[4] ?? 0);
    const self = readFileSync('/proc/self/stat', 'utf8');
    const rest = self
      .slice(self.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number); // fields from #3 (state) on
    const ours = rest[11] + rest[12] + rest[13] + rest[14]; // utime stime cutime cstime (#14-#17)
    return { machineBusy, ours };
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------------------------- temp dirs

const tempDirs = new Set();

export function makeTempDir(prefix) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `ollama-runner-bench-${prefix}-`));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir) {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  tempDirs.delete(dir);
}

export function removeAllTempDirs() {
  for (const dir of [...tempDirs]) {
    try {
      removeTempDir(dir);
    } catch {
      // best effort at exit
    }
  }
}

/** The sh fakes must be executable (a checkout may lose the bit). */
export function ensureExecutable(file) {
  if (!existsSync(file)) throw new Error(`${file} is missing`);
  const mode = statSync(file).mode;
  if ((mode & 0o111) !== 0o111) chmodSync(file, mode | 0o755);
}

// --------------------------------------------------------------------------------------- server

/** The environment both the server and the direct baseline give the fake (the server passes its env on). */
export function baseEnv(extra = {}) {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...extra };
}

const liveServers = new Set();

/**
 * Start the built server over stdio exactly as an MCP client does (same as test/e2e/harness.ts).
 * `nodeArgs` lets the caller add e.g. --cpu-prof.
 */
export async function startServer({ bin, telemetryDir, env = {}, nodeArgs = [] }) {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...nodeArgs, SERVER_ENTRY],
    env: baseEnv({ OLLAMA_BIN: bin, OLLAMA_MCP_TELEMETRY_DIR: telemetryDir, ...env }),
    stderr: 'pipe',
    cwd: ROOT,
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk.toString('utf8');
    if (stderr.length > 100_000) stderr = stderr.slice(-50_000);
  });
  const client = new Client({ name: 'ollama-runner-bench', version: '1.0.0' });
  await client.connect(transport);
  // As real clients do: list the tools first. The SDK client then also validates every result's
  // structuredContent against the tool's outputSchema, which is part of the realistic round trip.
  const { tools } = await client.listTools();
  if (!tools.some((t) => t.name === 'ollama_run')) throw new Error('the server does not list ollama_run');
  const server = {
    client,
    pid: transport.pid,
    stderr: () => stderr,
    async run(args) {
      const result = await client.callTool({ name: 'ollama_run', arguments: args }, undefined, { timeout: 120_000 });
      const metadata = result.structuredContent?.metadata;
      if (!metadata || metadata.status !== 'ok') {
        const text = (result.content ?? []).map((c) => c.text).join('\n');
        throw new Error(
          `ollama_run did not succeed: ${metadata?.status ?? 'no metadata'}: ${text.slice(0, 400)}\nserver stderr: ${stderr.slice(-800)}`,
        );
      }
      return metadata;
    },
    async close() {
      liveServers.delete(server);
      await client.close(); // ends stdin; the SDK sends SIGTERM then SIGKILL if the server lingers
    },
  };
  liveServers.add(server);
  return server;
}

export async function closeAllServers() {
  await Promise.allSettled([...liveServers].map((s) => s.close()));
}

/**
 * The 100 ms fake for the throughput benchmark: bench/fake-100ms.c compiled with the system C
 * compiler into bench/.out/ (git-ignored), or the sh version when no compiler is found.
 * @returns {{ bin: string, label: string }}
 */
export function fake100ms() {
  const source = path.join(BENCH_DIR, 'fake-100ms.c');
  const out = path.join(BENCH_DIR, '.out', 'fake-100ms');
  mkdirSync(path.dirname(out), { recursive: true });
  for (const cc of ['cc', 'gcc', 'clang']) {
    const result = spawnSync(cc, ['-O2', '-o', out, source], { stdio: 'ignore' });
    if (result.status === 0) return { bin: out, label: `compiled C fake (bench/fake-100ms.c, ${cc})` };
    if (result.error === undefined) break; // the compiler exists but failed: do not hide it behind another
  }
  return { bin: SH_FAKE_100MS, label: 'sh fake (bench/fake-100ms.sh; no C compiler found)' };
}
