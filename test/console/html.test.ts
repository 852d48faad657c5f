/** The console's one escaping function and the template tag every page is written with. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeHtml, html } from '../../src/console/html.js';

/** What an HTML parser makes of escaped text: the entities escapeHtml writes, decoded. */
const decode = (text: string) =>
  text.replace(
    /&(amp|lt|gt|quot|#39|#96);/g,
    (_, name: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#96': '`' })[name]!,
  );
const visible = (text: string) => text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '\ufffd');

describe('escapeHtml', () => {
  it('leaves no character that can open a tag, end an attribute or start an entity of its own', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const escaped = escapeHtml(text);
        expect(escaped).not.toMatch(/[<>"'`]/);
        expect(escaped.replace(/&(amp|lt|gt|quot|#39|#96);/g, '')).not.toContain('&');
      }),
    );
  });

  it('reads back as the text itself, control characters aside', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(decode(escapeHtml(text))).toBe(visible(text));
      }),
    );
  });

  it('escapes the classic payloads', () => {
    expect(escapeHtml('<img src=x onerror=alert(1)>')).toBe('&lt;img src=x onerror=alert(1)&gt;');
    expect(escapeHtml('</script><script>alert(1)</script>')).toBe('&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(escapeHtml(`" onmouseover='x'`)).toBe('&quot; onmouseover=&#39;x&#39;');
  });
});

describe('html', () => {
  it('escapes every interpolation except fragments it made, and drops null, undefined and false', () => {
    const tenant = '<b>acme</b>';
    const inner = html`<em>${tenant}</em>`;
    expect(html`<p title="${tenant}">${inner}${null}${undefined}${false}${0}</p>`.text).toBe(
      '<p title="&lt;b&gt;acme&lt;/b&gt;"><em>&lt;b&gt;acme&lt;/b&gt;</em>0</p>',
    );
    expect(html`<ul>${['<a>', html`<li>ok</li>`]}</ul>`.text).toBe('<ul>&lt;a&gt;<li>ok</li></ul>');
  });

  it('cannot be fooled by an object posing as a fragment', () => {
    const fake = { text: '<script>alert(1)</script>', toString: () => '<script>alert(1)</script>' };
    expect(html`${fake}`.text).toBe('&lt;script&gt;alert(1)&lt;/script&gt;');
  });
});
