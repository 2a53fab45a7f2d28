import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, onTestFinished } from 'vitest';
import type { RunMetadata, RunResult } from '../../src/app/reply/run-result.js';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import { removeTempDir, tempDir } from '../helpers/temp-dir.js';

export const ROOT = path.resolve(__dirname, '../..');
export const SERVER_ENTRY = path.join(ROOT, 'dist/cli.js');
export const FAKE_OLLAMA = path.join(ROOT, 'test/fixtures/fake-ollama.mjs');

export interface Sandbox {
  /** The temp dir made for it (it holds the dirs below unless a test put one elsewhere), removed when the test file ends. */
  readonly root: string;
  /** OLLAMA_MCP_TELEMETRY_DIR: runs.jsonl and the state files. */
  readonly telemetryDir: string;
  /** FAKE_OLLAMA_TRACE_DIR: every fake process writes start/exit lines here. */
  readonly traceDir: string;
  /** FAKE_OLLAMA_STATE_DIR: counters for `@fake:fail_times`. */
  readonly fakeStateDir: string;
}

/** A fresh sandbox in the temp dir, removed when the test file ends (test/helpers/temp-dir.ts). */
export function makeSandbox(): Sandbox {
  const root = tempDir('ollama-runner-e2e-');
  const dirs = {
    telemetryDir: path.join(root, 'telemetry'),
    traceDir: path.join(root, 'trace'),
    fakeStateDir: path.join(root, 'fake-state'),
  };
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  return { root, ...dirs };
}

/**
 * The environment a test server runs with: the fake CLI, the sandbox, short timings. The fake in its
 * per-process mode runs every `ollama run` at once and alone, like an Ollama that runs 8 requests of a
 * model at once and keeps 8 models loaded: the server is told so (OLLAMA_NUM_PARALLEL,
 * OLLAMA_MAX_LOADED_MODELS), as it would read them from a real server's environment. Tests of the
 * dispatcher use the fake's shared server instead (test/helpers/fake-serve.ts).
 */
export function serverEnv(sandbox: Sandbox, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    OLLAMA_BIN: FAKE_OLLAMA,
    OLLAMA_NUM_PARALLEL: '8',
    OLLAMA_MAX_LOADED_MODELS: '8',
    OLLAMA_MCP_TELEMETRY_DIR: sandbox.telemetryDir,
    OLLAMA_MCP_KILL_GRACE_MS: '500',
    FAKE_OLLAMA_TRACE_DIR: sandbox.traceDir,
    FAKE_OLLAMA_STATE_DIR: sandbox.fakeStateDir,
    ...extra,
  };
}

export interface RunningServer {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** `ollama_run` with `response_format: "detailed"` unless `args` says otherwise: `metadata` is the whole record. */
  run(args: Record<string, unknown>, options?: { timeout?: number; signal?: AbortSignal }): Promise<CallResult>;
  close(): Promise<void>;
}

export interface CallResult extends RunReply {
  readonly metadata: RunMetadata;
  readonly isError: boolean;
  readonly text: string;
}

/** Start the built server as an MCP client would (stdio), connected through the SDK Client. */
export async function startServer(sandbox: Sandbox, extraEnv: Record<string, string> = {}): Promise<RunningServer> {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_ENTRY],
    env: serverEnv(sandbox, extraEnv),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const client = new Client({ name: 'e2e', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => stderr,
    async run(args, options = {}) {
      const result = await client.callTool(
        { name: 'ollama_run', arguments: { response_format: 'detailed', ...args } },
        undefined,
        {
          timeout: options.timeout ?? 60_000,
          ...(options.signal ? { signal: options.signal } : {}),
        },
      );
      const structured = result.structuredContent as unknown as RunReply & RunResult;
      const content = result.content as { type: string; text: string }[];
      return { ...structured, isError: result.isError === true, text: content.map((c) => c.text).join('\n') };
    },
    async close() {
      await client.close();
    },
  };
}

/** The server of a `describe` block or a file: see {@link useServer}. */
export interface SharedServer extends RunningServer {
  /** The sandbox it runs in. */
  readonly sandbox: Sandbox;
  /** Close it and start another on the same sandbox, as a restart does; `env` replaces the first one's. */
  restart(env?: Record<string, string>): Promise<void>;
}

/**
 * The server every test of the enclosing `describe` (or file) shares: started on a fresh sandbox in
 * `beforeAll` with `env`, closed and its sandbox removed in `afterAll`. Call it where you would call
 * `beforeAll`; use what it returns in tests and hooks.
 */
export function useServer(env: Record<string, string> = {}): SharedServer {
  let sandbox: Sandbox | undefined;
  let running: RunningServer | undefined;
  beforeAll(async () => {
    sandbox = makeSandbox();
    running = await startServer(sandbox, env);
  });
  afterAll(async () => {
    await running?.close();
    if (sandbox !== undefined) removeTempDir(sandbox.root);
  });
  const live = (): RunningServer => {
    if (running === undefined) throw new Error('useServer: the server starts in beforeAll; use it in a test or a hook');
    return running;
  };
  return {
    get client() {
      return live().client;
    },
    get transport() {
      return live().transport;
    },
    get sandbox() {
      live();
      return sandbox!;
    },
    stderr: () => live().stderr(),
    run: (args, options) => live().run(args, options),
    close: () => live().close(),
    async restart(nextEnv = env) {
      await live().close();
      running = await startServer(sandbox!, nextEnv);
    },
  };
}

/** In a test: a server of its own on `sandbox` (a fresh one by default), closed when the test ends. */
export async function startTestServer(
  env: Record<string, string> = {},
  sandbox: Sandbox = makeSandbox(),
): Promise<RunningServer & { readonly sandbox: Sandbox }> {
  const server = await startServer(sandbox, env);
  onTestFinished(() => server.close());
  return { ...server, sandbox };
}

export interface HttpServerChild {
  /** The MCP endpoint it listens on, as its stderr says. */
  readonly url: string;
  readonly port: number;
  /** Its exit code, or the signal that ended it; null while it runs. */
  exitCode(): number | string | null;
  /** The bearer token clients send: OLLAMA_MCP_HTTP_TOKEN if given, else the one it keeps in the telemetry dir; undefined with OLLAMA_MCP_HTTP_AUTH=none. */
  readonly token: string | undefined;
  /** `{ Authorization: 'Bearer <token>' }`, or no header without a token. */
  readonly auth: Readonly<Record<string, string>>;
  stderr(): string;
  /** SIGTERM (SIGKILL after 5 s) and wait for the exit. */
  stop(): Promise<void>;
}

/** The bearer token an `--http` server started without OLLAMA_MCP_HTTP_TOKEN keeps in the sandbox's telemetry dir. */
export function readHttpToken(sandbox: Sandbox): string {
  return readFileSync(path.join(sandbox.telemetryDir, 'http-token'), 'utf8').trim();
}

/**
 * Start the built server with `--http --port 0` (plus `args`) and wait until it listens. `prefix`: a
 * command that runs it (`['prlimit', '--nofile=200:200']`).
 */
export async function startHttpServerChild(
  sandbox: Sandbox,
  extraEnv: Record<string, string> = {},
  args: readonly string[] = [],
  prefix: readonly string[] = [],
): Promise<HttpServerChild> {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`);
  const [command, ...commandArgs] = [...prefix, process.execPath, SERVER_ENTRY, '--http', '--port', '0', ...args];
  const child = spawn(command!, commandArgs, {
    env: serverEnv(sandbox, extraEnv),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // The command that connects Claude Code is the last line of the start-up.
  await waitFor(() => /\n {2}claude mcp add .*\n/.test(stderr) || child.exitCode !== null, 10_000, 'the HTTP server to start');
  const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
  if (!url) throw new Error(`the HTTP server did not start:\n${stderr}`);
  const token = extraEnv.OLLAMA_MCP_HTTP_TOKEN ?? (extraEnv.OLLAMA_MCP_HTTP_AUTH === 'none' ? undefined : readHttpToken(sandbox));
  return {
    url,
    port: Number(new URL(url).port),
    exitCode: () => child.exitCode ?? child.signalCode,
    token,
    auth: token === undefined ? {} : { Authorization: `Bearer ${token}` },
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** {@link useServer} for `--http`: the child every test of the enclosing `describe` shares, stopped and its sandbox removed in `afterAll`. */
export function useHttpServer(
  env: Record<string, string> = {},
  args: readonly string[] = [],
): HttpServerChild & { readonly sandbox: Sandbox } {
  let sandbox: Sandbox | undefined;
  let child: HttpServerChild | undefined;
  beforeAll(async () => {
    sandbox = makeSandbox();
    child = await startHttpServerChild(sandbox, env, args);
  });
  afterAll(async () => {
    await child?.stop();
    if (sandbox !== undefined) removeTempDir(sandbox.root);
  });
  const live = (): HttpServerChild => {
    if (child === undefined) throw new Error('useHttpServer: the server starts in beforeAll; use it in a test or a hook');
    return child;
  };
  return {
    get url() {
      return live().url;
    },
    get port() {
      return live().port;
    },
    get token() {
      return live().token;
    },
    get auth() {
      return live().auth;
    },
    get sandbox() {
      live();
      return sandbox!;
    },
    exitCode: () => live().exitCode(),
    stderr: () => live().stderr(),
    stop: () => live().stop(),
  };
}

export interface TraceEvent {
  readonly event: 'start' | 'prompt' | 'exit' | string;
  readonly pid: number;
  readonly t: number;
  readonly argv?: string[];
  readonly prompt?: string;
  readonly code?: number | null;
  readonly signal?: string | null;
}

export function readTrace(sandbox: Sandbox): TraceEvent[] {
  const file = path.join(sandbox.traceDir, 'trace.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as TraceEvent);
}

/**
 * Trace events of `ollama run` processes only (the server also runs `ollama list` to check a
 * model is installed; those are not model runs).
 */
export function readRunTrace(sandbox: Sandbox): TraceEvent[] {
  const events = readTrace(sandbox);
  const runPids = new Set(events.filter((e) => e.event === 'start' && e.argv?.[0] === 'run').map((e) => e.pid));
  return events.filter((e) => runPids.has(e.pid));
}

/** Fake model processes started (each `ollama run` spawn is one). */
export function spawnCount(sandbox: Sandbox): number {
  return readRunTrace(sandbox).filter((e) => e.event === 'start').length;
}

/** The most fake processes alive at the same moment, from their start/exit lines. */
export function maxConcurrent(events: readonly TraceEvent[]): number {
  const edges = events
    .filter((e) => e.event === 'start' || e.event === 'exit')
    .map((e) => ({ t: e.t, delta: e.event === 'start' ? 1 : -1 }))
    // At equal times count exits first: a slot freed and re-used in the same millisecond is not overlap.
    .sort((a, b) => a.t - b.t || a.delta - b.delta);
  let current = 0;
  let max = 0;
  for (const edge of edges) {
    current += edge.delta;
    max = Math.max(max, current);
  }
  return max;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Every line of runs.jsonl, parsed (a line that does not parse fails the test). */
export function readRuns(sandbox: Sandbox): Record<string, unknown>[] {
  const file = path.join(sandbox.telemetryDir, 'runs.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
