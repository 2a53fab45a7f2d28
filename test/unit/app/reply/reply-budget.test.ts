import { describe, expect, it } from 'vitest';
import {
  fitJsonBytes,
  jsonBytes,
  replyBudget,
  REPLY_ANSWER_BYTES,
  REPLY_TEXT_ANSWER_BYTES,
  TEXT_ANSWER_MAX_BYTES,
} from '../../../../src/app/reply/reply-budget.js';
import { prng } from '../../../helpers/seeded-random.js';

/** What the text costs inside a reply, measured the way a client receives it. */
const serialized = (text: string) => Buffer.byteLength(JSON.stringify(text), 'utf8') - 2;

describe('fitJsonBytes: a text cut to what it costs serialized', () => {
  it('keeps a text that fits whole', () => {
    expect(fitJsonBytes('hello', 5)).toEqual({ text: 'hello', bytes: 5, cut: false });
    expect(fitJsonBytes('', 0)).toEqual({ text: '', bytes: 0, cut: false });
  });

  it('counts a control character as its 6-byte escape, so 1 MiB of them cannot become 6 MiB in the reply', () => {
    const controls = '\u0001'.repeat(1000);
    const fitted = fitJsonBytes(controls, 600);
    expect(fitted.text).toHaveLength(100);
    expect(fitted.bytes).toBe(600);
    expect(fitted.cut).toBe(true);
    expect(serialized(fitted.text)).toBe(600);
  });

  it('counts quotes, backslashes and short escapes as 2 bytes, and UTF-8 by its length', () => {
    expect(fitJsonBytes('"\\\n\t', 100).bytes).toBe(8);
    expect(fitJsonBytes('é€', 100).bytes).toBe(5);
    expect(fitJsonBytes('ééé', 5).text).toBe('éé');
  });

  it('never splits a surrogate pair, and counts a lone surrogate as its escape', () => {
    expect(fitJsonBytes('a😀b', 4).text).toBe('a');
    expect(fitJsonBytes('a😀b', 5).text).toBe('a😀');
    const lone = 'x\ud800y';
    expect(fitJsonBytes(lone, 100).bytes).toBe(serialized(lone));
    expect(serialized(lone)).toBe(8);
  });

  it('agrees with JSON.stringify on random text: the cut fits, and one more character would not', () => {
    const random = prng(42);
    const alphabet = ['a', ' ', '"', '\\', '\n', '\u0000', '\u001f', 'é', '€', '😀', '\ud800', '\udc00', '\u2028'];
    for (let round = 0; round < 300; round += 1) {
      const text = Array.from({ length: Math.floor(random() * 60) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(
        '',
      );
      const budget = Math.floor(random() * 200);
      const fitted = fitJsonBytes(text, budget);
      expect(text.startsWith(fitted.text)).toBe(true);
      expect(fitted.bytes).toBe(serialized(fitted.text));
      expect(fitted.bytes).toBeLessThanOrEqual(budget);
      expect(fitted.cut).toBe(fitted.text.length < text.length);
      if (fitted.cut) {
        const oneMore = text.slice(0, fitted.text.length + (/[\ud800-\udbff]/.test(text[fitted.text.length]!) ? 2 : 1));
        expect(serialized(oneMore), JSON.stringify({ text, budget })).toBeGreaterThan(budget);
      }
    }
  });

  it('jsonBytes is the serialized size without the quotes', () => {
    expect(jsonBytes('a"b')).toBe(4);
  });
});

describe('replyBudget: one reply, shared by its results', () => {
  it('gives a single run the whole answer budget and a text copy of at most 64 KiB', () => {
    expect(replyBudget(1)).toEqual({ answerBytes: REPLY_ANSWER_BYTES, textBytes: TEXT_ANSWER_MAX_BYTES });
  });

  it('splits the reply evenly between the jobs of a batch, so 100 jobs fit as well as one', () => {
    const six = replyBudget(6);
    expect(six.answerBytes).toBe(Math.floor(REPLY_ANSWER_BYTES / 6));
    const hundred = replyBudget(100);
    expect(hundred.answerBytes * 100).toBeLessThanOrEqual(REPLY_ANSWER_BYTES);
    expect(hundred.textBytes * 100).toBeLessThanOrEqual(REPLY_TEXT_ANSWER_BYTES);
    // Answers and text together stay well under the 10 MiB a client accepts on one line.
    expect(REPLY_ANSWER_BYTES + REPLY_TEXT_ANSWER_BYTES).toBeLessThan(7 * 1024 * 1024);
  });
});
