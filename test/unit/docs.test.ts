import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTiersFile } from '../../src/config/model-tiers.js';
import { EXAMPLE_TIERS_JSON } from '../helpers/tiers-example.js';
import { ROOT, sectionOf } from '../helpers/markdown.js';

const CONFIGURATION = 'docs/configuration.md';
const RESULT = 'docs/result-and-escalation.md';

/** The rows of the markdown tables in `text` whose first cell is code, by that cell's text. */
function rowsByFirstCell(text: string): Map<string, string[]> {
  return new Map(
    text
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .map((line) => {
        const cells = line
          .slice(1, -1)
          .split(' | ')
          .map((cell) => cell.trim());
        return [cells[0]!.replaceAll('`', ''), cells] as const;
      }),
  );
}

describe('the docs stay true to the code', () => {
  it('ships the tier example the code validates', () => {
    const section = sectionOf(CONFIGURATION, '## Per-model tiers');
    const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBeDefined();
    expect(JSON.parse(block!)).toEqual(JSON.parse(EXAMPLE_TIERS_JSON));
    expect(() => parseTiersFile(JSON.parse(block!), CONFIGURATION)).not.toThrow();
  });

  it('documents every environment variable the server reads', () => {
    const config = readFileSync(path.join(ROOT, 'src/config/config.ts'), 'utf8');
    const variables = new Set([...config.matchAll(/'((?:OLLAMA_MCP_|OLLAMA_)[A-Z_]+)'/g)].map((m) => m[1]!));
    expect(variables.size).toBeGreaterThan(15);
    const table = rowsByFirstCell(sectionOf(CONFIGURATION, '## Environment variables'));
    for (const variable of variables) expect([...table.keys()], variable).toContain(variable);
  });

  it('the failure table says what OUTCOME_POLICY does, status by status', async () => {
    const { RUN_STATUSES } = await import('../../src/policy/run-status.js');
    const { OUTCOME_POLICY } = await import('../../src/policy/outcome-policy.js');
    const rows = rowsByFirstCell(sectionOf(RESULT, '## Outcomes: the failure table'));
    rows.delete('status');
    expect([...rows.keys()].sort()).toEqual([...RUN_STATUSES].sort());
    for (const status of RUN_STATUSES) {
      const [, , circuit, taskFailure, retryable, escalates] = rows.get(status)!;
      const policy = OUTCOME_POLICY[status];
      expect(circuit, `${status}: circuit`).toMatch({ success: /^success/, failure: /^yes/, neutral: /^no/ }[policy.breaker]);
      expect(taskFailure, `${status}: task failure`).toMatch(policy.countsAsTaskFailure ? /^yes/ : /^no/);
      if (!policy.ok) expect(retryable, `${status}: retryable`).toMatch(policy.retryable ? /^(yes|after)/ : /^no/);
      if (policy.escalateAtOnce) expect(escalates, `${status}: escalates`).toBe(`\`${policy.escalateAtOnce}\``);
      else expect(escalates, `${status}: escalates`).toMatch(/^(no|repeats)/);
    }
  });

  it('the escalation table lists every escalation reason, and nothing else', async () => {
    const { ESCALATION_REASONS } = await import('../../src/policy/run-status.js');
    const rows = rowsByFirstCell(sectionOf(RESULT, '## Escalation: the Floor Manager protocol'));
    rows.delete('escalation_reason');
    expect([...rows.keys()].sort()).toEqual([...ESCALATION_REASONS].sort());
  });
});
