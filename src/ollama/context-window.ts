import { runCliCommand, withDeadline, type CliCommandRequest, type CliCommandResult } from './cli-command.js';
import { canonicalModelName } from './model-name.js';
import type { ContextEvidence } from '../policy/prompt-fit.js';

/**
 * The context window a model runs with, read through the CLI: `ollama ps` (v0.9.7+) has a `CONTEXT`
 * column, the size the loaded instance really has; `ollama show MODEL` gives the model's maximum
 * (`context length`) and a `num_ctx` its Modelfile sets. Layouts from cmd/cmd.go (ListRunningHandler,
 * showInfo): tablewriter, left aligned, cells padded with 4 spaces, no borders.
 */

/** What `ollama ps` says of one model. */
interface PsContext {
  /** false for a CLI before v0.9.7 (no `CONTEXT` column), or output that is not the table. */
  readonly hasColumn: boolean;
  /** The loaded model's context, or null when it is not loaded (or there is no column). */
  readonly context: number | null;
}

/** The CONTEXT of `model` in `ollama ps`'s table. Pure. */
export function parsePsContext(stdout: string, model: string): PsContext {
  const lines = stdout.split(/\r?\n/);
  const header = lines[0] ?? '';
  if (!/^NAME\s/.test(header)) return { hasColumn: false, context: null };
  const columns = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], at: m.index }));
  const index = columns.findIndex((c) => c.name === 'CONTEXT');
  if (index === -1 || index === columns.length - 1) return { hasColumn: false, context: null };
  const from = columns[index]!.at;
  const to = columns[index + 1]!.at;
  const nameEnd = columns[1]?.at ?? header.length;
  const wanted = canonicalModelName(model);
  for (const row of lines.slice(1)) {
    const name = row.slice(0, nameEnd).trim();
    if (name === '' || canonicalModelName(name) !== wanted) continue;
    const cell = row.slice(from, to).trim();
    return { hasColumn: true, context: /^\d+$/.test(cell) && Number(cell) > 0 ? Number(cell) : null };
  }
  return { hasColumn: true, context: null };
}

/** What `ollama show MODEL` says of its context. */
interface ShowContext {
  /** `context length` in the Model section: what the model was trained for. */
  readonly modelMax: number | null;
  /** `num_ctx` in the Parameters section (a Modelfile's `PARAMETER num_ctx`). */
  readonly numCtx: number | null;
}

/** The context figures of `ollama show MODEL`'s output. Pure. */
export function parseShowContext(stdout: string): ShowContext {
  const number = (pattern: RegExp): number | null => {
    const match = pattern.exec(stdout);
    return match ? Number(match[1]) : null;
  };
  // Rows start with the empty first cell's padding; `context length` only appears in the Model
  // section (the Projector's is `embedding length`), `num_ctx` only among the Parameters.
  return {
    modelMax: number(/^[ \t]+context length[ \t]+(\d+)[ \t]*$/m),
    numCtx: number(/^[ \t]+num_ctx[ \t]+(\d+)[ \t]*$/m),
  };
}

interface ContextLookupRequest {
  readonly bin: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly model: string;
  /** The whole lookup (ps, then show if needed) answers within this, or gives up. */
  readonly budgetMs: number;
}

/**
 * The context evidence for `model`: `ollama ps` first (one spawn when the model is loaded, as it
 * is right after a run); `ollama show` only when ps cannot tell. `null` when the CLI could not
 * answer within the budget (then nothing is known, and nothing is claimed). Never rejects.
 */
export async function lookupContextWindow(
  request: ContextLookupRequest,
  run: (request: CliCommandRequest) => Promise<CliCommandResult> = runCliCommand,
): Promise<ContextEvidence | null> {
  const deadline = performance.now() + request.budgetMs;
  const left = () => Math.floor(deadline - performance.now());
  const command = async (args: string[]): Promise<string | null> => {
    const budget = left();
    if (budget <= 0) return null;
    // Past the budget the answer is not awaited (the command's own timeout kills it later).
    const result = await withDeadline(run({ bin: request.bin, args, env: request.env, timeoutMs: budget }), budget, () => null);
    return result !== null && result.exitCode === 0 && result.spawnError === null ? result.stdout : null;
  };
  try {
    const ps = await command(['ps']);
    const loaded = ps === null ? null : parsePsContext(ps, request.model).context;
    if (loaded !== null) return { loaded, numCtx: null, modelMax: null };
    const show = await command(['show', request.model]);
    if (show === null) return ps === null ? null : { loaded: null, numCtx: null, modelMax: null };
    return { loaded: null, ...parseShowContext(show) };
  } catch {
    return null;
  }
}
