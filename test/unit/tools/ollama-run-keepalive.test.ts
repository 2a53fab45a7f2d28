import { describe, expect, it } from 'vitest';
import { describeIssues } from '../../../src/mcp/tool-registry.js';
import { ollamaRunJobSchema } from '../../../src/tools/ollama-run.js';

/** The `keepalive` argument checked as `ollama_run` checks it: the one-line problem, or null when it is taken. */
function keepaliveProblem(keepalive: string): string | null {
  const args = { model: 'llama3.2', prompt: 'x', keepalive };
  const parsed = ollamaRunJobSchema.safeParse(args);
  return parsed.success ? null : describeIssues(parsed.error, args);
}

describe('keepalive: what Go time.ParseDuration takes, as `ollama run --keepalive` reads it', () => {
  it.each([
    ['0', 'unload at once'],
    ['-0', 'a signed zero'],
    ['.5s', 'a fraction without its integer part'],
    ['1.s', 'an integer part with an empty fraction'],
    ['+5s', 'an explicit plus sign'],
    ['5µs', 'micro as U+00B5'],
    ['5μs', 'micro as U+03BC'],
    ['5us', 'micro in ASCII'],
    ['250ms', 'milliseconds'],
    ['1h30m', 'several units'],
    ['1.5h', 'a fraction of an hour'],
    ['-1m', 'negative: keep it loaded'],
    ['10m', 'the usual'],
  ])('takes %j (%s)', (value) => {
    expect(keepaliveProblem(value)).toBeNull();
  });

  it.each([
    ['10', 'no unit'],
    ['5x', 'an unknown unit'],
    ['soon', 'not a number'],
    ['', 'empty'],
    ['.s', 'a dot without digits'],
    ['5', 'a bare number other than 0'],
    ['5 m', 'a space inside'],
    [' 5m', 'a leading space'],
    ['+-5s', 'two signs'],
    ['5M', 'units are case-sensitive'],
    ['1d', 'days are no Go unit'],
  ])('refuses %j (%s), quoting it and saying what is accepted', (value) => {
    const problem = keepaliveProblem(value);
    expect(problem).toContain('`keepalive`: must be a duration such as "5m", "1h30m" or ".5s"');
    expect(problem).toContain('"0" to unload the model at once');
    expect(problem).toContain(`, got ${JSON.stringify(value)}`);
  });

  it('still bounds the length before parsing', () => {
    expect(keepaliveProblem(`${'1'.repeat(40)}h`)).toContain('must be at most 32 characters');
  });
});
