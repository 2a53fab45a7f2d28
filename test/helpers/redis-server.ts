import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';

/**
 * A real `redis-server` for the team-mode tests: started on a free loopback port with a temp dir
 * and no persistence, no config file. No npm package ships a Redis server, so it comes from the
 * system (Debian: `apt-get install redis-server`; `.ci/run` installs it when missing).
 */
export const REDIS_SERVER_AVAILABLE = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** Say once per test run (not once per file) that the Redis tests are skipped, and how to run them. */
export function noteRedisSkipped(): void {
  if (REDIS_SERVER_AVAILABLE) return;
  try {
    // Test files run in forks of one vitest process: the first to create the marker in the run's own dir speaks.
    closeSync(openSync(path.join(inject('runDir'), 'redis-skip-noted'), 'wx'));
  } catch {
    return;
  }
  process.stderr.write(
    'redis-server not found: the team-mode (Redis) tests are skipped; install it with `apt-get install redis-server` (no npm package ships a Redis server)\n',
  );
}

/** TLS tests also need `openssl` to make a throwaway CA and server certificate. */
export const OPENSSL_AVAILABLE = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

/** Every redis-server this process started and has not stopped: killed if the test process exits first. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface RedisServer {
  readonly port: number;
  /** With `tls`: the CA that signed the server's certificate (for NODE_EXTRA_CA_CERTS). */
  readonly caFile: string | null;
  /** `redis://127.0.0.1:PORT/db`. */
  url(db?: number): string;
  /** Stop it (SIGTERM, waits for the exit); the port stays reserved for `start`. */
  stop(): Promise<void>;
  /** Start it again on the same port (after `stop`), empty: nothing is persisted. */
  start(): Promise<void>;
  /** Stop it and remove its dir. */
  dispose(): Promise<void>;
}

/**
 * `tls`: the port speaks TLS only (`rediss://`), with a certificate for 127.0.0.1 signed by a
 * throwaway CA (`caFile`). `extraArgs` go to redis-server (e.g. `--requirepass`).
 */
export async function startRedisServer(extraArgs: readonly string[] = [], options: { tls?: boolean } = {}): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ollama-runner-redis-'));
  const caFile = options.tls ? makeCertificates(dir) : null;
  const portArgs = (port: number) =>
    caFile
      ? [
          '--port',
          '0',
          '--tls-port',
          String(port),
          '--tls-cert-file',
          path.join(dir, 'server.crt'),
          '--tls-key-file',
          path.join(dir, 'server.key'),
          '--tls-ca-cert-file',
          caFile,
          '--tls-auth-clients',
          'no',
        ]
      : ['--port', String(port)];
  let port = 0;
  let child: ChildProcess | null = null;
  let log = '';

  const launch = async (): Promise<void> => {
    log = '';
    child = spawn(
      'redis-server',
      [...portArgs(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const started = child;
    running.add(started);
    started.once('exit', () => running.delete(started));
    const exited = new Promise<never>((_, reject) =>
      started.once('exit', (code) => reject(new Error(`redis-server exited (${code}) on port ${port}: ${log.slice(-500)}`))),
    );
    exited.catch(() => {});
    await Promise.race([waitForPong(port, 10_000, caFile !== null), exited]);
  };

  for (let tries = 1; ; tries += 1) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (error) {
      await stopChild(child);
      // Another process took the port between freePort and the launch: try another.
      if (tries >= 3) throw error;
    }
  }

  const server: RedisServer = {
    port,
    caFile,
    url: (db = 0) => `${caFile ? 'rediss' : 'redis'}://127.0.0.1:${port}/${db}`,
    async stop() {
      await stopChild(child);
      child = null;
    },
    async start() {
      if (child) throw new Error('redis-server is already running');
      await launch();
    },
    async dispose() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

async function stopChild(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Resolves once the server answers PING. */
async function waitForPong(port: number, timeoutMs: number, overTls: boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await pingOnce(port, overTls)) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function pingOnce(port: number, overTls: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = overTls
      ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false })
      : net.connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once(overTls ? 'secureConnect' : 'connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      // A server started with --requirepass answers, too: `-NOAUTH Authentication required.`
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG') || reply.startsWith('-NOAUTH'));
    });
  });
}

/** A CA and a server certificate for 127.0.0.1 in `dir`; returns the CA's file. */
function makeCertificates(dir: string): string {
  const run = (args: string[]) => {
    const result = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
  };
  run([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=ollama-runner test CA',
  ]);
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  run([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  ]);
  return path.join(dir, 'ca.crt');
}
