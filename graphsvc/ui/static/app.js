// graphsvc explorer: one page, hash routes, the service's own GraphQL API, hand-written SVG.
"use strict";

const $ = (sel, el = document) => el.querySelector(sel);
const view = $("#view");
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const tokenInput = $("#token");
tokenInput.value = localStorage.getItem("graphsvc-token") || "";
tokenInput.addEventListener("change", () => { localStorage.setItem("graphsvc-token", tokenInput.value); route(); });

async function gql(query, variables = {}) {
  const headers = { "content-type": "application/json" };
  if (tokenInput.value) headers.authorization = `Bearer ${tokenInput.value}`;
  const resp = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  const body = await resp.json();
  if (resp.status !== 200) throw new Error(body.error || `HTTP ${resp.status}`);
  if (body.errors) throw new Error(body.errors[0].message);
  return body.data;
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

const HOSTS = `query($after: String) { hosts(first: 500, after: $after) {
  nodes { name rack scalableUnit gpuModel gpuCount freeGpus stale ageSeconds } pageInfo { hasNextPage endCursor } } }`;
const GPUS = `query($after: String) { gpus(first: 500, after: $after) {
  nodes { uuid index model state health temperatureC utilizationPct nvlinkDomain host { name } } pageInfo { hasNextPage endCursor } } }`;

let colorBy = "temperature";

function heat(g) {
  const t = colorBy === "utilization" ? g.utilizationPct : g.temperatureC;
  if (t == null) return "#ccd";
  const x = colorBy === "utilization" ? Math.max(0, Math.min(1, t / 100)) : Math.max(0, Math.min(1, (t - 25) / 60));
  return `hsl(${Math.round(200 - 200 * x)}, 70%, ${Math.round(70 - 20 * x)}%)`;
}

function gpuCell(g, picked) {
  const cls = ["gpu", g.state === "reserved" ? "reserved" : "", g.health || "", picked && picked.has(g.uuid) ? "picked" : ""].join(" ");
  return `<span class="${cls}" data-uuid="${esc(g.uuid)}" title="${esc(g.host.name)} GPU ${g.index} ${esc(g.model)} ${esc(g.state)} ${esc(g.health)} ${g.temperatureC ?? "?"}°C" style="background:${heat(g)}"></span>`;
}

async function loadCluster() {
  const [hosts, gpus] = await Promise.all([pages("hosts", HOSTS), pages("gpus", GPUS)]);
  const byHost = {};
  for (const g of gpus) (byHost[g.host.name] ||= []).push(g);
  for (const list of Object.values(byHost)) list.sort((a, b) => a.index - b.index);
  return { hosts, byHost };
}

function renderGroups(hosts, byHost, picked) {
  const groups = {};
  for (const h of hosts) {
    const domainKey = (byHost[h.name] || []).find((g) => g.nvlinkDomain && !g.nvlinkDomain.startsWith(h.name))?.nvlinkDomain;
    const key = h.scalableUnit || domainKey || h.rack || "unplaced";
    (groups[key] ||= []).push(h);
  }
  return `<div class="groups">${Object.entries(groups).map(([key, members]) => {
    const all = members.flatMap((h) => byHost[h.name] || []);
    const free = all.filter((g) => g.state === "free").length;
    const reserved = all.filter((g) => g.state === "reserved").length;
    const unhealthy = all.filter((g) => g.health === "failed" || g.health === "degraded").length;
    const stale = members.filter((h) => h.stale).length;
    return `<section class="group" data-group="${esc(key)}"><h3>${esc(key)}</h3>
      <div class="counts"><b class="free">${free}</b> free · <b class="reserved">${reserved}</b> reserved · <b>${unhealthy}</b> unhealthy${stale ? ` · <b>${stale}</b> stale hosts` : ""}</div>
      ${members.map((h) => `<a href="#/host/${encodeURIComponent(h.name)}" class="${h.stale ? "stale" : ""}" title="${esc(h.name)}"><span class="gpus">${(byHost[h.name] || []).map((g) => gpuCell(g, picked)).join("")}</span></a>`).join(" ")}
    </section>`;
  }).join("")}</div>`;
}

async function overview(params) {
  const started = performance.now();
  colorBy = params.get("color") === "utilization" ? "utilization" : "temperature";
  const summary = (await gql(`{ clusterSummary { hosts gpus freeGpus staleHosts } }`)).clusterSummary;
  const { hosts, byHost } = await loadCluster();
  view.innerHTML = `<h2>Cluster: ${summary.hosts} hosts, ${summary.gpus} GPUs, <span id="free-total">${summary.freeGpus}</span> free, ${summary.staleHosts} stale hosts</h2>
    <p class="legend">colour: GPU ${colorBy} (low blue to high red) —
      <a href="#/overview?color=${colorBy === "temperature" ? "utilization" : "temperature"}">colour by ${colorBy === "temperature" ? "utilization" : "temperature"}</a>
      <span style="background:#5b6b8a"></span>reserved<span style="outline:2px solid #c00"></span>unhealthy<span style="outline:2px dashed #c00"></span>stale host</p>
    ${renderGroups(hosts, byHost)}`;
  view.dataset.renderMs = String(Math.round(performance.now() - started));
}

async function host(name) {
  const q = `query($n: String!) { host(name: $n) { name rack scalableUnit cpuModel ageSeconds stale
    gpus { uuid index model state health temperatureC utilizationPct nvlinkDomain host { name } }
    nvlinkMatrix { gpuIndices rows } placement { index numaNode pcieSwitch nvswitchLanes }
    numaNodes { index cpus } nics { name rateGbps state rail leaf pcieSwitch servesGpus } } }`;
  const h = (await gql(q, { n: name })).host;
  if (!h) { view.innerHTML = `<h2>No host named ${esc(name)}</h2>`; return; }
  const m = h.nvlinkMatrix;
  view.innerHTML = `<h2>${esc(h.name)}</h2>
    <p>rack ${esc(h.rack)} · scalable unit ${esc(h.scalableUnit || "-")} · ${esc(h.cpuModel || "")} · facts ${Math.round(h.ageSeconds)} s old${h.stale ? " · <b>stale</b>" : ""}</p>
    <h3>GPUs</h3><table id="gpus"><tr><th>GPU</th><th>model</th><th>state</th><th>health</th><th>°C</th><th>util %</th><th>NVLink domain</th><th>NUMA</th><th>PCIe switch</th></tr>
    ${h.gpus.map((g) => { const p = h.placement.find((x) => x.index === g.index) || {};
      return `<tr data-uuid="${esc(g.uuid)}"><td>${g.index} ${gpuCell(g)}</td><td>${esc(g.model)}</td><td>${esc(g.state)}</td><td>${esc(g.health)}</td><td>${g.temperatureC ?? ""}</td><td>${g.utilizationPct ?? ""}</td><td>${esc(g.nvlinkDomain || "")}</td><td>${p.numaNode ?? ""}</td><td>${esc(p.pcieSwitch || "")}</td></tr>`; }).join("")}</table>
    <h3>NVLink matrix (like nvidia-smi topo -m)</h3><table id="matrix"><tr><th></th>${m.gpuIndices.map((i) => `<th>GPU${i}</th>`).join("")}</tr>
    ${m.rows.map((row, r) => `<tr><th>GPU${m.gpuIndices[r]}</th>${row.map((c) => `<td class="${c.startsWith("NV") ? "nv" : ""}">${esc(c)}</td>`).join("")}</tr>`).join("")}</table>
    <h3>NICs and rails</h3><table id="nics"><tr><th>NIC</th><th>Gb/s</th><th>state</th><th>rail</th><th>leaf</th><th>PCIe switch</th><th>serves GPUs</th></tr>
    ${h.nics.map((n) => `<tr><td>${esc(n.name)}</td><td>${n.rateGbps ?? ""}</td><td>${esc(n.state)}</td><td>${n.rail ?? ""}</td><td>${esc(n.leaf || "")}</td><td>${esc(n.pcieSwitch || "")}</td><td>${n.servesGpus.join(", ")}</td></tr>`).join("")}</table>
    <h3>NUMA</h3><table><tr><th>node</th><th>CPUs</th></tr>${h.numaNodes.map((n) => `<tr><td>${n.index}</td><td>${esc(n.cpus)}</td></tr>`).join("")}</table>`;
}

async function fabric() {
  const started = performance.now();
  const switches = [];
  let after = null;
  for (;;) {
    const data = (await gql(`query($a: String) { fabric(first: 500, after: $a) { switches { name tier nics freeGpus uplinks { to bandwidthGbps } } pageInfo { hasNextPage endCursor } } }`, { a: after })).fabric;
    switches.push(...data.switches);
    if (!data.pageInfo.hasNextPage) break;
    after = data.pageInfo.endCursor;
  }
  const tiers = ["core", "spine", "leaf"];
  const cols = tiers.map((t) => switches.filter((s) => s.tier === t)).filter((c) => c.length);
  const width = Math.max(900, Math.max(...cols.map((c) => c.length)) * 14 + 100);
  const pos = {};
  cols.forEach((col, row) => col.forEach((s, i) => { pos[s.name] = [60 + (i + 0.5) * (width - 80) / col.length, 40 + row * 140]; }));
  const maxBw = Math.max(1, ...switches.flatMap((s) => s.uplinks.map((u) => u.bandwidthGbps || 0)));
  const lines = switches.flatMap((s) => s.uplinks.filter((u) => pos[u.to]).map((u) => {
    const [x1, y1] = pos[s.name]; const [x2, y2] = pos[u.to];
    return `<line x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}" stroke="#7a8ab0" stroke-opacity=".35" stroke-width="${(0.5 + 2.5 * (u.bandwidthGbps || 0) / maxBw).toFixed(2)}"><title>${esc(s.name)} → ${esc(u.to)}: ${u.bandwidthGbps} GB/s</title></line>`;
  }));
  const hostRow = 40 + cols.length * 140;
  const leaves = switches.filter((s) => s.tier === "leaf");
  const hostMarks = leaves.map((s) => { const [x, y] = pos[s.name];
    return `<line x1="${x}" y1="${y}" x2="${x}" y2="${hostRow}" stroke="#aab" stroke-dasharray="2,2"/><rect x="${x - 5}" y="${hostRow}" width="10" height="${Math.max(4, s.nics / 2)}" fill="#6a9"><title>${s.nics} host NICs, ${s.freeGpus ?? 0} free GPUs behind ${esc(s.name)}</title></rect>`; });
  const nodes = switches.map((s) => { const [x, y] = pos[s.name] || [0, 0];
    return `<g class="switch" data-name="${esc(s.name)}"><circle cx="${x}" cy="${y}" r="6" fill="${s.tier === "leaf" ? "#4a7" : s.tier === "spine" ? "#47a" : "#a47"}"><title>${esc(s.name)} (${s.tier}) ${s.nics} NICs</title></circle></g>`; });
  view.innerHTML = `<h2>Fabric: ${switches.length} switches (${cols.map((c) => `${c.length} ${c[0].tier}`).join(", ")})</h2>
    <p class="legend">line width: uplink bandwidth · bars: hosts' NICs per leaf</p>
    <svg id="fabric" width="${width}" height="${hostRow + 80}" xmlns="http://www.w3.org/2000/svg">${lines.join("")}${hostMarks.join("")}${nodes.join("")}
    ${cols.map((col, row) => `<text x="4" y="${44 + row * 140}">${col[0].tier}</text>`).join("")}<text x="4" y="${hostRow + 10}">hosts</text></svg>`;
  view.dataset.renderMs = String(Math.round(performance.now() - started));
}

async function reservations() {
  const data = await gql(`{ reservations(first: 500) { id holder state expiresAt priority gpus { uuid index host { name } } } }`);
  const live = data.reservations.filter((r) => r.state === "active");
  view.innerHTML = `<h2>Reservations (${live.length} live)</h2><table id="reservations"><tr><th>id</th><th>holder</th><th>state</th><th>GPUs</th><th>expires</th><th></th></tr>
    ${data.reservations.map((r) => `<tr data-id="${esc(r.id)}"><td>${esc(r.id)}</td><td>${esc(r.holder)}</td><td>${esc(r.state)}</td>
      <td>${r.gpus.map((g) => `${esc(g.host.name)}:${g.index}`).join(", ")}</td><td>${new Date(r.expiresAt * 1000).toLocaleTimeString()}</td>
      <td>${r.state === "active" ? `<button class="release" data-id="${esc(r.id)}">release</button>` : ""}</td></tr>`).join("")}</table>`;
  view.querySelectorAll("button.release").forEach((b) => b.addEventListener("click", async () => {
    await gql(`mutation($id: String!) { release(id: $id) { __typename } }`, { id: b.dataset.id });
    await reservations();
  }));
}

async function place(text) {
  view.innerHTML = `<h2>Placement playground</h2>
    <form id="place-form"><input name="q" size="50" value="${esc(text || "8xH100 nvlink=full-mesh ib-hops<=1")}" aria-label="request"> <button>place</button></form>
    <div id="candidates"></div><div id="picture"></div>`;
  $("#place-form").addEventListener("submit", (e) => { e.preventDefault(); location.hash = `#/place?q=${encodeURIComponent(e.target.q.value)}`; });
  if (!text) return;
  const result = (await gql(`query($t: String!) { placementText(text: $t) { request
    candidates { rank score reason bottleneckGbps maxIbHops gpus { uuid index host { name } } }
    infeasible { constraint message nearestFeasible } } }`, { t: text })).placementText;
  const box = $("#candidates");
  if (!result.candidates.length) {
    box.innerHTML = result.infeasible.map((r) => `<div class="cand infeasible"><b>${esc(r.constraint)}</b>: ${esc(r.message)}${r.nearestFeasible ? ` — try <a href="#/place?q=${encodeURIComponent(r.nearestFeasible)}">${esc(r.nearestFeasible)}</a>` : ""}</div>`).join("");
    return;
  }
  box.innerHTML = result.candidates.map((c) => `<div class="cand" data-rank="${c.rank}"><b>#${c.rank}</b> score ${c.score} · bottleneck ${c.bottleneckGbps ?? "-"} GB/s · ${c.maxIbHops} hops
    <p>${esc(c.reason)}</p><button class="show" data-rank="${c.rank}">show</button> <button class="reserve" data-rank="${c.rank}">reserve</button></div>`).join("");
  const { hosts, byHost } = await loadCluster();
  const show = (rank) => {
    const c = result.candidates.find((x) => x.rank === rank);
    const picked = new Set(c.gpus.map((g) => g.uuid));
    const names = new Set(c.gpus.map((g) => g.host.name));
    $("#picture").innerHTML = `<h3>Candidate #${rank} on the topology</h3>${renderGroups(hosts.filter((h) => names.has(h.name) || hosts.length < 400), byHost, picked)}`;
  };
  box.querySelectorAll("button.show").forEach((b) => b.addEventListener("click", () => show(Number(b.dataset.rank))));
  box.querySelectorAll("button.reserve").forEach((b) => b.addEventListener("click", async () => {
    const c = result.candidates.find((x) => x.rank === Number(b.dataset.rank));
    const out = (await gql(`mutation($g: [String!]) { reserve(input: {holder: "explorer", ttlSeconds: 3600, gpus: $g}) { __typename ... on Reservation { id } ... on Conflict { message } } }`, { g: c.gpus.map((g) => g.uuid) })).reserve;
    $("#status").textContent = out.__typename === "Reservation" ? `reserved ${out.id}` : `${out.__typename}: ${out.message || ""}`;
    b.disabled = true;
  }));
  show(1);
}

async function search(q) {
  q = q.trim();
  if (!q) return;
  const h = (await gql(`query($n: String!) { host(name: $n) { name } }`, { n: q })).host;
  if (h) { location.hash = `#/host/${encodeURIComponent(h.name)}`; return; }
  const gpus = await pages("gpus", GPUS);
  const hit = gpus.find((g) => g.uuid === q);
  if (hit) { location.hash = `#/host/${encodeURIComponent(hit.host.name)}`; return; }
  view.innerHTML = `<h2>Nothing named ${esc(q)}</h2>`;
}

$("#search").addEventListener("submit", (e) => { e.preventDefault(); location.hash = `#/search?q=${encodeURIComponent(e.target.q.value)}`; });

async function route() {
  const hash = location.hash || "#/overview";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === parts[0]));
  view.dataset.ready = "false";
  try {
    if (parts[0] === "host") await host(decodeURIComponent(parts[1] || ""));
    else if (parts[0] === "fabric") await fabric();
    else if (parts[0] === "reservations") await reservations();
    else if (parts[0] === "place") await place(params.get("q"));
    else if (parts[0] === "search") await search(params.get("q") || "");
    else await overview(params);
    $("#status").textContent = "";
  } catch (err) {
    view.innerHTML = `<h2>Could not load this view</h2><p class="error">${esc(err.message)}</p>`;
  }
  view.dataset.ready = "true";
}

window.addEventListener("hashchange", route);
route();
