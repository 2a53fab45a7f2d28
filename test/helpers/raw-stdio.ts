import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { SERVER_ENTRY, waitFor } from '../e2e/harness.js';

export interface JsonRpcLine {
  readonly jsonrpc: string;
  readonly id?: unknown;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly code: number; readonly message: string };
}

export interface RawStdioServer {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string | null>;
  /** Write one line (a message object is serialised as the SDK client does). */
  send(message: object | string): void;
  /** Every JSON line the server wrote to stdout so far. */
  replies(): JsonRpcLine[];
  stderr(): string;
  /** The reply with this id, waiting for it. */
  reply(id: unknown, timeoutMs?: number): Promise<JsonRpcLine>;
  /** initialize + initialized. */
  initialize(): Promise<void>;
}

/** The built server on raw pipes: the test writes any bytes and reads stdout line by line. */
export function startRawServer(env: Record<string, string>): RawStdioServer {
  const child = spawn(process.execPath, [SERVER_ENTRY], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.on('error', () => {}); // a test may write after the server exited
  const exited = new Promise<number | string | null>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
  const replies = () =>
    stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as JsonRpcLine);
  const server: RawStdioServer = {
    child,
    exited,
    send: (message) => child.stdin.write(typeof message === 'string' ? message : `${JSON.stringify(message)}\n`),
    replies,
    stderr: () => stderr,
    async reply(id, timeoutMs = 20_000) {
      const find = () => replies().find((line) => line.id === id && ('result' in line || 'error' in line));
      await waitFor(() => find() !== undefined || child.exitCode !== null, timeoutMs, `the reply to id ${String(id)}`);
      const found = find();
      if (!found) throw new Error(`the server exited (${String(child.exitCode)}) without replying to ${String(id)}:\n${stderr}`);
      return found;
    },
    async initialize() {
      server.send({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      });
      await server.reply('init');
      server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    },
  };
  return server;
}

/** A tools/call as the SDK client writes it: `id` last, after the (possibly huge) params. */
export function toolCall(id: number | string, name: string, args: Record<string, unknown>): object {
  return { method: 'tools/call', params: { name, arguments: args }, jsonrpc: '2.0', id };
}
