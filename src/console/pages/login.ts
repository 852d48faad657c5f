/** The answer to a request without a valid token: a token form, and no data. */
import { html, type Html } from '../html.js';
import { csrfField, href, type PageContext } from './layout.js';

export function loginPageView(ctx: Pick<PageContext, 'base' | 'csrf'>, problem?: string): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · tool-receipts console</title></head>
<body><main>
<h1>tool-receipts console</h1>
<p>This console needs a token.</p>
${problem ? html`<div class="banner error" role="alert">${problem}</div>` : ''}
<form class="filters" method="post" action="${href(ctx, '/login')}">
${csrfField(ctx)}
<label>Token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
</main></body></html>
`;
}
