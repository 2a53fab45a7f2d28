/**
 * The stdio transport: newline-delimited JSON-RPC on stdin/stdout.
 *
 * Replaces the SDK's `StdioServerTransport`, which closes itself (and so ends the server, silently)
 * when one line passes its 10 MiB buffer, and drops invalid messages without a reply. Here a line
 * over the limit is skipped and answered with a JSON-RPC error, invalid JSON and invalid requests
 * are answered too, and the server goes on reading. The transport closes only when told to, or
 * when stdin or stdout fail; `closeError` then says why, so the caller can log it and exit non-zero.
 */
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { interpretLine, refuseOversized, type Intake } from './json-rpc-intake.js';
import { LineFramer } from './line-framer.js';
import { MAX_MESSAGE_BYTES } from './message-limits.js';
import { terminalLine } from './terminal-line.js';

interface LineStdioTransportOptions {
  readonly stdin?: Readable;
  readonly stdout?: Writable;
  /** @default MAX_MESSAGE_BYTES */
  readonly maxMessageBytes?: number;
  /** One line per refused message (stderr in the CLI), its control characters escaped. @default none */
  readonly log?: (message: string) => void;
}

export class LineStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** Why the transport closed on its own (stdin or stdout failed); undefined after close(). */
  closeError: Error | undefined;

  /** The MCP version agreed at `initialize` (the reply's), for the spans of the calls; undefined before. */
  protocolVersion: string | undefined;

  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #maxMessageBytes: number;
  readonly #log: (message: string) => void;
  readonly #framer: LineFramer;
  #started = false;
  #closed = false;

  constructor(options: LineStdioTransportOptions = {}) {
    this.#stdin = options.stdin ?? process.stdin;
    this.#stdout = options.stdout ?? process.stdout;
    this.#maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    const log = options.log ?? (() => {});
    // A refused line is quoted in its problem (JSON.parse shows the start of it): keep the terminal safe.
    this.#log = (message) => log(terminalLine(message));
    this.#framer = new LineFramer(this.#maxMessageBytes);
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('LineStdioTransport already started');
    this.#started = true;
    this.#stdin.on('data', this.#onData);
    this.#stdin.on('error', this.#onStdinError);
    this.#stdout.on('error', this.#onStdoutError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    const result = 'result' in message ? message.result : undefined;
    if (typeof result?.protocolVersion === 'string' && result.serverInfo !== undefined)
      this.protocolVersion = result.protocolVersion;
    return this.#write(message);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.off('data', this.#onData);
    this.#stdin.off('error', this.#onStdinError);
    if (this.#stdin.listenerCount('data') === 0) this.#stdin.pause();
    this.onclose?.();
  }

  readonly #onData = (chunk: Buffer | string): void => {
    if (this.#closed) return;
    try {
      const lines = this.#framer.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
      for (const line of lines) {
        this.#handle(
          line.kind === 'line'
            ? interpretLine(line.text)
            : refuseOversized(line.bytes, this.#maxMessageBytes, line.head, line.tail),
        );
      }
    } catch (error) {
      // A bug here would otherwise leave the client waiting forever: fail loudly instead.
      this.#closeOnFailure(new Error(`the stdio transport failed: ${(error as Error).message}`));
    }
  };

  #handle(intake: Intake): void {
    if (intake.kind === 'message') return this.onmessage?.(intake.message);
    this.#log(`${intake.kind === 'refuse' ? 'refused' : 'ignored'} a message on stdin: ${intake.problem}`);
    if (intake.kind === 'refuse') this.#write(intake.reply).catch(() => {}); // a failed write closes the transport via 'error'
  }

  #write(message: unknown): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#stdout.destroyed || this.#stdout.writableEnded) {
        reject(new Error('stdout is closed'));
        return;
      }
      const json = `${JSON.stringify(message)}\n`;
      if (this.#stdout.write(json)) resolve();
      else this.#stdout.once('drain', resolve);
    });
  }

  readonly #onStdinError = (error: Error): void => {
    this.#closeOnFailure(new Error(`stdin failed: ${error.message}`));
  };

  readonly #onStdoutError = (error: NodeJS.ErrnoException): void => {
    const why = error.code === 'EPIPE' ? 'the client closed its end of stdout (EPIPE)' : error.message;
    this.#closeOnFailure(new Error(`cannot write to stdout: ${why}`));
  };

  #closeOnFailure(error: Error): void {
    if (this.#closed) return;
    this.closeError = error;
    this.onerror?.(error);
    void this.close();
  }
}
