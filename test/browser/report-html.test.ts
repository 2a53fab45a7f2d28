/**
 * `report --html` in a real headless Chromium driven by playwright-core (which downloads no browser):
 * CHROMIUM_PATH, else the system's /usr/bin/chromium, else the headless Chromium that the dev
 * dependency @sparticuz/chromium ships (see chromium.ts), so a fresh clone runs these tests after
 * `npm install` with no browser installed and no network. The page is loaded from a file:// URL with
 * every other request aborted; the test fails if any is attempted.
 *
 * SKIP_BROWSER_TESTS=1 skips them, and so does a machine with no Chromium to drive (one line says
 * why). Leaves screenshots in test-artifacts/ (git-ignored): report.png, report-empty.png and
 * report-day.png.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runReportCommand } from '../../src/cli/report-command.js';
import { runsSummarySchema, type RunsSummary } from '../../src/report/summary-schema.js';
import { STATUS_COLORS } from '../../src/report/report-charts.js';
import { chooseChromium, findChromium, type ChromiumChoice } from './chromium.js';
import { DAY_FACTS, DAY_NOW, writeRealisticDay } from '../helpers/realistic-day.js';
import { tempDir } from '../helpers/temp-dir.js';

const ROOT = resolve(__dirname, '../..');
const FIXTURE_DIR = join(ROOT, 'test/fixtures/runs/html');
const ARTIFACTS = join(ROOT, 'test-artifacts');
const found = process.env.SKIP_BROWSER_TESTS === '1' ? null : findChromium();
if (found?.kind === 'none') process.stderr.write(`browser tests skipped: ${found.reason}\n`);
const SKIP = found === null || found.kind === 'none';

interface DrawnChart {
  series: number;
  points: number[];
  labels: string[] | null;
  series_labels: string[];
  marker_px?: { x: number; y: number }[];
}
/** Where the realistic day's screenshot goes (in this clone, not a path other users share; printed by the test). */
const DAY_SCREENSHOT = join(ARTIFACTS, 'report-day.png');

// tsconfig has no DOM lib: the callbacks given to page.evaluate run in Chromium, and these
// declarations (local to this file) type what they touch there.
interface CanvasLike {
  width: number;
  height: number;
  toDataURL(): string;
  getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
}
declare const window: { __reportReady?: boolean; __reportCharts: Record<string, DrawnChart>; __pwned?: unknown };
declare const document: {
  querySelector(selector: string): CanvasLike | null;
  getElementById(id: string): { textContent: string | null } | null;
  createElement(tag: 'canvas'): CanvasLike;
};

interface LoadedPage {
  page: Page;
  consoleErrors: string[];
  pageErrors: string[];
  /** Every request the page made (the file itself included). */
  requests: string[];
  /** Requests to anything but a file: URL, aborted. */
  blocked: string[];
}

let browser: ChromiumChoice | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
let work: string;

// One Chromium for both suites; one unpacked for this run only is removed after them.
beforeAll(async () => {
  if (!SKIP) browser = await chooseChromium();
}, 120_000); // the first run on a machine unpacks the bundled Chromium (about 190 MB)
afterAll(() => browser?.dispose());

async function report(
  argv: string[],
  telemetryDir = FIXTURE_DIR,
  now = new Date('2025-11-23T12:00:00.000Z'),
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runReportCommand(argv, {
    telemetryDir,
    now,
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
  });
  return { code, out, err };
}

/** Headless Chromium with a fresh profile in `profileDir`, offline (a page that fetches anything fails). */
async function launchOffline(profileDir: string, viewport: { width: number; height: number }): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: browser!.executablePath,
    headless: true,
    args: [...browser!.args],
    env: { ...process.env, ...browser!.env },
    viewport,
    offline: true,
  });
}

async function load(file: string, viewport?: { width: number; height: number }): Promise<LoadedPage> {
  const page = await context!.newPage();
  if (viewport !== undefined) await page.setViewportSize(viewport);
  const loaded: LoadedPage = { page, consoleErrors: [], pageErrors: [], requests: [], blocked: [] };
  page.on('console', (message) => {
    if (message.type() === 'error') loaded.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => loaded.pageErrors.push(error.message));
  page.on('request', (request) => loaded.requests.push(request.url()));
  await page.route('**', async (route) => {
    const url = route.request().url();
    if (url.startsWith('file:')) return route.continue();
    loaded.blocked.push(url);
    return route.abort('blockedbyclient');
  });
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  await page.waitForFunction(() => window.__reportReady === true, null, { timeout: 15_000 });
  return loaded;
}

/** Pixels of each canvas: how many are painted, and how many match each of the given colours. */
async function canvasPixels(
  page: Page,
  chart: string,
  colors: readonly string[],
): Promise<{ width: number; height: number; painted: number; byColor: number[]; blankEqual: boolean }> {
  return page.evaluate(
    ({ chart, colors }) => {
      const canvas = document.querySelector(`canvas[data-chart="${chart}"]`);
      if (canvas === null) throw new Error(`no canvas for ${chart}`);
      const { width, height } = canvas;
      const pixels = canvas.getContext('2d')!.getImageData(0, 0, width, height).data;
      const blank = document.createElement('canvas');
      blank.width = width;
      blank.height = height;
      const targets = colors.map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));
      const byColor = colors.map(() => 0);
      let painted = 0;
      for (let p = 0; p < pixels.length; p += 4) {
        if (pixels[p + 3]! === 0) continue;
        painted += 1;
        if (pixels[p + 3]! < 250) continue;
        targets.forEach((rgb, i) => {
          if (
            Math.abs(pixels[p]! - rgb[0]!) <= 2 &&
            Math.abs(pixels[p + 1]! - rgb[1]!) <= 2 &&
            Math.abs(pixels[p + 2]! - rgb[2]!) <= 2
          )
            byColor[i]! += 1;
        });
      }
      return { width, height, painted, byColor, blankEqual: canvas.toDataURL() === blank.toDataURL() };
    },
    { chart, colors },
  );
}

describe.skipIf(SKIP)('report --html in headless Chromium', () => {
  let fixture: LoadedPage;
  let summary: RunsSummary;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    work = tempDir('report-html-');
    profile = join(work, 'profile'); // a fresh --user-data-dir
    context = await launchOffline(profile, { width: 1280, height: 900 });

    const file = join(work, 'report.html');
    const result = await report(['--html', file]);
    expect(result).toEqual({ code: 0, out: `wrote ${file} (25 runs)\n`, err: '' });
    summary = runsSummarySchema.parse(JSON.parse((await report(['--json'])).out));
    fixture = await load(file);
    await fixture.page.screenshot({ path: join(ARTIFACTS, 'report.png'), fullPage: true });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  it('opens offline: no request but the file itself, no console or page error, no script from the log ran', async () => {
    expect(fixture.blocked).toEqual([]);
    expect(fixture.requests.filter((url) => !url.startsWith('file:'))).toEqual([]);
    expect(fixture.requests).toHaveLength(1);
    expect(fixture.consoleErrors).toEqual([]);
    expect(fixture.pageErrors).toEqual([]);
    expect(await fixture.page.evaluate(() => window.__pwned)).toBeUndefined();
  });

  it('shows the header: range, files, runs, skipped lines, filters', async () => {
    const facts = await fixture.page.$$eval('dl.facts div', (rows) =>
      rows.map((row) =>
        `${row.querySelector('dt')!.textContent} ${row.querySelector('dd')!.textContent}`.replace(/\s+/g, ' ').trim(),
      ),
    );
    expect(facts).toEqual([
      'Time range 2025-11-23 08:00:00 to 11:40:00 UTC (3h40m)',
      'Runs 25 (17 ok, 68.0%; 2 escalations; 3 models)',
      'Files read runs.jsonl',
      'Skipped lines 1 torn or unreadable',
      'Filters none',
    ]);
  });

  it('embeds the summary JSON unchanged, escaped so that the log cannot end the script element', async () => {
    const embedded = await fixture.page.evaluate(() => JSON.parse(document.getElementById('report-summary')!.textContent!));
    expect(embedded).toEqual(summary);
    const scripts = await fixture.page.$$eval('script', (elements) => elements.map((e) => e.getAttribute('type')));
    expect(scripts).toEqual(['application/json', 'application/json', null, null]); // the error text's <script> stayed text
  });

  it('draws the outcomes chart: one series per status present, one bar per model, in the status colours', async () => {
    const drawn = await fixture.page.evaluate(() => window.__reportCharts);
    expect(Object.keys(drawn).sort()).toEqual(['latency', 'outcomes', 'timeline']); // no usage in this v1 log: no token charts
    expect(drawn.outcomes).toEqual({
      series: 6,
      points: [3, 3, 3, 3, 3, 3],
      labels: ['qwen3:8b', 'llama3.2:latest', 'deepseek-r1:14b'],
      series_labels: ['ok', 'timeout', 'empty_output', 'crashed', 'circuit_open', 'invalid_input'],
    });
    const colors = drawn.outcomes!.series_labels.map((status) => STATUS_COLORS[status as keyof typeof STATUS_COLORS]);
    const pixels = await canvasPixels(fixture.page, 'outcomes', colors);
    expect(pixels.blankEqual).toBe(false);
    expect(pixels.painted).toBeGreaterThan(pixels.width * pixels.height * 0.05);
    for (const [i, count] of pixels.byColor.entries())
      expect(count, `pixels of ${drawn.outcomes!.series_labels[i]}`).toBeGreaterThan(50);
  });

  it('draws the latency histogram: one series per model over the 13 duration buckets', async () => {
    const drawn = await fixture.page.evaluate(() => window.__reportCharts);
    expect(drawn.latency).toEqual({
      series: 3,
      points: [13, 13, 13],
      labels: ['≤100ms', '≤250ms', '≤500ms', '≤1s', '≤2.5s', '≤5s', '≤10s', '≤30s', '≤1m', '≤2m', '≤5m', '≤10m', '>10m'],
      series_labels: ['qwen3:8b', 'llama3.2:latest', 'deepseek-r1:14b'],
    });
    const data = await fixture.page.evaluate(() =>
      JSON.parse(document.getElementById('report-charts')!.textContent!).latency.series.map((s: { data: number[] }) => s.data),
    );
    expect(data).toEqual([
      [1, 1, 1, 1, 2, 2, 0, 0, 0, 2, 0, 0, 0],
      [3, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 0, 0, 1],
    ]);
    const pixels = await canvasPixels(fixture.page, 'latency', ['#4e79a7', '#f28e2b', '#e15759']);
    expect(pixels.blankEqual).toBe(false);
    for (const count of pixels.byColor) expect(count).toBeGreaterThan(50);
    const table = await fixture.page.$$eval('#latency-table tbody tr', (rows) =>
      rows.map((r) => [...r.cells].map((c) => c.textContent)),
    );
    expect(table).toEqual([
      // answers only (p50 within 1%: 900 and 700 exactly): the two 2-minute timeouts of qwen3:8b are time lost, not its p95
      ['qwen3:8b', '8', '901ms', '4.00s', '4.00s', '5ms', '2', '4m00s'],
      ['llama3.2:latest', '5', '698ms', '6.00s', '6.00s', '5ms', '3', '180ms'],
      ['deepseek-r1:14b', '4', '45.1s', '11m40s', '11m40s', '5ms', '1', '15.0s'],
    ]);
  });

  it("draws the timeline: 45 five-minute buckets; the escalation at 10:04:30 shares the opening's marker", async () => {
    const drawn = await fixture.page.evaluate(() => window.__reportCharts);
    expect(drawn.timeline).toMatchObject({
      series: 4,
      points: [45, 45, 1, 1],
      labels: [],
      series_labels: ['ok runs', 'failed runs (any status but ok)', 'escalations', 'circuit opening (and escalations)'],
    });
    const pixels = await canvasPixels(fixture.page, 'timeline', ['#2e7d32', '#e57373', '#ffb300', '#4527a0']);
    expect(pixels.blankEqual).toBe(false);
    for (const count of pixels.byColor) expect(count).toBeGreaterThan(20);
  });

  it('lists the escalated tasks, most recent first, with the error text escaped', async () => {
    const rows = await fixture.page.$$eval('#escalated-table tbody tr', (trs) =>
      trs.map((r) => [...r.cells].map((c) => c.textContent)),
    );
    expect(rows).toEqual([
      [
        't-parse',
        'qwen3:8b',
        '2',
        'timeout',
        'max_retries_exceeded',
        'no answer within 120000 ms; killed </script><script>window.__pwned = 1</script> & <b>not bold</b>',
        '2025-11-23 10:40:00',
      ],
      [
        't-sum',
        'llama3.2:latest',
        '2',
        'circuit_open',
        'circuit_open',
        'circuit open for llama3.2:latest after 3 failures in a row; retry after 30 s',
        '2025-11-23 10:04:30',
      ],
    ]);
    expect(await fixture.page.$$eval('#escalated-table b, #escalated-table script', (e) => e.length)).toBe(0);
  });

  it('an empty log gives a clear "no runs" page with no chart and no error', async () => {
    const file = join(work, 'empty.html');
    const emptyDir = join(work, 'empty-dir'); // a telemetry dir with no log yet (a missing --dir is an error)
    await mkdir(emptyDir, { recursive: true });
    const result = await report(['--html', file, '--dir', emptyDir]);
    expect(result).toEqual({ code: 0, out: `wrote ${file} (0 runs)\n`, err: '' });
    const empty = await load(file);
    await empty.page.screenshot({ path: join(ARTIFACTS, 'report-empty.png'), fullPage: true });
    expect([empty.blocked, empty.consoleErrors, empty.pageErrors]).toEqual([[], [], []]);
    expect(await empty.page.locator('#no-runs').innerText()).toContain('No runs');
    expect(await empty.page.locator('canvas').count()).toBe(0);
    expect(await empty.page.evaluate(() => window.__reportCharts)).toEqual({});
    await empty.page.close();
  });

  it('writes a file of sane size: the library plus well under 1 MB', async () => {
    const html = await readFile(join(work, 'report.html'), 'utf8');
    expect(html.length).toBeLessThan(300_000 + 1_000_000);
  });
});

describe.skipIf(SKIP)('report --html of a realistic day, at 1400 px, in headless Chromium', () => {
  let page: LoadedPage;
  let dayDir: string;

  beforeAll(async () => {
    dayDir = tempDir('report-day-');
    writeRealisticDay(join(dayDir, 'logs'));
    profile = join(dayDir, 'profile');
    context = await launchOffline(profile, { width: 1400, height: 900 });
    const file = join(dayDir, 'day.html');
    const result = await report(['--html', file], join(dayDir, 'logs'), DAY_NOW);
    expect(result.code).toBe(0);
    page = await load(file, { width: 1400, height: 900 });
    await page.page.screenshot({ path: DAY_SCREENSHOT, fullPage: true });
    process.stdout.write(`screenshot of the realistic day's report: ${DAY_SCREENSHOT}\n`);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    context = undefined;
    if (dayDir !== undefined) await rm(dayDir, { recursive: true, force: true });
  });

  it('opens offline with no console error and no request but the file', () => {
    expect(page.blocked).toEqual([]);
    expect(page.requests).toHaveLength(1);
    expect(page.consoleErrors).toEqual([]);
    expect(page.pageErrors).toEqual([]);
  });

  it('puts "Needs attention now" first: the open circuit and the unresolved tasks, not the reset or answered ones', async () => {
    const ids = await page.page.$$eval('section.card', (cards) => cards.map((c) => c.id));
    expect(ids[0]).toBe('attention');
    const text = await page.page.locator('#attention').innerText();
    expect(text).toContain(`Circuit open: ${DAY_FACTS.openCircuit}`);
    expect(text).not.toContain('gemma3:4b'); // its circuit was reset by hand
    const tasks = await page.page.$$eval('#attention tbody tr', (rows) => rows.map((r) => r.cells[0]!.textContent));
    expect(tasks).toHaveLength(30); // 10 shown, 20 behind "more"
    expect(tasks).toContain(DAY_FACTS.openTask);
    expect(tasks).toContain(DAY_FACTS.blockedTask);
    expect(tasks).not.toContain(DAY_FACTS.resetTask);
    expect(tasks).not.toContain(DAY_FACTS.retriedTask);
  });

  it('groups the escalations into their three causes', async () => {
    const rows = await page.page.$$eval('#causes-table tbody tr', (trs) =>
      trs.map((r) => [r.cells[0]!.textContent, r.cells[2]!.textContent, r.cells[3]!.textContent, r.cells[4]!.textContent]),
    );
    expect(rows).toEqual(
      [DAY_FACTS.outage, DAY_FACTS.retries, DAY_FACTS.circuit].map((c) => [String(c.escalations), c.model, c.reason, c.status]),
    );
  });

  it('keeps the outcomes table inside its card: the circuit column is visible without scrolling', async () => {
    const box = await page.page.evaluate(() => {
      const doc = document as unknown as {
        querySelector(
          s: string,
        ): { getBoundingClientRect(): { left: number; right: number }; scrollWidth: number; clientWidth: number } | null;
        querySelectorAll(s: string): { getBoundingClientRect(): { left: number; right: number } }[];
      };
      const card = doc.querySelector('#outcomes')!.getBoundingClientRect();
      const table = doc.querySelector('#outcomes-table')!.getBoundingClientRect();
      const wrap = doc.querySelector('#outcomes .table-wrap')!;
      const heads = doc.querySelectorAll('#outcomes-table th');
      const last = heads[heads.length - 1]!.getBoundingClientRect();
      return { card, table, last, scroll: wrap.scrollWidth, client: wrap.clientWidth };
    });
    expect(box.table.right).toBeLessThanOrEqual(box.card.right);
    expect(box.last.right).toBeLessThanOrEqual(box.card.right);
    expect(box.scroll).toBeLessThanOrEqual(box.client);
    expect(await page.page.locator('#outcomes-table th').last().innerText()).toBe('circuit openings');
  });

  it('draws the token charts, one colour per model, the same colours as the latency chart', async () => {
    const drawn = await page.page.evaluate(() => window.__reportCharts);
    expect(Object.keys(drawn).sort()).toEqual(['latency', 'outcomes', 'prompt_tokens', 'timeline', 'tokens']);
    expect(drawn.tokens!.points).toEqual([5]);
    expect(drawn.prompt_tokens!.points).toEqual([5]);
    const charts = await page.page.evaluate(() => JSON.parse(document.getElementById('report-charts')!.textContent!));
    const latencyColors = Object.fromEntries(
      (charts.latency.series as { key: string; color: string }[]).map((series) => [series.key, series.color]),
    );
    (charts.tokens.labels as string[]).forEach((model, i) => expect(charts.tokens.colors[i]).toBe(latencyColors[model]));
    expect(new Set(charts.tokens.colors).size).toBe(5);
    const pixels = await canvasPixels(page.page, 'tokens', charts.tokens.colors);
    expect(pixels.blankEqual).toBe(false);
    for (const count of pixels.byColor) expect(count).toBeGreaterThan(50);
    const prompt = await canvasPixels(page.page, 'prompt_tokens', charts.tokens.colors);
    expect(prompt.blankEqual).toBe(false);
  });

  it('puts the timeline markers on one row, none overlapping another', async () => {
    const drawn = await page.page.evaluate(() => window.__reportCharts);
    const markers = drawn.timeline!.marker_px!;
    expect(markers.length).toBeGreaterThan(3);
    expect(new Set(markers.map((m) => Math.round(m.y))).size).toBe(1);
    const xs = markers.map((m) => m.x).sort((a, b) => a - b);
    const radius = 7;
    for (let i = 1; i < xs.length; i++) expect(xs[i]! - xs[i - 1]!).toBeGreaterThan(2 * radius);
  });
});
