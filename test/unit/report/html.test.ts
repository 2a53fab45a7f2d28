import { describe, expect, it } from 'vitest';
import { html, joinHtml, trustedHtml } from '../../../src/report/html.js';

describe('html`...`', () => {
  it('escapes every value that is not already Html, so log text never becomes markup', () => {
    const model = '<img src=x onerror=alert(1)>';
    const cell = html`<td title="${'a"b'}">${model}</td>`;
    expect(cell.value).toBe('<td title="a&quot;b">&lt;img src=x onerror=alert(1)&gt;</td>');
    expect(html`<tr>${cell}</tr>`.value).toBe(`<tr>${cell.value}</tr>`);
  });

  it('renders numbers, lists and nothing', () => {
    expect(html`${3}|${[html`<b>`, '&']}|${null}${undefined}${false}`.value).toBe('3|<b>&amp;|');
    expect(joinHtml([html`<i>x</i>`, '<y>'], '\n').value).toBe('<i>x</i>\n&lt;y&gt;');
  });

  it('inserts trusted markup as it is', () => {
    expect(html`<style>${trustedHtml('a > b {}')}</style>`.value).toBe('<style>a > b {}</style>');
  });
});
