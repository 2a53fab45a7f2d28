import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_TIERS_JSON, parseTiersFile } from '../../src/model-tiers.js';

const ROOT = path.resolve(__dirname, '../..');
const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('README stays true to the code', () => {
  it('ships the tier example the code validates', () => {
    const section = readme.slice(readme.indexOf('## Per-model tiers'));
    const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBeDefined();
    expect(JSON.parse(block!)).toEqual(JSON.parse(EXAMPLE_TIERS_JSON));
    expect(() => parseTiersFile(JSON.parse(block!), 'README.md')).not.toThrow();
  });

  it('documents every environment variable the server reads', () => {
    const config = readFileSync(path.join(ROOT, 'src/config.ts'), 'utf8');
    const variables = new Set([...config.matchAll(/'((?:OLLAMA_MCP_|OLLAMA_)[A-Z_]+)'/g)].map((m) => m[1]!));
    expect(variables.size).toBeGreaterThan(15);
    for (const variable of variables) expect(readme, variable).toContain(`| \`${variable}\` |`);
  });

  it('documents every run status in the failure table', async () => {
    const { RUN_STATUSES } = await import('../../src/policy/run-status.js');
    for (const status of RUN_STATUSES) expect(readme, status).toContain(`| \`${status}\` |`);
  });
});
