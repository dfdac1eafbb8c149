// edgewan NOC page: signs in with an API key (kept in sessionStorage), polls the SD-WAN API and
// draws sites, transports with sparklines, SLA status and recent events. No dependencies, no
// inline script (the page's Content-Security-Policy forbids it), no innerHTML with data.
'use strict';

(function () {
  const KEY = 'edgewan.noc.key';
  const params = new URLSearchParams(location.search);
  // Refresh period in seconds (?refresh=N, 1..300); 5 by default.
  const REFRESH_MS = Math.min(300, Math.max(1, Number(params.get('refresh')) || 5)) * 1000;
  const MAX_DETAILS = 24;   // sites drawn with transports and sparklines (worst first)
  const MAX_SITES = 1000;   // sites listed (5 pages of 200)
  const SEVERITY = { degraded: 0, offline: 1, up: 2, pending: 3, decommissioned: 4 };
  const SVGNS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);
  let timer = null;
  let generation = 0; // a refresh started before sign-out or a window change is discarded

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  class APIError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  async function api(path) {
    const key = sessionStorage.getItem(KEY);
    if (!key) throw new APIError(401, 'not signed in');
    const r = await fetch(path, { headers: { Authorization: 'Bearer ' + key, Accept: 'application/json' }, cache: 'no-store', credentials: 'omit' });
    if (!r.ok) {
      let msg = r.status + ' ' + r.statusText;
      try { const b = await r.json(); if (b && b.error) msg = b.error.message || b.error.code; } catch (_) { /* not JSON */ }
      throw new APIError(r.status, msg);
    }
    return r.json();
  }

  async function listAll(path, max) {
    let out = [], cursor = null;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const page = await api(path + (cursor ? sep + 'cursor=' + encodeURIComponent(cursor) : ''));
      out = out.concat(page.data || []);
      cursor = page.next_cursor;
    } while (cursor && out.length < max);
    return out.slice(0, max);
  }

  // ---- formatting -------------------------------------------------------------------------
  function fmtNum(v, unit) {
    if (v === null || v === undefined || Number.isNaN(v)) return '–';
    const d = v >= 100 ? 0 : v >= 10 ? 1 : 2;
    return v.toFixed(d) + unit;
  }
  function ago(ts) {
    if (!ts) return 'never';
    const s = Math.round((Date.now() - Date.parse(ts)) / 1000);
    if (s < 60) return Math.max(s, 0) + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    if (s < 86400) return Math.round(s / 3600) + ' h ago';
    return Math.round(s / 86400) + ' d ago';
  }
  function timeOf(ts) { return new Date(ts).toLocaleTimeString(); }
  function badge(status) { return el('span', { class: 'badge st-' + status }, status); }
  // A quarantined site is not evaluated by the controller (its stored state does not load).
  function quarantined(s) {
    if (!s.quarantine) return [];
    return [' ', el('span', { class: 'badge st-down', 'data-quarantine': s.quarantine.kind,
      title: s.quarantine.kind + ': ' + s.quarantine.reason }, 'quarantined')];
  }

  // ---- sparklines ---------------------------------------------------------------------------
  // sparkline draws points[field] as polylines, broken where a bucket had no samples.
  function sparkline(points, field, kind) {
    const w = 96, h = 24, pad = 2;
    const svg = document.createElementNS(SVGNS, 'svg');
    svg.setAttribute('class', 'spark spark-' + kind);
    svg.setAttribute('width', w); svg.setAttribute('height', h);
    svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
    svg.setAttribute('role', 'img');
    const vals = points.filter((p) => p.samples > 0).map((p) => p[field]);
    const title = document.createElementNS(SVGNS, 'title');
    title.textContent = kind + ': ' + (vals.length ? vals.map((v) => fmtNum(v, '')).join(', ') : 'no data');
    svg.append(title);
    if (!vals.length) return svg;
    const max = Math.max(...vals), min = Math.min(0, ...vals);
    const span = max - min || 1;
    const n = points.length;
    const x = (i) => n === 1 ? w / 2 : pad + (i * (w - 2 * pad)) / (n - 1);
    const y = (v) => h - pad - ((v - min) * (h - 2 * pad)) / span;
    let run = [];
    const flush = () => {
      if (!run.length) return;
      if (run.length === 1) run.push([run[0][0] + 1, run[0][1]]); // a lone bucket: a short dash
      const pl = document.createElementNS(SVGNS, 'polyline');
      pl.setAttribute('points', run.map((p) => p[0].toFixed(1) + ',' + p[1].toFixed(1)).join(' '));
      svg.append(pl);
      run = [];
    };
    points.forEach((p, i) => { if (p.samples > 0) run.push([x(i), y(p[field])]); else flush(); });
    flush();
    return svg;
  }

  // ---- rendering ----------------------------------------------------------------------------
  function renderSummary(sites) {
    const counts = { up: 0, degraded: 0, offline: 0, pending: 0 };
    for (const s of sites) if (s.status in counts) counts[s.status]++;
    const box = $('summary');
    box.replaceChildren(...Object.entries(counts).map(([k, n]) =>
      el('div', { class: 'tile', 'data-status': k }, el('span', { class: 'n st-' + k }, n), k)));
  }

  function renderSites(sites) {
    const tbody = $('sites').tBodies[0];
    tbody.replaceChildren(...sites.map((s) => el('tr', { 'data-site': s.id },
      el('td', {}, s.name), el('td', {}, badge(s.status), ...quarantined(s)), el('td', {}, s.role || ''),
      el('td', { class: 'dim' }, ago(s.last_seen)))));
    if (!sites.length) tbody.append(el('tr', {}, el('td', { colspan: 4, class: 'dim' }, 'No sites yet.')));
  }

  function metricCell(points, field, kind, value, unit) {
    return el('td', { class: 'metric' }, sparkline(points, field, kind), el('span', { class: 'v' }, fmtNum(value, unit)));
  }

  function renderCard(site, health, series) {
    const byName = {};
    for (const t of (series && series.transports) || []) byName[t.name] = t.points;
    const rows = (health.transports || []).map((t) => {
      const pts = byName[t.name] || [];
      return el('tr', { 'data-transport': t.name },
        el('td', {}, t.name), el('td', {}, badge(t.status)),
        metricCell(pts, 'latency_ms', 'latency', t.samples ? t.latency_ms : null, ' ms'),
        metricCell(pts, 'loss_pct', 'loss', t.samples ? t.loss_pct : null, ' %'),
        metricCell(pts, 'jitter_ms', 'jitter', t.samples ? t.jitter_ms : null, ' ms'));
    });
    const table = el('table', {},
      el('thead', {}, el('tr', {}, el('th', {}, 'Transport'), el('th', {}, 'Status'),
        el('th', {}, 'Latency'), el('th', {}, 'Loss'), el('th', {}, 'Jitter'))),
      el('tbody', {}, ...rows));
    const sla = el('div', { class: 'sla' }, ...(health.sla || []).map((c) =>
      el('span', { class: c.target_met ? 'met' : 'missed', 'data-class': c.class },
        c.class + ' → ' + (c.path || '–') + (c.target_met ? ' ✓ SLA met' : ' ✗ SLA missed'))));
    return el('div', { class: 'card', 'data-site': site.id },
      el('h3', {}, site.name + ' ', badge(health.status || site.status), ...quarantined(site)),
      table, sla);
  }

  function describe(ev, names) {
    const d = ev.data || {};
    const site = names[d.site] || d.site || '';
    switch (ev.type) {
      case 'path.switched': return site + ': ' + d.class + ' ' + d.from + ' → ' + d.to + ' (' + d.reason + (d.by ? ', by ' + d.by : '') + ')';
      case 'transport.down': return site + ': ' + d.transport + ' down' + (d.by ? ' (' + d.by + ')' : '');
      case 'transport.degraded': return site + ': ' + d.transport + ' degraded';
      case 'sla.breach': return site + ': SLA ' + d.class + ' breached on ' + d.transport + ' (' + d.reason + ')';
      case 'site.offline': return site + ': offline (' + (d.reason || 'silent') + ')';
      case 'device.status_changed': return site + ': device ' + d.device + ' ' + d.status;
      default: return site + ': ' + ev.type;
    }
  }

  function renderEvents(list, evs, names) {
    list.replaceChildren(...evs.map((ev) => el('li', { class: 'ev-' + ev.type.replace(/[._]/g, '-'), 'data-event': ev.type },
      el('span', { class: 't' }, timeOf(ev.created_at) + ' · ' + ev.type), el('br'), describe(ev, names))));
    if (!evs.length) list.append(el('li', { class: 'dim' }, 'None yet.'));
  }

  // ---- the loop -----------------------------------------------------------------------------
  async function refresh() {
    const gen = generation;
    const win = $('window').value;
    try {
      const sites = (await listAll('sd-wan/v1/sites?limit=200', MAX_SITES))
        .filter((s) => s.status !== 'decommissioned')
        .sort((a, b) => (SEVERITY[a.status] ?? 9) - (SEVERITY[b.status] ?? 9) || a.name.localeCompare(b.name));
      const names = Object.fromEntries(sites.map((s) => [s.id, s.name]));
      const detailed = sites.filter((s) => s.status !== 'pending').slice(0, MAX_DETAILS);
      const [cards, events, switches] = await Promise.all([
        Promise.all(detailed.map(async (s) => {
          const q = '?window=' + encodeURIComponent(win);
          const [h, se] = await Promise.all([api('sd-wan/v1/sites/' + s.id + '/health' + q), api('sd-wan/v1/sites/' + s.id + '/series' + q)]);
          return renderCard(s, h, se);
        })),
        api('sd-wan/v1/events?limit=30'),
        api('sd-wan/v1/events?type=path.switched&limit=15'),
      ]);
      if (gen !== generation) return;
      renderSummary(sites);
      renderSites(sites);
      $('details').replaceChildren(...cards);
      renderEvents($('events'), events.data, names);
      renderEvents($('switches'), switches.data, names);
      $('error').textContent = '';
      $('live').className = 'live ok';
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
    } catch (e) {
      if (gen !== generation) return;
      if (e.status === 401) { signOut('The API key was refused (revoked or expired). Sign in again.'); return; }
      $('live').className = 'live stale';
      $('error').textContent = e.status === 403 ? 'This key lacks the sdwan:read scope.' :
        e.status === 429 ? 'Rate limited; retrying.' : 'Update failed: ' + e.message;
    }
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(async () => { await refresh(); if (sessionStorage.getItem(KEY)) schedule(); }, REFRESH_MS);
  }

  function show(signedIn) {
    $('signin').hidden = signedIn;
    $('dash').hidden = !signedIn;
    $('conn').hidden = !signedIn;
  }

  async function start() {
    generation++;
    show(true);
    await refresh();
    if (sessionStorage.getItem(KEY)) schedule();
  }

  function signOut(msg) {
    generation++;
    clearTimeout(timer);
    sessionStorage.removeItem(KEY);
    show(false);
    $('signin-error').textContent = msg || '';
  }

  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = $('key').value.trim();
    $('key').value = '';
    sessionStorage.setItem(KEY, key);
    try {
      await api('sd-wan/v1/sites?limit=1'); // checks the key and its scope before showing anything
    } catch (e) {
      sessionStorage.removeItem(KEY);
      $('signin-error').textContent = e.status === 401 ? 'This key was refused.' :
        e.status === 403 ? 'This key lacks the sdwan:read scope.' : 'Sign-in failed: ' + e.message;
      return;
    }
    $('signin-error').textContent = '';
    start();
  });
  $('signout').addEventListener('click', () => signOut(''));
  $('window').addEventListener('change', () => { generation++; refresh(); schedule(); });

  if (sessionStorage.getItem(KEY)) start(); else show(false);
})();
