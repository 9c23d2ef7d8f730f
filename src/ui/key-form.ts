import { html } from 'hono/html';
import type { AuthMode } from '../types.js';
import type { Html } from './layout.js';

/**
 * The form that asks for a key. It is kept in this tab only (sessionStorage), never in a cookie or the
 * URL, and sent as `Authorization: Bearer` by the dashboard's script.
 */
export function keyForm(mode: AuthMode, heading: 'h1' | 'h2' = 'h1'): Html {
  return html`${heading === 'h1' ? html`<h1>Connect</h1>` : html`<h2>Scope</h2>`}
<p>${mode === 'keys' ? 'This server needs an API key. It stays in this browser tab only and is sent with each request.' : 'Choose the scope this tab shows.'}</p>
<noscript><p class="notice error">The dashboard needs JavaScript to send a key.</p></noscript>
<form id="key-form" class="stack" autocomplete="off">
${mode === 'keys' ? html`<label>API key<input name="key" type="password" required autocomplete="off" spellcheck="false"></label>` : html`<label>User<input name="user" placeholder="default"></label>`}
<label>Agent (needed when the key is not bound to one)<input name="agent" placeholder="default"></label>
<div><button type="submit">${mode === 'keys' ? 'Use this key' : 'Use this scope'}</button></div>
</form>`;
}
