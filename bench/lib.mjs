// Shared helpers for the benchmarks: statistics, machine description, temp dirs, the MCP client.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execa } from 'execa';

export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(BENCH_DIR, '..');
export const SERVER_ENTRY = path.join(ROOT, 'dist/cli.js');
export const NODE_FAKE = path.join(ROOT, 'test/fixtures/fake-ollama.mjs');
export const SH_FAKE = path.join(BENCH_DIR, 'fake-min.sh');
export const SH_FAKE_100MS = path.join(BENCH_DIR, 'fake-100ms.sh');
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

/** Runs `fn` `count` times, one after another: the summary of their wall times in ms. */
export async function timeEach(count, fn) {
  const samples = [];
  for (let i = 0; i < count; i += 1) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return summarize(samples);
}

export const ms = (x, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
export const secs = (msValue, digits = 2) => `${(msValue / 1000).toFixed(digits)} s`;

/** A Markdown table, its columns padded: `rows[0]` is the header. */
export function markdownTable(rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
  const line = (r) => `| ${r.map((cell, c) => String(cell).padEnd(widths[c])).join(' | ')} |`;
  return [line(rows[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

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
 * descendants (the servers, the fakes they ran). The difference over the run is what
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
 * Start the built server (`entry`: another checkout's, to compare two builds) over stdio exactly as
 * an MCP client does (same as test/e2e/harness.ts).
 */
export async function startServer({ bin, telemetryDir, env = {}, entry = SERVER_ENTRY }) {
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [entry],
    // The bench's fakes run every call at once, alone: tell the server so, as it would read it from the
    // environment of an Ollama that runs that many requests and models at once (see README, Scheduling).
    env: baseEnv({
      OLLAMA_BIN: bin,
      OLLAMA_MCP_TELEMETRY_DIR: telemetryDir,
      OLLAMA_NUM_PARALLEL: '32',
      OLLAMA_MAX_LOADED_MODELS: '32',
      ...env,
    }),
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
    /** `ollama_run` with its whole record (`response_format: "detailed"`): the benchmarks read duration_ms and queue_ms. */
    async run(args) {
      const result = await client.callTool(
        { name: 'ollama_run', arguments: { response_format: 'detailed', ...args } },
        undefined,
        { timeout: 120_000 },
      );
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
 * Compile bench/<source> with the system C compiler into bench/.out/<name> (git-ignored).
 * @returns {{ bin: string, cc: string } | { bin: null, why: string }}
 */
export function compileC(source, name, defines = []) {
  const out = path.join(BENCH_DIR, '.out', name);
  mkdirSync(path.dirname(out), { recursive: true });
  for (const cc of ['cc', 'gcc', 'clang']) {
    const result = spawnSync(cc, ['-O2', ...defines.map((d) => `-D${d}`), '-o', out, path.join(BENCH_DIR, source)], {
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    if (result.error !== undefined) continue; // not installed: try the next name
    if (result.status === 0) return { bin: out, cc };
    // The compiler exists but failed: say so rather than hide it behind another one.
    return { bin: null, why: `${cc} failed on bench/${source}: ${result.stderr.trim().slice(-300)}` };
  }
  return { bin: null, why: 'no C compiler (cc, gcc, clang) found' };
}

/**
 * The fake `ollama` for a model that takes `modelMs`: bench/fake.c compiled, or the sh version
 * (fake-min.sh for 0 ms, fake-100ms.sh for 100 ms) when there is no compiler.
 * @returns {{ bin: string, label: string }}
 */
export function fakeBinary(modelMs) {
  const compiled = compileC('fake.c', `fake-${modelMs}ms`, [`MODEL_MS=${modelMs}`]);
  if (compiled.bin) return { bin: compiled.bin, label: `compiled C fake (bench/fake.c, ${modelMs} ms, ${compiled.cc})` };
  const sh = modelMs === 0 ? SH_FAKE : SH_FAKE_100MS;
  return { bin: sh, label: `sh fake (bench/${path.basename(sh)}; ${compiled.why})` };
}

/** Where the fakes record the argv of their first run (see bench/fake.c). */
export const ARGV_FILE_ENV = 'BENCH_FAKE_ARGV';

/**
 * The argv the server gave the fake, as recorded through BENCH_FAKE_ARGV; when nothing was
 * recorded (a server that does not pass its environment on), the build's own buildRunArgs.
 * @returns {Promise<{ args: string[], source: string }>}
 */
export async function serverRunArgs(argvFile) {
  if (existsSync(argvFile)) {
    const parts = readFileSync(argvFile, 'utf8').split('\0');
    parts.pop(); // after the last NUL
    if (parts[0] === 'run') return { args: parts, source: "recorded from the server's own spawn" };
  }
  const { buildRunArgs } = await import('../dist/ollama/cli-args.js');
  return { args: buildRunArgs(MODEL, {}), source: 'buildRunArgs from dist/ (the server did not pass BENCH_FAKE_ARGV on)' };
}

/**
 * A direct `child_process.spawn` run of the fake, done the way the server does it (prompt on
 * stdin, stdout and stderr read to the end, wait for the exit): the baseline the server's figures
 * are compared with.
 */
export function spawnDirect(bin, args, input, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.stderr.on('data', (chunk) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const stdout = Buffer.concat(out).toString('utf8');
      if (code !== 0 || !stdout.trim()) {
        reject(
          new Error(
            `direct spawn of ${bin} failed: exit ${code} ${signal ?? ''} ${Buffer.concat(err).toString('utf8').slice(-300)}`,
          ),
        );
      } else resolve(stdout);
    });
    child.stdin.on('error', () => {}); // a fake that exits early: the exit code says it
    child.stdin.end(input);
  });
}

/**
 * The same run through the server's own spawn function (`runModelProcess` from dist/: execa with
 * the server's lean options, its timeout, output cap and stderr tail), outside the server: the floor
 * the server keeps, since execa is part of its design.
 */
export async function runnerDirect(bin, args, input, env) {
  const { runModelProcess } = await import('../dist/ollama/model-process.js');
  const outcome = await runModelProcess({
    bin,
    args,
    prompt: input,
    env,
    timeoutMs: 120_000,
    startTimeoutMs: 120_000,
    killGraceMs: 5_000,
    maxOutputBytes: 1024 * 1024,
  });
  if (outcome.exitCode !== 0 || !outcome.stdout.trim())
    throw new Error(
      `runModelProcess of ${bin} failed: exit ${outcome.exitCode} ${outcome.signal ?? ''} ${outcome.stderrTail.slice(-300)}`,
    );
  return outcome.stdout;
}

/** The same run with execa's defaults (what a plain `execa(bin, args, { input })` costs). */
export async function execaDirect(bin, args, input, env) {
  const result = await execa(bin, args, { input, reject: false, env, extendEnv: false });
  if (result.exitCode !== 0 || !result.stdout.trim())
    throw new Error(`direct execa of ${bin} failed: exit ${result.exitCode} ${result.signal ?? ''} ${result.stderr.slice(-300)}`);
  return result.stdout;
}

// ------------------------------------------------------------------------------ one process, measured

let timeVerbose; // does /usr/bin/time -v work here? (checked once)

function peakRssSource() {
  // BENCH_PEAK_RSS=proc forces the fallback (to check it on a machine that has /usr/bin/time).
  if (process.env.BENCH_PEAK_RSS === 'proc') return '/proc/<pid>/status VmHWM, polled';
  if (timeVerbose === undefined) {
    const probe = existsSync('/usr/bin/time') ? spawnSync('/usr/bin/time', ['-v', 'true'], { encoding: 'utf8' }) : null;
    timeVerbose = probe?.status === 0 && /Maximum resident set size/.test(probe.stderr);
  }
  if (timeVerbose) return '/usr/bin/time -v';
  if (existsSync('/proc/self/status')) return '/proc/<pid>/status VmHWM, polled';
  return 'nothing here (no /usr/bin/time -v, no /proc)';
}

/**
 * Runs `command ...args` to completion and measures its wall time (from spawn to exit, its start-up
 * included) and peak RSS: with /usr/bin/time -v when it works, else by polling VmHWM (the kernel's
 * own high-water mark, so a poll only has to come late enough) in /proc, else NaN.
 * Rejects when the process fails.
 * @returns {Promise<{ stdout: string, wallMs: number, rssMb: number, rssSource: string }>}
 */
export function measureProcess(command, args, { env = process.env, cwd = ROOT } = {}) {
  const source = peakRssSource();
  const [file, argv] = source.startsWith('/usr/bin/time') ? ['/usr/bin/time', ['-v', command, ...args]] : [command, args];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(file, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    let hwmKb = 0;
    const poll = source.startsWith('/proc')
      ? setInterval(() => {
          try {
            const kb = Number(/^VmHWM:\s*(\d+)/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
            hwmKb = Math.max(hwmKb, kb);
          } catch {
            // exited between two polls
          }
        }, 5)
      : null;
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const wallMs = performance.now() - started;
      if (poll) clearInterval(poll);
      const stderr = Buffer.concat(err).toString('utf8');
      if (code !== 0) {
        const shown = args.map((arg) => (path.isAbsolute(arg) ? path.relative(ROOT, arg) : arg)).join(' ');
        reject(new Error(`${path.basename(command)} ${shown} exited with ${code ?? signal}: ${stderr.slice(-1500)}`));
        return;
      }
      const kb = source.startsWith('/usr/bin/time')
        ? Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1])
        : source.startsWith('/proc')
          ? hwmKb
          : NaN;
      resolve({ stdout: Buffer.concat(out).toString('utf8'), wallMs, rssMb: kb / 1024, rssSource: source });
    });
  });
}

/** {@link measureProcess} of `node script ...args`. */
export const measureNodeProcess = (script, args, options) => measureProcess(process.execPath, [script, ...args], options);

/**
 * The fake shared `ollama serve` (test/fixtures/fake-ollama.md, "Shared server mode") on a free
 * loopback port, serving `models` and writing its trace into `dir`; `env` tunes it (load times, memory).
 */
export async function startFakeServe(dir, models, env = {}) {
  const child = spawn(process.execPath, [NODE_FAKE, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      FAKE_OLLAMA_MODELS: models,
      ...env,
      OLLAMA_HOST: '127.0.0.1:0',
      FAKE_OLLAMA_TRACE_DIR: dir,
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const host = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => {
      const m = /^listening on (\S+)$/.exec(line);
      if (m) resolve(m[1]);
      else reject(new Error(`fake serve: ${line}`));
    });
    child.once('exit', () => reject(new Error('fake serve exited before listening')));
  });
  const events = () => {
    const file = path.join(dir, 'serve.jsonl');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  };
  return {
    // What the servers (and the fake CLI they spawn) need to be clients of this Ollama.
    env: { OLLAMA_HOST: host, FAKE_OLLAMA_SERVE: '1', FAKE_OLLAMA_MODELS: models },
    loads: () => events().filter((e) => e.event === 'load_done').length,
    events,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/**
 * Run a scheduling benchmark on its own (`node bench/<name>.mjs [runs]`): measure with `runs` (argv[2],
 * default 3), say how much CPU the rest of the machine used meanwhile, print the target rows, clean up.
 */
export async function runStandalone(measure, rowsOf) {
  try {
    const runs = Number(process.argv[2] ?? 3);
    const [t0, before] = [performance.now(), cpuTicks()];
    const figures = await measure({ runs, log: (line) => process.stdout.write(`  ${line}\n`) });
    const after = cpuTicks();
    const seconds = (performance.now() - t0) / 1000;
    if (before && after) {
      const other = after.machineBusy - before.machineBusy - (after.ours - before.ours);
      const pct = Math.max(0, other / (seconds * os.availableParallelism()));
      process.stdout.write(
        `other processes used ${pct.toFixed(0)}% of the ${os.availableParallelism()} CPUs over ${seconds.toFixed(0)} s\n`,
      );
    }
    for (const r of rowsOf(figures)) {
      process.stdout.write(
        `${r.pass ? 'PASS' : 'FAIL'}  ${r.measure}: ${r.value}  [baseline ${r.baseline}; target ${r.target}]\n      ${r.note}\n`,
      );
    }
  } finally {
    await closeAllServers();
    removeAllTempDirs();
  }
}
