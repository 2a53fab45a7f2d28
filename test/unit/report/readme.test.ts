import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  escalatedTaskSchema,
  modelSummarySchema,
  runsSummarySchema,
  timelineSchema,
} from '../../../src/report/summary-schema.js';

const readme = readFileSync(resolve(__dirname, '../../../src/report/README.md'), 'utf8');

describe('src/report/README.md', () => {
  it('documents every field of the summary', () => {
    const fields = [
      ...Object.keys(runsSummarySchema.shape).filter((key) => key !== 'timeline'),
      ...Object.keys(modelSummarySchema.shape).map((key) => `models[].${key}`),
      ...Object.keys(escalatedTaskSchema.shape).map((key) => `escalated_tasks[].${key}`),
      ...Object.keys(timelineSchema.shape).map((key) => `timeline.${key}`),
    ];
    for (const field of fields) expect(readme, field).toContain(`| \`${field}\` |`);
  });

  it('shows the --html option in the usage line', () => {
    expect(readme).toContain('[--json | --html FILE | --color]');
  });
});
