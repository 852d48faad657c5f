/**
 * HTML for the console's pages, written as template literals tagged with
 * {@link html}: every interpolated value goes through {@link escapeHtml},
 * the one escaping function, unless it is itself a fragment {@link html}
 * made. Nothing read from Redis (tenants, tools, arguments, results: text a
 * model wrote) can open a tag, close a script or leave an attribute.
 */

/** A fragment of markup {@link html} built, so it is not escaped again. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/**
 * `text` with `& < > " ' \`` written as entities: safe as element content and
 * inside a quoted attribute value. Control characters other than tab and
 * newline become U+FFFD, so none reaches the page.
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ENTITIES[c]!).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '\ufffd');
}

/** A value as markup: fragments as they are, arrays joined, `null`/`undefined`/`false` as nothing, anything else escaped. */
function markup(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(markup).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** The tag: literal parts as written, every interpolation through {@link escapeHtml} (see {@link markup}). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += markup(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}
