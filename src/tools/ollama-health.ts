import * as z from 'zod';
import type { HealthDeps } from '../health/collect-health.js';
import { healthReportSchema, type HealthReport } from '../health/health-report-schema.js';
import type { AnyToolDefinition, ToolOutcome } from '../mcp/tool-registry.js';

export const ollamaHealthInputSchema = z.strictObject({});

/** `ollama_health`: a read-only check of everything `ollama_run` needs. It never starts a model. */
/** `deps`: what the check reads, built on the first call (see App.services). */
export function ollamaHealthTool(deps: () => Promise<HealthDeps>): AnyToolDefinition {
  return {
    name: 'ollama_health',
    title: 'Check Ollama and the models',
    description: [
      'Check, without running a model, whether Ollama and the models are usable: the ollama CLI and its version,',
      "whether the Ollama server answers, which models are installed, each model's circuit breaker",
      '(an open circuit refuses runs for retry_after_seconds), the run queue, and whether the telemetry dir is writable.',
      'Call it before delegating work, or when ollama_run keeps failing with ollama_unreachable, cli_not_found or model_not_found.',
      'The call itself succeeds (isError false) even when something is broken: read `ok`, and `problems`, where each problem says how to fix it.',
      'Takes no arguments; answers within about 10 s.',
    ].join(' '),
    inputSchema: ollamaHealthInputSchema,
    outputSchema: healthReportSchema,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle() {
      return present(await check(), false);
    },
    async onInvalidInput(problem) {
      const report = await check();
      const callProblem = `this call was invalid and its arguments were ignored (ollama_health takes no arguments): ${problem}`;
      return present({ ...report, problems: [callProblem, ...report.problems] }, true);
    },
  };

  async function check(): Promise<HealthReport> {
    // Loaded on the first call: the check (CLI probes, the state backend) is no part of the start-up.
    const { collectHealth } = await import('../health/collect-health.js');
    return collectHealth(await deps());
  }
}

async function present(report: HealthReport, isError: boolean): Promise<ToolOutcome<HealthReport>> {
  // Loaded with the check, on the first call.
  const { renderHealth } = await import('../health/render-health.js');
  return { structured: report, text: renderHealth(report), isError };
}
