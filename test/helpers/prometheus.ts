import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A real Prometheus for the `/metrics` tests, scraping one target every second. No npm package ships
 * it; it comes from Debian (`apt-get install prometheus`; `.ci/run` installs it when missing).
 */
export const PROMETHEUS_AVAILABLE = spawnSync('prometheus', ['--version'], { stdio: 'ignore' }).status === 0;

/** Say that the Prometheus tests are skipped, and how to run them. */
export function notePrometheusSkipped(): void {
  if (PROMETHEUS_AVAILABLE) return;
  process.stderr.write(
    'prometheus not found: the /metrics scrape test is skipped; install it with `apt-get install prometheus` (no npm package ships it)\n',
  );
}

/** Every Prometheus this process started and has not stopped: killed if the test process exits first. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface Prometheus {
  /** An instant query through the HTTP API: the result's series, as Prometheus returns them. */
  query(expression: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Everything it wrote (its logs), for a failure's message. */
  output(): string;
  stop(): Promise<void>;
}

/** Start Prometheus scraping `http://127.0.0.1:{port}/metrics`, with the bearer token in `tokenFile`. */
export async function startPrometheus(target: { port: number; tokenFile: string }): Promise<Prometheus> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ollama-runner-prometheus-'));
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: ollama-runner',
      `    authorization: { credentials_file: ${JSON.stringify(target.tokenFile)} }`,
      `    static_configs: [{ targets: ["127.0.0.1:${target.port}"] }]`,
      '',
    ].join('\n'),
  );
  const apiPort = await freePort();
  const child = spawn(
    'prometheus',
    [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${apiPort}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  running.add(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const query = async (expression: string) => {
    const response = await fetch(`http://127.0.0.1:${apiPort}/api/v1/query?query=${encodeURIComponent(expression)}`);
    const body = (await response.json()) as { status: string; data: { result: [] }; error?: string };
    if (body.status !== 'success') throw new Error(`query ${expression}: ${body.error ?? body.status}`);
    return body.data.result;
  };
  return {
    query,
    output: () => output,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      running.delete(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
