import { stat, writeFile } from 'node:fs/promises';

import { loadChartLibrary } from '../report/chart-library.js';
import { isReportUsageError, parseSince, parseStatusFilter, ReportUsageError, type RunFilters } from '../report/filters.js';
import { listRunLogFiles } from '../telemetry/log-files.js';
import { renderReportHtml } from '../report/render-html.js';
import { renderReportText } from '../report/render-text.js';
import { summarizeRuns } from '../report/summary.js';
import type { RunsSummary } from '../report/summary-schema.js';

/** Where the command writes: `process.stdout` / `process.stderr`, or anything with `write`. */
interface TextSink {
  write(text: string): unknown;
}

interface ReportCommandDeps {
  /** The configured telemetry directory (`--dir` overrides it). */
  readonly telemetryDir: string;
  /** stdout: the report. */
  readonly out: TextSink;
  /** stderr: usage and read errors. */
  readonly err: TextSink;
  /** The time `--since 24h` counts back from. @default new Date() */
  readonly now?: Date;
}

export const REPORT_USAGE = `Usage: ollama-runner-mcp report [options]

Summarizes the run logs of the telemetry directory (runs.jsonl, then its rotated
runs-YYYY-MM-DD-NNN.jsonl files): what needs attention now (open circuits, escalated tasks not
reset), escalations by cause, per model the outcomes, latency of answers, time lost to failures
and tokens, and the fallback chains and busy retries.

Options:
  --since WHEN    only runs since WHEN: a duration back from now (30m, 24h, 7d; units s m h d w),
                  an ISO date or time (2025-11-22, 2025-11-22T10:00; UTC unless an offset is given),
                  or "all" (the default)
  --model NAME    only this model (llama3.2 also matches llama3.2:latest)
  --task ID       only this task_id
  --status LIST   only these statuses, comma-separated (timeout,crashed)
  --json          print the summary as one JSON document instead of the text report
  --html FILE     write the report as one self-contained HTML page with charts to FILE (opens
                  offline); prints "wrote FILE (N runs)"
  --color         colour the text report
  --dir DIR       read the logs in DIR instead of the telemetry directory (OLLAMA_MCP_TELEMETRY_DIR);
                  repeat it to review several at once (a team's servers): --dir a --dir b
  -h, --help      this text

The text report fits the width in COLUMNS when it is set (at least 60), else 100 columns.

Exit codes: 0 report printed (or written), 1 the logs could not be read (a --dir that does not
exist included) or FILE not written, 2 bad usage.
`;

type ParsedArgs = ReturnType<typeof parseArgs>;

const VALUE_OPTIONS = new Set(['--since', '--model', '--task', '--status', '--dir', '--html']);
const FLAG_OPTIONS = new Set(['--json', '--color', '--help', '-h']);

/** `ollama-runner-mcp report [options]` (REPORT_USAGE): the run logs' summary as text, JSON or an HTML page; the exit code. */
export async function runReportCommand(argv: readonly string[], deps: ReportCommandDeps): Promise<number> {
  const now = deps.now ?? new Date();
  let args: ParsedArgs;
  try {
    args = parseArgs(argv, now);
  } catch (error) {
    if (!isReportUsageError(error)) throw error;
    deps.err.write(`report: ${error.message}\nRun \`ollama-runner-mcp report --help\` for the options.\n`);
    return 2;
  }
  if (args.help) {
    deps.out.write(REPORT_USAGE);
    return 0;
  }
  let summary: RunsSummary;
  try {
    summary = await summarize(args, deps.telemetryDir, now);
  } catch (error) {
    if (!(error instanceof RunLogReadError)) throw error;
    deps.err.write(`report: ${error.message}\n`);
    return 1;
  }
  if (args.html === undefined) {
    // The terminal's width, when the shell says it.
    const columns = Number(process.env.COLUMNS?.trim() || NaN);
    const width = Number.isInteger(columns) && columns > 0 ? columns : undefined;
    deps.out.write(
      args.json
        ? `${JSON.stringify(summary, null, 2)}\n`
        : renderReportText(summary, { color: args.color, ...(width ? { width } : {}) }),
    );
    return 0;
  }
  const file = args.html;
  try {
    const html = renderReportHtml(summary, { chartLibrary: await loadChartLibrary() });
    await writeFile(file, html);
  } catch (error) {
    deps.err.write(`report: could not write the HTML report to ${file}: ${(error as Error).message}\n`);
    return 1;
  }
  deps.out.write(`wrote ${file} (${summary.total_runs.toLocaleString('en-US')} run${summary.total_runs === 1 ? '' : 's'})\n`);
  return 0;
}

/** The run logs asked for could not be read: a `--dir` that does not exist, permissions, a file given as a directory. */
class RunLogReadError extends Error {
  readonly kind = 'run_log_read_error';
}

/**
 * The summary of the directories asked for (`--dir`, else the telemetry directory). A `--dir` that
 * does not exist is an error; the telemetry directory may not exist yet (no run so far).
 * @throws RunLogReadError naming the directory
 */
async function summarize(args: ParsedArgs, telemetryDir: string, now: Date): Promise<RunsSummary> {
  const dirs = args.dirs.length > 0 ? args.dirs : [telemetryDir];
  const files: string[] = [];
  for (const dir of dirs) {
    // A typo must not read as a quiet day.
    if (args.dirs.length > 0 && !(await exists(dir))) throw new RunLogReadError(`no such directory: ${dir} (given with --dir)`);
    files.push(...(await withContext(dir, () => listRunLogFiles(dir))));
  }
  return withContext(dirs.join(', '), () => summarizeRuns(files, args.filters, { now, dirs }));
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new RunLogReadError(`could not read the run logs in ${path}: ${(error as Error).message}`, { cause: error });
  }
}

/** Runs `read`, its error said as "could not read the run logs in WHERE: ...". */
async function withContext<T>(where: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw new RunLogReadError(`could not read the run logs in ${where}: ${(error as Error).message}`, { cause: error });
  }
}

function parseArgs(argv: readonly string[], now: Date) {
  const values = new Map<string, string>();
  const dirs: string[] = [];
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (FLAG_OPTIONS.has(name)) {
      if (eq !== -1) throw new ReportUsageError(`${name} takes no value, got \`${arg}\``);
      flags.add(name === '-h' ? '--help' : name);
      continue;
    }
    if (!VALUE_OPTIONS.has(name)) {
      throw new ReportUsageError(arg.startsWith('-') ? `unknown option \`${arg}\`` : `unexpected argument \`${arg}\``);
    }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined || (eq === -1 && value.startsWith('--') && value.length > 2)) {
      throw new ReportUsageError(`${name} needs a value`);
    }
    if (value.trim() === '') throw new ReportUsageError(`${name} must not be empty`);
    if (name === '--dir') {
      if (!dirs.includes(value)) dirs.push(value); // repeated: several directories
      continue;
    }
    if (values.has(name)) throw new ReportUsageError(`${name} given more than once`);
    values.set(name, value);
  }

  const filters: { -readonly [K in keyof RunFilters]: RunFilters[K] } = {};
  const since = values.get('--since');
  if (since !== undefined && since.trim() !== 'all') filters.since = withOption('--since', () => parseSince(since, now));
  const status = values.get('--status');
  if (status !== undefined) filters.status = withOption('--status', () => parseStatusFilter(status));
  const model = values.get('--model');
  if (model !== undefined) filters.model = model.trim();
  const task = values.get('--task');
  if (task !== undefined) filters.task = task;
  if (values.has('--html')) {
    const other = ['--json', '--color'].filter((flag) => flags.has(flag));
    if (other.length > 0) throw new ReportUsageError(`--html cannot be combined with ${other.join(' or ')}`);
  }
  return {
    help: flags.has('--help'),
    json: flags.has('--json'),
    color: flags.has('--color'),
    dirs,
    html: values.get('--html'),
    filters,
  };
}

/** Re-labels a filter's error with the option's name (`since: ...` -> `--since: ...`). */
function withOption<T>(option: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (isReportUsageError(error)) throw new ReportUsageError(`${option}${error.message.slice(error.message.indexOf(':'))}`);
    throw error;
  }
}
