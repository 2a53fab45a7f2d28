import { describe, expect, it } from 'vitest';
import { OUTCOME_POLICY } from '../../src/policy/outcome-policy.js';
import { RUN_STATUSES, type RunStatus } from '../../src/policy/run-status.js';
import { sectionOf } from '../helpers/markdown.js';

describe('docs/fallback-chains.md', () => {
  it("the 'when it moves on' table says what each status's fall-through rule does", () => {
    const section = sectionOf('docs/fallback-chains.md', '**When it moves on**', '**Time.**');
    const said = new Map<RunStatus, string>();
    for (const line of section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| ---'))) {
      const [who, answer] = line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim());
      for (const [, name] of who!.matchAll(/`([a-z_]+)`/g)) {
        if ((RUN_STATUSES as readonly string[]).includes(name!)) said.set(name as RunStatus, answer!);
      }
    }
    expect([...said.keys()].sort()).toEqual([...RUN_STATUSES].sort());
    const expected = { always: /^yes/, if_time_left: /^only with `deadline_ms`/, never: /^no$/ };
    for (const status of RUN_STATUSES) expect(said.get(status), status).toMatch(expected[OUTCOME_POLICY[status].fallthrough]);
  });
});
