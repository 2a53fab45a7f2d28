import * as z from 'zod';
import type { HealthDeps } from '../health/collect-health.js';
import { healthReportSchema, type HealthReport } from '../health/health-report-schema.js';
import type { ResponseFormat } from '../app/reply/run-reply.js';
import type { AnyToolDefinition, ToolOutcome } from './tool-definition.js';
import { RESPONSE_FORMAT_FIELD, requestedFormat } from './shared-fields.js';

export const ollamaHealthInputSchema = z.strictObject({ response_format: RESPONSE_FORMAT_FIELD });

/**
 * The concise report holds what the agent picks a model by: whether anything is broken (each
 * problem with its fix), the warnings (an open circuit among them), the installed models and the
 * ones Ollama has loaded; `detailed` is the whole report. The schema validates both.
 */
const healthReplySchema = healthReportSchema
  .partial()
  .required({ ok: true })
  .extend({
    models: z.object({ installed: z.array(z.string()), loaded: z.array(z.string()).optional() }).optional(),
  });

type HealthReply = z.infer<typeof healthReplySchema>;

function toHealthReply(report: HealthReport, format: ResponseFormat): HealthReply {
  if (format === 'detailed') return report;
  const loaded = report.runs.loaded_models;
  return {
    ok: report.ok,
    ...(report.problems.length > 0 ? { problems: report.problems } : {}),
    ...(report.warnings.length > 0 ? { warnings: report.warnings } : {}),
    models: { installed: report.models.installed, ...(loaded.length > 0 ? { loaded } : {}) },
    ...(report.hosts !== undefined && report.hosts.length > 1 ? { hosts: report.hosts } : {}),
  };
}

/** `ollama_health`: a read-only check of everything `ollama_run` needs, never starting a model. `deps` are built on the first call (see App.services). */
export function ollamaHealthTool(deps: () => Promise<HealthDeps>): AnyToolDefinition {
  return {
    name: 'ollama_health',
    title: 'Check Ollama and the models',
    description: [
      'Check, without running a model, whether Ollama works: installed and loaded models, models refusing runs.',
      'Call it before delegating; read `ok` and `problems` (each says its fix).',
    ].join(' '),
    inputSchema: ollamaHealthInputSchema,
    outputSchema: healthReplySchema,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle(input: z.output<typeof ollamaHealthInputSchema>) {
      return present(await check(), input.response_format ?? 'concise', false);
    },
    async onInvalidInput(problem, rawArguments) {
      const report = await check();
      const callProblem = `this call was invalid and its arguments were ignored (ollama_health takes only response_format): ${problem}`;
      return present({ ...report, problems: [callProblem, ...report.problems] }, requestedFormat(rawArguments), true);
    },
  };

  async function check(): Promise<HealthReport> {
    // Loaded on the first call: the check (CLI probes, the state backend) is no part of the start-up.
    const { collectHealth } = await import('../health/collect-health.js');
    return collectHealth(await deps());
  }
}

/**
 * Load the check's modules now (the server does once its services start): Node keeps a module whose
 * files could not be opened (EMFILE) failed for good, and the check must work while a server is short
 * of descriptors, the moment it is most needed.
 */
export async function preloadHealthCheck(): Promise<void> {
  await Promise.all([import('../health/collect-health.js'), import('../health/render-health.js')]).catch(() => {});
}

async function present(report: HealthReport, format: ResponseFormat, isError: boolean): Promise<ToolOutcome<HealthReply>> {
  // Loaded with the check, on the first call.
  const { renderHealth } = await import('../health/render-health.js');
  return { structured: toHealthReply(report, format), text: renderHealth(report), isError };
}
