import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The minified UMD build that chart.js 4 (the version in package.json) ships. */
const UMD_FILE = 'chart.umd.min.js';

/**
 * The source of Chart.js's UMD build from the installed `chart.js` package, to inline in the HTML
 * report (which must open with no network). Its package exports no path to that file, so it is
 * found beside the package's resolved main file (`dist/chart.cjs`). The `sourceMappingURL` comment
 * is dropped (the map is not inlined, and a browser's developer tools would try to fetch it).
 *
 * @throws Error naming the package when it is not installed or has no UMD build
 */
export async function loadChartLibrary(): Promise<string> {
  let main: string;
  try {
    main = createRequire(import.meta.url).resolve('chart.js');
  } catch (error) {
    throw new Error(`the chart library (npm package chart.js) is not installed: ${(error as Error).message}`);
  }
  const dist = dirname(main);
  let source: string;
  try {
    source = await readFile(join(dist, UMD_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    throw new Error(`the chart library (npm package chart.js) has no UMD build in ${dist} (looked for ${UMD_FILE})`);
  }
  return source.replace(/\n?\/\/# sourceMappingURL=\S*\s*$/, '\n');
}
