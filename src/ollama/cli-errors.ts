import { stripTerminalControls } from './clean-output.js';
import type { StartFailure } from './start-process.js';
import { isVerboseStatsLine } from './verbose-stats.js';

// How the ollama CLI reports failures, read the same way by `ollama run` (classify-outcome.ts)
// and the short commands (`ollama list`, `ollama -v`: cli-command.ts).

/** Spawn errors of a machine short of resources right now, which pass by themselves, in words. */
const RESOURCE_WORDS: Readonly<Record<string, string>> = {
  EMFILE: 'this server has too many open files',
  ENFILE: 'the system has too many open files',
  EAGAIN: "too many processes (a process limit, or a container's pids limit)",
  ENOMEM: 'not enough memory',
};

/** Did the spawn fail because the machine is short of resources now (not because the CLI is missing)? */
export function isResourceSpawnError(code: string | null): boolean {
  return code !== null && Object.hasOwn(RESOURCE_WORDS, code);
}

/** Spawn errors that say the CLI itself cannot be executed: missing, not executable, not a program. */
const NOT_EXECUTABLE_CODES: ReadonlySet<string> = new Set(['ENOENT', 'EACCES', 'ENOEXEC', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG']);

/** Does the spawn error say the CLI cannot be executed at all (so someone must install or fix it)? */
export function cannotExecute(code: string | null): boolean {
  return code !== null && NOT_EXECUTABLE_CODES.has(code);
}

/** A result's `spawnError` (the message) and `spawnErrorCode`, both null when the CLI was started. */
export function spawnErrorOf(bin: string, failure: StartFailure | null) {
  if (failure === null) return { spawnError: null, spawnErrorCode: null };
  return { spawnError: spawnErrorMessage(bin, failure), spawnErrorCode: failure.code };
}

/** The message of a CLI that could not be started at all, from the spawn error's code. */
function spawnErrorMessage(bin: string, { code, message }: StartFailure): string {
  if (code !== null && isResourceSpawnError(code)) {
    return `the server's machine could not start \`${bin}\` just now (${code}: ${RESOURCE_WORDS[code]}); this passes by itself`;
  }
  switch (code) {
    case 'ENOENT':
      return `cannot run \`${bin}\`: not found (install Ollama, or set OLLAMA_BIN to the CLI's path)`;
    case 'EACCES':
      return `cannot run \`${bin}\`: permission denied (is it executable?)`;
    case 'ENOEXEC':
      return `cannot run \`${bin}\`: not an executable this machine can run (a script without a #! line, or another platform's binary)`;
    default:
      return `cannot run \`${bin}\`: ${code ?? message}`;
  }
}

/**
 * The server cannot be reached: the CLI's own wording (every version, `ollama -v`'s warning
 * included), a refused connection, or the raw Go error of a remote OLLAMA_HOST that fails
 * (`Head "http://gpu-box:11434/": dial tcp: lookup gpu-box on 127.0.0.53:53: no such host`).
 */
const UNREACHABLE =
  /could not connect to (?:ollama|a running ollama)|connection refused|timed out waiting for server to start|could not locate ollama app|upgrade in progress|(?:Head|Post|Get) "https?:\/\/[^"]*": dial tcp|(?:Head|Post|Get) "https?:\/\/[^"]*": .*(?:no route to host|no such host|i\/o timeout|connection timed out|network is unreachable|connection reset)/i;

export function isUnreachableMessage(text: string): boolean {
  return UNREACHABLE.test(text);
}

/** Braille spinner frames the CLI draws on stderr. */
const SPINNER_FRAMES = /[\u2800-\u28ff]/g;

/** stderr's lines without control characters, spinner frames, blanks or `--verbose` stats; a lone `\r` ends a line. */
function readableLines(raw: string): string[] {
  return stripTerminalControls(raw.replace(/\r(?!\n)/g, '\n'))
    .replace(SPINNER_FRAMES, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !isVerboseStatsLine(line));
}

/**
 * The CLI's error from its stderr: the last `Error: <message>` with the lines after it (a cloud hint
 * follows some), else the last readable line; `null` when stderr says nothing readable.
 */
export function errorFromStderr(raw: string): string | null {
  const lines = readableLines(raw);
  const at = lines.findLastIndex((line) => line.startsWith('Error: '));
  if (at !== -1) return [lines[at]!.slice('Error: '.length), ...lines.slice(at + 1)].join('\n');
  return lines.at(-1) ?? null;
}

/**
 * What the CLI said about a file it tried to attach for a multimodal model (`Couldn't process file:
 * "invalid file type: text/plain; charset=utf-8"`), or `null`. Printed on stderr just before the error.
 */
export function fileProblemFromStderr(raw: string): string | null {
  const marker = "Couldn't process file: ";
  const line = readableLines(raw).findLast((l) => l.includes(marker));
  if (line === undefined) return null;
  const quoted = line.slice(line.indexOf(marker) + marker.length);
  try {
    const text: unknown = JSON.parse(quoted);
    return typeof text === 'string' ? text : quoted;
  } catch {
    return quoted;
  }
}

/** The first line of the CLI's error (see `errorFromStderr`): a one-line reason for a status sentence. */
export function lastErrorLine(text: string): string | null {
  return errorFromStderr(text)?.split('\n', 1)[0] ?? null;
}
