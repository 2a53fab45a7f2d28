/**
 * HTML built by construction: `html\`<td>${text}</td>\`` escapes every value unless it is already
 * {@link Html} (the result of another `html` template, or `trustedHtml` for our own constants), so
 * text from the log can never become markup by a forgotten call.
 */
export class Html {
  constructor(readonly value: string) {}
}

/** A value a template may hold: text (escaped), numbers, Html, lists of those, or nothing. */
type HtmlValue = string | number | Html | null | undefined | false | readonly HtmlValue[];

export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new Html(out);
}

/** Markup written by this program (a stylesheet, a script), inserted as it is. */
export function trustedHtml(markup: string): Html {
  return new Html(markup);
}

/** The parts, each escaped unless Html, between separators. */
export function joinHtml(parts: readonly HtmlValue[], separator: string): Html {
  return new Html(parts.map(render).join(separator));
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.value;
  if (value === null || value === undefined || value === false) return '';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return escapeHtml(value);
  return (value as readonly HtmlValue[]).map(render).join('');
}

/** Text for an HTML element or a double- or single-quoted attribute; control characters become `?`. */
export function escapeHtml(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g, '?')
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * JSON for a `<script type="application/json">` element: `<`, `>` and `&` (and U+2028/2029) are
 * written as `\u` escapes, so no text from the log (`</script>`, `<!--`) can end the element early,
 * and `JSON.parse(element.textContent)` gives the value back unchanged.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One per line. */
export function lines(parts: readonly Html[]): Html {
  return joinHtml(parts, '\n');
}

/** A small square of a model's or status's colour. */
export function swatch(color: string): Html {
  return html`<span class="swatch" style="background:${color}"></span>`;
}

/** Header cells of text columns. */
export function th(...names: string[]): Html[] {
  return names.map((name) => html`<th>${name}</th>`);
}

/** Header cells of columns of figures (aligned right). */
export function thFigures(...names: string[]): Html[] {
  return names.map((name) => html`<th class="n">${name}</th>`);
}

/** An empty cell's dash. */
export const NONE = html`<span class="zero">-</span>`;

/** A table in its scrolling wrapper. */
export function table(id: string, head: readonly Html[], rows: readonly (readonly Html[])[]): Html {
  return html`<div class="table-wrap"><table id="${id}"><thead><tr>${head}</tr></thead><tbody>
${lines(rows.map((cells) => html`<tr>${cells}</tr>`))}
</tbody></table></div>`;
}
