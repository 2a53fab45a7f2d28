#!/usr/bin/env node
import { createHash } from 'node:crypto';
import { isConfigError, loadConfig, telemetryDirFor, type Config } from './config/config.js';
import type { App } from './mcp/server.js';
import { SERVER_NAME, SERVER_VERSION } from './mcp/server-identity.js';
import { currentTelemetryDirContext, isTelemetryDirError, prepareTelemetryDir } from './config/telemetry-dir.js';
import { DEFAULT_HTTP_PORT } from './config/ranges.js';
import { isStateStoreError } from './store/state/state-store-error.js';
import { otelSettings, otelWanted } from './otel/settings.js';
import type { Observer } from './otel/observer.js';

// `report`, `doctor`, `--http` and the server itself are imported when asked for: a stdio start, which
// an MCP client waits on, loads only what stdio serving needs, and `report` none of the server.

const HELP = `${SERVER_NAME} ${SERVER_VERSION}: an MCP server (stdio) that runs local Ollama models safely.

Usage:
  ${SERVER_NAME}            start the server on stdin/stdout (an MCP client launches this)
  ${SERVER_NAME} --http [--host H] [--port N]
                            serve Streamable HTTP at http://H:N/mcp (default 127.0.0.1:${DEFAULT_HTTP_PORT}). Clients send
                            Authorization: Bearer <token>: OLLAMA_MCP_HTTP_TOKEN, else a token kept in the data dir
                            (file http-token, 0600; shown at start). OLLAMA_MCP_HTTP_AUTH=none turns the check off
                            (loopback hosts only: then every local user can run models as you)
  ${SERVER_NAME} doctor     check Ollama, the models, the circuits and the settings; exit 1 if something is wrong
  ${SERVER_NAME} report [--since 24h|7d|ISO] [--model M] [--task T] [--status S] [--json | --html FILE] [--dir DIR]...
                            summarise runs.jsonl: per-model outcomes and latency, escalated tasks
                            (\`report --help\` for details)
  ${SERVER_NAME} --help     this text
  ${SERVER_NAME} --version  the version

Configuration is read from the environment (OLLAMA_BIN, OLLAMA_HOST, OLLAMA_MCP_*); see the README.
Data (runs.jsonl, the retry ledger, the circuits) goes to OLLAMA_MCP_TELEMETRY_DIR, by default
~/.local/state/${SERVER_NAME} (\$XDG_STATE_HOME when set; ~/Library/Application Support on macOS,
%LOCALAPPDATA% on Windows), or the repo's telemetry/ when run from a source checkout.
Logs go to stderr; stdout carries only the MCP protocol.`;

/** A stdio client writes `initialize` at spawn: its reply is long sent by then (see serveStdio). */
const STARTED_BY_MS = 250;

function warn(message: string): void {
  process.stderr.write(`${SERVER_NAME}: ${message}\n`);
}

async function main(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'report') return report(argv.slice(1));
  // Asked for, so the answer is the output (stdout), not a diagnostic: `--version | cut`, `--help | less`.
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  if (argv.includes('--version') || argv.includes('-v')) {
    process.stdout.write(`${SERVER_VERSION}\n`);
    return 0;
  }
  const [command, ...rest] = argv;
  const http = command === '--http' ? parseHttpArgs(rest) : null;
  if (typeof http === 'string') return usageError(`${http}. Run \`${SERVER_NAME} --help\`.`);
  if (command !== undefined && command !== 'doctor' && http === null) {
    return usageError(`unknown argument \`${command}\`. Run \`${SERVER_NAME} --help\`.`);
  }
  try {
    const config = loadConfig(process.env);
    if (command === 'doctor') return await doctor(config, rest);
    // Before anything opens a file there: a dir that cannot be written stops start-up with one
    // line naming it, instead of a stack trace the client shows as "Connection closed".
    await prepareTelemetryDir(config.telemetryDir);
    if (http) await serveHttp(config, http);
    else await serveStdio(config);
    return 0;
  } catch (error) {
    const httpError = http !== null && (await import('./transport/http/errors.js')).isHttpServerError(error);
    if (isConfigError(error) || httpError || isTelemetryDirError(error)) {
      return usageError(`${isConfigError(error) ? 'configuration error: ' : ''}${error.message}`);
    }
    const cannotStart = stateStoreProblem(error);
    if (cannotStart === null) throw error;
    warn(cannotStart);
    return 1;
  }
}

/** Say what is wrong with the command line or the settings: exit code 2. */
function usageError(message: string): 2 {
  warn(message);
  return 2;
}

/**
 * `report` reads the log only: an unrelated bad setting must not stop a developer reviewing runs.
 * The dir is chosen exactly as the server chooses it, so `report` reads what the server wrote.
 */
async function report(args: readonly string[]): Promise<number> {
  let telemetryDir: string;
  try {
    telemetryDir = telemetryDirFor(currentTelemetryDirContext()).dir;
  } catch (error) {
    if (!isConfigError(error)) throw error;
    return usageError(`configuration error: ${error.message}`);
  }
  const { runReportCommand } = await import('./cli/report-command.js');
  return runReportCommand(args, { telemetryDir, out: process.stdout, err: process.stderr });
}

async function doctor(config: Config, args: readonly string[]): Promise<number> {
  if (args.length > 0) return usageError(`doctor takes no arguments, got \`${args.join(' ')}\``);
  const { loadModelTiers } = await import('./config/model-tiers.js');
  await loadModelTiers(config); // a bad tier file stops the server: say so here too (exit 2)
  const { runDoctor } = await import('./cli/doctor.js');
  return runDoctor(config);
}

/** `--http [--host H] [--port N]`, or what is wrong with them. */
function parseHttpArgs(args: readonly string[]): { host: string; port: number } | string {
  let host = '127.0.0.1';
  let port = DEFAULT_HTTP_PORT;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    const [flag, inline] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    const value = inline ?? args[++i];
    if (flag === '--host' && value) host = value;
    else if (flag === '--port' && value !== undefined && /^\d+$/.test(value) && Number(value) <= 65_535) port = Number(value);
    else if (flag === '--port') return `--port must be a whole number from 0 to 65535, got \`${value ?? ''}\``;
    else return `unknown or incomplete --http option \`${arg}\``;
  }
  return { host, port };
}

/** `cannot start: ...` when the state cannot be used (StateStoreError), else null. */
function stateStoreProblem(error: unknown): string | null {
  return isStateStoreError(error) ? `cannot start: ${error.message}` : null;
}

/**
 * Build the services once and start the orphan sweep; a state that cannot be used stops the
 * server with one line (exit 1), as when it was opened before serving.
 */
function startServicesOnce(app: App): () => Promise<void> {
  let starting: Promise<void> | null = null;
  return () =>
    (starting ??= app.services().then(
      (services) => services.hygiene.start(), // ends the model processes of servers that were killed
      (error: unknown) => {
        warn(stateStoreProblem(error) ?? `fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        process.exit(1);
      },
    ));
}

/** OpenTelemetry when the environment asks for it (or `/metrics` is served); null, and nothing of it loaded, when not. */
async function startObserver(config: Config, http: boolean): Promise<Observer | null> {
  const settings = otelSettings(process.env, { http });
  if (!otelWanted(settings)) return null;
  const { startOtel } = await import('./otel/start-otel.js');
  const service = { name: SERVER_NAME, version: SERVER_VERSION };
  return startOtel({ settings, service, ollamaHost: config.ollamaHost, warn });
}

/** Stop serving, once: close the transport, stop every run, wait until each is logged, then export the last spans. */
function shutdownOnce(app: App, closeTransport: () => Promise<void>): (why: string, finishJobs?: boolean) => Promise<void> {
  let closing: Promise<void> | null = null;
  return (why, finishJobs = false) =>
    (closing ??= (async () => {
      const services = await app.servicesStarted;
      await closeTransport();
      if (!services) return;
      // The client went away, not the server's user: the jobs it handed over (which outlive it) end first.
      const jobs = services.runs.jobs.running;
      if (finishJobs && jobs > 0) {
        warn(`${why}: ${jobs} job(s) go on; exiting once they end (their results stay collectable with ollama_wait)`);
        await services.runs.jobs.drain();
      }
      if (services.runs.inFlight > 0) warn(`${why}: stopping ${services.runs.inFlight} run(s) and exiting`);
      services.runs.abortAll();
      await services.runs.drain();
      await services.runs.close();
      await services.hygiene.stop();
      await services.log.idle();
    })().finally(() => app.observer?.shutdown()));
}

/** Who the jobs of an HTTP client belong to: the digest of the token it presents, or everyone without one. */
function ownerOf(auth: { kind: 'bearer'; token: string } | { kind: 'none' }): string {
  return auth.kind === 'none' ? 'http' : `token:${createHash('sha256').update(auth.token).digest('hex').slice(0, 32)}`;
}

/** Serve Streamable HTTP until SIGTERM/SIGINT/SIGHUP; in-flight runs are stopped and logged first. */
async function serveHttp(config: Config, { host, port }: { host: string; port: number }): Promise<void> {
  const [{ createApp, createMcpServer }, { startHttpServer }, { announceAccess, resolveHttpAccess }, { hostname }] =
    await Promise.all([
      import('./mcp/server.js'),
      import('./transport/http/server.js'),
      import('./transport/http/access.js'),
      import('node:os'),
    ]);
  const access = await resolveHttpAccess({ mode: config.httpAuth, token: config.httpToken, dataDir: config.telemetryDir });
  const app = await createApp(config, warn, await startObserver(config, true));
  (await app.services()).hygiene.start(); // ends the model processes of servers that were killed
  const server = await startHttpServer({
    app,
    // Jobs started over HTTP are the token's: a client holding it collects them, after a reconnect too.
    createServer: (app) => createMcpServer(app, ownerOf(access.auth)),
    host,
    port,
    auth: access.auth,
    connections: { total: config.httpMaxConnections, perAddress: config.httpMaxConnectionsPerAddress },
    log: warn,
    metrics: app.observer?.prometheus ?? null,
  });
  const { notes, command } = announceAccess(server.url, access, process.stderr.isTTY === true, hostname());
  for (const note of notes) warn(note);
  process.stderr.write(`  ${command}\n`); // alone on its line, to be copied
  const shutdown = shutdownOnce(app, () => server.close()); // aborts the in-flight calls of every session
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => void shutdown(signal).finally(() => process.exit(0)));
  }
}

async function serveStdio(config: Config): Promise<void> {
  const [{ createApp, createMcpServer }, { LineStdioTransport }] = await Promise.all([
    import('./mcp/server.js'),
    import('./transport/stdio-transport.js'),
  ]);
  const app = await createApp(config, warn, await startObserver(config, false));
  const server = createMcpServer(app);
  // Refuses oversized and invalid messages with a JSON-RPC error and keeps reading.
  const transport = new LineStdioTransport({ log: warn });
  // While serving, a stdout error is the transport's to report (not `report | head`'s quiet exit).
  process.stdout.removeAllListeners('error');

  let stopping = false;
  // Closing the connection aborts every in-flight request's signal: each run kills its
  // model process (SIGTERM, then SIGKILL after the grace) and is logged as cancelled.
  const stop = shutdownOnce(app, () => server.close().catch(() => {}));
  // The services (state store, run log, run service, orphan sweep) start after the `initialize`
  // reply, which needs none of them: when the client confirms it (`notifications/initialized`), at
  // the latest STARTED_BY_MS after connecting, or at the first call or shutdown if sooner.
  const startServices = startServicesOnce(app);
  const exitAfter =
    (why: string, code: number, finishJobs = false) =>
    () => {
      stopping = true; // set before server.close(), whose onclose runs synchronously
      // A state that cannot be used still stops the start with its one line.
      void startServices()
        .then(() => stop(why, finishJobs))
        .finally(() => process.exit(code));
    };
  process.stdin.on('end', exitAfter('stdin closed', 0, true));
  process.stdin.on('close', exitAfter('stdin closed', 0, true));
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, exitAfter(signal, 0));
  // Any other close (stdin or stdout failed) must not end the server silently.
  server.onclose = () => {
    if (stopping) return;
    warn(`the stdio connection closed unexpectedly: ${transport.closeError?.message ?? 'no reason given'}; exiting`);
    exitAfter('connection lost', 1)();
  };

  const announceReady = announceOnce(config);
  // A person at a terminal gets the banner at once; a pipe's one line waits for the services, so a
  // state that cannot be used stops the start with only its own line.
  if (process.stdin.isTTY) announceReady();
  const ready = () => void startServices().then(announceReady);
  server.oninitialized = () => setImmediate(ready);
  setTimeout(ready, STARTED_BY_MS).unref();
  await server.connect(transport);
}

/** Once the services started: say on stderr (stdout is the protocol) that it serves, and where the data goes. */
function announceOnce(config: Config): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const telemetry = `${config.telemetryDir} (${config.telemetryDirReason})`;
    if (!process.stdin.isTTY) {
      // One line: a person who ran it in a pipe, or an MCP client's log, sees that it started.
      process.stderr.write(
        `${SERVER_NAME} ${SERVER_VERSION}: waiting for an MCP client on stdin/stdout. Telemetry: ${telemetry}\n`,
      );
      return;
    }
    process.stderr.write(
      [
        `${SERVER_NAME} ${SERVER_VERSION} is running on stdio.`,
        `Telemetry: ${telemetry}; set OLLAMA_MCP_TELEMETRY_DIR to keep it elsewhere.`,
        'It is meant to be launched by an MCP client, which talks to it over stdin/stdout. To connect one:',
        `  claude mcp add ollama-runner -- node ${process.argv[1] ?? 'dist/cli.js'}`,
        'See README.md for Claude Desktop and the settings. Press Ctrl+C to stop.',
        '',
      ].join('\n'),
    );
  };
}

// `report | head` closes the pipe early: that is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

main(process.argv.slice(2)).then(
  (code) => {
    // Set the code rather than exit: output still draining into a pipe would be cut off.
    if (code !== 0) process.exitCode = code;
  },
  (error: unknown) => {
    warn(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
