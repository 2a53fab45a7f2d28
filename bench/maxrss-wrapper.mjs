// Last-resort peak-RSS meter (no /usr/bin/time -v, no /proc): `node maxrss-wrapper.mjs SCRIPT ARGS...`
// runs SCRIPT in this process, as `node SCRIPT ARGS...` would, and writes `maxrss_kb=N` to stderr at exit.
import { writeSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [script, ...args] = process.argv.slice(2);
process.argv = [process.argv[0], path.resolve(script), ...args];
process.on('exit', () => writeSync(2, `maxrss_kb=${process.resourceUsage().maxRSS}\n`));
await import(pathToFileURL(path.resolve(script)).href);
