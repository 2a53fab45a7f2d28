// The README's table of each tool, held against what the built server lists in `tools/list`: every
// argument, marked required exactly when it is, and no other; every result field it names is one the
// tool's outputSchema has.
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { sectionOf } from '../helpers/markdown.js';
import { useServer } from './harness.js';

interface ToolTable {
  readonly arguments: string[];
  readonly required: string[];
  readonly results: string[];
}

/** The names in a cell: every `code` span before any parenthesis. */
function namesIn(cell: string): string[] {
  return [...cell.replace(/\(.*$/, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

/** The README's table for `tool`: its argument rows, then its result rows (those that start with →). */
function readmeTable(tool: string): ToolTable {
  const rows = sectionOf('README.md', `### \`${tool}\``)
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| ---') && !line.startsWith('| argument'))
    .map((line) => line.slice(2, line.indexOf(' | ')));
  const argumentRows = rows.filter((cell) => !cell.startsWith('→'));
  return {
    arguments: argumentRows.flatMap(namesIn).sort(),
    required: argumentRows
      .filter((cell) => cell.includes('(required)'))
      .flatMap(namesIn)
      .sort(),
    results: rows.filter((cell) => cell.startsWith('→')).flatMap(namesIn),
  };
}

function propertiesOf(schema: Tool['inputSchema'] | Tool['outputSchema']): string[] {
  return Object.keys(schema?.properties ?? {}).sort();
}

describe("the README's tool tables", () => {
  const server = useServer({ OLLAMA_MCP_RUNS_SUMMARY_TOOL: '1' });
  let tools: Tool[] = [];
  beforeAll(async () => {
    tools = (await server.client.listTools()).tools;
  });

  it('has one table for every tool the server lists, and none for another', () => {
    const headings = [...sectionOf('README.md', '## The tools').matchAll(/^### `([a-z_]+)`$/gm)].map((m) => m[1]!);
    expect(headings.sort()).toEqual(tools.map((tool) => tool.name).sort());
  });

  it.each(['ollama_run', 'ollama_run_many', 'ollama_health', 'ollama_task_status', 'ollama_reset', 'ollama_runs_summary'])(
    '%s: the arguments it takes, the required ones marked, and fields its result has',
    (name) => {
      const tool = tools.find((t) => t.name === name)!;
      const table = readmeTable(name);
      expect(table.arguments, 'arguments').toEqual(propertiesOf(tool.inputSchema));
      expect(table.required, 'required arguments').toEqual([...(tool.inputSchema.required ?? [])].sort());
      expect(table.results.length, 'result rows').toBeGreaterThan(0);
      expect(propertiesOf(tool.outputSchema), 'result fields').toEqual(expect.arrayContaining(table.results));
    },
  );
});
