import { readJsonLines, type JsonLinesSummary, type JsonObject, type SkippedLine } from './read-json-lines.js';

/** Drains readJsonLines into arrays, keeping the generator's summary. */
export async function readAll(
  filePath: string,
): Promise<{ records: JsonObject[]; skipped: SkippedLine[]; summary: JsonLinesSummary }> {
  const records: JsonObject[] = [];
  const skipped: SkippedLine[] = [];
  const lines = readJsonLines(filePath, { onSkip: (s) => skipped.push(s) });
  for (;;) {
    const step = await lines.next();
    if (step.done === true) return { records, skipped, summary: step.value };
    records.push(step.value);
  }
}
