/** What the `ollama run` CLI can honour, beyond the model and the prompt. */
export interface CliRunOptions {
  /** `json`, or a JSON schema object the answer must follow. */
  readonly format?: 'json' | Record<string, unknown>;
  /** `--think`: true/false, or an effort level for models that support it (CLI v0.9.0+). */
  readonly think?: boolean | 'high' | 'medium' | 'low';
  /** `--keepalive`: how long the model stays loaded after the run, as a Go duration (`5m`, `30s`). */
  readonly keepalive?: string;
}

/**
 * The argv for `ollama run`, never the prompt (it goes on stdin: argv is visible in `ps` and has a
 * length limit). `--nowordwrap`: else the CLI writes cursor escapes and changes the model's line
 * breaks; `--verbose`: its stderr stats become the result's `usage`. `--flag=value`, so a value can
 * never be read as a flag.
 */
export function buildRunArgs(model: string, options: CliRunOptions): string[] {
  const args = ['run', model, '--nowordwrap', '--verbose'];
  if (options.format !== undefined) {
    args.push(`--format=${typeof options.format === 'string' ? options.format : JSON.stringify(options.format)}`);
  }
  if (options.think !== undefined) args.push(`--think=${String(options.think)}`);
  if (options.keepalive !== undefined) args.push(`--keepalive=${options.keepalive}`);
  return args;
}
