// graphsvc explorer: one page, hash routes, the service's own GraphQL API, canvas for the
// GPU grid (10,000 GPUs draw in milliseconds; DOM cells do not), SVG for the fabric.
"use strict";

const $ = (sel, el = document) => el.querySelector(sel);
const $$ = (sel, el = document) => [...el.querySelectorAll(sel)];
const view = $("#view");
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
// [0,1,2,3,6] -> "0-3,6": GPU indices as nvidia-smi users write them
function ranges(xs) {
  const out = [];
  for (const x of [...xs].sort((a, b) => a - b)) {
    const last = out[out.length - 1];
    if (last && x === last[1] + 1) last[1] = x; else out.push([x, x]);
  }
  return out.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(",");
}
const natural = (a, b) => String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: "base" });
const tokenInput = $("#token");
tokenInput.value = localStorage.getItem("graphsvc-token") || "";
tokenInput.addEventListener("change", () => { localStorage.setItem("graphsvc-token", tokenInput.value); invalidate(); route(); });

// What an error body says, in any of the shapes the service writes ({error, message, detail}).
function reason(body) {
  const text = (x) => (typeof x === "string" ? x : "");
  return text(body?.error?.message) || text(body?.message) || text(body?.error) || text(body?.detail);
}

async function gql(query, variables = {}) {
  const headers = { "content-type": "application/json" };
  if (tokenInput.value) headers.authorization = `Bearer ${tokenInput.value}`;
  const resp = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  const body = await resp.json().catch(() => ({}));
  // The service's own reason ("unknown, expired or revoked token", a missing role) comes first:
  // a generic hint alone sent an operator with an expired token hunting for a missing one.
  const why = reason(body);
  if (resp.status === 401 || resp.status === 403) throw new Error(`the service refused the request (HTTP ${resp.status}${why ? `: ${why}` : ""}): put a valid API token in the header field`);
  if (resp.status !== 200) throw new Error(why || `HTTP ${resp.status}`);
  if (body.errors) throw new Error(body.errors[0].message);
  return body.data;
}

// Only the latest route may render: route() bumps `generation`, and a view wraps each await in
// `fresh` (made by since() when the view starts), which throws Superseded once a newer route has
// begun. Why: a slow view (the overview fetching a big cluster) finished after a newer, faster
// one and painted over it; the URL said Fabric, the page showed the overview.
let generation = 0;
class Superseded extends Error {}
function since(gen = generation) {
  return async (promise) => {
    const value = await promise;
    if (gen !== generation) throw new Superseded("a newer view was opened");
    return value;
  };
}

async function pages(field, query, args = {}) {
  const out = [];
  let after = null;
  for (;;) {
    const data = await gql(query, { ...args, after });
    out.push(...data[field].nodes);
    if (!data[field].pageInfo.hasNextPage) return out;
    after = data[field].pageInfo.endCursor;
  }
}

// ---- time -------------------------------------------------------------------------------
function span(seconds) {
  let s = Math.round(Math.abs(seconds));
  const parts = [];
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]]) {
    if (s >= size || (unit === "s" && !parts.length)) { parts.push(`${Math.floor(s / size)}${unit}`); s %= size; }
  }
  return parts.slice(0, 2).join(" ");
}
const countdown = (epoch) => { const d = epoch - Date.now() / 1000; return d >= 0 ? `in ${span(d)}` : `${span(d)} ago`; };
const stamp = (epoch) => new Date(epoch * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
function parseTtl(text) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$/i.exec(text || "");
  if (!m) return null;
  const seconds = Math.round(Number(m[1]) * { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2].toLowerCase()]);
  return seconds > 0 ? seconds : null;
}

// ---- banner, status, tooltip ------------------------------------------------------------
function banner(html, kind = "ok") {
  const b = $("#banner");
  b.innerHTML = `${html} <button type="button" class="dismiss" aria-label="dismiss">✕</button>`;
  b.className = kind === "error" ? "error" : "";
  b.hidden = false;
  $("button.dismiss", b).addEventListener("click", () => { b.hidden = true; });
}
const setStatus = (text) => { $("#status").textContent = text; };
const tip = $("#tip");
function showTip(ev, text) { tip.textContent = text; tip.hidden = false; tip.style.left = `${ev.clientX + 14}px`; tip.style.top = `${ev.clientY + 14}px`; }
const hideTip = () => { tip.hidden = true; };

// ---- colour: viridis (perceptually uniform, colour-blind safe), one metric at a time ------
const VIRIDIS = ["#440154", "#482878", "#3e4a89", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"];
function ramp(x) {
  const t = Math.max(0, Math.min(1, x)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(t));
  const f = t - i;
  const a = VIRIDIS[i], b = VIRIDIS[i + 1];
  const ch = (c, k) => parseInt(c.slice(1 + 2 * k, 3 + 2 * k), 16);
  return `rgb(${[0, 1, 2].map((k) => Math.round(ch(a, k) + f * (ch(b, k) - ch(a, k)))).join(",")})`;
}
const METRICS = {
  temperature: { label: "GPU temperature", unit: "°C", lo: 25, hi: 90, get: (g) => g.temperatureC },
  utilization: { label: "GPU utilization", unit: "%", lo: 0, hi: 100, get: (g) => g.utilizationPct },
};
const UNHEALTHY = new Set(["failed", "degraded", "unhealthy"]);
const healthy = (g) => !UNHEALTHY.has(g.health);
const usable = (g) => g.state === "free" && healthy(g);

// ---- the cluster, cached briefly (events invalidate it) ----------------------------------
const HOSTS = `query($after: String) { hosts(first: 500, after: $after) {
  nodes { name cluster rack scalableUnit gpuModel gpuCount freeGpus stale ageSeconds } pageInfo { hasNextPage endCursor } } }`;
// The overview reads GPUs as plain rows (gpuGrid): 10,000 GPUs in two requests.
async function gpuGrid() {
  const out = [];
  let after = null;
  for (;;) {
    const page = (await gql(`query($after: String) { gpuGrid(first: 5000, after: $after) { columns rows endCursor hasNextPage } }`, { after })).gpuGrid;
    for (const row of page.rows) {
      const g = Object.fromEntries(page.columns.map((c, i) => [c, row[i]]));
      g.host = { name: g.host };
      out.push(g);
    }
    if (!page.hasNextPage) return out;
    after = page.endCursor;
  }
}
let cache = null;
const invalidate = () => { cache = null; };
async function loadCluster() {
  if (cache && Date.now() - cache.at < 20_000) return cache;
  const started = performance.now();
  const [hosts, gpus] = await Promise.all([pages("hosts", HOSTS), gpuGrid()]);
  const byHost = {};
  for (const g of gpus) (byHost[g.host.name] ||= []).push(g);
  for (const list of Object.values(byHost)) list.sort((a, b) => a.index - b.index);
  hosts.sort((a, b) => natural(a.name, b.name));
  cache = { at: Date.now(), hosts, byHost, gpus, fetchMs: performance.now() - started };
  return cache;
}

// A group is what an operator thinks in: a SuperPOD scalable unit, an NVL72 rack (one NVLink
// domain across hosts), or a rack of PCIe hosts.
function groupHosts(hosts, byHost) {
  const groups = new Map();
  for (const h of hosts) {
    const gpus = byHost[h.name] || [];
    const shared = gpus.find((g) => g.nvlinkDomain && !g.nvlinkDomain.startsWith(`${h.name}/nvlink/`))?.nvlinkDomain;
    const key = h.scalableUnit || (shared ? `NVL${domainSize(shared, byHost)} ${h.rack || shared}` : h.rack) || "unplaced";
    // Scalable units and racks are named per cluster (su1 in every data hall): one group per
    // (cluster, name), or two clusters' "su1" became one group with both clusters' hosts.
    const id = JSON.stringify([h.cluster ?? "", key]);
    if (!groups.has(id)) groups.set(id, { key, hosts: [], shared: new Set(), cluster: h.cluster });
    groups.get(id).hosts.push(h);
    if (shared) groups.get(id).shared.add(shared);
  }
  return [...groups.values()].sort((a, b) => natural(a.key, b.key) || natural(a.cluster ?? "", b.cluster ?? ""));
}
// A group's heading: its cluster too where the page shows groups of more than one cluster.
const groupTitle = (group, clusters) => (clusters > 1 && group.cluster ? `${group.cluster} · ${group.key}` : group.key);
const clusterCount = (groups) => new Set(groups.map((g) => g.cluster ?? "")).size;
const domainSizes = new Map();
function domainSize(domain, byHost) {
  if (!domainSizes.has(domain)) {
    let n = 0;
    for (const list of Object.values(byHost)) for (const g of list) if (g.nvlinkDomain === domain) n++;
    domainSizes.set(domain, n);
  }
  return domainSizes.get(domain);
}

// ---- drawing one group on canvases --------------------------------------------------------
const CELL = { min: 6, max: 28 };
let zoom = Number(localStorage.getItem("graphsvc-zoom")) || 14;
// The largest canvas drawn, in device pixels: beyond a browser's limit (Chromium: 32,767 a side,
// 268 M pixels; iOS Safari: 16.7 M pixels) a canvas stays blank. A 2,200-host group at DPR 2 needed
// one 70,412 px tall, and showed nothing: a group is drawn on as many canvases as its rows need.
const CANVAS = { side: 16384, area: 16384 * 1024 };

// Sizes shared by every canvas of a group (the same columns and label width on each), the
// resolution (the screen's, unless a single row would not fit the limits) and rows per canvas.
function groupLayout(group, byHost) {
  const cell = zoom, gap = Math.max(1, Math.round(cell / 6)), pitch = cell + gap;
  const labels = cell >= 10;
  const labelW = labels ? Math.max(...group.hosts.map((h) => h.name.length)) * Math.max(6, cell * 0.5) + 8 : 0;
  const cols = Math.max(...group.hosts.map((h) => (byHost[h.name] || []).length), 1);
  const width = labelW + cols * pitch + 6;
  const ratio = Math.min(window.devicePixelRatio || 1, CANVAS.side / width, Math.sqrt(CANVAS.area / (width * (pitch + 6))));
  const tall = (Math.min(CANVAS.side, CANVAS.area / Math.ceil(width * ratio)) - 1) / ratio; // CSS pixels a canvas may have
  const rows = Math.max(1, Math.floor((tall - 6) / pitch));
  return { cell, gap, pitch, labels, labelW, cols, width, ratio, rows };
}

// Draw a group into `parent`: one canvas per `rows` hosts, each with its own hit boxes; answers the
// number of GPUs that match.
function drawGroup(parent, group, byHost, opts) {
  const layout = groupLayout(group, byHost);
  let drawn = 0;
  for (let i = 0; i < group.hosts.length; i += layout.rows) {
    const canvas = document.createElement("canvas");
    canvas.className = "cells";
    parent.appendChild(canvas);
    drawn += drawRows(canvas, group, group.hosts.slice(i, i + layout.rows), byHost, opts, layout);
    wireCanvas(canvas);
  }
  return drawn;
}

function drawRows(canvas, group, hosts, byHost, opts, layout) {
  const { metric, match, picked, dim } = opts;
  const { cell, pitch, labels, labelW, width, ratio } = layout;
  const height = hosts.length * pitch + 6;
  canvas.width = Math.ceil(width * ratio); canvas.height = Math.ceil(height * ratio);
  canvas.style.width = `${width}px`; canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  ctx.font = `${Math.max(9, Math.round(cell * 0.7))}px system-ui, sans-serif`;
  ctx.textBaseline = "middle";
  const boxes = [];
  const domainRows = new Map(); // multi-host NVLink domain -> [minRow, maxRow]
  let drawn = 0, chosen = 0;
  hosts.forEach((h, row) => {
    const y = 3 + row * pitch;
    const gpus = byHost[h.name] || [];
    if (labels) {
      ctx.fillStyle = h.stale ? "#8a1c1c" : "#1d2330";
      ctx.fillText(h.name + (h.stale ? " ⚠" : ""), 2, y + cell / 2);
    }
    boxes.push({ x: 0, y, w: labelW, h: cell, host: h });
    gpus.forEach((g, i) => {
      const x = labelW + 3 + i * pitch;
      const on = match(g, h);
      const faded = dim ? !picked.has(g.uuid) : !on;
      ctx.globalAlpha = faded ? 0.18 : 1;
      const v = METRICS[metric].get(g);
      const m = METRICS[metric];
      ctx.fillStyle = v == null ? "#c8ccd4" : ramp((v - m.lo) / (m.hi - m.lo));
      if (g.health === "failed") ctx.fillStyle = "#000";
      ctx.fillRect(x, y, cell, cell);
      if (metric === "temperature" && g.utilizationPct != null && cell >= 10) { // load: a bar, not a colour
        const bh = Math.round((cell - 2) * Math.max(0, Math.min(1, g.utilizationPct / 100)));
        ctx.fillStyle = "rgba(255,255,255,.85)";
        ctx.fillRect(x + 1, y + cell - 1 - bh, Math.max(2, Math.round(cell / 5)), bh);
      }
      if (g.state === "reserved") { // reserved: hatching, readable in any palette
        ctx.strokeStyle = "#fff"; ctx.lineWidth = Math.max(1, cell / 8);
        ctx.beginPath();
        for (let k = -cell; k < cell; k += Math.max(4, cell / 3)) { ctx.moveTo(x + k, y + cell); ctx.lineTo(x + k + cell, y); }
        ctx.save(); ctx.rect(x, y, cell, cell); ctx.clip(); ctx.stroke(); ctx.restore();
      }
      if (g.health === "failed") { // failed: white cross on black
        ctx.strokeStyle = "#fff"; ctx.lineWidth = Math.max(1.5, cell / 7);
        ctx.beginPath(); ctx.moveTo(x + 2, y + 2); ctx.lineTo(x + cell - 2, y + cell - 2); ctx.moveTo(x + cell - 2, y + 2); ctx.lineTo(x + 2, y + cell - 2); ctx.stroke();
      } else if (UNHEALTHY.has(g.health)) { // degraded: a black corner triangle
        ctx.fillStyle = "#000"; ctx.beginPath(); ctx.moveTo(x + cell * 0.45, y); ctx.lineTo(x + cell, y); ctx.lineTo(x + cell, y + cell * 0.55); ctx.fill();
      }
      ctx.globalAlpha = 1;
      if (picked.has(g.uuid)) {
        chosen++;
        ctx.lineWidth = 3; ctx.strokeStyle = "#000"; ctx.strokeRect(x - 2, y - 2, cell + 4, cell + 4);
        ctx.lineWidth = 1.5; ctx.strokeStyle = "#fff"; ctx.strokeRect(x - 0.5, y - 0.5, cell + 1, cell + 1);
      }
      if (on) drawn++;
      boxes.push({ x, y, w: cell, h: cell, gpu: g, host: h });
      if (g.nvlinkDomain && group.shared.has(g.nvlinkDomain)) {
        const r = domainRows.get(g.nvlinkDomain) || [row, row, i, i];
        domainRows.set(g.nvlinkDomain, [Math.min(r[0], row), Math.max(r[1], row), Math.min(r[2], i), Math.max(r[3], i)]);
      }
    });
    // one host's own NVLink domains (HGX board: all 8; PCIe bridges: pairs): a thin outline
    let start = 0;
    for (let i = 1; i <= gpus.length; i++) {
      const d = gpus[start]?.nvlinkDomain;
      if (i === gpus.length || gpus[i].nvlinkDomain !== d) {
        if (d && !group.shared.has(d) && i - start > 1) {
          ctx.lineWidth = 1; ctx.strokeStyle = "#1d2330"; ctx.setLineDash([]);
          ctx.strokeRect(labelW + 1.5 + start * pitch, y - 1.5, (i - start) * pitch, cell + 3);
        }
        start = i;
      }
    }
    if (h.stale) {
      ctx.setLineDash([4, 3]); ctx.lineWidth = 2; ctx.strokeStyle = "#8a1c1c";
      ctx.strokeRect(1, y - 2, width - 2, cell + 4); ctx.setLineDash([]);
    }
  });
  for (const [, [r0, r1, c0, c1]] of domainRows) { // NVL72: one domain across the rack's hosts
    ctx.lineWidth = 2.5; ctx.strokeStyle = "#1f5fb4";
    ctx.strokeRect(labelW + 1 + c0 * pitch, 1 + r0 * pitch, (c1 - c0 + 1) * pitch + 1, (r1 - r0 + 1) * pitch + 1);
  }
  canvas.dataset.cells = String(boxes.filter((b) => b.gpu).length);
  canvas.dataset.shown = String(drawn);
  canvas.dataset.picked = String(chosen);
  canvas._boxes = boxes;
  return drawn;
}

function hitBox(canvas, ev) {
  const r = canvas.getBoundingClientRect();
  const x = ev.clientX - r.left, y = ev.clientY - r.top;
  return (canvas._boxes || []).find((b) => x >= b.x && x < b.x + b.w + 2 && y >= b.y && y < b.y + b.h + 2);
}
function wireCanvas(canvas) {
  canvas.addEventListener("mousemove", (ev) => {
    const b = hitBox(canvas, ev);
    if (!b) return hideTip();
    if (!b.gpu) return showTip(ev, `${b.host.name}\nrack ${b.host.rack || "-"} · ${b.host.gpuModel || ""}\n${b.host.freeGpus ?? 0} free GPUs${b.host.stale ? `\nSTALE: facts ${Math.round(b.host.ageSeconds)} s old` : ""}`);
    const g = b.gpu;
    showTip(ev, `${b.host.name} GPU ${g.index} · ${g.model}\n${g.state} · health ${g.health || "unknown"}\n${g.temperatureC ?? "?"} °C · ${g.utilizationPct ?? "?"} % busy\nNVLink domain ${g.nvlinkDomain || "none"}`);
  });
  canvas.addEventListener("mouseleave", hideTip);
  canvas.addEventListener("click", (ev) => { const b = hitBox(canvas, ev); if (b) { hideTip(); location.hash = `#/host/${encodeURIComponent(b.host.name)}`; } });
}

function legend(metric) {
  const m = METRICS[metric];
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((t) => Math.round(m.lo + t * (m.hi - m.lo)));
  const key = (draw, text) => `<span class="key"><canvas width="14" height="14" data-key="${draw}"></canvas>${text}</span>`;
  return `<div class="legend" data-metric="${metric}">
    <span class="scale"><span>colour: ${m.label} (${m.unit})</span><canvas id="ramp" width="160" height="10"></canvas>
      <span class="ticks">${ticks.map((t) => `<span>${t}</span>`).join("")}</span></span>
    ${metric === "temperature" ? key("load", "white bar: utilization 0–100 %") : ""}
    ${key("reserved", "reserved (hatched)")}${key("degraded", "degraded")}${key("failed", "failed")}
    ${key("domain", "NVLink domain (one host)")}${key("nvl72", "NVL72 domain (rack)")}${key("stale", "stale host")}
    ${key("none", "no reading")}</div>`;
}
function paintLegend(metric) {
  const ramp10 = $("#ramp");
  if (ramp10) { const c = ramp10.getContext("2d"); for (let x = 0; x < 160; x++) { c.fillStyle = ramp(x / 159); c.fillRect(x, 0, 1, 10); } }
  for (const k of $$("canvas[data-key]")) {
    const c = k.getContext("2d"); const kind = k.dataset.key;
    c.fillStyle = kind === "failed" ? "#000" : kind === "none" ? "#c8ccd4" : ramp(0.45); c.fillRect(1, 1, 12, 12);
    if (kind === "load") { c.fillStyle = "rgba(255,255,255,.85)"; c.fillRect(2, 5, 3, 8); }
    if (kind === "reserved") { c.strokeStyle = "#fff"; c.lineWidth = 2; c.beginPath(); for (let i = -12; i < 12; i += 5) { c.moveTo(1 + i, 13); c.lineTo(13 + i, 1); } c.stroke(); }
    if (kind === "failed") { c.strokeStyle = "#fff"; c.lineWidth = 2; c.beginPath(); c.moveTo(3, 3); c.lineTo(11, 11); c.moveTo(11, 3); c.lineTo(3, 11); c.stroke(); }
    if (kind === "degraded") { c.fillStyle = "#000"; c.beginPath(); c.moveTo(7, 1); c.lineTo(13, 1); c.lineTo(13, 8); c.fill(); }
    if (kind === "domain") { c.strokeStyle = "#1d2330"; c.strokeRect(0.5, 0.5, 13, 13); }
    if (kind === "nvl72") { c.lineWidth = 2.5; c.strokeStyle = "#1f5fb4"; c.strokeRect(1, 1, 12, 12); }
    if (kind === "stale") { c.setLineDash([3, 2]); c.lineWidth = 2; c.strokeStyle = "#8a1c1c"; c.strokeRect(1, 1, 12, 12); }
  }
}

// ---- overview -----------------------------------------------------------------------------
const FILTERS = ["cluster", "model", "state", "health", "su", "rack"];
// `site=` named the cluster filter until stop 63 (a site is another concept: docs/sites.md); old links still work.
const clusterParam = (params) => params.get("cluster") || params.get("site") || "";
function matcher(params) {
  const f = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || ""]));
  f.cluster = clusterParam(params);
  return (g, h) => (!f.cluster || h.cluster === f.cluster) && (!f.model || modelMatches(g.model, f.model))
    && (!f.state || (f.state === "usable" ? usable(g) : g.state === f.state))
    && (!f.health || (f.health === "ok" ? healthy(g) : !healthy(g)))
    && (!f.su || h.scalableUnit === f.su) && (!f.rack || h.rack === f.rack);
}
// A model as the select lists it, or a family as placement reads one (`?model=GB200`: every model
// whose name holds it, any case); before, a family in the URL matched nothing and showed an empty page.
const modelMatches = (model, wanted) => model === wanted || (model || "").toLowerCase().includes(wanted.toLowerCase());
function withCurrent(values, current, note) {
  return current && !values.some(([v]) => v === current) ? [[current, `${current} ${note}`], ...values] : values;
}
function select(name, label, values, current) {
  return `<label>${label} <select name="${name}"><option value="">all</option>${values.map(([v, t]) => `<option value="${esc(v)}"${v === current ? " selected" : ""}>${esc(t)}</option>`).join("")}</select></label>`;
}
const uniq = (xs) => [...new Set(xs.filter((x) => x != null && x !== ""))].sort(natural).map((x) => [x, x]);

function counts(gpus, hosts) {
  const free = gpus.filter(usable).length;
  const freeBad = gpus.filter((g) => g.state === "free" && !healthy(g)).length;
  const reserved = gpus.filter((g) => g.state === "reserved").length;
  const bad = gpus.filter((g) => !healthy(g)).length;
  const stale = hosts.filter((h) => h.stale).length;
  return { free, freeBad, reserved, bad, stale };
}

async function overview(params) {
  const metric = params.get("color") === "utilization" ? "utilization" : "temperature";
  const data = await since()(loadCluster());
  const started = performance.now();
  const { hosts, byHost, gpus } = data;
  const match = matcher(params);
  const hide = params.get("all") !== "1";
  const total = counts(gpus, hosts);
  const groups = groupHosts(hosts, byHost);
  view.innerHTML = `<h2>Cluster: ${hosts.length} hosts, ${gpus.length} GPUs, <span id="free-total">${total.free}</span> free and healthy,
      ${total.reserved} reserved, ${total.bad} unhealthy${total.freeBad ? ` (${total.freeBad} of them idle)` : ""}, ${total.stale} stale hosts</h2>
    <form class="toolbar" id="filters">
      ${select("cluster", "cluster", uniq(hosts.map((h) => h.cluster)), clusterParam(params))}
      ${select("model", "model", withCurrent(uniq(gpus.map((g) => g.model)), params.get("model"), "(every model naming it)"), params.get("model"))}
      ${select("state", "state", [["usable", "free and healthy"], ["free", "free"], ["reserved", "reserved"]], params.get("state"))}
      ${select("health", "health", [["ok", "healthy"], ["bad", "degraded or failed"]], params.get("health"))}
      ${select("su", "scalable unit", uniq(hosts.map((h) => h.scalableUnit)), params.get("su"))}
      ${select("rack", "rack", uniq(hosts.map((h) => h.rack)), params.get("rack"))}
      <label><input type="checkbox" name="all" value="1"${hide ? "" : " checked"}> show non-matching hosts</label>
      <label>colour <select name="color"><option value="temperature">temperature</option><option value="utilization"${metric === "utilization" ? " selected" : ""}>utilization</option></select></label>
      <span>zoom <button type="button" data-zoom="-2" aria-label="zoom out">−</button> <button type="button" data-zoom="2" aria-label="zoom in">+</button></span>
      <span id="shown"></span>
    </form>
    ${legend(metric)}
    <div class="groups"></div>`;
  paintLegend(metric);
  const box = $(".groups", view);
  let shown = 0;
  const frag = document.createDocumentFragment();
  const visible = groups.map((group) => ({ ...group, hosts: group.hosts.filter((h) => !hide || (byHost[h.name] || []).some((g) => match(g, h))) }))
    .filter((group) => group.hosts.length);
  const clusters = clusterCount(visible);
  for (const group of visible) {
    const members = group.hosts;
    const all = members.flatMap((h) => byHost[h.name] || []);
    const c = counts(all, members);
    const model = uniq(all.map((g) => g.model)).map(([m]) => m).join(", ");
    const sec = document.createElement("section");
    sec.className = "group";
    sec.dataset.group = group.key;
    sec.dataset.cluster = group.cluster ?? "";
    sec.innerHTML = `<h3>${esc(groupTitle(group, clusters))} <small>${esc(model)} · ${members.length} hosts${group.shared.size ? " · one NVLink domain" : ""}</small></h3>
      <div class="counts"><b class="free">${c.free}</b> free · <b>${c.reserved}</b> reserved · <b class="bad">${c.bad}</b> unhealthy${c.stale ? ` · <b class="bad">${c.stale}</b> stale hosts` : ""}</div>`;
    shown += drawGroup(sec, group, byHost, { metric, match, picked: new Set(), dim: false });
    frag.appendChild(sec);
  }
  box.appendChild(frag);
  $("#shown").textContent = `${shown} GPUs match`;
  const form = $("#filters");
  form.addEventListener("change", () => {
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v && !(k === "color" && v === "temperature")) q.set(k, v);
    location.hash = `#/overview${q.toString() ? `?${q}` : ""}`;
  });
  $$("button[data-zoom]", form).forEach((b) => b.addEventListener("click", () => setZoom(zoom + Number(b.dataset.zoom))));
  view.dataset.renderMs = String(Math.round(performance.now() - started));
  view.dataset.fetchMs = String(Math.round(data.fetchMs));
  view.dataset.gpus = String(gpus.length);
}
function setZoom(z) {
  zoom = Math.max(CELL.min, Math.min(CELL.max, z));
  localStorage.setItem("graphsvc-zoom", String(zoom));
  route();
}
view.addEventListener("wheel", (ev) => {
  if (!ev.ctrlKey || !$("canvas.cells", view)) return;
  ev.preventDefault();
  setZoom(zoom + (ev.deltaY < 0 ? 2 : -2));
}, { passive: false });

// ---- host -----------------------------------------------------------------------------------
const CLASSES = {
  NV: "NVLink: the number is the link count (NVSwitch lanes on HGX/NVL72)",
  PIX: "same PCIe switch (at most one bridge)",
  PXB: "different PCIe switches under a common upstream switch",
  PHB: "through one PCIe host bridge (the CPU's root complex)",
  NODE: "across host bridges within one NUMA node",
  SYS: "across the CPU interconnect between NUMA nodes",
};
const classOf = (c) => (c === "X" ? "X" : c.startsWith("NV") ? "NV" : c);

async function host(name) {
  const q = `query($n: String!) { host(name: $n) { name cluster rack scalableUnit cpuModel ageSeconds stale
    gpus { uuid index model state health temperatureC utilizationPct nvlinkDomain host { name } }
    migSlices { uuid profile gpuIndex memoryMiB state reservation }
    nvlinkMatrix { gpuIndices rows } placement { index numaNode pcieSwitch nvswitchLanes }
    numaNodes { index cpus } nics { name rateGbps state rail numaNode leaf pcieSwitch servesGpus } } }`;
  const h = (await since()(gql(q, { n: name }))).host;
  if (!h) { view.innerHTML = `<h2>No host named ${esc(name)}</h2><p><a href="#/search?q=${encodeURIComponent(name)}">search for ${esc(name)}</a></p>`; return; }
  const m = h.nvlinkMatrix;
  const swatch = (g) => { const v = g.temperatureC; return `<span class="swatch" style="background:${v == null ? "#c8ccd4" : ramp((v - 25) / 65)}"></span>`; };
  const nics = [...h.nics].sort((a, b) => (a.rail ?? 99) - (b.rail ?? 99) || natural(a.name, b.name));
  const used = new Set(m.rows.flat().map(classOf));
  const free = h.gpus.filter(usable).length;
  // Scalable units, racks and leaves are named per cluster: every link names the host's cluster.
  const inCluster = h.cluster ? `cluster=${encodeURIComponent(h.cluster)}&` : "";
  const group = h.scalableUnit ? `<a href="#/overview?${inCluster}su=${encodeURIComponent(h.scalableUnit)}">${esc(h.scalableUnit)}</a>` : "-";
  view.innerHTML = `<h2>${esc(h.name)}</h2>
    <p>cluster ${h.cluster ? `<a href="#/overview?cluster=${encodeURIComponent(h.cluster)}">${esc(h.cluster)}</a>` : "-"} · rack <a href="#/overview?${inCluster}rack=${encodeURIComponent(h.rack || "")}">${esc(h.rack || "-")}</a> · scalable unit ${group} · ${esc(h.cpuModel || "")}
      · ${free} of ${h.gpus.length} GPUs free and healthy · facts ${Math.round(h.ageSeconds)} s old${h.stale ? ' · <b class="error">stale</b>' : ""}
      · <a href="#/place?q=${encodeURIComponent(`${h.gpus.length} prefer=${h.name}`)}">place here</a></p>
    <h3>GPUs</h3><table id="gpus"><tr><th>GPU</th><th>model</th><th>state</th><th>health</th><th>°C</th><th>util %</th><th>NVLink domain</th><th>NUMA</th><th>PCIe switch</th></tr>
    ${h.gpus.map((g) => { const p = h.placement.find((x) => x.index === g.index) || {};
      return `<tr data-uuid="${esc(g.uuid)}"><td>${g.index}${swatch(g)}</td><td>${esc(g.model)}</td><td>${esc(g.state)}</td><td${healthy(g) ? "" : ' class="error"'}>${esc(g.health || "unknown")}</td><td>${g.temperatureC ?? ""}</td><td>${g.utilizationPct ?? ""}</td><td>${esc(g.nvlinkDomain || "")}</td><td>${p.numaNode ?? ""}</td><td>${esc(p.pcieSwitch || "")}</td></tr>`; }).join("")}</table>
    ${h.migSlices.length ? `<h3>MIG slices</h3><table id="mig-slices"><tr><th>GPU</th><th>slice</th><th>memory MiB</th><th>state</th><th>reservation</th><th>uuid</th></tr>
    ${h.migSlices.map((x) => `<tr data-uuid="${esc(x.uuid)}"><td>${x.gpuIndex}</td><td>${esc(x.profile)}</td><td>${x.memoryMiB ?? ""}</td><td>${esc(x.state)}</td><td>${x.reservation ? `<a href="#/reservations">${esc(x.reservation)}</a>` : ""}</td><td><code>${esc(x.uuid)}</code></td></tr>`).join("")}</table>` : ""}
    <h3>GPU to GPU (like <code>nvidia-smi topo -m</code>)</h3><table id="matrix"><tr><th></th>${m.gpuIndices.map((i) => `<th>GPU${i}</th>`).join("")}</tr>
    ${m.rows.map((row, r) => `<tr><th>GPU${m.gpuIndices[r]}</th>${row.map((c) => `<td class="c-${classOf(c)}">${esc(c)}</td>`).join("")}</tr>`).join("")}</table>
    <dl class="classes">${Object.entries(CLASSES).filter(([k]) => used.has(k)).map(([k, v]) => `<dt>${k === "NV" ? "NV#" : k}</dt><dd>${esc(v)}</dd>`).join("")}</dl>
    <h3>NICs by rail</h3><table id="nics"><tr><th>rail</th><th>NIC</th><th>Gb/s</th><th>state</th><th>NUMA</th><th>leaf</th><th>PCIe switch</th><th>serves GPUs</th></tr>
    ${nics.map((n) => `<tr><td>${n.rail ?? ""}</td><td>${esc(n.name)}</td><td>${n.rateGbps ?? ""}</td><td>${esc(n.state)}</td><td>${n.numaNode ?? ""}</td><td>${n.leaf ? `<a href="#/fabric?${inCluster}leaf=${encodeURIComponent(n.leaf)}">${esc(n.leaf)}</a>` : ""}</td><td>${esc(n.pcieSwitch || "")}</td><td>${n.servesGpus.join(", ")}</td></tr>`).join("")}</table>
    <h3>NUMA</h3><table><tr><th>node</th><th>CPUs</th></tr>${h.numaNodes.map((n) => `<tr><td>${n.index}</td><td>${esc(n.cpus)}</td></tr>`).join("")}</table>`;
}

// ---- fabric: scalable units across, rails down; spines and core above ----------------------
// The cluster of a switch, which neither a search hit nor an old link names: a leaf's by the hosts
// cabled to it, another tier's by looking through each cluster's switches (`fabrics`: the clusters
// with switches, when the caller has them). Null where no cluster has it.
async function switchCluster(name, fabrics = null) {
  const cabled = (await gql(`query($l: String!) { leafHosts(leaf: $l) { name } }`, { l: name })).leafHosts;
  if (cabled.length) return (await gql(`query($n: String!) { host(name: $n) { cluster } }`, { n: cabled[0].name })).host?.cluster ?? null;
  fabrics ||= (await gql(`{ clusterSummary { clusters { name switches } } }`)).clusterSummary.clusters.filter((c) => c.switches);
  for (const c of fabrics) {
    let after = null;
    for (;;) {
      const page = (await gql(`query($c: String!, $a: String) { fabric(cluster: $c, first: 500, after: $a) { switches { name } pageInfo { hasNextPage endCursor } } }`, { c: c.name, a: after })).fabric;
      if (page.switches.some((x) => x.name === name)) return c.name;
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
  }
  return null;
}
async function fabric(params) {
  const started = performance.now();
  const fresh = since();
  // One cluster's fabric: the one the link names, else the selected switch's (a link from before
  // links named the cluster), else the first with switches (the view asked for a cluster named
  // "default", and showed nothing where no cluster has that name: a probe's case).
  const fabrics = (await fresh(gql(`{ clusterSummary { clusters { name switches } } }`))).clusterSummary.clusters.filter((c) => c.switches);
  const cluster = params.get("cluster") || (params.get("leaf") && await fresh(switchCluster(params.get("leaf"), fabrics))) || (fabrics[0] || { name: "default" }).name;
  const switches = [];
  let after = null;
  for (;;) {
    const data = (await fresh(gql(`query($c: String!, $a: String) { fabric(cluster: $c, first: 500, after: $a) { switches { name tier scalableUnit rail nics freeGpus uplinks { to bandwidthGbps } } pageInfo { hasNextPage endCursor } } }`, { c: cluster, a: after }))).fabric;
    switches.push(...data.switches);
    if (!data.pageInfo.hasNextPage) break;
    after = data.pageInfo.endCursor;
  }
  const load = Object.fromEntries((await fresh(gql(`query($c: String!) { leafLoad(cluster: $c) { leaf gpus freeGpus } }`, { c: cluster }))).leafLoad.map((l) => [l.leaf, l]));
  const leaves = switches.filter((s) => s.tier === "leaf");
  const upper = ["core", "spine"].map((t) => switches.filter((s) => s.tier === t).sort((a, b) => natural(a.name, b.name)));
  const units = [...new Set(leaves.map((s) => s.scalableUnit || "other"))].sort(natural);
  const rails = [...new Set(leaves.map((s) => s.rail).filter((r) => r != null))].sort((a, b) => a - b);
  if (!rails.length || leaves.some((s) => s.rail == null)) rails.push(-1); // leaves without a rail: stacked in their column
  const colW = 118, rowH = 34, boxW = 104, boxH = 26, left = 70, top = 40 + upper.filter((u) => u.length).length * 70;
  const width = Math.max(900, left + units.length * colW + 20);
  const pos = {};
  const nodes = [];
  upper.filter((u) => u.length).forEach((tier, row) => {
    const y = 40 + row * 70;
    tier.forEach((s, i) => {
      const x = left + (i + 0.5) * (width - left - 20) / tier.length;
      pos[s.name] = [x, y];
      const short = s.name.split(/[-_]/).pop();
      nodes.push(`<g class="switch" data-name="${esc(s.name)}" data-tier="${s.tier}"><rect x="${x - 24}" y="${y - 9}" width="48" height="18" rx="3" fill="${s.tier === "core" ? "#e7d4e8" : "#c6dbef"}" stroke="#5a6b8c"/><text x="${x}" y="${y + 3}" text-anchor="middle">${esc(short.slice(-9))}</text><title>${esc(s.name)} (${s.tier}), ${s.uplinks.length} uplinks</title></g>`);
    });
    nodes.push(`<text class="head" x="4" y="${y + 4}">${tier[0].tier}</text>`);
  });
  const buckets = {};
  for (const s of leaves) (buckets[`${s.scalableUnit || "other"}|${s.rail ?? -1}`] ||= []).push(s);
  // In a column that also has rail leaves, the leaves without a rail go below the last rail row.
  const railRows = rails.filter((r) => r >= 0).length;
  const below = (u) => (leaves.some((s) => (s.scalableUnit || "other") === u && s.rail != null) ? railRows : 0);
  units.forEach((u, ci) => {
    nodes.push(`<text class="head" x="${left + ci * colW + boxW / 2}" y="${top - 12}" text-anchor="middle">${esc(u)}</text>`);
    rails.forEach((r, ri) => {
      (buckets[`${u}|${r}`] || []).sort((a, b) => natural(a.name, b.name)).forEach((s, k) => {
        const x = left + ci * colW, y = top + (r >= 0 ? ri : below(u) + k) * rowH;
        pos[s.name] = [x + boxW / 2, y];
        const l = load[s.name] || { gpus: 0, freeGpus: 0 };
        const frac = l.gpus ? l.freeGpus / l.gpus : 0;
        nodes.push(`<g class="switch leaf" data-name="${esc(s.name)}" data-tier="leaf" data-su="${esc(s.scalableUnit || "")}" data-free="${l.freeGpus}">
          <rect x="${x}" y="${y}" width="${boxW}" height="${boxH}" rx="3" fill="#f3f5f9" stroke="#5a6b8c"/>
          <rect x="${x + 1}" y="${y + boxH - 5}" width="${(boxW - 2) * frac}" height="4" fill="${ramp(0.62)}"/>
          <text x="${x + 4}" y="${y + 11}">${esc(r >= 0 ? `rail ${r}` : s.name)}</text>
          <text x="${x + 4}" y="${y + 20}">${l.freeGpus}/${l.gpus} free</text>
          <title>${esc(s.name)}: ${l.freeGpus} of ${l.gpus} GPUs behind it free and healthy; ${s.nics} host NICs</title></g>`);
      });
    });
  });
  rails.forEach((r, ri) => { if (r >= 0) nodes.push(`<text class="head" x="4" y="${top + ri * rowH + 16}">rail ${r}</text>`); });
  const lines = switches.flatMap((s) => s.uplinks.filter((u) => pos[u.to] && pos[s.name]).map((u) => {
    const [x1, y1] = pos[s.name]; const [x2, y2] = pos[u.to];
    return `<line class="up" data-from="${esc(s.name)}" data-to="${esc(u.to)}" x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}"/>`;
  }));
  const stacked = Math.max(0, ...units.map((u) => below(u) + (buckets[`${u}|-1`] || []).length));
  const height = top + Math.max(railRows, stacked) * rowH + 30;
  const others = fabrics.length > 1 ? ` · clusters: ${fabrics.map((c) => c.name === cluster ? `<b>${esc(c.name)}</b>` : `<a href="#/fabric?cluster=${encodeURIComponent(c.name)}">${esc(c.name)}</a>`).join(", ")}` : "";
  view.innerHTML = `<h2 id="fabric-title" data-cluster="${esc(cluster)}">Fabric of ${esc(cluster)}: ${switches.length} switches (${[...upper, leaves].filter((c) => c.length).map((c) => `${c.length} ${c[0].tier}`).join(", ")})</h2>
    <p id="fabric-clusters">${others}</p>
    <p class="legend">scalable units across, rails down; each leaf shows the GPUs whose nearest NIC is cabled to it (free and healthy / all) with a bar; click a switch for its links and hosts</p>
    <div class="fabric-wrap"><svg id="fabric" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">${lines.join("")}${nodes.join("")}</svg>
    <aside id="leaf-panel"><p>Select a switch.</p></aside></div>`;
  const pick = async (name, guard = (x) => x) => {
    $$("svg#fabric g.switch").forEach((g) => g.classList.toggle("selected", g.dataset.name === name));
    $$("svg#fabric line.up").forEach((l) => l.classList.toggle("hot", l.dataset.from === name || l.dataset.to === name));
    const s = switches.find((x) => x.name === name);
    if (!s) return;
    const panel = $("#leaf-panel");
    const peers = s.uplinks.map((u) => u.to);
    const downs = switches.filter((x) => x.uplinks.some((u) => u.to === name)).map((x) => x.name);
    let hostsHtml = "";
    if (s.tier === "leaf") {
      const hs = (await guard(gql(`query($l: String!) { leafHosts(leaf: $l) { name freeGpus stale } }`, { l: name }))).leafHosts;
      hs.sort((a, b) => natural(a.name, b.name));
      hostsHtml = `<h4>${hs.length} hosts cabled to it</h4><ul class="leaf-hosts">${hs.map((h) => `<li><a href="#/host/${encodeURIComponent(h.name)}">${esc(h.name)}</a> <small>${h.freeGpus ?? 0} free${h.stale ? " · stale" : ""}</small></li>`).join("")}</ul>`;
    }
    const l = load[name];
    panel.innerHTML = `<h3>${esc(name)}</h3><p>${s.tier}${s.rail != null ? ` · rail ${s.rail}` : ""}${s.scalableUnit ? ` · ${esc(s.scalableUnit)}` : ""}${l ? ` · ${l.freeGpus}/${l.gpus} GPUs free` : ""}</p>
      <p>uplinks: ${peers.map(esc).join(", ") || "none"}</p>${downs.length ? `<p>${downs.length} switches below</p>` : ""}${hostsHtml}`;
  };
  $$("svg#fabric g.switch").forEach((g) => g.addEventListener("click", () => { history.replaceState(null, "", `#/fabric?cluster=${encodeURIComponent(cluster)}&leaf=${encodeURIComponent(g.dataset.name)}`); pick(g.dataset.name); }));
  if (params.get("leaf")) await pick(params.get("leaf"), fresh);
  view.dataset.renderMs = String(Math.round(performance.now() - started));
}

// ---- reservations ---------------------------------------------------------------------------
// Elastic reservations (docs/reservations.md): resize, preempt with a grace period (plan ->
// confirm -> preempt), the warning on victims, failed-GPU replacement and phase plans, all
// through GraphQL; every expected failure is an `Error` (its message goes in the banner).
let sortBy = { key: "default", dir: 1 };
const openPanels = new Set(); // reservation ids whose elastic panel is open (kept across refreshes)
const hours = (x) => `${x.toFixed(2)} GPU-h`;
const failure = (out) => esc(out.message || (out.reasons || []).map((r) => r.message).join("; ") || out.__typename);
// A click handler that cannot leave the page blank or silent: errors go to the banner.
const act = (fn) => async (ev) => {
  const b = ev.currentTarget;
  if (ev.type === "submit") ev.preventDefault();
  if (b.disabled) return;
  b.disabled = true;
  try { await fn(ev); } catch (err) { if (!(err instanceof Superseded)) banner(`Failed: ${esc(err.message)}`, "error"); } finally { b.disabled = false; }
};
const RES_FIELDS = "id holder state expiresAt endedAt priority preemptible preemptBy preemptAt graceEndsAt gpus { uuid index host { name } } migSlices { uuid profile gpuIndex host held }";

// The view's reservations: every active and pending one (the state filter, page by page: the
// service answers at most 500 a page, by id), then ended ones (kept for a week) up to ENDED_SHOWN,
// the rest only counted. Why: one read of 500 by id hid live reservations once a busy week had
// left more than 500 (a probe's case: 20 active, 580 ended, active ones missing).
const RES_PAGE = 500, ENDED_SHOWN = 500;
async function readReservations(fresh) {
  const page = async (state, after, fields) => (await fresh(gql(`query($s: String, $a: String, $n: Int!) {
    reservations(filter: {state: $s}, first: $n, after: $a) { ${fields} } }`, { s: state, a: after, n: RES_PAGE }))).reservations;
  const every = async (state) => {
    const out = [];
    for (let after = null; ;) {
      const rows = await page(state, after, RES_FIELDS);
      out.push(...rows);
      if (rows.length < RES_PAGE) return out;
      after = rows[rows.length - 1].id;
    }
  };
  const [active, pending] = await Promise.all([every("active"), every("pending")]);
  const ended = [];
  let more = 0;
  for (let after = null; ;) {
    const rows = await page(null, after, ended.length < ENDED_SHOWN ? RES_FIELDS : "id state");
    for (const r of rows) {
      if (r.state === "active" || r.state === "pending") continue; // read above
      if (ended.length < ENDED_SHOWN) ended.push(r); else more++;
    }
    if (rows.length < RES_PAGE) break;
    after = rows[rows.length - 1].id;
  }
  return { rows: [...active, ...pending, ...ended], more };
}

async function reservations() {
  const { rows, more } = await readReservations(since());
  const live = rows.filter((r) => r.state === "active").length;
  const pending = rows.filter((r) => r.state === "pending").length;
  const keys = {
    default: (r) => [r.state === "active" || r.state === "pending" ? 0 : 1, r.state === "active" ? r.expiresAt : r.state === "pending" ? r.graceEndsAt || 0 : -r.expiresAt],
    id: (r) => [r.id], holder: (r) => [r.holder], state: (r) => [r.state], gpus: (r) => [r.gpus.length],
    priority: (r) => [r.priority], expires: (r) => [r.expiresAt],
  };
  const key = keys[sortBy.key] || keys.default;
  rows.sort((a, b) => { const x = key(a), y = key(b); for (let i = 0; i < x.length; i++) { const c = typeof x[i] === "number" ? x[i] - y[i] : natural(x[i], y[i]); if (c) return c * sortBy.dir; } return natural(a.id, b.id); });
  const head = (k, label) => `<th class="sort${sortBy.key === k ? (sortBy.dir > 0 ? " asc" : " desc") : ""}" data-sort="${k}">${label}</th>`;
  const where = (r) => { const by = {}; for (const g of r.gpus) (by[g.host.name] ||= []).push(g.index); return Object.entries(by).map(([h, ix]) => `<a href="#/host/${encodeURIComponent(h)}">${esc(h)}</a>:${ranges(ix)}`).join(" ")
    + (r.migSlices || []).map((x) => ` <span class="mig-slice${x.held ? "" : " error"}" title="${esc(x.uuid)}${x.held ? "" : " (lost)"}"><a href="#/host/${encodeURIComponent(x.host)}">${esc(x.host)}</a>:${x.gpuIndex}/${esc(x.profile)}</span>`).join(""); };
  const size = (r) => (r.migSlices && r.migSlices.length && !r.gpus.length ? plural(r.migSlices.length, "MIG slice") : r.gpus.length);
  const state = (r) => {
    if (r.state === "pending") return `pending <div class="note pending-note">preempting: GPUs move ${r.graceEndsAt ? `at ${stamp(r.graceEndsAt)} · <span class="countdown" data-at="${r.graceEndsAt}">${countdown(r.graceEndsAt)}</span>` : "when the grace period ends"} (or when the victims release)</div>`;
    if (r.state === "active" && r.preemptBy) return `active <div class="note warning" data-by="${esc(r.preemptBy)}">⚠ preempted by ${esc(r.preemptBy)}: checkpoint and release before ${stamp(r.preemptAt)} · <span class="countdown" data-at="${r.preemptAt}">${countdown(r.preemptAt)}</span></div>`;
    return esc(r.state);
  };
  const actions = (r) => (r.state !== "active" ? "" : `<button class="renew" data-id="${esc(r.id)}">+1h</button> <button class="release" data-id="${esc(r.id)}">release</button> <input class="size" type="number" min="1" max="4096" value="${r.gpus.length}" data-id="${esc(r.id)}" title="new size: grows keeping the layout, or frees the GPUs that leave the largest free block"> <button class="resize" data-id="${esc(r.id)}">resize</button> <button class="elastic" data-id="${esc(r.id)}" aria-expanded="${openPanels.has(r.id)}">phases & repair</button>`);
  if (!$("#res-table", view)) {
    view.innerHTML = `<h2 id="res-title"></h2>
      <p class="legend">active and pending first, soonest expiry first; click a column to sort. Release asks for confirmation; +1h renews the lease; “phases &amp; repair” shows the ranks, the phase plan and failed-GPU replacement.</p>
      <section id="preempt"><h3>Preempt</h3>
      <form id="preempt-form" novalidate title="reserve with a priority; if nothing is free, lower-priority preemptible jobs get a grace period to checkpoint before their GPUs move">
        <label>holder <input name="holder" value="${esc(localStorage.getItem("graphsvc-holder") || "explorer")}" size="10"></label>
        <label>GPUs <input name="gpus" type="number" min="1" max="4096" value="8" size="4"></label>
        <label>model <input name="model" placeholder="any" size="8"></label>
        <label>scale-up <select name="nvlink"><option value="NONE">any placement</option><option value="ANY">NVLink between some</option><option value="FULL_MESH">full mesh</option></select></label>
        <label>priority <input name="priority" type="number" value="10" size="3"></label>
        <label>grace <input name="grace" value="5m" size="4" title="how long the victims have to checkpoint: 90s, 5m (at most 1h)"></label>
        <label>lease <input name="ttl" value="1h" size="4"></label>
        <button class="plan">plan</button>
      </form><div id="preempt-plan"></div></section>
      <div id="res-table"></div>`;
    wirePreempt();
  }
  $("#res-title", view).textContent = `Reservations: ${live} active${pending ? `, ${pending} pending` : ""} of ${rows.length}${more ? `; ${more} more ended not listed` : ""}`;
  const keep = new Map($$("tr.panel", view).map((tr) => [tr.dataset.for, tr]));
  // What the operator has under way survives a refresh (an event redraws the table within a
  // second): a release awaiting its confirmation, a size typed and not yet applied.
  const confirming = new Set($$("button.release.confirm", view).map((b) => b.dataset.id));
  const typed = new Map($$("input.size", view).filter((i) => i.value !== i.defaultValue).map((i) => [i.dataset.id, i.value]));
  $("#res-table", view).innerHTML = `<table id="reservations"><tr>${head("id", "id")}${head("holder", "holder")}${head("state", "state")}${head("gpus", "GPUs")}${head("priority", "priority")}${head("expires", "expires")}<th></th></tr>
    ${rows.map((r) => `<tr data-id="${esc(r.id)}" class="${r.state === "active" ? "active" : r.state === "pending" ? "pending" : "ended"}${r.preemptBy && r.state === "active" ? " preempting" : ""}"><td class="nowrap">${esc(r.id)}</td><td>${esc(r.holder)}</td><td class="state">${state(r)}</td>
      <td>${size(r)} · ${where(r)}</td><td>${r.priority}${r.preemptible ? " (preemptible)" : ""}</td>
      <td class="nowrap">${r.state === "active" ? `${stamp(r.expiresAt)} · <span class="countdown" data-at="${r.expiresAt}">${countdown(r.expiresAt)}</span>` : r.state === "pending" ? "after the move" : `ended ${stamp(r.endedAt ?? r.expiresAt)}`}</td>
      <td class="nowrap">${actions(r)}</td></tr>`).join("")}</table>`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const [id, value] of typed) { const input = $(`input.size[data-id="${CSS.escape(id)}"]`, view); if (input) input.value = value; }
  for (const id of [...openPanels]) {
    const row = $(`#reservations tr[data-id="${CSS.escape(id)}"]`, view);
    if (!row || byId.get(id).state !== "active") { openPanels.delete(id); continue; }
    row.after(keep.get(id) || panelRow(byId.get(id)));
  }
  $$("th.sort", view).forEach((th) => th.addEventListener("click", () => {
    sortBy = { key: th.dataset.sort, dir: sortBy.key === th.dataset.sort ? -sortBy.dir : 1 };
    reservations().catch((err) => { if (!(err instanceof Superseded)) banner(`Failed: ${esc(err.message)}`, "error"); });
  }));
  const askConfirm = (b) => {
    b.classList.add("confirm"); b.textContent = "confirm release";
    const cancel = document.createElement("button"); cancel.textContent = "cancel"; cancel.className = "cancel";
    cancel.addEventListener("click", () => { b.classList.remove("confirm"); b.textContent = "release"; cancel.remove(); });
    b.after(" ", cancel);
  };
  $$("button.release", view).filter((b) => confirming.has(b.dataset.id)).forEach(askConfirm);
  $$("button.release", view).forEach((b) => b.addEventListener("click", act(async () => {
    if (!b.classList.contains("confirm")) { askConfirm(b); return; }
    const out = (await gql(`mutation($id: String!) { release(id: $id) { __typename ... on Reservation { id gpus { uuid } } ... on Error { message } } }`, { id: b.dataset.id })).release;
    invalidate();
    banner(out.__typename === "Reservation" ? `Released ${esc(out.id)}: ${out.gpus.length} GPUs free again.` : failure(out), out.__typename === "Reservation" ? "ok" : "error");
    await reservations();
  })));
  $$("button.resize", view).forEach((b) => b.addEventListener("click", act(async () => {
    const size = Number($(`input.size[data-id="${CSS.escape(b.dataset.id)}"]`, view).value);
    const out = (await gql(`mutation($id: String!, $n: Int!) { resize(id: $id, gpus: $n) { __typename ... on Resized { added removed layoutKept reason reservation { id gpus { uuid } } } ... on Infeasible { reasons { message } } ... on Error { message } } }`, { id: b.dataset.id, n: size })).resize;
    invalidate();
    if (out.__typename === "Resized") banner(`Resized ${esc(out.reservation.id)} to ${out.reservation.gpus.length} GPUs (+${out.added.length} −${out.removed.length}), ${out.layoutKept ? "layout kept" : "layout NOT kept"}: ${esc(out.reason)}.`, "ok");
    else banner(failure(out), "error");
    await reservations();
  })));
  $$("button.renew", view).forEach((b) => b.addEventListener("click", act(async () => {
    const out = (await gql(`mutation($id: String!) { renew(id: $id, ttlSeconds: 3600) { __typename ... on Reservation { id expiresAt } ... on Error { message } } }`, { id: b.dataset.id })).renew;
    banner(out.__typename === "Reservation" ? `Renewed ${esc(out.id)} until ${stamp(out.expiresAt)} (${countdown(out.expiresAt)}).` : failure(out), out.__typename === "Reservation" ? "ok" : "error");
    await reservations();
  })));
  $$("button.elastic", view).forEach((b) => b.addEventListener("click", () => {
    const id = b.dataset.id;
    const open = $(`tr.panel[data-for="${CSS.escape(id)}"]`, view);
    if (open) { open.remove(); openPanels.delete(id); b.setAttribute("aria-expanded", "false"); return; }
    openPanels.add(id); b.setAttribute("aria-expanded", "true");
    b.closest("tr").after(panelRow(byId.get(id)));
  }));
}

// ---- preempt: the plan first (victims, lost work, deadline), then confirm ----------------------
function preemptInput(form) {
  const grace = form.grace.value.trim() === "0" ? 0 : parseTtl(form.grace.value);
  const ttl = parseTtl(form.ttl.value);
  const holder = form.holder.value.trim();
  if (!holder) throw new Error("give a holder: who the GPUs are for");
  if (grace === null) throw new Error(`grace ${form.grace.value} is not a duration: use 0, 90s or 5m`);
  if (!ttl) throw new Error(`lease ${form.ttl.value} is not a duration: use 30m, 4h or 1d`);
  const request = { gpus: Number(form.gpus.value), nvlink: form.nvlink.value };
  if (form.model.value.trim()) request.model = form.model.value.trim();
  return { holder, request, priority: Number(form.priority.value), graceSeconds: grace, ttlSeconds: ttl };
}

function wirePreempt() {
  const form = $("#preempt-form", view);
  const box = $("#preempt-plan", view);
  form.addEventListener("submit", act(async () => {
    const input = preemptInput(form);
    const plan = (await gql(`query($r: PlacementRequestInput!, $p: Int!) { preemptionPlan(request: $r, priority: $p) { __typename
      ... on PreemptionPlan { feasible gpus hosts reason lostGpuHours largestFreeBlockBefore largestFreeBlockAfter victims { reservation holder priority gpus lostGpuHours } }
      ... on Error { message } } }`, { r: input.request, p: input.priority })).preemptionPlan;
    if (plan.__typename !== "PreemptionPlan") { box.innerHTML = `<p class="error">${failure(plan)}</p>`; banner(failure(plan), "error"); return; }
    if (!plan.feasible) { box.innerHTML = `<p class="error plan-none">Nothing fits, even preempting lower-priority preemptible work: ${esc(plan.reason)}</p>`; return; }
    const deadline = Date.now() / 1000 + input.graceSeconds;
    box.innerHTML = `<div class="plan" data-victims="${plan.victims.length}">
      <p>Takes <b>${plan.gpus.length} GPUs</b> on ${esc(plan.hosts.join(", "))}. ${plan.victims.length
        ? `<b>${plural(plan.victims.length, "victim")}</b> lose <b class="lost">${hours(plan.lostGpuHours)}</b> of work since their checkpoints (restarts included); they are warned now and their GPUs move when the grace period ends, <span class="deadline">at ${stamp(deadline)} (${input.graceSeconds ? `in ${span(input.graceSeconds)}` : "at once"})</span>, or as soon as they all release.`
        : "Nothing has to be preempted: the GPUs are free."}</p>
      <p class="reason">${esc(plan.reason)} · largest free block ${plan.largestFreeBlockBefore} → ${plan.largestFreeBlockAfter}</p>
      ${plan.victims.length ? `<table class="victims"><tr><th>victim</th><th>holder</th><th>priority</th><th>GPUs</th><th>lost work</th></tr>
        ${plan.victims.map((v) => `<tr data-id="${esc(v.reservation)}"><td>${esc(v.reservation)}</td><td>${esc(v.holder)}</td><td>${v.priority}</td><td>${v.gpus.length}</td><td>${hours(v.lostGpuHours)}</td></tr>`).join("")}</table>` : ""}
      <button class="confirm preempt">${plan.victims.length ? "confirm preempt" : "reserve"}</button> <button class="cancel">cancel</button></div>`;
    $("button.cancel", box).addEventListener("click", () => { box.innerHTML = ""; });
    $("button.preempt", box).addEventListener("click", act(async () => {
      const out = (await gql(`mutation($i: PreemptInput!) { preempt(input: $i) { __typename
        ... on PendingPreemption { graceEndsAt lostGpuHours reason reservation { id } victims { reservation holder } }
        ... on Reservation { id gpus { uuid } } ... on Infeasible { reasons { message } } ... on Error { message } } }`, { i: input })).preempt;
      invalidate();
      box.innerHTML = "";
      if (out.__typename === "PendingPreemption") banner(`Preemption pending: <b>${esc(out.reservation.id)}</b> takes the GPUs of ${esc(out.victims.map((v) => v.reservation).join(", "))} at ${stamp(out.graceEndsAt)} (${countdown(out.graceEndsAt)}); the victims were warned (${hours(out.lostGpuHours)} of work at stake).`);
      else if (out.__typename === "Reservation") banner(`Reserved <b>${esc(out.id)}</b>: ${out.gpus.length} GPUs.`);
      else banner(failure(out), "error");
      await reservations();
    }));
  }));
}

// ---- per reservation: ranks, phase plan and next-phase fit, failed-GPU replacement -----------
function panelRow(r) {
  const tr = document.createElement("tr");
  tr.className = "panel"; tr.dataset.for = r.id;
  const gpu = new Map(r.gpus.map((g) => [g.uuid, `${g.host.name}:${g.index}`]));
  tr.innerHTML = `<td colspan="7"><div class="elastic-panel">
    <div class="ranks">loading…</div>
    <form class="phases" novalidate><label>phase <input name="phase" size="8"></label>
      <label>plan <input name="plan" size="44" placeholder="warmup=8xH100, main=16xH100, eval=4xH100"></label>
      <button class="set-phases">set phases</button></form>
    <div class="next-phase"></div>
    <p><button class="check-replacement" title="propose GPUs that keep the layout for the failed or stale ones">check failed GPUs</button></p>
    <div class="replacement"></div></div></td>`;
  const name = (u) => `${esc(gpu.get(u) || u)}`;
  const showFit = async () => {
    const fit = (await gql(`query($id: String!) { nextPhase(id: $id) { __typename ... on PhaseFit { phase nextPhase request fits gpusNow gpusNext add layoutKept reason } ... on Error { message } } }`, { id: r.id })).nextPhase;
    const box = $(".next-phase", tr);
    if (fit.__typename !== "PhaseFit") { box.innerHTML = `<p class="error">${failure(fit)}</p>`; return; }
    box.dataset.fits = String(fit.fits);
    if (!fit.nextPhase) { box.innerHTML = `<p>${fit.phase ? `Phase <b>${esc(fit.phase)}</b>: ` : ""}${esc(fit.reason)}.</p>`; return; }
    box.innerHTML = `<p>Next phase <b>${esc(fit.nextPhase)}</b> (${esc(fit.request)}, ${fit.gpusNow} → ${fit.gpusNext} GPUs): ${fit.fits
      ? `<span class="fits">fits</span>${fit.add.length ? ` — it would add ${fit.add.map((u) => `<code>${esc(u)}</code>`).join(", ")}, ${fit.layoutKept ? "layout kept" : "layout NOT kept"}` : ""}`
      : `<span class="error">does not fit</span>`}: ${esc(fit.reason)}.</p>`;
  };
  (async () => {
    try {
      const st = (await gql(`query($id: String!) { elasticState(id: $id) { rankOrder phase phases lastCheckpointAt } }`, { id: r.id })).elasticState;
      if (!st) { $(".ranks", tr).innerHTML = `<p class="error">no reservation ${esc(r.id)}</p>`; return; }
      $(".ranks", tr).innerHTML = `<p>Ranks: ${st.rankOrder.map((u, i) => `<span class="rank" data-rank="${i}" title="${esc(u)}">${i} → ${name(u)}</span>`).join(" · ")}${st.lastCheckpointAt ? ` · last checkpoint ${countdown(st.lastCheckpointAt)}` : ""}</p>`;
      const f = $("form.phases", tr);
      if (!f.phase.value) f.phase.value = st.phase || "";
      if (!f.plan.value) f.plan.value = st.phases.join(", ");
      if (st.phases.length) await showFit();
    } catch (err) { $(".ranks", tr).innerHTML = `<p class="error">${esc(err.message)}</p>`; }
  })();
  $("form.phases", tr).addEventListener("submit", act(async (ev) => {
    const f = ev.currentTarget;
    const phases = f.plan.value.split(",").map((s) => s.trim()).filter(Boolean);
    const out = (await gql(`mutation($id: String!, $p: String!, $ps: [String!]!) { setPhases(id: $id, phase: $p, phases: $ps) { __typename ... on Error { message } } }`, { id: r.id, p: f.phase.value.trim(), ps: phases })).setPhases;
    if (out.__typename !== "PhasesSet") { $(".next-phase", tr).innerHTML = `<p class="error">${failure(out)}</p>`; banner(failure(out), "error"); return; }
    banner(`Phase plan of ${esc(r.id)} set: ${esc(phases.join(", "))}; current phase ${esc(f.phase.value.trim())}.`);
    await showFit();
  }));
  const replace = async (apply) => {
    const out = (await gql(`mutation($id: String!, $a: Boolean!) { replaceFailed(id: $id, apply: $a) { __typename ... on Replacement { failed ranks { rank gpu } layoutKept applied reason } ... on Error { message } } }`, { id: r.id, a: apply })).replaceFailed;
    const box = $(".replacement", tr);
    if (out.__typename !== "Replacement") { box.innerHTML = `<p class="error">${failure(out)}</p>`; banner(failure(out), "error"); return null; }
    box.innerHTML = `<p>${out.applied ? "Replaced" : "Proposed"}: ${plural(out.failed.length, "failed GPU")} (${out.failed.map(name).join(", ")}), ${out.layoutKept ? "layout kept" : "layout NOT kept"}: ${esc(out.reason)}.</p>
      <table class="rank-map"><tr><th>rank</th><th>new GPU</th></tr>${out.ranks.map((x) => `<tr data-rank="${x.rank}"><td>${x.rank}</td><td><code>${esc(x.gpu)}</code></td></tr>`).join("")}</table>
      ${out.applied || !out.ranks.length ? "" : `<button class="confirm take">take them</button>`}`;
    return out;
  };
  $("button.check-replacement", tr).addEventListener("click", act(async () => {
    const out = await replace(false);
    const take = out && $("button.take", tr);
    if (take) take.addEventListener("click", act(async () => {
      const done = await replace(true);
      if (!done) return;
      invalidate();
      banner(`Replaced ${done.failed.length} GPU(s) of ${esc(r.id)}: ${done.ranks.map((x) => `rank ${x.rank} → ${esc(x.gpu)}`).join(", ")}.`);
      openPanels.delete(r.id); // its GPUs changed: reopen for the new ranks
      await reservations();
    }));
  }));
  return tr;
}
setInterval(() => { for (const c of $$(".countdown")) c.textContent = countdown(Number(c.dataset.at)); }, 1000);

// ---- placement playground ---------------------------------------------------------------------
// The options of the text form, as `graphsvc place --help` lists them (a test keeps them equal).
const OPTIONS = [
  ["nvlink=full-mesh", "none, any or full-mesh: NVLink between every pair of chosen GPUs"],
  ["scale-up=full-mesh", "the same as nvlink=, for any vendor's scale-up link (xgmi= too)"],
  ["per-host=8", "GPUs per host (a gang split evenly)"],
  ["ib-hops<=1", "at most this many InfiniBand switch hops between chosen hosts"],
  ["mem>=80", "at least this much GPU memory, GiB"],
  ["temp<=80", "GPUs no hotter than this, °C"],
  ["model=H100", "GPU model (also 8xH100)"],
  ["exclude=host-a,host-b", "hosts to avoid, comma-separated"],
  ["prefer=host-a", "hosts to prefer, comma-separated"],
  ["packing=spread", "best-fit (default: fill partly used hosts) or spread"],
  ["limit=5", "how many candidates to return (default 3)"],
  ["same-domain", "all GPUs in one NVLink domain (e.g. one NVL72 rack)"],
  ["rail-aligned", "each GPU's NIC on the same rail across hosts"],
  ["gpu-nic-affinity", "each GPU with a NIC on its own PCIe switch or NUMA node"],
  ["allow-unhealthy", "also consider degraded or failed GPUs"],
  ["no-prefer-cool", "do not prefer cooler GPUs on ties"],
  ["site=onprem-dc1", "only these sites, comma-separated (a placement never spans sites)"],
  ["cross-site", "allow one placement to span sites (the inter-site link becomes its bottleneck)"],
  ["exclusive", "the job needs its GPUs to itself: GPUs busy outside reservations are not free"],
  ["cc>=9.0", "NVIDIA compute capability at least this"],
  ["mem-bw>=3000", "GPU memory bandwidth at least this many GB/s"],
  ["fp8", "GPUs with FP8 tensor/matrix cores (Hopper, Ada, Blackwell, CDNA3+)"],
  ["fp4", "GPUs with FP4 tensor/matrix cores (Blackwell, CDNA4)"],
  ["link-gen>=5", "scale-up link (NVLink/xGMI) generation at least this"],
];

async function place(params) {
  const text = params.get("q");
  const holder = params.get("holder") || localStorage.getItem("graphsvc-holder") || "explorer";
  const ttl = params.get("ttl") || "1h";
  const fresh = since();
  view.innerHTML = `<h2>Placement playground</h2>
    <form id="place-form">
      <label for="pq">request</label><input id="pq" name="q" value="${esc(text || "8xH100 nvlink=full-mesh ib-hops<=1")}" aria-label="request">
      <label for="ph">holder</label><input id="ph" name="holder" value="${esc(holder)}" aria-label="holder" required>
      <label for="pt">lease (TTL)</label><span><input id="pt" name="ttl" value="${esc(ttl)}" size="6" aria-label="ttl"> e.g. 90s, 30m, 4h, 1d</span>
      <span></span><span><button>place</button> <small>changes nothing until you reserve</small></span>
    </form>
    <details class="help" id="options"><summary>request options (click one to add it)</summary>
      <table>${OPTIONS.map(([o, t]) => `<tr><td><code data-opt="${esc(o)}">${esc(o)}</code></td><td>${esc(t)}</td></tr>`).join("")}</table></details>
    <div class="place-grid"><div id="candidates"></div><div id="picture"></div></div>`;
  const form = $("#place-form");
  $$("code[data-opt]").forEach((c) => c.addEventListener("click", () => { form.q.value = `${form.q.value.trim()} ${c.dataset.opt}`; form.q.focus(); }));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    localStorage.setItem("graphsvc-holder", form.holder.value);
    location.hash = `#/place?${new URLSearchParams({ q: form.q.value, holder: form.holder.value, ttl: form.ttl.value })}`;
  });
  if (!text) return;
  let result;
  try {
    result = (await fresh(gql(`query($t: String!) { placementText(text: $t) { request
      candidates { rank score reason bottleneckGbps maxIbHops gpus { uuid index host { name } } }
      infeasible { constraint message nearestFeasible }
      migCandidates { rank scope reason hosts slices { uuid profile gpuIndex host } } } }`, { t: text }))).placementText;
  } catch (err) {
    if (err instanceof Superseded) throw err;
    $("#candidates").innerHTML = `<div class="cand infeasible"><p class="error">${esc(err.message)}</p><p>See the request options above.</p></div>`;
    $("#options").open = true;
    return;
  }
  const box = $("#candidates");
  if (result.migCandidates.length) { migCandidates(box, result, form, params); return; }
  if (!result.candidates.length) {
    box.innerHTML = result.infeasible.map((r) => r.constraint === "text"
      ? `<div class="cand infeasible"><p class="error">The request does not parse: ${esc(r.message)}</p><p>The options are listed above.</p></div>`
      : `<div class="cand infeasible"><b>${esc(r.constraint)}</b>: ${esc(r.message)}${r.nearestFeasible ? ` — try <a href="#/place?q=${encodeURIComponent(r.nearestFeasible)}">${esc(r.nearestFeasible)}</a>` : ""}</div>`).join("");
    if (result.infeasible.some((r) => r.constraint === "text")) $("#options").open = true;
    return;
  }
  box.innerHTML = `<p>${esc(result.request)}: ${result.candidates.length} candidates, best first.</p>` + result.candidates.map((c) => `<div class="cand" data-rank="${c.rank}"><b>#${c.rank}</b> score ${c.score} · bottleneck ${c.bottleneckGbps ?? "-"} GB/s · ${c.maxIbHops} IB hops · ${c.gpus.length} GPUs on ${plural(new Set(c.gpus.map((g) => g.host.name)).size, "host")}
    <p>${esc(c.reason)}</p><button class="show" data-rank="${c.rank}">show on the topology</button> <button class="reserve" data-rank="${c.rank}">reserve for ${esc(holder)} (${esc(ttl)})</button></div>`).join("");
  const { hosts, byHost } = await fresh(loadCluster());
  const show = (rank) => {
    const c = result.candidates.find((x) => x.rank === rank);
    const picked = new Set(c.gpus.map((g) => g.uuid));
    const names = new Set(c.gpus.map((g) => g.host.name));
    $$(".cand", box).forEach((el) => el.classList.toggle("chosen", Number(el.dataset.rank) === rank));
    const groups = groupHosts(hosts, byHost).filter((g) => g.hosts.some((h) => names.has(h.name)));
    const pic = $("#picture");
    pic.innerHTML = `<h3>Candidate #${rank} on the topology <small>(chosen GPUs outlined; the rest dimmed)</small></h3><div class="groups"></div>`;
    const clusters = clusterCount(groups);
    for (const group of groups) {
      const sec = document.createElement("section");
      sec.className = "group"; sec.dataset.group = group.key; sec.dataset.cluster = group.cluster ?? "";
      sec.innerHTML = `<h3>${esc(groupTitle(group, clusters))}</h3>`;
      drawGroup(sec, group, byHost, { metric: "temperature", match: () => true, picked, dim: true });
      $(".groups", pic).appendChild(sec);
    }
    pic.dataset.picked = String($$("canvas.cells", pic).reduce((n, c) => n + Number(c.dataset.picked), 0));
  };
  $$("button.show", box).forEach((b) => b.addEventListener("click", () => show(Number(b.dataset.rank))));
  wireReserve(box, "button.reserve", form, params, "GPUs", (o) => `${o.gpus.length} GPUs`, async (rank, who, seconds) => {
    const c = result.candidates.find((x) => x.rank === rank);
    return (await gql(`mutation($g: [String!], $h: String!, $t: Int!) { reserve(input: {holder: $h, ttlSeconds: $t, gpus: $g}) { __typename ... on Reservation { id expiresAt gpus { uuid } } ... on Conflict { message } ... on ValidationError { message } } }`, { g: c.gpus.map((g) => g.uuid), h: who, t: seconds })).reserve;
  });
  show(1);
}

// A MIG request (2x 3g.40gb) is answered in slices: where they would be taken, and a reserve button
// that asks for the same profile and count (the service picks the slices again, atomically).
function migCandidates(box, result, form, params) {
  box.innerHTML = `<p>${esc(result.request)}: ${plural(result.migCandidates.length, "place")} for the MIG slices, best first.</p>` + result.migCandidates.map((c) => `<div class="cand mig" data-rank="${c.rank}"><b>#${c.rank}</b> ${plural(c.slices.length, "slice")} · ${esc(c.scope === "gpu" ? "one GPU" : c.scope === "host" ? "one host" : "several hosts")}
    <p>${esc(c.reason)}</p><ul class="slices">${c.slices.map((x) => `<li data-uuid="${esc(x.uuid)}"><a href="#/host/${encodeURIComponent(x.host)}">${esc(x.host)}</a> GPU ${x.gpuIndex} · ${esc(x.profile)} · <code>${esc(x.uuid)}</code></li>`).join("")}</ul>
    <button class="reserve-mig" data-rank="${c.rank}">reserve ${plural(c.slices.length, "slice")} for ${esc(form.holder.value)}</button></div>`).join("");
  wireReserve(box, "button.reserve-mig", form, params, "slices", (o) => plural(o.migSlices.length, "MIG slice"), async (rank, who, seconds) => {
    const c = result.migCandidates.find((x) => x.rank === rank);
    return (await gql(`mutation($r: PlacementRequestInput!, $h: String!, $t: Int!) { reserve(input: {holder: $h, ttlSeconds: $t, request: $r}) { __typename ... on Reservation { id expiresAt migSlices { uuid } } ... on Error { message } } }`,
      { r: { gpus: c.slices.length, migProfile: c.slices[0].profile }, h: who, t: seconds })).reserve;
  });
}

// The playground's reserve buttons: check the holder and the lease, reserve (`reserve(rank, who,
// seconds)` answers the mutation's result), say what happened, and show fresh candidates (what
// was just taken is no longer free). `what(reservation)` names what was reserved.
function wireReserve(box, selector, form, params, unit, what, reserve) {
  $$(selector, box).forEach((b) => b.addEventListener("click", async () => {
    const seconds = parseTtl(form.ttl.value);
    const who = form.holder.value.trim();
    if (!seconds || !who) { banner(!who ? `Give a holder: who the ${unit} are for.` : `Lease ${esc(form.ttl.value)} is not a duration: use 90s, 30m, 4h or 1d.`, "error"); return; }
    b.disabled = true;
    let out;
    try {
      out = await reserve(Number(b.dataset.rank), who, seconds);
    } catch (err) { // the request failed (network, 5xx, a revoked token): say so, and let them retry
      setStatus(`reserve failed: ${err.message}`);
      banner(`Reserve failed: ${esc(err.message)}`, "error");
      b.disabled = false;
      return;
    }
    invalidate();
    if (out.__typename === "Reservation") {
      setStatus(`reserved ${out.id}`);
      banner(`Reserved <b>${esc(out.id)}</b>: ${what(out)} for ${esc(who)} until ${stamp(out.expiresAt)} (${countdown(out.expiresAt)}). <a href="#/reservations">reservations</a>`);
      try { await place(params); } catch (err) { if (!(err instanceof Superseded)) banner(`Reserved ${esc(out.id)}; the candidates could not be refreshed: ${esc(err.message)}`, "error"); }
    } else {
      setStatus(`${out.__typename}: ${out.message || ""}`);
      banner(`${esc(out.__typename)}: ${esc(out.message || "")}`, "error");
      b.disabled = false;
    }
  }));
}

// ---- search (served by the API) ---------------------------------------------------------------
async function search(q) {
  q = q.trim();
  if (!q) { view.innerHTML = "<h2>Search</h2><p>Type part of a host, switch or GPU name.</p>"; return; }
  const fresh = since();
  const hits = (await fresh(gql(`query($t: String!) { search(text: $t, first: 20) { kind name host cluster detail score } }`, { t: q }))).search;
  // A switch's fabric is its cluster's, read with the hit; looked up only where the graph names none.
  const exact = hits.length && hits[0].score >= 1;
  await fresh(Promise.all(hits.filter((h, i) => h.kind === "switch" && !h.cluster && (!exact || i === 0)).map(async (h) => { h.cluster = await switchCluster(h.name); })));
  const target = (h) => (h.kind === "switch" ? `#/fabric?${h.cluster ? `cluster=${encodeURIComponent(h.cluster)}&` : ""}leaf=${encodeURIComponent(h.name)}` : `#/host/${encodeURIComponent(h.host)}`);
  // An exact name opens it in place of the search's history entry: Back goes to the page before
  // the search (pushing it trapped Back: the search page opened the match again).
  if (exact) { location.replace(target(hits[0])); return; }
  view.innerHTML = `<h2>${hits.length ? `Best matches for “${esc(q)}”` : `Nothing matches “${esc(q)}”`}</h2>
    <ol class="hits">${hits.map((h) => `<li data-kind="${h.kind}"><a href="${target(h)}">${esc(h.name)}</a> <small>${esc(h.kind)} · ${esc(h.detail)}${h.cluster ? ` · <span class="cluster">${esc(h.cluster)}</span>` : ""}</small></li>`).join("")}</ol>`;
}
$("#search").addEventListener("submit", (e) => { e.preventDefault(); location.hash = `#/search?q=${encodeURIComponent(e.target.q.value)}`; });

// ---- live refresh: the events subscription over HTTP (graphql-sse), polling as a fallback ----
let refreshTimer = null;
// `cause` ("event" or "poll") is counted on #live (data-event-refreshes, data-poll-refreshes) when
// the refresh runs: the header's "live" claim can be checked against what actually refreshed.
function scheduleRefresh(why, cause = "event") {
  invalidate();
  const current = (location.hash || "#/overview").slice(2).split(/[/?]/)[0] || "overview";
  if (!["overview", "reservations", "fabric"].includes(current) || document.hidden) return;
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => {
    const live = $("#live"), count = `${cause}Refreshes`;
    live.dataset[count] = String(Number(live.dataset[count] || 0) + 1);
    route.keepBanner = true;
    if (await route()) setStatus(`refreshed: ${why}`);
  }, 800);
}

// Server-sent events as the HTML standard parses them: lines end in CRLF, LF or CR (the service
// writes CRLF; the page looked for "\n\n" only, so no event was ever read and the stream piled
// up in memory), an empty line ends an event, "data:" lines join with "\n", ":" starts a comment.
// At most `max` characters wait for an event's end: a longer event is dropped, not buffered.
class SSEParser {
  constructor(onEvent, max = 1 << 20) {
    this.onEvent = onEvent; this.max = max;
    this.line = ""; this.data = []; this.size = 0; this.event = "";
    this.afterCR = false; // the last chunk ended in CR: an LF starting the next one belongs to it
    this.dropping = false; // the current event grew past `max`: skip to its end
    this.cut = false; // the current line was dropped in part: it is not an empty line
  }
  get buffered() { return this.line.length + this.size; }
  push(chunk) {
    let i = this.afterCR && chunk.startsWith("\n") ? 1 : 0;
    if (chunk.length) this.afterCR = false;
    while (i < chunk.length) {
      const rest = chunk.slice(i);
      const at = rest.search(/[\r\n]/);
      if (at < 0) { this.line += rest; break; }
      this.line += rest.slice(0, at);
      i += at + 1;
      if (rest[at] === "\r") { if (i < chunk.length) { if (chunk[i] === "\n") i++; } else this.afterCR = true; }
      const line = this.line, cut = this.cut;
      this.line = ""; this.cut = false;
      this.take(line, cut);
    }
    if (this.buffered > this.max) {
      this.dropping = true; this.data = []; this.size = 0;
      if (this.line) { this.line = ""; this.cut = true; }
    }
  }
  take(line, cut) {
    if (line === "" && !cut) {
      if (this.data.length && !this.dropping) this.onEvent({ event: this.event || "message", data: this.data.join("\n") });
      this.data = []; this.size = 0; this.event = ""; this.dropping = false;
      return;
    }
    if (this.dropping || cut || line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") { this.data.push(value); this.size += value.length + 1; }
    else if (field === "event") this.event = value;
  }
}
async function connectEvents(attempt = 0) {
  const live = $("#live");
  const headers = { "content-type": "application/json", accept: "text/event-stream" };
  if (tokenInput.value) headers.authorization = `Bearer ${tokenInput.value}`;
  try {
    const resp = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query: "subscription { events { kind subject holder at } }" }) });
    if (!resp.ok || !resp.body) throw new Error(`HTTP ${resp.status}`);
    live.textContent = "● live"; live.className = "on"; live.title = "refreshes when reservations or hosts change, and every 30 s";
    attempt = 0;
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new SSEParser((ev) => {
      if (ev.event !== "next" && ev.event !== "message") return; // "complete": the service is stopping
      let e = null;
      try { e = JSON.parse(ev.data)?.data?.events; } catch { return; } // one bad event is not the stream
      if (!e) return;
      live.dataset.lastEvent = `${e.kind} ${e.subject}`;
      scheduleRefresh(`${e.kind} ${e.subject}`, "event");
    });
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(value);
    }
  } catch (err) {
    live.title = `no live events (${err.message}); refreshing every 30 s`;
  }
  live.textContent = "○ polling"; live.className = "";
  setTimeout(() => connectEvents(attempt + 1), Math.min(30_000, 1000 * 2 ** attempt));
}
setInterval(() => scheduleRefresh("every 30 s (temperatures, load)", "poll"), 30_000);

// ---- routing ------------------------------------------------------------------------------------
// ---- sites (docs/sites.md): where the GPUs are, and where a job is cheapest or fastest -------
const money = (x) => (x == null ? "?" : `$${Math.round(x).toLocaleString("en-US")}`);
const hrs = (x) => (x == null ? "?" : `${x.toFixed(1)} h`);

// The comparison form's values where the link names none: the form shows them and the comparison
// asks with them (a link with only q= was asked with gpuHours 0 and refused, while the form said 6400).
const SITE_DEFAULTS = { q: "64", w: "6400", c: "0.2", ref: "H100", gb: "0", at: "", obj: "CHEAPEST", dl: "" };

async function sites(params) {
  const fresh = since();
  const data = await fresh(gql(`{ sites { name kind provider region location capacityKinds clusters gpus { model gpus free } }
    siteLinks { a b bandwidthGbps latencyMs } }`));
  const names = data.sites.map((s) => s.name);
  const p = (k) => params.get(k) ?? SITE_DEFAULTS[k];
  view.innerHTML = `<h2>Sites</h2>
    <table id="sites-table"><thead><tr><th>site</th><th>kind</th><th>where</th><th>capacity</th><th>clusters</th><th>GPUs (free / total)</th></tr></thead><tbody>
    ${data.sites.map((s) => `<tr data-site="${esc(s.name)}"><td>${esc(s.name)}</td><td>${esc(s.kind)}</td>
      <td>${esc([s.provider, s.region, s.location].filter(Boolean).join(" · "))}</td><td>${esc(s.capacityKinds.join(", ") || "-")}</td>
      <td>${esc(s.clusters.join(", "))}</td><td>${s.gpus.map((g) => `${g.free} / ${g.gpus} ${esc(g.model)}`).join("<br>") || "no hosts"}</td></tr>`).join("")}
    </tbody></table>
    ${data.sites.length ? "" : "<p>No site is defined: <code>PUT /v1/sites</code> or <code>graphsvc sites load FILE</code> (docs/sites.md).</p>"}
    <h3>Links</h3><table id="site-links"><tbody>${data.siteLinks.map((l) => `<tr><td>${esc(l.a)} ⟷ ${esc(l.b)}</td><td>${l.bandwidthGbps} GB/s</td><td>${l.latencyMs} ms</td></tr>`).join("") || "<tr><td>none</td></tr>"}</tbody></table>
    <h3>Compare sites</h3>
    <form id="compare-form">
      <label for="cq">request</label><input id="cq" name="q" value="${esc(p("q"))}">
      <label for="cw">GPU-hours</label><input id="cw" name="w" value="${esc(p("w"))}">
      <label for="cc">comm. share</label><input id="cc" name="c" value="${esc(p("c"))}">
      <label for="cr">reference model</label><input id="cr" name="ref" value="${esc(p("ref"))}">
      <label for="cd">dataset GB</label><input id="cd" name="gb" value="${esc(p("gb"))}">
      <label for="cs">data at</label><select id="cs" name="at"><option value="">nowhere in particular</option>${names.map((n) => `<option${n === p("at") ? " selected" : ""}>${esc(n)}</option>`).join("")}</select>
      <label for="co">objective</label><select id="co" name="obj">${["CHEAPEST", "FASTEST", "CHEAPEST_UNDER_DEADLINE", "LOWEST_CARBON"].map((o) => `<option${o === p("obj").toUpperCase().replace(/-/g, "_") ? " selected" : ""}>${o}</option>`).join("")}</select>
      <label for="cl">deadline h</label><input id="cl" name="dl" value="${esc(p("dl"))}">
      <span></span><span><button>compare</button></span>
    </form><div id="comparison"></div>`;
  const form = $("#compare-form");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const k of ["q", "w", "c", "ref", "gb", "at", "obj", "dl"]) q.set(k, form[k].value);
    location.hash = `#/sites?${q}`;
  });
  if (!params.get("q")) return;
  // A link is typed by hand too: the CLI's spelling of an objective (cheapest-under-deadline), a
  // number that is not one. Each is said next to the form; they failed the whole view with the raw
  // GraphQL variable error (a probe's case).
  const objective = p("obj").toUpperCase().replace(/-/g, "_");
  const numbers = { w: "GPU-hours", c: "comm share", gb: "dataset GB", dl: "deadline hours" };
  const wrong = Object.entries(numbers).filter(([k]) => p(k) !== "" && !Number.isFinite(Number(p(k))));
  const objectives = ["CHEAPEST", "FASTEST", "CHEAPEST_UNDER_DEADLINE", "LOWEST_CARBON"];
  if (wrong.length || !objectives.includes(objective)) {
    const says = wrong.map(([k, label]) => `${label}: ${JSON.stringify(p(k))} is not a number`);
    if (!objectives.includes(objective)) says.push(`objective: ${JSON.stringify(p("obj"))} is not one of ${objectives.join(", ")}`);
    $("#comparison").innerHTML = says.map((m) => `<p class="error">${esc(m)}</p>`).join("");
    return;
  }
  const profile = { gpuHours: Number(p("w")), commShare: Number(p("c")), referenceModel: p("ref") || null,
    datasetGB: Number(p("gb")), dataSite: p("at") || null };
  const result = (await fresh(gql(`query($t: String!, $p: JobProfileInput!, $o: SiteObjective!, $d: Float) {
    compareSites(text: $t, profile: $p, objective: $o, deadlineHours: $d) { __typename
      ... on ValidationError { field message }
      ... on SiteComparison { choice sites { rank site capacity fits gpus model totalHours totalCost runHours transferHours
        transferCost carbonKg missing stale reason } } } }`,
  { t: p("q"), p: profile, o: objective, d: p("dl") ? Number(p("dl")) : null }))).compareSites;
  const box = $("#comparison");
  if (result.__typename === "ValidationError") { box.innerHTML = `<p class="error">${esc(result.field)}: ${esc(result.message)}</p>`; return; }
  box.innerHTML = `<p id="site-choice">choice: <b>${esc(result.choice || "no site satisfies the objective")}</b></p>
    <table id="site-ranking"><thead><tr><th>#</th><th>site</th><th>capacity</th><th>time</th><th>cost</th><th>data move</th><th>CO2e</th><th>why</th></tr></thead><tbody>
    ${result.sites.map((s) => `<tr data-site="${esc(s.site)}"><td>${s.rank}</td><td>${esc(s.site)}</td><td>${esc(s.capacity || "-")}</td>
      <td>${hrs(s.totalHours)}</td><td>${money(s.totalCost)}</td><td>${hrs(s.transferHours)} ${money(s.transferCost)}</td>
      <td>${s.carbonKg == null ? "?" : `${Math.round(s.carbonKg).toLocaleString("en-US")} kg`}</td>
      <td>${esc(s.reason)}${s.missing.map((m) => `<br><small class="error">missing: ${esc(m)}</small>`).join("")}${s.stale.map((m) => `<br><small>stale: ${esc(m)}</small>`).join("")}</td></tr>`).join("")}
    </tbody></table>`;
}

async function route() {
  const hash = location.hash || "#/overview";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  $$("nav a[data-view]").forEach((a) => a.classList.toggle("active", a.dataset.view === (parts[0] || "overview")));
  const gen = ++generation; // what an older route still in flight renders is dropped (since())
  view.dataset.ready = "false";
  hideTip();
  if (!route.keepBanner) { $("#banner").hidden = true; setStatus(""); }
  route.keepBanner = false;
  try {
    if (parts[0] === "host") await hostLink(parts[1] || "");
    else if (parts[0] === "fabric") await fabric(params);
    else if (parts[0] === "reservations") await reservations();
    else if (parts[0] === "place") await place(params);
    else if (parts[0] === "search") await search(params.get("q") || "");
    else if (parts[0] === "sites") await sites(params);
    else await overview(params);
  } catch (err) {
    if (gen !== generation) return false; // a newer route owns the page (and its ready flag)
    view.innerHTML = `<h2>Could not load this view</h2><p class="error">${esc(err.message)}</p>`;
  }
  if (gen !== generation) return false;
  view.dataset.ready = "true";
  return true;
}

// #/host/NAME, NAME percent-encoded; a hand-typed "%" that starts no escape (#/host/100%) said
// "URI malformed" with no word of which host or why.
async function hostLink(raw) {
  let name;
  try {
    name = decodeURIComponent(raw);
  } catch {
    view.innerHTML = `<h2>No host named ${esc(raw)}</h2><p class="error">This address does not spell a host name: a “%” in it must start an escape
      (two hex digits; “%25” is “%” itself).</p><p><a href="#/search?q=${encodeURIComponent(raw)}">search for ${esc(raw)}</a></p>`;
    return;
  }
  await host(name);
}

window.addEventListener("hashchange", route);
route();
connectEvents();
