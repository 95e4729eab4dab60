"""The page's style sheet and script (kept as constants so the package needs no data files).

The script reads the embedded JSON (``#report-data``), unpacks plotly.js (inlined once in the page,
gzip-compressed: the browser's DecompressionStream), draws the overview charts from the JSON and the
selected partition's timeline, and runs the findings table (filters, pages, copy buttons). Every text
from the data goes through ``textContent``, never ``innerHTML``.
"""

from __future__ import annotations

CSS = r"""
:root { --err:#c62828; --warn:#e08a00; --info:#78909c; --ok:#2e7d32; --ink:#263238; --muted:#607d8b;
  --line:#e0e6ea; --bg:#f5f7f9; --risk:#e4572e; --corrupt:#8e24aa; --seg:#5b8def; --expired:#b0b7c3; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:14px/1.45 -apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif; }
main { max-width:1360px; margin:0 auto; padding:20px 24px 60px; }
header.top { display:flex; justify-content:space-between; align-items:baseline; gap:16px; flex-wrap:wrap; }
header.top h1 { font-size:20px; margin:0; font-weight:600; word-break:break-all; }
header.top .meta { color:var(--muted); font-size:12.5px; }
.verdict { margin:14px 0 18px; border-radius:10px; padding:16px 20px; color:white; display:flex; gap:18px;
  align-items:center; box-shadow:0 1px 3px rgba(0,0,0,.15); }
.verdict.critical { background:linear-gradient(90deg,#b71c1c,#d32f2f); }
.verdict.warning { background:linear-gradient(90deg,#e65100,#f29100); }
.verdict.ok { background:linear-gradient(90deg,#1b5e20,#388e3c); }
.verdict .level { font-size:26px; font-weight:700; white-space:nowrap; letter-spacing:.3px; }
.verdict ul { margin:0; padding-left:18px; font-size:15px; }
.verdict li { margin:1px 0; overflow-wrap:anywhere; }
.cards { display:grid; grid-template-columns:repeat(auto-fit,minmax(150px,1fr)); gap:10px;
  margin-bottom:18px; }
.card { background:white; border-radius:8px; padding:10px 14px; border:1px solid var(--line);
  border-top:4px solid var(--line); }
.card .n { font-size:24px; font-weight:700; }
.card .l { color:var(--muted); font-size:12px; }
.card.error { border-top-color:var(--err); } .card.error .n { color:var(--err); }
.card.warning { border-top-color:var(--warn); } .card.warning .n { color:var(--warn); }
.card.ok { border-top-color:var(--ok); } .card.ok .n { color:var(--ok); }
.card.routine { border-top-color:var(--expired); } .card.routine .n { color:var(--muted); }
p.routine { margin:-8px 0 16px; padding:8px 14px; border-radius:8px; background:white;
  border:1px solid var(--line); border-left:4px solid var(--expired); color:#455a64; font-size:13px; }
section { background:white; border:1px solid var(--line); border-radius:10px; padding:14px 16px;
  margin-bottom:18px; }
section h2 { font-size:16px; margin:0 0 8px; }
section p.note { color:var(--muted); font-size:12.5px; margin:4px 0 8px; overflow-wrap:anywhere; }
.grid2 { display:grid; grid-template-columns:1fr 1fr; gap:18px; }
.grid2 > section { margin-bottom:0; }
@media (max-width: 1000px) { .grid2 { grid-template-columns:1fr; } }
.grid2 + section, .grid2 + .grid2 { margin-top:18px; }
table { border-collapse:collapse; width:100%; font-size:13px; }
th { text-align:left; font-weight:600; color:var(--muted); border-bottom:2px solid var(--line);
  padding:6px 8px;
  white-space:nowrap; }
td { border-bottom:1px solid var(--line); padding:6px 8px; vertical-align:top; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
.badge { display:inline-block; border-radius:10px; padding:1px 8px; font-size:11.5px; font-weight:600;
  color:white; white-space:nowrap; margin:1px 2px 1px 0; }
.badge.error { background:var(--err); } .badge.warning { background:var(--warn); }
.badge.info { background:var(--info); } .badge.risk { background:var(--risk); }
.badge.corrupt { background:var(--corrupt); } .badge.expired { background:var(--expired); color:#263238; }
.badge.active { background:var(--seg); } .badge.lag { background:var(--warn); }
#segments-table td .badge { white-space:normal; }
.controls { display:flex; gap:10px; flex-wrap:wrap; align-items:center; margin:6px 0 10px; }
.controls label { color:var(--muted); font-size:12.5px; }
select, input[type=search] { font:inherit; padding:5px 8px; border:1px solid #b0bec5; border-radius:6px;
  background:white; }
#part-select { min-width:420px; max-width:100%; }
.code { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12px; }
.where { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:11.5px; color:#455a64;
  word-break:break-all; }
.msg { max-width:520px; overflow-wrap:anywhere; }
/* "Who loses what": every cell wraps inside the card, long paths and commands anywhere */
table.who-loses th { white-space:normal; }
table.who-loses td { overflow-wrap:anywhere; }
table.who-loses td[data-col="leader"] { min-width:10em; }
table.who-loses td[data-col="salvage command"], table.who-loses td[data-col="abort (cluster)"] {
  font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:11.5px; min-width:16em; }
.fix { max-width:460px; overflow-wrap:anywhere; }
.cmd { display:flex; gap:6px; align-items:flex-start; margin:4px 0; }
.cmd code { background:#263238; color:#e0f2f1; padding:4px 8px; border-radius:5px; font-size:11.5px;
  word-break:break-all; flex:1; }
button.copy { font:inherit; font-size:11.5px; border:1px solid #90a4ae; background:#fafafa; border-radius:5px;
  padding:3px 8px; cursor:pointer; white-space:nowrap; }
button.copy:hover { background:#eceff1; } button.copy.done { background:#c8e6c9; border-color:var(--ok); }
.pager { display:flex; gap:8px; align-items:center; margin-top:8px; color:var(--muted); font-size:12.5px; }
.pager button { font:inherit; font-size:12px; padding:3px 10px; border:1px solid #b0bec5; background:white;
  border-radius:5px; cursor:pointer; }
.legend { display:flex; gap:12px; flex-wrap:wrap; font-size:12px; color:var(--muted); margin:2px 0 6px; }
.legend span::before { content:''; display:inline-block; width:12px; height:12px; border-radius:2px;
  margin-right:5px; vertical-align:-2px; background:var(--c); }
.legend span.hatch::before { background:repeating-linear-gradient(45deg,#8e24aa 0 2px,#e1bee7 2px 5px); }
.partinfo { font-size:13px; color:#37474f; margin:4px 0 6px; overflow-wrap:anywhere; }
.partinfo b { color:var(--ink); }
tr.flag-risk td:first-child { border-left:4px solid var(--risk); }
tr.flag-corrupt td:first-child { border-left:4px solid var(--corrupt); }
.empty { color:var(--muted); font-style:italic; padding:10px 0; }
footer { color:var(--muted); font-size:12px; text-align:center; margin-top:10px; }
"""

JS = r"""
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var FLAG_RISK = 1, FLAG_CORRUPT = 2, FLAG_EXPIRED = 4, FLAG_ACTIVE = 8;
  var SEV = ['info', 'warning', 'error'];
  var COL = { ok: '#5b8def', active: '#9dbcf5', expired: '#b0b7c3', risk: '#e4572e', corrupt: '#8e24aa' };
  var CONFIG = { displaylogo: false, responsive: true,
                 modeBarButtonsToRemove: ['select2d', 'lasso2d'] };
  var F = D.findings;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (k === 'class') { e.className = attrs[k]; } else { e.setAttribute(k, attrs[k]); }
      }
    }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function fmt(n) { return n === null || n === undefined ? '?' : Number(n).toLocaleString('en-US'); }
  function iso(ms) {
    if (ms === null || ms === undefined) { return '?'; }
    if (ms < 0) { return 'none'; }
    return new Date(ms).toISOString().replace('.000Z', 'Z');
  }
  function bytes(n) {
    if (n === null || n === undefined) { return '?'; }
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + ' ' + u[i];
  }

  // --- copy buttons ---------------------------------------------------------------------------
  function copyText(text, button) {
    function done() {
      button.classList.add('done'); button.textContent = 'copied';
      setTimeout(function () { button.classList.remove('done'); button.textContent = 'copy'; }, 1500);
    }
    function fallback() {
      var ta = el('textarea'); ta.value = text; ta.style.position = 'fixed'; ta.style.opacity = '0';
      document.body.appendChild(ta); ta.select();
      try { document.execCommand('copy'); done(); } catch (e) { button.textContent = 'select + Ctrl-C'; }
      document.body.removeChild(ta);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else { fallback(); }
  }
  function fixCell(fix, command) {
    // the fix text, each `command` in it as a code block with a copy button
    var td = el('td', { 'class': 'fix' });
    var parts = fix.split('`');
    if (parts.length < 3) { parts = [fix]; }
    var para = el('div');
    parts.forEach(function (text, i) {
      var isCmd = i % 2 === 1 && i < parts.length - 1;
      if (!isCmd) { if (text.trim()) { para.appendChild(document.createTextNode(text)); } return; }
      if (para.childNodes.length) { td.appendChild(para); para = el('div'); }
      var row = el('div', { 'class': 'cmd' });
      row.appendChild(el('code', { 'class': 'fix-command' }, text));
      var b = el('button', { 'class': 'copy', 'type': 'button', 'title': 'copy to the clipboard' }, 'copy');
      b.addEventListener('click', function () { copyText(text, b); });
      row.appendChild(b);
      td.appendChild(row);
    });
    if (para.childNodes.length) { td.appendChild(para); }
    var inline = parts.filter(function (t, i) { return i % 2 === 1; });
    if (command && inline.indexOf(command) < 0) {
      var crow = el('div', { 'class': 'cmd' });
      crow.appendChild(el('code', { 'class': 'fix-command' }, command));
      var cb = el('button', { 'class': 'copy', 'type': 'button', 'title': 'copy to the clipboard' }, 'copy');
      cb.addEventListener('click', function () { copyText(command, cb); });
      crow.appendChild(cb);
      td.appendChild(crow);
    } else if (parts.length === 1) {
      var b2 = el('button', { 'class': 'copy', 'type': 'button', 'title': 'copy the fix' }, 'copy');
      b2.addEventListener('click', function () { copyText(fix, b2); });
      td.appendChild(b2);
    }
    return td;
  }

  // --- findings table -------------------------------------------------------------------------
  var fState = { sev: '', code: '', text: '', page: 0, size: 50 };
  function findingMatches(i) {
    if (fState.sev !== '' && SEV[F.s[i]] !== fState.sev) { return false; }
    if (fState.code !== '' && F.codes[F.c[i]] !== fState.code) { return false; }
    if (fState.text) {
      var t = fState.text;
      if ((F.p[i] + ' ' + F.m[i] + ' ' + F.x[i]).toLowerCase().indexOf(t) < 0) { return false; }
    }
    return true;
  }
  function renderFindings() {
    var body = document.getElementById('findings-body');
    if (!body) { return; }
    body.textContent = '';
    var hits = [];
    for (var i = 0; i < F.c.length; i++) { if (findingMatches(i)) { hits.push(i); } }
    var pages = Math.max(1, Math.ceil(hits.length / fState.size));
    if (fState.page >= pages) { fState.page = pages - 1; }
    var start = fState.page * fState.size;
    hits.slice(start, start + fState.size).forEach(function (i) {
      var sev = SEV[F.s[i]];
      var tr = el('tr', { 'class': 'finding sev-' + sev, 'data-code': F.codes[F.c[i]],
                          'data-severity': sev });
      var td = el('td'); td.appendChild(el('span', { 'class': 'badge ' + sev }, sev)); tr.appendChild(td);
      tr.appendChild(el('td', { 'class': 'code' }, F.codes[F.c[i]]));
      if (D.kind === 'fleet') {
        tr.appendChild(el('td', { 'class': 'num' }, F.b[i] === null ? '?' : F.b[i]));
      }
      var where = F.p[i] + (F.pos[i] === null ? '' : ' @' + F.pos[i]);
      var wtd = el('td', { 'class': 'where' }, where);
      if (F.part[i] >= 0) {
        var a = el('a', { 'href': '#timeline', 'class': 'to-timeline' }, ' timeline');
        (function (k) { a.addEventListener('click', function () { selectPartition(k); }); })(F.part[i]);
        wtd.appendChild(el('br')); wtd.appendChild(a);
      }
      tr.appendChild(wtd);
      tr.appendChild(el('td', { 'class': 'msg' }, F.m[i]));
      tr.appendChild(fixCell(F.x[i], F.fc[i]));
      body.appendChild(tr);
    });
    document.getElementById('findings-count').textContent =
      hits.length + ' of ' + F.c.length + ' shown finding(s)' +
      (pages > 1 ? ', page ' + (fState.page + 1) + ' of ' + pages : '');
    document.getElementById('findings-prev').disabled = fState.page === 0;
    document.getElementById('findings-next').disabled = fState.page >= pages - 1;
    var empty = document.getElementById('findings-empty');
    if (empty) { empty.style.display = hits.length ? 'none' : 'block'; }
  }
  function setupFindings() {
    var sev = document.getElementById('filter-severity'), code = document.getElementById('filter-code');
    var text = document.getElementById('filter-text');
    if (!sev) { return; }
    sev.addEventListener('change', function () {
      fState.sev = sev.value; fState.page = 0; renderFindings();
    });
    code.addEventListener('change', function () {
      fState.code = code.value; fState.page = 0; renderFindings();
    });
    text.addEventListener('input', function () {
      fState.text = text.value.trim().toLowerCase(); fState.page = 0; renderFindings();
    });
    document.getElementById('findings-prev').addEventListener('click', function () {
      fState.page = Math.max(0, fState.page - 1); renderFindings();
    });
    document.getElementById('findings-next').addEventListener('click', function () {
      fState.page += 1; renderFindings();
    });
    renderFindings();
  }

  // --- partition timeline ---------------------------------------------------------------------
  function category(flags) {
    if (flags & FLAG_RISK) { return 'risk'; }
    if (flags & FLAG_CORRUPT) { return 'corrupt'; }
    if (flags & FLAG_EXPIRED) { return 'expired'; }
    if (flags & FLAG_ACTIVE) { return 'active'; }
    return 'ok';
  }
  var CAT_NAME = { ok: 'segment', active: 'active segment',
                   expired: 'deleted by the next retention check',
                   risk: 'RETENTION_RISK (deleted early)', corrupt: 'corrupt (LOG/INDEX_CORRUPT)' };
  var HATCH = { shape: '/', fgcolor: '#4a148c', fillmode: 'overlay', size: 7, solidity: 0.35 };
  function segFlagsText(s, k) {
    var out = [], f = s.fl[k];
    if (f & FLAG_RISK) { out.push('RETENTION_RISK'); }
    if (f & FLAG_CORRUPT) { out.push('corrupt'); }
    if (f & FLAG_EXPIRED) { out.push('deleted by the next retention check (' + s.rs[k] + ')'); }
    if (f & FLAG_ACTIVE) { out.push('active'); }
    return out;
  }

  function timeRange(s, cut) {
    // the axis covers the data; the retention cut-off and "now" when they are not too far from it
    var vals = [];
    for (var k = 0; k < s.b.length; k++) {
      [s.t0[k], s.tt[k]].forEach(function (v) { if (v !== null && v > 0) { vals.push(v); } });
    }
    var bvals = s.tb.filter(function (v) { return v !== null && v > 0; });
    if (!vals.length) { vals = bvals.slice(); }
    if (!vals.length) { return [(cut === null ? D.now : cut) - 3600e3, D.now + 3600e3]; }
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    var span = Math.max(hi - lo, 60e3);
    function widen(v, k) {
      if (v >= lo - k * span && v <= hi + k * span) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    }
    bvals.forEach(function (v) { widen(v, 2); });
    span = Math.max(hi - lo, 60e3);
    [cut, D.now].forEach(function (v) { if (v !== null) { widen(v, 3); } });
    var pad = Math.max(hi - lo, 60e3) * 0.04;
    return [lo - pad, hi + pad];
  }

  function drawTimeline(p) {
    var div = document.getElementById('timeline-plot');
    var s = p.s;
    var n = s.b.length;
    var lanes = [];
    for (var k = 0; k < n; k++) { lanes.push(String(s.b[k])); }
    var range = timeRange(s, p.cut);
    var traces = [];
    var cats = ['ok', 'active', 'expired', 'risk', 'corrupt'];
    cats.forEach(function (c) {
      var off = { y: [], base: [], x: [], pat: [], hov: [] };
      var tim = { y: [], base: [], x: [], pat: [], hov: [] };
      for (var k = 0; k < n; k++) {
        if (category(s.fl[k]) !== c) { continue; }
        var last = s.l[k] === null ? s.b[k] : s.l[k];
        var desc = 'segment ' + s.b[k] + '<br>offsets ' + fmt(s.b[k]) + ' – ' + fmt(s.l[k]) +
          '<br>' + bytes(s.z[k]) + '<br>first timestamp ' + iso(s.t0[k]) +
          '<br>broker largest timestamp ' + iso(s.tb[k]) + (s.src[k] ? ' (' + s.src[k] + ')' : '') +
          '<br>true largest timestamp ' + iso(s.tt[k]) +
          (segFlagsText(s, k).length ? '<br><b>' + segFlagsText(s, k).join(', ') + '</b>' : '');
        var hatch = (s.fl[k] & FLAG_CORRUPT) ? '/' : '';
        off.y.push(lanes[k]); off.base.push(s.b[k]); off.x.push(Math.max(last - s.b[k] + 1, 1));
        off.hov.push(desc);
        off.pat.push(hatch);
        var t0 = s.t0[k] !== null ? s.t0[k] : (s.tt[k] !== null ? s.tt[k] : s.tb[k]);
        var t1 = s.tt[k] !== null ? s.tt[k] : s.tb[k];
        if (t0 !== null && t1 !== null && t0 > 0) {
          var a = Math.max(t0, range[0]), b = Math.min(Math.max(t1, t0), range[1]);
          tim.y.push(lanes[k]); tim.base.push(a); tim.x.push(Math.max(b - a, (range[1] - range[0]) / 400));
          tim.hov.push(desc); tim.pat.push(hatch);
        }
      }
      var color = COL[c];
      var line = { color: 'rgba(0,0,0,0.25)', width: 0.5 };
      function pattern(shapes) {
        var p = {};
        for (var key in HATCH) { p[key] = HATCH[key]; }
        p.shape = shapes;
        return p;
      }
      traces.push({ type: 'bar', orientation: 'h', name: CAT_NAME[c], showlegend: false,
        y: off.y, base: off.base, x: off.x, xaxis: 'x', yaxis: 'y', customdata: off.hov,
        hovertemplate: '%{customdata}<extra></extra>',
        marker: { color: color, line: line, pattern: pattern(off.pat) } });
      traces.push({ type: 'bar', orientation: 'h', name: CAT_NAME[c], showlegend: false,
        y: tim.y, base: tim.base, x: tim.x, xaxis: 'x2', yaxis: 'y', customdata: tim.hov,
        hovertemplate: '%{customdata}<extra></extra>',
        marker: { color: color, line: line, pattern: pattern(tim.pat) } });
    });
    // the broker's largest timestamp of each segment (what time retention uses)
    var mk = { x: [], y: [], sym: [], col: [], hov: [] };
    for (var j = 0; j < n; j++) {
      var tb = s.tb[j];
      if (tb === null) { continue; }
      var off_chart = tb < range[0] || tb > range[1];
      mk.x.push(Math.min(Math.max(tb, range[0]), range[1])); mk.y.push(lanes[j]);
      mk.sym.push(off_chart ? (tb < range[0] ? 'triangle-left' : 'triangle-right') : 'diamond');
      mk.col.push((s.fl[j] & FLAG_RISK) ? '#b71c1c' : '#263238');
      mk.hov.push('segment ' + s.b[j] + ': the broker would use largestTimestamp ' + iso(tb) +
        (off_chart ? ' (off the chart)' : '') + (s.src[j] ? ' from ' + s.src[j] : ''));
    }
    traces.push({ type: 'scatter', mode: 'markers', name: "broker's largest timestamp (retention uses it)",
      showlegend: false, x: mk.x, y: mk.y, xaxis: 'x2', yaxis: 'y', customdata: mk.hov,
      hovertemplate: '%{customdata}<extra></extra>',
      marker: { symbol: mk.sym, color: mk.col, size: 10, line: { color: 'white', width: 1 } } });

    var shapes = [], ann = [];
    for (var q = 0; q < n; q++) {
      if (!(s.fl[q] & FLAG_RISK) || s.tb[q] === null) { continue; }
      var tbq = s.tb[q], off_q = tbq < range[0] || tbq > range[1];
      var endq = s.tt[q] !== null ? s.tt[q] : tbq;
      var right = endq < (range[0] + range[1]) / 2;  // label on the emptier side of the bar
      var xq = Math.min(Math.max(right ? endq : (s.t0[q] || endq), range[0]), range[1]);
      ann.push({ xref: 'x2', yref: 'y', x: xq,
        y: lanes[q], xanchor: right ? 'left' : 'right', xshift: right ? 10 : -10, showarrow: false,
        text: '<b>' + (right ? '◀ ' : '') + 'RETENTION_RISK: broker sees ' +
          (off_q ? iso(tbq).slice(0, 10) : iso(tbq)) +
          ', deletes it early' + (right ? '' : ' ▶') + '</b>',
        font: { size: 11, color: '#b71c1c' }, bgcolor: 'rgba(255,255,255,0.9)' });
    }
    function vline(xref, x, color, dash, label, yanchor) {
      shapes.push({ type: 'line', xref: xref, yref: 'paper', x0: x, x1: x, y0: 0, y1: 1,
        line: { color: color, width: 2, dash: dash } });
      ann.push({ xref: xref, yref: 'paper', x: x, y: 1, yanchor: yanchor || 'bottom', text: label,
        showarrow: false,
        font: { size: 11, color: color }, bgcolor: 'rgba(255,255,255,0.85)' });
    }
    // the cut-off label sits above the plot and "now" just inside its top edge, whether or not they are
    // on the chart: two rows, so they never overlap however close the two times are
    var marks = [[D.now, '#455a64', 'solid', 'now ' + iso(D.now), 'top']];
    if (p.cut !== null) {
      marks.unshift([p.cut, '#c62828', 'dash', 'retention cut-off ' + iso(p.cut), 'bottom']);
    }
    marks.forEach(function (v) {
        var x = v[0];
        if (x >= range[0] && x <= range[1]) {
          vline('x2', x, v[1], v[2], v[3], v[4]);
        } else {
          ann.push({ xref: 'x2', yref: 'paper', x: x < range[0] ? range[0] : range[1], y: 1.0,
            xanchor: x < range[0] ? 'left' : 'right', yanchor: v[4],
            text: (x < range[0] ? '◀ ' : '') + v[3] + (x > range[1] ? ' ▶' : ''), showarrow: false,
            font: { size: 11, color: v[1] }, bgcolor: 'rgba(255,255,255,0.85)' });
        }
      });
    if (p.rt && p.rt.s !== null && p.rt.e !== null) {
      // the remote tier (KIP-405): offsets held only in the remote store, left of the local segments
      shapes.push({ type: 'rect', xref: 'x', yref: 'paper', x0: p.rt.s, x1: p.rt.e, y0: 0, y1: 1,
        fillcolor: 'rgba(21,101,192,0.12)', line: { width: 0 } });
      ann.push({ xref: 'x', yref: 'paper', x: (p.rt.s + p.rt.e) / 2, y: 0.5, showarrow: false,
        text: 'remote tier<br>' + fmt(p.rt.n) + ' segments, ' + bytes(p.rt.b),
        font: { size: 11, color: '#1565c0' }, bgcolor: 'rgba(255,255,255,0.85)' });
    }
    if (p.lso !== null) { vline('x', p.lso, '#2e7d32', 'dot', 'log start ' + fmt(p.lso), 'bottom'); }
    if (p.tier && p.llso !== null && p.llso !== p.lso) {
      vline('x', p.llso, '#1565c0', 'dash',
            'local log start ' + fmt(p.llso) + ' (tiered: remote below)', 'top');
    }
    if (p.hw !== null && p.hw !== p.leo) {
      vline('x', p.hw, '#e08a00', 'dot', "this replica's high watermark " + fmt(p.hw), 'top');
    }
    var height = Math.min(720, 120 + 24 * n);
    var layout = {
      height: height, margin: { l: 10, r: 16, t: 46, b: 40 }, barmode: 'overlay', bargap: 0.25,
      font: { family: "-apple-system,'Segoe UI',Roboto,Arial,sans-serif", size: 12, color: '#263238' },
      xaxis: { domain: [0, 0.42], title: { text: 'offsets' }, tickformat: '~s', gridcolor: '#eceff1',
               zeroline: false },
      xaxis2: { domain: [0.47, 1], type: 'date', title: { text: 'time (UTC)' }, range: [range[0], range[1]],
                gridcolor: '#eceff1' },
      yaxis: { type: 'category', categoryorder: 'array', categoryarray: lanes, autorange: 'reversed',
               title: { text: 'segment (base offset)' }, automargin: true, gridcolor: '#f5f5f5' },
      shapes: shapes, annotations: ann, showlegend: false,
      paper_bgcolor: 'white', plot_bgcolor: 'white'
    };
    Plotly.react(div, traces, layout, CONFIG);
    renderSegmentTable(p);
  }

  function renderSegmentTable(p) {
    var body = document.getElementById('segments-body');
    body.textContent = '';
    var s = p.s, n = s.b.length, shown = 0, limit = 200;
    for (var k = 0; k < n; k++) {
      var flagged = (s.fl[k] & (FLAG_RISK | FLAG_CORRUPT)) !== 0;
      if (!flagged && shown >= limit) { continue; }
      shown++;
      var cls = 'segment' + ((s.fl[k] & FLAG_RISK) ? ' flag-risk' : '') +
        ((s.fl[k] & FLAG_CORRUPT) ? ' flag-corrupt' : '');
      var tr = el('tr', { 'class': cls, 'data-base-offset': s.b[k] });
      tr.appendChild(el('td', { 'class': 'num code' }, s.b[k]));
      tr.appendChild(el('td', { 'class': 'num' }, fmt(s.l[k])));
      tr.appendChild(el('td', { 'class': 'num' }, bytes(s.z[k])));
      tr.appendChild(el('td', null, iso(s.t0[k])));
      tr.appendChild(el('td', null, iso(s.tb[k]) + (s.src[k] ? ' (' + s.src[k] + ')' : '')));
      tr.appendChild(el('td', null, iso(s.tt[k])));
      var td = el('td');
      var codes = {};
      (s.f[k] || []).forEach(function (i) { codes[F.codes[F.c[i]]] = SEV[F.s[i]]; });
      Object.keys(codes).forEach(function (c) {
        var kind = c === 'RETENTION_RISK' ? 'risk' : (c.indexOf('CORRUPT') >= 0 ? 'corrupt' : codes[c]);
        td.appendChild(el('span', { 'class': 'badge ' + kind }, c));
      });
      if (s.fl[k] & FLAG_EXPIRED) {
        td.appendChild(el('span', { 'class': 'badge expired', title: 'what `logdoctor retention` says' },
          'deleted by the next retention check (' + s.rs[k] + ')'));
      }
      if (s.fl[k] & FLAG_ACTIVE) { td.appendChild(el('span', { 'class': 'badge active' }, 'active')); }
      tr.appendChild(td);
      body.appendChild(tr);
    }
    var note = document.getElementById('segments-note');
    note.textContent = n > shown ? ('showing ' + shown + ' of ' + n + ' segments (every flagged one)') : '';
  }

  function partLabel(p) {
    var sev = p.w >= 0 ? SEV[p.w].toUpperCase() + ' ' : '';
    var bits = [p.n];
    if (p.br !== null) { bits.push(p.br); }
    bits.push(p.s.b.length + ' segment(s)');
    if (p.nf) { bits.push(p.nf + ' finding(s)'); }
    if (p.lag) { bits.push('lag ' + fmt(p.lag)); }
    if (p.rt) { bits.push('tiered: ' + fmt(p.rt.n) + ' remote segment(s)'); }
    return (sev ? '[' + sev.trim() + '] ' : '') + bits.join(' · ');
  }
  function selectPartition(k) {
    var sel = document.getElementById('part-select');
    if (!sel || !D.parts[k]) { return; }
    sel.value = String(k);
    showPartition(k);
  }
  function showPartition(k) {
    var p = D.parts[k];
    var info = document.getElementById('part-info');
    info.textContent = '';
    function item(label, value) {
      info.appendChild(document.createTextNode(label + ' '));
      info.appendChild(el('b', null, value));
      info.appendChild(document.createTextNode('   '));
    }
    item('partition', p.n);
    if (p.br !== null) { item('on', p.br); }
    item('log dir', p.d);
    item('log start', fmt(p.lso));
    if (p.tier) { item('local log start (tiered: the remote tier holds the offsets below)', fmt(p.llso)); }
    item('log end', fmt(p.leo));
    item("this replica's checkpointed high watermark",
         p.hw === null || p.hw === undefined ? 'unknown (no replication-offset-checkpoint entry)'
           : fmt(p.hw));
    if (p.phw !== null && p.phw !== undefined && p.phw !== p.hw) {
      item("partition's high watermark (highest replica checkpoint)", fmt(p.phw));
    }
    item('size', bytes(p.bytes));
    if (p.rt) {
      item('remote tier', fmt(p.rt.n) + ' segments, ' + bytes(p.rt.b) + ', offsets ' + fmt(p.rt.s) + '–' +
        fmt(p.rt.e === null ? null : p.rt.e - 1));
      if (p.s.b.length) { item('local log start (first local segment)', fmt(p.s.b[0])); }
    }
    if (p.lag) { item('lag', fmt(p.lag)); }
    if (p.rc) { item('retention config', p.rc); }
    drawTimeline(p);
  }
  function setupTimeline() {
    var sel = document.getElementById('part-select');
    if (!sel || !D.parts.length) { return; }
    D.parts.forEach(function (p, k) { sel.appendChild(el('option', { value: String(k) }, partLabel(p))); });
    sel.addEventListener('change', function () { showPartition(Number(sel.value)); });
    var filter = document.getElementById('part-filter');
    filter.addEventListener('input', function () {
      var t = filter.value.trim().toLowerCase(), first = -1;
      for (var i = 0; i < sel.options.length; i++) {
        var hit = !t || sel.options[i].textContent.toLowerCase().indexOf(t) >= 0;
        sel.options[i].hidden = !hit;
        if (hit && first < 0) { first = i; }
      }
      if (first >= 0 && sel.options[sel.selectedIndex].hidden) {
        sel.selectedIndex = first; showPartition(Number(sel.value));
      }
    });
    showPartition(0);
  }

  // --- plotly.js: one gzip-compressed copy in the page, unpacked once, then every chart drawn ----
  function unpackPlotly() {
    if (window.Plotly) { return Promise.resolve(); }
    var packed = document.getElementById('plotly-js-gz');
    if (!packed || typeof DecompressionStream === 'undefined') {
      return Promise.reject(new Error('this browser cannot unpack the charts (no DecompressionStream: ' +
        'Chrome 80, Firefox 113 and Safari 16.4 have it)'));
    }
    var bin = atob(packed.textContent.trim()), raw = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { raw[i] = bin.charCodeAt(i); }
    var stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then(function (src) {
      var script = document.createElement('script');
      script.textContent = src;
      document.head.appendChild(script);
    });
  }
  function drawFigures() {
    Object.keys(D.figs || {}).forEach(function (id) {
      var div = document.getElementById(id), fig = D.figs[id];
      if (div) { Plotly.newPlot(div, fig.data, fig.layout, D.config); }
    });
  }
  function chartsUnavailable(err) {
    document.querySelectorAll('.plot, #timeline-plot').forEach(function (div) {
      div.textContent = '';
      div.appendChild(el('p', { 'class': 'empty' }, String(err && err.message ? err.message : err)));
    });
  }

  setupFindings();
  unpackPlotly().then(function () {
    drawFigures();
    setupTimeline();
  }, chartsUnavailable).then(function () {
    document.body.setAttribute('data-report-ready', '1');
  });
})();
"""

LAGGING_HEAD = (
    '<table id="lagging-table"><thead><tr><th>partition</th><th class="num">broker</th><th>log dir</th>'
    '<th class="num">log end offset</th><th class="num">highest replica LEO</th><th class="num">lag</th>'
    '<th class="num" title="the highest high watermark checkpointed by any replica of the partition">'
    "partition's high watermark</th>"
    '<th class="num" title="this broker\'s own replication-offset-checkpoint entry (a follower\'s lags the '
    'leader\'s)">this replica\'s checkpointed high watermark</th></tr></thead><tbody>'
)

TIMELINE_BODY = """
<div class="controls">
  <label for="part-filter">find</label>
  <input type="search" id="part-filter" placeholder="topic, partition, broker…">
  <label for="part-select">partition</label><select id="part-select"></select>
</div>
<div class="legend">
  <span style="--c:#5b8def">segment</span><span style="--c:#9dbcf5">active segment</span>
  <span style="--c:#b0b7c3">deleted by the next retention check</span>
  <span style="--c:#e4572e">RETENTION_RISK</span>
  <span class="hatch" style="--c:#8e24aa">corrupt (hatched)</span>
  <span style="--c:#263238">◆ broker's largest timestamp</span>
</div>
<div class="partinfo" id="part-info"></div>
<div id="timeline-plot"></div>
<table id="segments-table"><thead><tr><th class="num">segment</th><th class="num">last offset</th>
  <th class="num">size</th><th>first timestamp</th><th>broker largest timestamp</th>
  <th>true largest timestamp</th><th>flags</th></tr></thead><tbody id="segments-body"></tbody></table>
<p class="note" id="segments-note"></p>
"""

FINDINGS_BODY = """
<section id="findings"><h2>Findings</h2>
<p class="note">Each finding with its fix; copy a command with its button.{note}</p>
<div class="controls">
  <label for="filter-severity">severity</label>
  <select id="filter-severity"><option value="">all</option><option value="error">error</option>
    <option value="warning">warning</option><option value="info">info</option></select>
  <label for="filter-code">code</label>
  <select id="filter-code"><option value="">all codes</option>{code_options}</select>
  <input type="search" id="filter-text" placeholder="filter by path or text…">
  <span id="findings-count"></span>
</div>
<table id="findings-table"><thead><tr><th>severity</th><th>code</th>{broker_col}<th>where</th><th>problem</th>
  <th>fix</th></tr></thead><tbody id="findings-body"></tbody></table>
<p class="empty" id="findings-empty" style="display:none">No finding matches.</p>
<div class="pager"><button type="button" id="findings-prev">previous</button>
  <button type="button" id="findings-next">next</button></div>
</section>
"""
