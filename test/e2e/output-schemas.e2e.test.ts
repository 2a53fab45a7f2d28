/**
 * The output schemas of tools/list, as clients other than the TS SDK read them: portable (no `type`
 * array, which the MCP Inspector's schema-portability check flags as `type-union`: a client that
 * reads `type` as one string rejects the tool or drops the constraint), and what the tools return
 * validates against them with Python's `jsonschema`, as the Python SDK checks `structuredContent`.
 */
import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from './harness.js';

/** Why Python's jsonschema cannot be used here, or null. */
function pythonProblem(): string | null {
  try {
    execFileSync('python3', ['-c', 'import jsonschema'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'python3 with the jsonschema package is missing (pip install jsonschema)';
  }
}
const NO_PYTHON = pythonProblem();
if (NO_PYTHON !== null) process.stderr.write(`output schemas checked with Python skipped: ${NO_PYTHON}\n`);

/** The Python SDK's check of a result: `jsonschema.validate(structuredContent, outputSchema)`. */
const VALIDATE = `
import json, sys
from jsonschema import validate, ValidationError
failed = []
for case in json.load(sys.stdin):
    try:
        validate(case["instance"], case["schema"])
    except ValidationError as error:
        failed.append(case["name"] + ": " + error.message)
print(json.dumps(failed))
`;

/** Every place of `node` where `type` is an array, as a path. */
function typeArrays(node: unknown, at = '$'): string[] {
  if (Array.isArray(node)) return node.flatMap((item, i) => typeArrays(item, `${at}[${i}]`));
  if (typeof node !== 'object' || node === null) return [];
  const here = Array.isArray((node as { type?: unknown }).type) ? [at] : [];
  return [...here, ...Object.entries(node).flatMap(([key, value]) => typeArrays(value, `${at}.${key}`))];
}

describe('output schemas in tools/list', () => {
  const server = useServer({ OLLAMA_MCP_RUNS_SUMMARY_TOOL: '1', OLLAMA_MCP_BREAKER_THRESHOLD: '100' });
  let schemas = new Map<string, unknown>();
  beforeAll(async () => {
    // The SDK client then checks each result against its outputSchema too (with ajv).
    const { tools } = await server.client.listTools();
    schemas = new Map(tools.map((tool) => [tool.name, tool.outputSchema]));
  });

  it('spell a nullable field as anyOf with a null branch, never as a type array', () => {
    expect(schemas.size).toBe(7);
    for (const [name, schema] of schemas) expect(typeArrays(schema), name).toEqual([]);
    const run = schemas.get('ollama_run') as { properties: { metadata: { properties: Record<string, unknown> } } };
    expect(run.properties.metadata.properties.task_id).toEqual({ anyOf: [{ type: 'string' }, { type: 'null' }] });
  });

  it.skipIf(NO_PYTHON !== null)('every result validates against its schema with Python jsonschema', async () => {
    const calls: [string, Record<string, unknown>][] = [
      ['ollama_run', { model: 'llama3.2', prompt: 'hi', task_id: 'schema-ok' }],
      ['ollama_run', { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'schema-fail', max_retries: 0 }],
      ['ollama_run', { model: 'llama3.2', prompt: 'hi', task_id: 'schema-detailed', response_format: 'detailed' }],
      ['ollama_run', { model: 'no-such-model:1b', prompt: 'x' }],
      [
        'ollama_run_many',
        {
          jobs: [
            { model: 'llama3.2', prompt: 'a' },
            { model: 'llama3.2', prompt: 'b @fake:exit=1' },
          ],
        },
      ],
      ['ollama_run_many', { jobs: [{ model: 'llama3.2', prompt: 'a' }], response_format: 'detailed' }],
      ['ollama_health', {}],
      ['ollama_health', { response_format: 'detailed' }],
      ['ollama_task_status', { task_id: 'schema-fail' }],
      ['ollama_task_status', { task_id: 'never-seen' }],
      ['ollama_reset', { task_id: 'schema-fail' }],
      ['ollama_runs_summary', { since: 'all' }],
      ['ollama_runs_summary', { since: 'all', response_format: 'detailed' }],
    ];
    const cases = [];
    for (const [name, args] of calls) {
      const result = await server.client.callTool({ name, arguments: args });
      expect(result.structuredContent, name).toBeDefined();
      cases.push({ name: `${name} ${JSON.stringify(args)}`, schema: schemas.get(name), instance: result.structuredContent });
    }
    // One case that must fail: the check is not vacuous.
    cases.push({ name: 'a result without ok', schema: schemas.get('ollama_run'), instance: { status: 'ok' } });
    const out = execFileSync('python3', ['-c', VALIDATE], { input: JSON.stringify(cases), encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual(["a result without ok: 'ok' is a required property"]);
  });
});
