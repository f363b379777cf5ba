(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var ROW = 18, AXIS = 22;
  var canvas = document.getElementById("timeline-canvas");
  var labels = document.getElementById("timeline-labels");
  var tooltip = document.getElementById("tooltip");
  var rows = data.rows, spans = data.spans, names = data.names;
  var byRow = rows.map(function () { return []; });
  var longest = rows.map(function () { return 0; });
  spans.forEach(function (s, i) {
    byRow[s[0]].push(i);
    if (s[2] > longest[s[0]]) { longest[s[0]] = s[2]; }
  });
  var palette = ["#5c6bc0", "#26a69a", "#8d6e63", "#ab47bc", "#789262", "#ec407a",
    "#42a5f5", "#ffa726", "#7e57c2", "#66bb6a"];
  var groupColor = {};
  function colorOf(row) {
    var r = rows[row];
    if (r.bucket) { return data.colors[r.bucket]; }
    if (!(r.group in groupColor)) {
      var h = 0;
      for (var k = 0; k < r.group.length; k++) { h = (h * 31 + r.group.charCodeAt(k)) >>> 0; }
      groupColor[r.group] = palette[h % palette.length];
    }
    return groupColor[r.group];
  }
  var height = AXIS + rows.length * ROW + 4;
  labels.style.height = height + "px";
  rows.forEach(function (r, i) {
    var d = document.createElement("div");
    d.dataset.row = String(i);
    d.style.top = (AXIS + i * ROW + 1) + "px";
    d.style.height = ROW + "px";
    d.textContent = r.process + " · " + r.group;
    d.title = d.textContent;
    if (i === 0 || rows[i - 1].process !== r.process) { d.className = "first"; }
    labels.appendChild(d);
  });
  var view = { t0: 0, t1: Math.max(data.wall_ms, 1e-6) };
  var ctx = canvas.getContext("2d");
  var width = 0;
  function x(t) { return (t - view.t0) / (view.t1 - view.t0) * width; }
  function tAt(px) { return view.t0 + px / width * (view.t1 - view.t0); }
  function fmt(ms) {
    if (Math.abs(ms) < 1e-9) { return "0"; }
    if (ms >= 1000) { return (ms / 1000).toFixed(3) + " s"; }
    if (ms >= 1) { return ms.toFixed(2) + " ms"; }
    return (ms * 1000).toFixed(1) + " µs";
  }
  function niceStep(span) {
    var raw = span / 8, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = [1, 2, 5, 10].find(function (m) { return raw <= m * mag; });
    return f * mag;
  }
  function draw() {
    var ratio = window.devicePixelRatio || 1;
    width = canvas.clientWidth;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.height = height + "px";
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#666";
    ctx.strokeStyle = "#eee";
    var step = niceStep(view.t1 - view.t0);
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      var px = Math.round(x(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(px, AXIS - 4); ctx.lineTo(px, height); ctx.stroke();
      ctx.fillText(fmt(t), px + 3, 12);
    }
    rows.forEach(function (r, i) {
      if (i % 2) {
        ctx.fillStyle = "rgba(0,0,0,0.025)";
        ctx.fillRect(0, AXIS + i * ROW, width, ROW);
      }
    });
    data.restarts.forEach(function (g) {
      var a = x(g.start), b = x(g.end);
      rows.forEach(function (r, i) {
        if (r.process !== g.process) { return; }
        ctx.fillStyle = "rgba(239,108,0,0.18)";
        ctx.fillRect(a, AXIS + i * ROW, b - a, ROW);
      });
    });
    var binMs = data.wall_ms / data.coverage_bins;
    Object.keys(data.coverage).forEach(function (key) {
      var row = Number(key), bins = data.coverage[key], y = AXIS + row * ROW + 3;
      ctx.fillStyle = colorOf(row);
      for (var b = 0; b < bins.length; b++) {
        if (!bins[b]) { continue; }
        var a = x(b * binMs), e = x((b + 1) * binMs);
        if (e < 0 || a > width) { continue; }
        ctx.globalAlpha = 0.15 + 0.45 * bins[b] / 255;
        ctx.fillRect(a, y, Math.max(1, e - a), ROW - 6);
      }
    });
    ctx.globalAlpha = 1;
    for (var i = 0; i < spans.length; i++) {
      var s = spans[i], a = x(s[1]), e = x(s[1] + s[2]);
      if (e < 0 || a > width) { continue; }
      ctx.fillStyle = colorOf(s[0]);
      ctx.fillRect(a, AXIS + s[0] * ROW + 2, Math.max(1, e - a), ROW - 4);
    }
    canvas.dataset.t0 = String(view.t0);
    canvas.dataset.t1 = String(view.t1);
  }
  function find(row, t) {
    var list = byRow[row], lo = 0, hi = list.length, best = -1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (spans[list[mid]][1] <= t) { lo = mid + 1; } else { hi = mid; }
    }
    var slack = (view.t1 - view.t0) / width;  // a bar is at least a pixel wide
    for (var k = lo - 1; k >= 0; k--) {
      var s = spans[list[k]];
      if (s[1] < t - longest[row] - slack) { break; }
      if (t <= s[1] + Math.max(s[2], slack) && (best < 0 || s[2] < spans[best][2])) {
        best = list[k];
      }
    }
    return best;
  }
  function line(cls, text) {
    var d = document.createElement("div");
    d.className = cls;
    d.textContent = text;
    return d;
  }
  function show(ev) {
    var box = canvas.getBoundingClientRect();
    var px = ev.clientX - box.left, py = ev.clientY - box.top;
    var row = Math.floor((py - AXIS) / ROW);
    tooltip.textContent = "";
    if (row < 0 || row >= rows.length) { tooltip.hidden = true; return; }
    var t = tAt(px), hit = find(row, t), r = rows[row];
    if (hit >= 0) {
      var s = spans[hit];
      tooltip.appendChild(line("name", names[s[3]]));
      tooltip.appendChild(line("where", r.process + " · " + r.group));
      tooltip.appendChild(line("duration", "duration " + fmt(s[2]) + ", from " + fmt(s[1])));
      var attrs = JSON.parse(data.attributes[hit]);
      Object.keys(attrs).forEach(function (key) {
        var d = line("attr", "");
        var b = document.createElement("b");
        b.textContent = key + ": ";
        d.appendChild(b);
        d.appendChild(document.createTextNode(JSON.stringify(attrs[key])));
        tooltip.appendChild(d);
      });
    } else {
      var gap = data.restarts.find(function (g) {
        return g.process === r.process && g.start <= t && t <= g.end;
      });
      var bins = data.coverage[String(row)];
      if (gap) {
        tooltip.appendChild(line("name", "restart"));
        tooltip.appendChild(line("duration", fmt(gap.end - gap.start) +
          " between one process lifetime of " + r.process + " and the next"));
      } else if (bins) {
        var bin = Math.floor(t / (data.wall_ms / data.coverage_bins));
        bin = Math.min(bins.length - 1, Math.max(0, bin));
        tooltip.appendChild(line("name", r.process + " · " + r.group));
        tooltip.appendChild(line("duration", Math.round(100 * bins[bin] / 255) +
          "% of this slice covered by spans too short or too many to draw one by one"));
      } else { tooltip.hidden = true; return; }
    }
    tooltip.hidden = false;
    var left = Math.min(ev.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
    tooltip.style.left = Math.max(4, left) + "px";
    tooltip.style.top = (ev.clientY + 14) + "px";
  }
  var drag = null;
  canvas.addEventListener("mousemove", function (ev) {
    if (drag) {
      var dt = (drag.x - ev.clientX) / width * (drag.t1 - drag.t0);
      view.t0 = drag.t0 + dt; view.t1 = drag.t1 + dt; draw();
      return;
    }
    show(ev);
  });
  canvas.addEventListener("mouseleave", function () { tooltip.hidden = true; drag = null; });
  canvas.addEventListener("mousedown", function (ev) {
    drag = { x: ev.clientX, t0: view.t0, t1: view.t1 };
    tooltip.hidden = true;
  });
  window.addEventListener("mouseup", function () { drag = null; });
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var box = canvas.getBoundingClientRect(), t = tAt(ev.clientX - box.left);
    var k = ev.deltaY > 0 ? 1.25 : 0.8;
    var span = Math.max((view.t1 - view.t0) * k, 1e-6);
    var share = (t - view.t0) / (view.t1 - view.t0);
    view.t0 = t - share * span; view.t1 = view.t0 + span; draw();
  }, { passive: false });
  canvas.addEventListener("dblclick", function () {
    view.t0 = 0; view.t1 = Math.max(data.wall_ms, 1e-6); draw();
  });
  window.addEventListener("resize", draw);
  draw();
  document.body.dataset.ready = "1";
})();
