/**
 * Why JSON.parse refused a text, and where: `invalid JSON at line 3 column 5 (position 41): <reason>`.
 * V8 gives the position in most messages; `findJsonError` finds it for the others.
 */
export function describeJsonError(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const reported = /\bat position (\d+)/.exec(message);
  const position = reported ? Number(reported[1]) : findJsonError(text);
  // V8 quotes (part of) the file in some messages: keep only the reason.
  const reason = message
    .replace(/, ".*" is not valid JSON$/s, '')
    .replace(/ in JSON at position \d+.*$/s, '')
    .replace(/ at position \d+.*$/s, '');
  const where = position === null ? '' : ` at ${lineColumn(text, position)}`;
  return `invalid JSON${where}: ${reason}`;
}

function lineColumn(text: string, position: number): string {
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return `line ${line} column ${column} (position ${position})`;
}

/** Offset of the first JSON syntax error, for parser messages that do not give one; null if none is found. */
export function findJsonError(text: string): number | null {
  let i = 0;
  const fail = (): never => {
    throw new JsonSyntaxAt(i);
  };
  const space = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const string = (): void => {
    i++; // opening quote
    for (;;) {
      const c = text[i];
      if (c === undefined || c < ' ') fail();
      if (c === '"') {
        i++;
        return;
      }
      if (c === '\\') {
        i++;
        const e = text[i];
        if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
        else if (e === 'u') {
          i++;
          for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] ?? '')) fail();
        } else fail();
      } else i++;
    }
  };
  const value = (): void => {
    space();
    const c = text[i];
    if (c === '{') {
      i++;
      space();
      if (text[i] === '}') return void i++;
      for (;;) {
        space();
        if (text[i] !== '"') fail();
        string();
        space();
        if (text[i] !== ':') fail();
        i++;
        value();
        space();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail();
      }
    }
    if (c === '[') {
      i++;
      space();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        space();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail();
      }
    }
    if (c === '"') return string();
    for (const word of ['true', 'false', 'null']) {
      if (c === word[0]) {
        for (const expected of word) {
          if (text[i] !== expected) fail();
          i++;
        }
        return;
      }
    }
    const number = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    number.lastIndex = i;
    if (!number.test(text)) fail();
    i = number.lastIndex;
  };
  try {
    value();
    space();
    if (i < text.length) fail();
    return null;
  } catch (error) {
    if (error instanceof JsonSyntaxAt) return error.position;
    return null; // e.g. nesting too deep for the stack: no position rather than a wrong one
  }
}

class JsonSyntaxAt {
  constructor(readonly position: number) {}
}
