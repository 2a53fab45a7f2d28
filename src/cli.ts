#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { isConfigError, loadConfig, type Config } from './config.js';
import { createApp, createMcpServer, SERVER_NAME, SERVER_VERSION } from './server.js';

const HELP = `${SERVER_NAME} ${SERVER_VERSION}: an MCP server (stdio) that runs local Ollama models safely.

Usage:
  ${SERVER_NAME}            start the server on stdin/stdout (an MCP client launches this)
  ${SERVER_NAME} --help     this text
  ${SERVER_NAME} --version  the version

Configuration is read from the environment (OLLAMA_BIN, OLLAMA_HOST, OLLAMA_MCP_*); see the README.
Logs go to stderr; stdout carries only the MCP protocol.`;

function warn(message: string): void {
  process.stderr.write(`${SERVER_NAME}: ${message}\n`);
}

async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stderr.write(`${HELP}\n`);
    return 0;
  }
  if (argv.includes('--version') || argv.includes('-v')) {
    process.stderr.write(`${SERVER_VERSION}\n`);
    return 0;
  }
  if (argv.length > 0) {
    warn(`unknown argument \`${argv[0]}\`. Run \`${SERVER_NAME} --help\`.`);
    return 2;
  }

  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (isConfigError(error)) {
      warn(`configuration error: ${error.message}`);
      return 2;
    }
    throw error;
  }
  try {
    await serveStdio(config);
  } catch (error) {
    if (isConfigError(error)) {
      warn(`configuration error: ${error.message}`);
      return 2;
    }
    throw error;
  }
  return 0;
}

async function serveStdio(config: Config): Promise<void> {
  const app = await createApp(config, warn);
  const server = createMcpServer(app);
  const transport = new StdioServerTransport();

  let closing: Promise<void> | null = null;
  const shutdown = (why: string): Promise<void> => {
    closing ??= (async () => {
      if (app.runs.inFlight > 0) warn(`${why}: stopping ${app.runs.inFlight} run(s) and exiting`);
      // Closing the connection aborts every in-flight request's signal: each run kills its
      // model process (SIGTERM, then SIGKILL after the grace) and is logged as cancelled.
      await server.close().catch(() => {});
      app.runs.abortAll();
      await app.runs.drain();
      await app.log.idle();
    })();
    return closing;
  };
  const exitAfter = (why: string, code: number) => () => {
    void shutdown(why).finally(() => process.exit(code));
  };
  process.stdin.on('end', exitAfter('stdin closed', 0));
  process.stdin.on('close', exitAfter('stdin closed', 0));
  process.on('SIGTERM', exitAfter('SIGTERM', 0));
  process.on('SIGINT', exitAfter('SIGINT', 0));
  process.on('SIGHUP', exitAfter('SIGHUP', 0));

  await server.connect(transport);
  if (process.stdin.isTTY) {
    process.stderr.write(
      [
        `${SERVER_NAME} ${SERVER_VERSION} is running on stdio (telemetry: ${config.telemetryDir}).`,
        'It is meant to be launched by an MCP client, which talks to it over stdin/stdout. To connect one:',
        `  claude mcp add ollama-runner -- node ${process.argv[1] ?? 'dist/cli.js'}`,
        'See README.md for Claude Desktop and the settings. Press Ctrl+C to stop.',
        '',
      ].join('\n'),
    );
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (error: unknown) => {
    warn(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
