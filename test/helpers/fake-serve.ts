import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** The fake CLI; `serve` starts the fake shared server (test/fixtures/fake-ollama.md, "Shared server mode"). */
export const FAKE_OLLAMA = path.resolve(__dirname, '../fixtures/fake-ollama.mjs');

/** One line of the server's trace (`serve.jsonl`): what its scheduler did, in order. */
export interface ServeEvent {
  readonly event: string;
  /** Epoch ms. */
  readonly t: number;
  readonly model?: string;
  /** The request's id (`r1`, `r2`, ...); absent on model events such as `unload`. */
  readonly id?: string;
  /** The pid of the CLI that sent the request (on `received`). */
  readonly client_pid?: number | null;
  readonly reason?: string;
  readonly stage?: string;
  readonly fast_path?: boolean;
  readonly ms?: number;
  readonly status?: number;
  readonly error?: string;
}

export interface FakeServe {
  /** The OLLAMA_HOST value to give the server under test, e.g. "127.0.0.1:43121". */
  readonly host: string;
  /** What the MCP server under test must add to its env: OLLAMA_HOST, FAKE_OLLAMA_SERVE=1 (and the trace dir and FAKE_OLLAMA_MODEL_GB if set). */
  readonly env: Record<string, string>;
  /** The serve.jsonl trace so far (empty without a trace dir). */
  events(): ServeEvent[];
  /** load_done count (optionally for one model, as the server names it: `llama3.2:latest`). */
  loads(model?: string): number;
  /** Everything the server wrote to stderr so far (its log). */
  log(): string;
  /** Stops the server (SIGTERM, then SIGKILL after 2 s) and waits for its exit; removes nothing it was not given. */
  stop(): Promise<void>;
}

/** Every fake server this process started and has not stopped: killed if the test process exits first. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Start `fake-ollama.mjs serve` on a free loopback port. `env`: the server's settings (OLLAMA_NUM_PARALLEL,
 * FAKE_OLLAMA_LOAD_MS, ...); `traceDir`: where it writes serve.jsonl (the caller owns the dir). The
 * server also exits by itself when this process dies.
 */
export async function startFakeServe(options: { env?: Record<string, string>; traceDir?: string } = {}): Promise<FakeServe> {
  const traceDir = options.traceDir;
  const child = spawn(process.execPath, [FAKE_OLLAMA, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      ...options.env,
      OLLAMA_HOST: '127.0.0.1:0',
      ...(traceDir !== undefined ? { FAKE_OLLAMA_TRACE_DIR: traceDir } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let log = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => running.delete(child));
  const host = await firstLine(child, exited, () => log);
  const modelGb = options.env?.FAKE_OLLAMA_MODEL_GB;
  const env: Record<string, string> = {
    OLLAMA_HOST: host,
    FAKE_OLLAMA_SERVE: '1',
    ...(traceDir !== undefined ? { FAKE_OLLAMA_TRACE_DIR: traceDir } : {}),
    // The CLI's `list` prints file sizes that follow the server's model sizes.
    ...(modelGb !== undefined ? { FAKE_OLLAMA_MODEL_GB: modelGb } : {}),
  };
  const events = (): ServeEvent[] => readEvents(traceDir);
  return {
    host,
    env,
    events,
    loads: (model) => events().filter((e) => e.event === 'load_done' && (model === undefined || e.model === model)).length,
    log: () => log,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** The address the server prints first (`listening on 127.0.0.1:43121`). */
function firstLine(child: ChildProcess, exited: Promise<void>, log: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      const m = /^listening on (\S+)$/.exec(line);
      if (m?.[1]) resolve(m[1]);
      else reject(new Error(`fake serve: unexpected first line ${JSON.stringify(line)}`));
    });
    void exited.then(() => reject(new Error(`fake serve exited before listening: ${log()}`)));
  });
}

function readEvents(traceDir: string | undefined): ServeEvent[] {
  if (traceDir === undefined) return [];
  const file = path.join(traceDir, 'serve.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ServeEvent);
}
