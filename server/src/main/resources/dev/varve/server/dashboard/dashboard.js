// Varve dashboard: polls the server's JSON endpoints and draws every chart by hand in SVG (no library, no CDN).
// Every drawn element carries data-* attributes with the figure it shows, so a test can read them back.
(function () {
  'use strict';

  var SVG = 'http://www.w3.org/2000/svg';
  var params = new URLSearchParams(window.location.search);
  var POLL_MS = Math.max(200, parseInt(params.get('interval') || '1000', 10) || 1000);
  var COLORS = { recovery: '#805ad5', pages: '#3182ce', fsync: '#dd6b20', other: '#a0aec0', lock: '#e53e3e',
                 dirty: '#3182ce', cow: '#dd6b20', throttle: '#e53e3e', wal: '#2b6cb0', archive: '#38a169' };
  var RANK_COLORS = ['#3182ce', '#38a169', '#d69e2e', '#805ad5', '#e53e3e', '#319795', '#b83280', '#2d3748'];
  var polls = 0;

  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  // user units = CSS pixels of the element as laid out now, so circles stay round and text keeps its shape
  function size(svg) {
    var w = Math.max(100, svg.clientWidth || 460), h = Math.max(60, svg.clientHeight || 180);
    svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
    return { w: w, h: h };
  }

  function bytes(n) {
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + ' ' + units[i];
  }

  function count(n) { return Math.round(Number(n)).toLocaleString('en-US'); }

  function millis(nanos) { return nanos / 1e6; }

  function clock(t) { return new Date(t).toLocaleTimeString('en-GB'); }

  function setStat(id, raw, shown) {
    var e = document.getElementById(id);
    e.setAttribute('data-value', String(raw));
    e.textContent = shown;
  }

  function legend(id, items) {
    var box = document.getElementById(id);
    if (!box) return;
    box.textContent = '';
    items.forEach(function (it) {
      var span = document.createElement('span');
      var swatch = document.createElement('i');
      swatch.style.background = it.color;
      span.appendChild(swatch);
      span.appendChild(document.createTextNode(it.name));
      box.appendChild(span);
    });
  }

  function empty(svg, message) {
    var s = size(svg);
    el('text', { x: s.w / 2, y: s.h / 2, 'text-anchor': 'middle', 'class': 'empty' }, svg, message);
  }

  // y axis with 4 grid lines; returns the scale
  function axis(svg, max, fmt, pad) {
    var s = size(svg);
    var top = 10, bottom = s.h - 20;
    var scale = function (v) { return bottom - (max > 0 ? v / max : 0) * (bottom - top); };
    for (var i = 0; i <= 4; i++) {
      var v = max * i / 4;
      var y = scale(v);
      el('line', { x1: pad, x2: s.w - 5, y1: y, y2: y, 'class': 'gridline' }, svg);
      el('text', { x: pad - 4, y: y + 3, 'text-anchor': 'end' }, svg, fmt(v));
    }
    return scale;
  }

  function lineChart(svg, series, fmt) {
    clear(svg);
    var s = size(svg);
    var pad = 56;
    var points = series[0].points;
    if (points.length < 2) { empty(svg, 'collecting samples…'); return; }
    var max = 0;
    series.forEach(function (ser) { ser.points.forEach(function (p) { max = Math.max(max, p.v); }); });
    max = max > 0 ? max * 1.1 : 1;
    var y = axis(svg, max, fmt, pad);
    var t0 = points[0].t, t1 = points[points.length - 1].t;
    var x = function (t) { return pad + (t1 > t0 ? (t - t0) / (t1 - t0) : 0) * (s.w - pad - 5); };
    el('text', { x: pad, y: s.h - 4 }, svg, clock(t0));
    el('text', { x: s.w - 5, y: s.h - 4, 'text-anchor': 'end' }, svg, clock(t1));
    series.forEach(function (ser) {
      var d = ser.points.map(function (p, i) { return (i ? 'L' : 'M') + x(p.t).toFixed(1) + ' ' + y(p.v).toFixed(1); }).join(' ');
      var last = ser.points[ser.points.length - 1].v;
      el('path', { d: d, fill: 'none', stroke: ser.color, 'stroke-width': 2, 'class': 'series',
                   'data-name': ser.name, 'data-last': String(last) }, svg);
    });
  }

  function deltas(samples, field, perSecond, scale) {
    var out = [];
    for (var i = 1; i < samples.length; i++) {
      var dt = (samples[i].time - samples[i - 1].time) / 1000;
      var dv = samples[i][field] - samples[i - 1][field];
      out.push({ t: samples[i].time, v: Math.max(0, perSecond && dt > 0 ? dv / dt : dv) * (scale || 1) });
    }
    return out;
  }

  function drawCheckpoints(checkpoints) {
    var svg = document.getElementById('chart-checkpoints');
    clear(svg);
    legend('legend-checkpoints', [{ name: 'recovery data', color: COLORS.recovery }, { name: 'page writes', color: COLORS.pages },
      { name: 'fsync', color: COLORS.fsync }, { name: 'other', color: COLORS.other }, { name: 'lock hold', color: COLORS.lock }]);
    if (checkpoints.length === 0) { empty(svg, 'no checkpoint since the server started'); return; }
    var s = size(svg);
    var pad = 56;
    var max = 0;
    checkpoints.forEach(function (c) { max = Math.max(max, millis(c.totalNanos)); });
    max = max > 0 ? max * 1.1 : 1;
    var y = axis(svg, max, function (v) { return v.toFixed(v < 10 ? 1 : 0) + ' ms'; }, pad);
    var slot = (s.w - pad - 5) / checkpoints.length;
    var barW = Math.max(2, Math.min(28, slot * 0.7));
    checkpoints.forEach(function (c, i) {
      var x = pad + i * slot + (slot - barW) / 2;
      var parts = [
        { v: millis(c.recoveryDataNanos), color: COLORS.recovery, name: 'recovery' },
        { v: millis(c.pageWriteNanos), color: COLORS.pages, name: 'pages' },
        { v: millis(c.fsyncNanos), color: COLORS.fsync, name: 'fsync' }];
      var known = parts.reduce(function (a, p) { return a + p.v; }, 0);
      parts.push({ v: Math.max(0, millis(c.totalNanos) - known), color: COLORS.other, name: 'other' });
      var g = el('g', { 'class': 'cp', 'data-id': String(c.id), 'data-total-nanos': String(c.totalNanos), 'data-pages': String(c.pages) }, svg);
      el('title', {}, g, 'checkpoint ' + c.id + ' (' + c.reason + '): ' + c.pages + ' pages, total ' + millis(c.totalNanos).toFixed(1) +
        ' ms, recovery data ' + bytes(c.recoveryDataBytes) + ' (' + c.recoveryData + '), copy-on-write ' + c.copyOnWritePages +
        ' pages, lock held ' + (c.lockHoldNanos / 1e3).toFixed(0) + ' µs');
      var stacked = 0; // ms below this part
      parts.forEach(function (p) {
        var top = y(stacked + p.v), bottom = y(stacked);
        if (bottom - top > 0) el('rect', { x: x, y: top, width: barW, height: bottom - top, fill: p.color, 'data-part': p.name }, g);
        stacked += p.v;
      });
      var lockY = y(millis(c.lockHoldNanos));
      el('line', { x1: x - 2, x2: x + barW + 2, y1: lockY, y2: lockY, stroke: COLORS.lock, 'stroke-width': 2 }, g);
      if (checkpoints.length <= 30 || i % Math.ceil(checkpoints.length / 30) === 0)
        el('text', { x: x + barW / 2, y: s.h - 6, 'text-anchor': 'middle' }, svg, '#' + c.id);
    });
  }

  function drawLevels(perLevel) {
    var svg = document.getElementById('chart-levels');
    clear(svg);
    var s = size(svg);
    var max = Math.max.apply(null, perLevel.concat([1]));
    var rowH = Math.min(34, (s.h - 10) / Math.max(1, perLevel.length));
    perLevel.forEach(function (b, i) {
      var w = (s.w - 170) * b / max;
      var yy = 5 + i * rowH;
      el('text', { x: 4, y: yy + rowH / 2 + 3 }, svg, 'level ' + (i + 1));
      el('rect', { x: 60, y: yy + 4, width: Math.max(1, w), height: rowH - 8, fill: RANK_COLORS[i % RANK_COLORS.length],
                   'class': 'level', 'data-level': String(i + 1), 'data-bytes': String(b) }, svg);
      el('text', { x: 66 + w, y: yy + rowH / 2 + 3 }, svg, bytes(b));
    });
  }

  function drawTimeline(snaps) {
    var svg = document.getElementById('timeline');
    clear(svg);
    var s = size(svg);
    var live = snaps.live, dropped = snaps.dropped;
    if (live.length === 0 && dropped.length === 0) { empty(svg, 'no snapshot declared yet'); return; }
    var times = live.map(function (x) { return x.declared; }).concat(dropped.map(function (x) { return x.dropped; }));
    var t0 = Math.min.apply(null, times), t1 = Math.max.apply(null, times);
    if (t1 === t0) { t0 -= 1000; t1 += 1000; }
    var maxRank = live.reduce(function (a, x) { return Math.max(a, x.rank); }, 1);
    var pad = 70;
    var lanes = maxRank + 1; // ranks, then one lane for drops
    var laneH = (s.h - 24) / lanes;
    var x = function (t) { return pad + (t - t0) / (t1 - t0) * (s.w - pad - 14); };
    var laneY = function (i) { return 6 + laneH * (i + 0.5); };
    for (var r = maxRank; r >= 1; r--) {
      var ly = laneY(maxRank - r);
      el('line', { x1: pad, x2: s.w - 5, y1: ly, y2: ly, 'class': 'gridline' }, svg);
      el('text', { x: 4, y: ly + 3 }, svg, 'rank ' + r);
    }
    var dy = laneY(maxRank);
    el('line', { x1: pad, x2: s.w - 5, y1: dy, y2: dy, 'class': 'gridline' }, svg);
    el('text', { x: 4, y: dy + 3 }, svg, 'dropped');
    el('text', { x: pad, y: s.h - 4 }, svg, clock(t0));
    el('text', { x: s.w - 5, y: s.h - 4, 'text-anchor': 'end' }, svg, clock(t1));
    var maxBytes = live.reduce(function (a, x2) { return Math.max(a, x2.archiveBytes); }, 1);
    live.forEach(function (sn) {
      var radius = 3 + 6 * Math.sqrt(sn.archiveBytes / maxBytes);
      var c = el('circle', { cx: x(sn.declared), cy: laneY(maxRank - sn.rank), r: radius, fill: RANK_COLORS[(sn.rank - 1) % RANK_COLORS.length],
                             'fill-opacity': 0.8, 'class': 'snap', 'data-id': String(sn.id), 'data-rank': String(sn.rank),
                             'data-archive-bytes': String(sn.archiveBytes) }, svg);
      el('title', {}, c, 'snapshot ' + sn.id + ', rank ' + sn.rank + ', declared ' + new Date(sn.declared).toISOString() + ', ' + bytes(sn.archiveBytes));
    });
    dropped.forEach(function (d) {
      var cx = x(d.dropped);
      var g = el('g', { 'class': 'dropped', 'data-id': String(d.id) }, svg);
      el('path', { d: 'M' + (cx - 4) + ' ' + (dy - 4) + ' L' + (cx + 4) + ' ' + (dy + 4) + ' M' + (cx - 4) + ' ' + (dy + 4) + ' L' + (cx + 4) + ' ' + (dy - 4),
                   stroke: '#718096', 'stroke-width': 1.5 }, g);
      el('title', {}, g, 'snapshot ' + d.id + ' dropped ' + new Date(d.dropped).toISOString() + ': ' + d.why);
    });
  }

  function drawTable(snaps) {
    var body = document.querySelector('#snapshot-table tbody');
    body.textContent = '';
    var rows = snaps.live.map(function (x) { return { id: x.id, state: 'live', rank: x.rank, time: x.declared, bytes: x.archiveBytes, why: '' }; })
      .concat(snaps.dropped.map(function (x) { return { id: x.id, state: 'dropped', rank: '', time: x.dropped, bytes: null, why: x.why }; }));
    rows.sort(function (a, b) { return b.id - a.id; });
    rows.slice(0, 20).forEach(function (r) {
      var tr = document.createElement('tr');
      tr.className = r.state;
      tr.setAttribute('data-id', String(r.id));
      [String(r.id), r.state, String(r.rank), new Date(r.time).toISOString().replace('T', ' ').replace('Z', ''),
       r.bytes === null ? '' : bytes(r.bytes), r.why].forEach(function (text, i) {
        var td = document.createElement('td');
        if (i === 0 || i === 4) td.className = 'num';
        td.textContent = text;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }

  function render(metrics, series, checkpoints, snaps) {
    setStat('stat-writes', metrics.writes, count(metrics.writes));
    setStat('stat-wal', metrics.walBytesWritten, bytes(metrics.walBytesWritten));
    setStat('stat-checkpoints', metrics.checkpointsCompleted, count(metrics.checkpointsCompleted));
    setStat('stat-dirty', metrics.dirtyPages, count(metrics.dirtyPages));
    setStat('stat-throttled', metrics.throttledNanos, (metrics.throttledNanos / 1e6).toFixed(0) + ' ms');
    setStat('stat-archive', metrics.archiveBytes, bytes(metrics.archiveBytes));
    setStat('stat-live', snaps.live.length, count(snaps.live.length));
    setStat('stat-shipped', metrics.shipping.imagesSent, count(metrics.shipping.imagesSent));
    setStat('stat-ship-failed', metrics.shipping.imagesFailed, count(metrics.shipping.imagesFailed));
    setStat('stat-followers', metrics.shipping.followers, count(metrics.shipping.followers));
    var samples = series.samples;
    drawCheckpoints(checkpoints.checkpoints);
    lineChart(document.getElementById('chart-pages'), [
      { name: 'dirty', color: COLORS.dirty, points: samples.map(function (x) { return { t: x.time, v: x.dirtyPages }; }) },
      { name: 'copy-on-write', color: COLORS.cow, points: [{ t: samples.length ? samples[0].time : 0, v: 0 }].concat(deltas(samples, 'copyOnWritePages', false)) }],
      count);
    legend('legend-pages', [{ name: 'dirty pages', color: COLORS.dirty }, { name: 'copy-on-write pages per sample', color: COLORS.cow }]);
    lineChart(document.getElementById('chart-throttle'), [
      { name: 'throttled', color: COLORS.throttle, points: [{ t: samples.length ? samples[0].time : 0, v: 0 }].concat(deltas(samples, 'throttledNanos', true, 1e-6)) }],
      function (v) { return v.toFixed(v < 10 ? 1 : 0); });
    legend('legend-throttle', [{ name: 'ms throttled per second', color: COLORS.throttle }]);
    lineChart(document.getElementById('chart-bytes'), [
      { name: 'wal', color: COLORS.wal, points: samples.map(function (x) { return { t: x.time, v: x.walBytes }; }) },
      { name: 'archive', color: COLORS.archive, points: samples.map(function (x) { return { t: x.time, v: x.archiveBytes }; }) }], bytes);
    legend('legend-bytes', [{ name: 'WAL written since open', color: COLORS.wal }, { name: 'archive held', color: COLORS.archive }]);
    drawLevels(metrics.archiveBytesPerLevel);
    drawTimeline(snaps);
    drawTable(snaps);
  }

  function getJson(path) {
    return fetch(path, { cache: 'no-store' }).then(function (r) {
      if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
      return r.json();
    });
  }

  function poll() {
    Promise.all([getJson('/api/metrics'), getJson('/api/series'), getJson('/api/checkpoints'), getJson('/api/snapshots')])
      .then(function (all) {
        render(all[0], all[1], all[2], all[3]);
        polls++;
        document.body.setAttribute('data-polls', String(polls));
        var status = document.getElementById('status');
        status.textContent = 'live';
        status.className = 'status ok';
        document.getElementById('updated').textContent = 'updated ' + clock(Date.now());
      })
      .catch(function (e) {
        var status = document.getElementById('status');
        status.textContent = 'cannot reach the server: ' + e.message;
        status.className = 'status error';
      })
      .then(function () { window.setTimeout(poll, POLL_MS); });
  }

  poll();
})();
