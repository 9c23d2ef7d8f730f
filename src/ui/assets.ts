/**
 * The dashboard's stylesheet and script, shipped inside the package (no CDN, no build step): served at
 * `/ui/assets/app.css` and `/ui/assets/app.js` under a strict Content-Security-Policy.
 */

export const APP_CSS = `
:root { --fg: #1b1f24; --muted: #57606a; --bg: #ffffff; --panel: #f6f8fa; --line: #d0d7de; --accent: #0550ae; --bad: #a40e26; --ok: #116329; --warn: #7d4e00; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible { outline: 3px solid #0969da; outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--bg); padding: 6px 10px; }
.skip:focus { left: 8px; z-index: 10; }
header.top { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 10px 20px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.top .brand { font-weight: 700; font-size: 18px; color: var(--fg); text-decoration: none; margin-right: 8px; }
nav.views ul { display: flex; flex-wrap: wrap; gap: 4px 14px; list-style: none; margin: 0; padding: 0; }
nav.views a[aria-current="page"] { font-weight: 700; color: var(--fg); }
.who { margin-left: auto; color: var(--muted); font-size: 13px; display: flex; gap: 8px; align-items: center; }
main { padding: 16px 20px 40px; max-width: 1200px; }
h1 { font-size: 22px; margin: 4px 0 12px; }
h2 { font-size: 17px; margin: 22px 0 8px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; font-size: 14px; }
th, td { text-align: left; vertical-align: top; padding: 5px 8px; border-bottom: 1px solid var(--line); }
th { background: var(--panel); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: var(--panel); border: 1px solid var(--line); padding: 10px; overflow: auto; white-space: pre-wrap; word-break: break-word; font-size: 13px; max-height: 520px; }
code { font-size: 13px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 10px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; background: var(--bg); }
.card h2 { margin: 0 0 6px; font-size: 15px; }
.card dl { margin: 0; display: grid; grid-template-columns: auto auto; gap: 2px 10px; }
.card dt { color: var(--muted); }
.card dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
form.inline { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: flex-end; margin: 8px 0 14px; }
form.stack { display: grid; gap: 8px; max-width: 640px; margin: 8px 0 14px; }
label { display: flex; flex-direction: column; gap: 2px; font-size: 13px; color: var(--muted); }
label.check { flex-direction: row; align-items: center; gap: 6px; }
input, select, textarea { font: inherit; color: var(--fg); padding: 5px 7px; border: 1px solid #8c959f; border-radius: 4px; background: var(--bg); }
textarea { min-height: 64px; }
button { font: inherit; padding: 5px 12px; border: 1px solid #8c959f; border-radius: 4px; background: var(--panel); color: var(--fg); cursor: pointer; }
button.danger { color: var(--bad); border-color: var(--bad); }
.badge { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 12px; border: 1px solid var(--line); background: var(--panel); }
.badge.ok { color: var(--ok); border-color: var(--ok); }
.badge.bad { color: var(--bad); border-color: var(--bad); }
.badge.warn { color: var(--warn); border-color: var(--warn); }
.muted { color: var(--muted); }
.pager { display: flex; gap: 16px; margin: 8px 0; }
.notice { padding: 8px 12px; border: 1px solid var(--line); border-left: 4px solid var(--accent); background: var(--panel); margin: 8px 0; }
.notice.error { border-left-color: var(--bad); }
[role="status"]:empty { display: none; }
details { margin: 6px 0; }
`;

export const APP_JS = `
(() => {
  'use strict';
  const store = window.sessionStorage;
  const main = () => document.getElementById('main');
  const creds = () => ({ key: store.getItem('cairn.key') || '', user: store.getItem('cairn.user') || '', agent: store.getItem('cairn.agent') || '' });

  function headers(extra) {
    const c = creds();
    const h = Object.assign({}, extra);
    if (c.key) h['authorization'] = 'Bearer ' + c.key;
    if (c.user) h['x-cairn-user-id'] = c.user;
    if (c.agent) h['x-cairn-agent-id'] = c.agent;
    return h;
  }

  function announce(text, isError) {
    const region = document.getElementById('flash');
    if (!region) return;
    region.textContent = text;
    region.className = isError ? 'notice error' : 'notice';
  }

  async function errorText(res) {
    try {
      const body = await res.json();
      return (body && body.error && body.error.message) || res.statusText;
    } catch {
      return res.status + ' ' + res.statusText;
    }
  }

  async function load(url, push) {
    const res = await fetch(url, { headers: headers({ 'x-cairn-ui': 'fragment' }), credentials: 'omit' });
    const type = res.headers.get('content-type') || '';
    if (!type.includes('text/html')) {
      const message = await errorText(res);
      if (res.status === 401 && creds().key) {
        store.removeItem('cairn.key');
        await load(url, push);
        announce(message, true);
        return;
      }
      announce(message, true);
      return;
    }
    main().innerHTML = await res.text();
    document.title = decodeURIComponent(res.headers.get('x-cairn-title') || 'Cairn');
    if (push) history.pushState({}, '', url);
    markCurrent(new URL(url, location.href).pathname);
    showWho();
    const heading = main().querySelector('h1');
    if (heading) { heading.setAttribute('tabindex', '-1'); heading.focus(); }
  }

  function markCurrent(path) {
    for (const a of document.querySelectorAll('nav.views a')) {
      const href = a.getAttribute('href');
      const current = href === '/ui' ? path === '/ui' : path === href || path.startsWith(href + '/');
      if (current) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
  }

  function showWho() {
    const who = document.getElementById('who');
    if (!who) return;
    const c = creds();
    const parts = [];
    if (c.key) parts.push('key ' + c.key.slice(0, 22) + '…');
    if (c.user) parts.push('user ' + c.user);
    if (c.agent) parts.push('agent ' + c.agent);
    who.textContent = parts.join(' · ');
    const forget = document.getElementById('forget');
    if (forget) forget.hidden = parts.length === 0;
  }

  function setPath(target, path, value) {
    const parts = path.split('.');
    let at = target;
    parts.forEach((part, i) => {
      const last = i === parts.length - 1;
      const nextIsIndex = !last && /^\\d+$/.test(parts[i + 1]);
      if (last) at[part] = value;
      else at = at[part] = at[part] || (nextIsIndex ? [] : {});
    });
  }

  function jsonOf(form) {
    const body = {};
    for (const el of form.elements) {
      if (!el.name || el.disabled) continue;
      if (el.type === 'checkbox') { setPath(body, el.name, el.checked); continue; }
      if (el.value === '' && !el.hasAttribute('data-keep-empty')) continue;
      setPath(body, el.name, el.type === 'number' ? Number(el.value) : el.value);
    }
    return body;
  }

  async function mutate(form) {
    const confirmText = form.getAttribute('data-confirm');
    if (confirmText && !window.confirm(confirmText)) return;
    announce('', false);
    const [method, path] = form.getAttribute('data-api').split(' ');
    const res = await fetch(path, {
      method,
      headers: headers({ 'content-type': 'application/json', 'x-cairn-ui': 'action' }),
      body: JSON.stringify(jsonOf(form)),
      credentials: 'omit',
    });
    if (!res.ok) { announce(await errorText(res), true); return; }
    const then = (form.getAttribute('data-then') || location.pathname + location.search).replace(/\\{(\\w+)\\}/g, (_, name) => encodeURIComponent(form.elements[name].value));
    await load(then, then !== location.pathname + location.search);
    announce(form.getAttribute('data-done') || 'Done.', false);
  }

  document.addEventListener('click', (event) => {
    const a = event.target.closest && event.target.closest('a[href]');
    if (!a || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !(url.pathname === '/ui' || url.pathname.startsWith('/ui/')) || url.pathname.startsWith('/ui/assets/')) return;
    event.preventDefault();
    announce('', false);
    load(url.pathname + url.search, true).catch((err) => announce(String(err), true));
  });

  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (form.id === 'key-form') {
      event.preventDefault();
      const data = new FormData(form);
      for (const name of ['key', 'user', 'agent']) {
        const value = String(data.get(name) || '').trim();
        if (value) store.setItem('cairn.' + name, value); else store.removeItem('cairn.' + name);
      }
      load(location.pathname + location.search, false).catch((err) => announce(String(err), true));
      return;
    }
    if (form.hasAttribute('data-api')) {
      event.preventDefault();
      mutate(form).catch((err) => announce(String(err), true));
      return;
    }
    if ((form.method || 'get').toLowerCase() === 'get') {
      event.preventDefault();
      const url = new URL(form.action, location.href);
      const query = new URLSearchParams();
      for (const [name, value] of new FormData(form)) if (String(value) !== '') query.append(name, String(value));
      url.search = query.toString();
      announce('', false);
      load(url.pathname + url.search, true).catch((err) => announce(String(err), true));
    }
  });

  window.addEventListener('popstate', () => { load(location.pathname + location.search, false).catch((err) => announce(String(err), true)); });

  document.addEventListener('DOMContentLoaded', () => {
    const forget = document.getElementById('forget');
    if (forget) forget.addEventListener('click', () => { store.clear(); location.reload(); });
    showWho();
    const c = creds();
    // A key or scope kept in this tab: fetch the view again with it (the first paint had neither).
    if (c.key || c.user || c.agent) load(location.pathname + location.search, false).catch((err) => announce(String(err), true));
  });
})();
`;
