// The floor for `report` (issue 9): a bare Node loop that only reads runs.jsonl line by line and
// JSON.parses every line, nothing else. Reads 1 MiB chunks and splits on '\n' itself (faster than
// node:readline), so the only thing left to beat is JSON.parse. Prints the number of lines parsed.
// Usage: node bench/jsonparse-floor.mjs FILE
import { createReadStream } from 'node:fs';

let lines = 0;
let objects = 0;
let carry = '';
const stream = createReadStream(process.argv[2], { encoding: 'utf8', highWaterMark: 1 << 20 });
for await (const chunk of stream) {
  const text = carry + chunk;
  let start = 0;
  let end;
  while ((end = text.indexOf('\n', start)) !== -1) {
    if (end > start) {
      const value = JSON.parse(text.slice(start, end));
      lines += 1;
      if (typeof value === 'object') objects += 1; // the parsed value is used, so nothing can skip the parse
    }
    start = end + 1;
  }
  carry = text.slice(start);
}
if (carry.trim()) {
  JSON.parse(carry);
  lines += 1;
  objects += 1;
}
process.stdout.write(`${JSON.stringify({ lines, objects })}\n`);
