// edgewan NOC page: signs in with an API key (kept in sessionStorage), pages through the sites
// with server-side search, filter and sort (GET /sd-wan/v1/overview), follows changes over
// server-sent events (GET /sd-wan/v1/stream, read with fetch so the key goes in a header),
// and draws the selected site's transports over time with uPlot (vendored, MIT), SLA
// thresholds and a timeline of switches and events, and a what-if of its policy's drafts.
// No inline script or style (the page's Content-Security-Policy forbids them), no innerHTML
// with data.
'use strict';

(function () {
  const KEY = 'edgewan.noc.key';
  const params = new URLSearchParams(location.search);
  const LIMIT = Math.min(200, Math.max(10, Number(params.get('limit')) || 50));
  // How often the selected site's charts are redrawn from the API (?refresh=N seconds, 1..300);
  // rows, tiles and events are live from the stream.
  const REFRESH_MS = Math.min(300, Math.max(1, Number(params.get('refresh')) || 15)) * 1000;
  const COLORS = ['#58a6ff', '#d2a8ff', '#3fb950', '#f0883e', '#ff7b72', '#a5d6ff'];

  const $ = (id) => document.getElementById(id);
  const state = { offset: 0, total: 0, rows: [], names: {}, selected: null, stream: null, charts: [], gen: 0, detailGen: 0, timer: null, first: true };
  // Figures for the browser test and for people: per live update, the main-thread time spent.
  const stats = window.nocStats = { updates: [], firstPage: null };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  class APIError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  function headers(extra) {
    const key = sessionStorage.getItem(KEY);
    if (!key) throw new APIError(401, 'not signed in');
    return Object.assign({ Authorization: 'Bearer ' + key, Accept: 'application/json' }, extra || {});
  }

  async function api(path, body) {
    const init = { headers: headers(body ? { 'Content-Type': 'application/json' } : null), cache: 'no-store', credentials: 'omit' };
    if (body) { init.method = 'POST'; init.body = JSON.stringify(body); }
    const r = await fetch(path, init);
    if (!r.ok) {
      let msg = r.status + ' ' + r.statusText;
      try { const b = await r.json(); if (b && b.error) msg = b.error.message || b.error.code; } catch (_) { /* not JSON */ }
      throw new APIError(r.status, msg);
    }
    return r.json();
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
  function dur(s) { return s >= 3600 ? (s / 3600).toFixed(1) + ' h' : s >= 60 ? Math.round(s / 60) + ' min' : s + ' s'; }
  function badge(status) { return el('span', { class: 'badge st-' + status }, status); }
  function windowSeconds(w) { return { '15m': 900, '1h': 3600, '24h': 86400 }[w] || 900; }

  // ---- tiles, rows --------------------------------------------------------------------------
  function renderSummary(counts) {
    const box = $('summary');
    box.replaceChildren(...['up', 'degraded', 'offline', 'pending'].map((k) =>
      el('button', { type: 'button', class: 'tile' + ($('status').value === k ? ' on' : ''), 'data-status': k },
        el('span', { class: 'n st-' + k }, String(counts[k] || 0)), k)));
  }

  function quarantineBadge(s) {
    const q = s.quarantine ?? s.quarantined;
    if (!q) return null;
    const why = typeof q === 'object' ? (q.reason || JSON.stringify(q)) : (typeof q === 'string' ? q : 'quarantined');
    return el('span', { class: 'badge quarantine', title: why }, 'quarantined');
  }

  function transportsCell(ts) {
    return el('td', { class: 'trs' }, ...(ts || []).map((t) => el('span', { class: 'tr st-' + t.status, 'data-transport': t.name, title: t.name + ': ' + t.status },
      el('i', { class: 'dot' }), t.name + ' ', el('span', { class: 'v' }, t.status === 'unknown' ? '–' : fmtNum(t.latency_ms, ' ms')))));
  }

  function renderRow(s) {
    return el('tr', { 'data-site': s.id, 'data-status': s.status, class: state.selected === s.id ? 'sel' : null, tabindex: '0' },
      el('td', { class: 'name' }, s.name, quarantineBadge(s)), el('td', { class: 'st' }, badge(s.status)), el('td', {}, s.role || ''),
      transportsCell(s.transports), el('td', { class: 'dim seen' }, ago(s.last_seen)));
  }

  function row(id) { return $('sites').tBodies[0].querySelector('tr[data-site="' + CSS.escape(id) + '"]'); }

  // ---- the page of sites ------------------------------------------------------------------------
  async function loadPage() {
    const gen = ++state.gen;
    const q = new URLSearchParams({ sort: $('sort').value, offset: String(state.offset), limit: String(LIMIT) });
    if ($('search').value.trim()) q.set('q', $('search').value.trim());
    if ($('status').value) q.set('status', $('status').value);
    try {
      const p = await api('sd-wan/v1/overview?' + q);
      if (gen !== state.gen) return;
      state.rows = p.data; state.total = p.total;
      for (const s of p.data) state.names[s.id] = s.name;
      renderSummary(p.counts);
      const tbody = $('sites').tBodies[0];
      tbody.replaceChildren(...p.data.map(renderRow));
      if (!p.data.length) tbody.append(el('tr', {}, el('td', { colspan: 5, class: 'dim' }, state.total ? 'No site on this page.' : 'No sites match.')));
      $('range').textContent = p.total ? (p.offset + 1) + '–' + (p.offset + p.data.length) + ' of ' + p.total.toLocaleString('en') : '0 of 0';
      $('prev').disabled = p.offset === 0;
      $('next').disabled = p.offset + p.data.length >= p.total;
      $('error').textContent = '';
      if (state.first) {
        state.first = false;
        performance.mark('noc-first-page');
        stats.firstPage = performance.now();
        // The rows are painted in the frame after this one: mark it as well.
        requestAnimationFrame(() => setTimeout(() => {
          stats.firstPaint = performance.now();
          document.body.dataset.firstPaint = String(Math.round(stats.firstPaint));
        }));
        document.body.dataset.firstPage = String(Math.round(stats.firstPage));
      }
      if (!state.selected) {
        const worst = p.data.find((s) => s.status !== 'pending');
        if (worst) select(worst.id);
      }
      openStream(p.data.map((s) => s.id));
      loadEvents();
    } catch (e) { fail(e); }
  }

  async function loadEvents() {
    try {
      const [evs, sw] = await Promise.all([api('sd-wan/v1/events?limit=30'), api('sd-wan/v1/events?type=path.switched&limit=15')]);
      renderEvents($('events'), evs.data);
      renderEvents($('switches'), sw.data);
    } catch (e) { fail(e); }
  }

  function fail(e) {
    if (e.status === 401) { signOut('The API key was refused (revoked or expired). Sign in again.'); return; }
    $('live').className = 'live stale';
    $('error').textContent = e.status === 403 ? 'This key lacks the sdwan:read scope.' :
      e.status === 429 ? 'Rate limited; retrying.' : 'Update failed: ' + e.message;
  }

  function describe(ev) {
    const d = ev.data || {};
    const site = state.names[d.site] || d.site || '';
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

  function eventItem(ev) {
    return el('li', { class: 'ev-' + ev.type.replace(/[._]/g, '-'), 'data-event': ev.type, 'data-id': ev.id },
      el('span', { class: 't' }, timeOf(ev.created_at) + ' · ' + ev.type), el('br'), describe(ev));
  }

  function renderEvents(list, evs) {
    list.replaceChildren(...evs.map(eventItem));
    if (!evs.length) list.append(el('li', { class: 'dim' }, 'None yet.'));
  }

  function prependEvent(list, ev, max) {
    if (list.querySelector('li[data-id="' + CSS.escape(ev.id) + '"]')) return;
    const none = list.querySelector('li.dim');
    if (none) none.remove();
    list.prepend(eventItem(ev));
    while (list.children.length > max) list.lastChild.remove();
  }

  // ---- live updates -------------------------------------------------------------------------
  function onUpdate(name, data) {
    switch (name) {
      case 'site': {
        const tr = row(data.id);
        if (tr) {
          tr.dataset.status = data.status;
          tr.querySelector('td.st').replaceChildren(badge(data.status));
          tr.querySelector('td.seen').textContent = ago(data.last_seen);
        }
        if (state.selected === data.id) {
          const b = $('detail').querySelector('h3 .badge');
          if (b) b.replaceWith(badge(data.status));
        }
        break;
      }
      case 'counts': // the fleet's counts; while searching, the tiles keep the search's
        if (!$('search').value.trim()) renderSummary(data);
        break;
      case 'event':
        prependEvent($('events'), data, 30);
        if (data.type === 'path.switched') prependEvent($('switches'), data, 15);
        if (state.selected && data.data && data.data.site === state.selected) addTimeline(data);
        break;
      case 'figures': {
        const tr = row(data.site);
        if (tr) tr.querySelector('td.trs').replaceWith(transportsCell(data.transports));
        if (state.selected === data.site) renderTransports(data.transports);
        break;
      }
      case 'resync': loadPage(); break;
    }
  }

  // openStream follows the stream for these rows; it reads the response body as server-sent
  // events (EventSource cannot send the key in a header) and reconnects after a failure.
  function openStream(ids) {
    if (state.stream) state.stream.abort();
    const ctl = new AbortController();
    state.stream = ctl;
    const url = 'sd-wan/v1/stream' + (ids.length ? '?sites=' + ids.join(',') : '');
    (async () => {
      let hdrs;
      try { hdrs = headers({ Accept: 'text/event-stream' }); } catch (_) { return; }
      try {
        const r = await fetch(url, { headers: hdrs, cache: 'no-store', credentials: 'omit', signal: ctl.signal });
        if (!r.ok) throw new APIError(r.status, r.status + ' ' + r.statusText);
        $('live').className = 'live ok';
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let name = 'message', data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('event: ')) name = line.slice(7);
              else if (line.startsWith('data: ')) data += line.slice(6);
            }
            if (!data) continue;
            const t0 = performance.now();
            onUpdate(name, JSON.parse(data));
            void document.body.offsetHeight; // style and layout of the change count too
            stats.updates.push(performance.now() - t0);
            if (stats.updates.length > 1000) stats.updates.shift();
            document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
            $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
        if (e.status === 401) { signOut('The API key was refused (revoked or expired). Sign in again.'); return; }
      }
      if (ctl.signal.aborted) return;
      $('live').className = 'live stale';
      setTimeout(() => { if (state.stream === ctl && sessionStorage.getItem(KEY)) openStream(ids); }, 2000);
    })();
  }

  // ---- the selected site --------------------------------------------------------------------
  function renderTransports(ts) {
    const box = $('detail').querySelector('.transports');
    if (!box) return;
    box.replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, el('th', {}, 'Transport'), el('th', {}, 'Status'), el('th', {}, 'Latency'), el('th', {}, 'Loss'), el('th', {}, 'Jitter'))),
      el('tbody', {}, ...(ts || []).map((t) => el('tr', { 'data-transport': t.name },
        el('td', {}, t.name), el('td', {}, badge(t.status)),
        el('td', { class: 'num' }, t.status === 'unknown' ? '–' : fmtNum(t.latency_ms, ' ms')),
        el('td', { class: 'num' }, t.status === 'unknown' ? '–' : fmtNum(t.loss_pct, ' %')),
        el('td', { class: 'num' }, t.status === 'unknown' ? '–' : fmtNum(t.jitter_ms, ' ms')))))));
  }

  // steeringOf finds the steering policy a site runs, its content and its drafts.
  function steeringOf(policies, siteID) {
    for (const p of policies) {
      const ro = (p.rollout || []).find((r) => r.site === siteID);
      if (!ro) continue;
      const v = p.versions.find((x) => x.version === ro.version);
      const drafts = p.versions.filter((x) => x.status === 'draft' && x.version > ro.version);
      return { policy: p, version: ro.version, content: v ? v.content : null, drafts };
    }
    return null;
  }

  function thresholds(content, field) {
    const out = [];
    for (const c of (content && content.classes) || []) if (c[field] > 0) out.push({ v: c[field], label: c.name + ' ' + c[field] });
    return out;
  }

  function chart(box, title, unit, series, field, limits, marks) {
    const xs = [];
    const names = series.map((s) => s.name);
    const at = new Map();
    for (const s of series) for (const p of s.points) if (!at.has(p.at)) at.set(p.at, Date.parse(p.at) / 1000);
    const times = [...at.values()].sort((a, b) => a - b);
    xs.push(times);
    for (const s of series) {
      const byT = new Map(s.points.map((p) => [Date.parse(p.at) / 1000, p.samples > 0 ? p[field] : null]));
      xs.push(times.map((t) => byT.has(t) ? byT.get(t) : null));
    }
    const top = Math.max(0, ...limits.map((l) => l.v));
    const holder = el('div', { class: 'chart', 'data-chart': field, 'data-thresholds': limits.map((l) => l.v).join(','), 'data-marks': String(marks.length) });
    box.append(holder);
    const width = Math.max(260, Math.floor(box.clientWidth / 3) - 12);
    const opts = {
      width, height: 150, title: title + ' (' + unit + ')',
      scales: { x: { time: true }, y: { range: (u, lo, hi) => [0, Math.max(hi || 1, top * 1.15, 1)] } },
      axes: [{ stroke: '#8593a3', grid: { stroke: '#26313d' }, ticks: { stroke: '#26313d' } },
        { stroke: '#8593a3', grid: { stroke: '#26313d' }, ticks: { stroke: '#26313d' }, size: 44 }],
      legend: { show: true },
      series: [{}].concat(names.map((n, i) => ({ label: n, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false }))),
      hooks: { draw: [(u) => {
        const ctx = u.ctx;
        ctx.save();
        ctx.setLineDash([6, 4]);
        ctx.lineWidth = 1;
        ctx.font = Math.round(11 * devicePixelRatio) + 'px system-ui, sans-serif';
        ctx.textAlign = 'left';
        ctx.textBaseline = 'bottom';
        for (const l of limits) { // the SLA thresholds
          const y = u.valToPos(l.v, 'y', true);
          ctx.strokeStyle = '#f85149';
          ctx.beginPath(); ctx.moveTo(u.bbox.left, y); ctx.lineTo(u.bbox.left + u.bbox.width, y); ctx.stroke();
          ctx.fillStyle = '#f85149';
          ctx.fillText('SLA ' + l.label, u.bbox.left + 4, y - 3);
        }
        ctx.setLineDash([]);
        for (const m of marks) { // switches and events
          const x = u.valToPos(m.t, 'x', true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          ctx.strokeStyle = m.type === 'path.switched' ? '#58a6ff' : m.type === 'transport.degraded' ? '#d29922' : '#f85149';
          ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
        }
        ctx.restore();
      }] },
    };
    state.charts.push(new uPlot(opts, xs, holder)); // eslint-disable-line no-undef
  }

  function marksOf(evs) { return evs.map((e) => ({ t: Date.parse(e.created_at) / 1000, type: e.type })); }

  function timelineItem(ev) {
    return el('li', { class: 'ev-' + ev.type.replace(/[._]/g, '-'), 'data-id': ev.id }, el('span', { class: 't' }, timeOf(ev.created_at)), ' ', describe(ev));
  }

  function addTimeline(ev) {
    const list = $('detail').querySelector('.timeline');
    if (!list || list.querySelector('li[data-id="' + CSS.escape(ev.id) + '"]')) return;
    const none = list.querySelector('li.dim');
    if (none) none.remove();
    list.append(timelineItem(ev));
  }

  function select(id) {
    state.selected = id;
    for (const tr of $('sites').tBodies[0].rows) tr.classList.toggle('sel', tr.dataset.site === id);
    loadDetail();
  }

  async function loadDetail() {
    const id = state.selected;
    if (!id) return;
    const gen = ++state.detailGen;
    const win = $('window').value;
    const since = new Date(Date.now() - windowSeconds(win) * 1000).toISOString();
    try {
      const q = '?window=' + encodeURIComponent(win);
      const [site, health, series, evs, pols] = await Promise.all([
        api('sd-wan/v1/sites/' + id), api('sd-wan/v1/sites/' + id + '/health' + q), api('sd-wan/v1/sites/' + id + '/series' + q),
        api('sd-wan/v1/events?order=asc&limit=200&site=' + id + '&since=' + encodeURIComponent(since)),
        api('sd-wan/v1/policies?type=steering&limit=200')]);
      if (gen !== state.detailGen) return;
      state.names[site.id] = site.name;
      const steer = steeringOf(pols.data, id);
      for (const c of state.charts) c.destroy();
      state.charts = [];
      const box = $('detail');
      box.hidden = false;
      const sla = el('div', { class: 'sla' }, ...(health.sla || []).map((c) =>
        el('span', { class: c.target_met ? 'met' : 'missed', 'data-class': c.class },
          c.class + ' → ' + (c.path || '–') + (c.target_met ? ' ✓ SLA met' : ' ✗ SLA missed'))));
      const charts = el('div', { class: 'charts' });
      // The what-if box survives a refresh of the same site, draft and window: a simulation's
      // result stays on screen.
      const draft = steer && steer.drafts.length ? steer.drafts[steer.drafts.length - 1].version : 0;
      const wkey = steer ? steer.policy.id + ':' + draft + ':' + win : '';
      const prev = box.dataset.site === id ? box.querySelector('.whatif') : null;
      const whatif = prev && prev.dataset.key === wkey ? prev : el('div', { class: 'whatif', 'data-key': wkey });
      box.replaceChildren(
        el('h3', {}, site.name + ' ', badge(health.status || site.status), quarantineBadge(site),
          el('span', { class: 'dim pol' }, steer ? ' · ' + steer.policy.name + ' v' + steer.version : ' · no steering policy')),
        el('div', { class: 'transports' }), sla, charts,
        el('h4', {}, 'Timeline: switches and events over ' + win),
        el('ul', { class: 'timeline' }), whatif);
      renderTransports(site.transports);
      const list = box.querySelector('.timeline');
      list.replaceChildren(...evs.data.map(timelineItem));
      if (!evs.data.length) list.append(el('li', { class: 'dim' }, 'No switch or event in this window.'));
      const marks = marksOf(evs.data);
      const content = steer && steer.content;
      chart(charts, 'Latency', 'ms', series.transports, 'latency_ms', thresholds(content, 'max_latency_ms'), marks);
      chart(charts, 'Loss', '%', series.transports, 'loss_pct', thresholds(content, 'max_loss_pct'), marks);
      chart(charts, 'Jitter', 'ms', series.transports, 'jitter_ms', thresholds(content, 'max_jitter_ms'), marks);
      box.dataset.site = id;
      if (whatif !== prev) renderWhatIf(whatif, steer, id, win);
    } catch (e) { if (gen === state.detailGen) fail(e); }
  }

  // renderWhatIf offers the site's policy's drafts: the latest fleet simulation's summary, and
  // a simulation of this site over the window, draft against published, per class.
  async function renderWhatIf(box, steer, siteID, win) {
    if (!steer || !steer.drafts.length) {
      box.replaceChildren(el('h4', {}, 'What-if'), el('p', { class: 'dim' }, steer ? 'No draft version of ' + steer.policy.name + ' to simulate.' : 'The site runs no steering policy.'));
      return;
    }
    const draft = steer.drafts[steer.drafts.length - 1];
    const out = el('div', { class: 'whatif-result' });
    const btn = el('button', { type: 'button', class: 'simulate' }, 'Simulate v' + draft.version + ' here over ' + win);
    box.replaceChildren(el('h4', {}, 'What-if: ' + steer.policy.name + ' v' + draft.version + ' (draft) against v' + steer.version), btn, out);
    try {
      const last = await api('sd-wan/v1/policies/' + steer.policy.id + '/versions/' + draft.version + '/simulation');
      const s = last.summary || {};
      out.append(el('p', { class: 'dim fleet' }, 'Latest simulation (' + last.window + ', ' + timeOf(last.created_at) + '): ' + (s.sites_changed || 0) + ' of ' + (s.sites || 0) + ' sites change.'));
    } catch (_) { /* never simulated: nothing to show */ }
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        const res = await api('sd-wan/v1/policies/' + steer.policy.id + '/versions/' + draft.version + '/simulate', { window: win, sites: [siteID] });
        const site = (res.sites || [])[0];
        if (!res.complete || !site) throw new Error(res.error || 'no result');
        if (site.error) { out.replaceChildren(el('p', { class: 'error' }, site.error)); return; }
        const side = (o, f) => o ? f(o) : '–';
        const paths = (o) => Object.entries(o.time_on_path_s).map(([k, v]) => k + ' ' + dur(v)).join(', ') || '–';
        out.replaceChildren(
          el('p', { class: 'dim' }, site.minutes + ' minutes replayed at ' + res.simulation.resolution.step + ' resolution (' + res.simulation.resolution.latency + ' latency). ' + (site.changed ? 'Outcome changes.' : 'Nothing changes.')),
          el('table', { class: 'sim' },
            el('thead', {}, el('tr', {}, el('th', {}, 'Class'), el('th', {}, ''), el('th', {}, 'SLA breaches'), el('th', {}, 'SLA missed'), el('th', {}, 'Switches'), el('th', {}, 'Time on path'))),
            el('tbody', {}, ...site.classes.flatMap((c) => [['draft v' + draft.version, c.draft], ['published v' + steer.version, c.published]].map(([label, o], i) =>
              el('tr', { class: (c.changed ? 'changed' : '') + (i ? ' second' : ''), 'data-class': c.class },
                el('td', {}, i ? '' : c.class), el('td', { class: 'dim' }, label),
                el('td', { class: 'num' }, side(o, (x) => x.sla_breaches)), el('td', { class: 'num' }, side(o, (x) => dur(x.sla_missed_s))),
                el('td', { class: 'num' }, side(o, (x) => x.path_switches)), el('td', {}, side(o, paths))))))));
      } catch (e) {
        out.replaceChildren(el('p', { class: 'error' }, e.status === 403 ? 'Simulating needs a key with sdwan:write; this one can only read.' :
          e.status === 429 ? 'Other simulations are running; try again in a moment.' : 'Simulation failed: ' + e.message));
      } finally { btn.disabled = false; }
    });
  }

  // ---- sign-in and wiring -------------------------------------------------------------------
  function show(signedIn) {
    $('signin').hidden = signedIn;
    $('dash').hidden = !signedIn;
    $('conn').hidden = !signedIn;
  }

  function start() {
    show(true);
    loadPage();
    clearInterval(state.timer);
    state.timer = setInterval(() => { if (sessionStorage.getItem(KEY)) loadDetail(); }, REFRESH_MS);
  }

  function signOut(msg) {
    state.gen++; state.detailGen++;
    clearInterval(state.timer);
    if (state.stream) state.stream.abort();
    state.stream = null; state.selected = null; state.first = true;
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
  $('window').addEventListener('change', () => loadDetail());
  let searchTimer = null;
  $('search').addEventListener('input', () => { clearTimeout(searchTimer); searchTimer = setTimeout(() => { state.offset = 0; loadPage(); }, 250); });
  $('status').addEventListener('change', () => { state.offset = 0; loadPage(); });
  $('sort').addEventListener('change', () => { state.offset = 0; loadPage(); });
  $('filters').addEventListener('submit', (ev) => { ev.preventDefault(); state.offset = 0; loadPage(); });
  $('prev').addEventListener('click', () => { state.offset = Math.max(0, state.offset - LIMIT); loadPage(); });
  $('next').addEventListener('click', () => { state.offset += LIMIT; loadPage(); });
  $('summary').addEventListener('click', (ev) => {
    const t = ev.target.closest('.tile');
    if (!t) return;
    $('status').value = $('status').value === t.dataset.status ? '' : t.dataset.status;
    state.offset = 0;
    loadPage();
  });
  const pick = (ev) => {
    const tr = ev.target.closest('tr[data-site]');
    if (tr && (ev.type === 'click' || ev.key === 'Enter')) {
      select(tr.dataset.site);
      $('detail').scrollIntoView({ block: 'nearest' });
    }
  };
  $('sites').addEventListener('click', pick);
  $('sites').addEventListener('keydown', pick);

  if (sessionStorage.getItem(KEY)) start(); else show(false);
})();
