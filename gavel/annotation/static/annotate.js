// Saves each edit as it is made and shows whether everything is saved.
// A field's edits are sent one after another (never two at once, so the newest is stored last); each send
// carries a fresh token, so a resend of the same edit is stored once. Edits still waiting when the tab is
// closed or hidden are sent with sendBeacon; requests under way are kept alive by fetch's keepalive.
// Each save carries the revision of the answer this page last saw ("base"); when another tab or window has
// saved the answer since, the server keeps this edit in the history without applying it and answers 409
// with "conflict": the status then says so until the page is reloaded.
(function () {
  "use strict";
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const statusEl = document.getElementById("save-status");
  const task = document.getElementById("task");
  if (!task) return;
  const saveUrl = task.dataset.save;
  const pending = new Map();   // field -> {value (JSON text), token, timer}
  const sending = new Map();   // field -> the token of its save under way
  const bases = new Map();     // field -> the revision of the answer this page last saw
  let failure = null;
  let conflict = null;
  for (const f of document.querySelectorAll("form.autosave")) bases.set(f.dataset.field, Number(f.dataset.base || 0));
  const revEl = document.getElementById("revisions");
  if (revEl) for (const [field, rev] of Object.entries(JSON.parse(revEl.textContent))) bases.set(field, rev);

  function newToken() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return Date.now().toString(16) + "-" + Math.random().toString(16).slice(2);
  }

  function show() {
    let state, text;
    if (conflict) { state = "conflict"; text = "Not applied: " + conflict; }
    else if (failure) { state = "error"; text = "Not saved: " + failure; }
    else if (pending.size || sending.size) { state = "pending"; text = "Not saved yet"; }
    else { state = "saved"; text = "All changes saved"; }
    statusEl.dataset.state = state;
    statusEl.textContent = text;
  }

  function form(field, item, after) {
    const body = new FormData();
    body.append("csrf_token", csrf);
    body.append("field", field);
    body.append("value", item.value);
    body.append("token", item.token);
    body.append("base", String(bases.get(field) || 0));
    if (after) body.append("after", after);  // the beacon: based on this page's own save still under way
    return body;
  }

  function send(field) {
    if (sending.has(field) || !pending.has(field)) return;
    const item = pending.get(field);
    if (item.timer) { clearTimeout(item.timer); item.timer = null; }
    pending.delete(field);
    sending.set(field, item.token);
    show();
    fetch(saveUrl, {method: "POST", body: form(field, item, null), keepalive: true, credentials: "same-origin",
                    headers: {"X-Requested-With": "fetch", "X-CSRFToken": csrf}})
      .then((r) => r.json().then((j) => ({ok: r.ok && j.saved === true, j: j}), () => ({ok: false, j: {error: "HTTP " + r.status}})))
      .then(({ok, j}) => {
        sending.delete(field);
        if (j.conflict) {
          conflict = j.error;  // kept in the history by the server; resending would not apply it either
        } else if (!ok) {
          if (!pending.has(field)) pending.set(field, item);
          failure = j.error || "error";
        } else {
          failure = null;
          bases.set(field, j.revision);
          send(field);  // a newer edit of the same field may be waiting
        }
        show();
      })
      .catch((err) => {
        sending.delete(field);
        if (!pending.has(field)) pending.set(field, item);
        failure = String(err);
        show();
      });
  }

  function queue(field, value, delay) {
    const old = pending.get(field);
    if (old && old.timer) clearTimeout(old.timer);
    const item = {value: JSON.stringify(value), token: newToken(), timer: null};
    pending.set(field, item);
    if (delay) item.timer = setTimeout(() => send(field), delay);
    else send(field);
    show();
  }

  function flushWithBeacon() {
    for (const [field, item] of pending) {
      if (item.timer) clearTimeout(item.timer);
      // a save of this field still under way: this one is based on the page's base or on that save
      if (navigator.sendBeacon(saveUrl, form(field, item, sending.get(field)))) pending.delete(field);
    }
  }
  window.addEventListener("pagehide", flushWithBeacon);
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") flushWithBeacon(); });
  window.addEventListener("beforeunload", (e) => { if (pending.size || sending.size) { flushWithBeacon(); } });
  setInterval(() => { if (failure) for (const field of pending.keys()) send(field); }, 3000);

  // --- forms that save on change (comparison, style) ---------------------------------------------------
  for (const f of document.querySelectorAll("form.autosave")) {
    f.addEventListener("submit", (e) => e.preventDefault());
    f.addEventListener("change", () => {
      const field = f.dataset.field;
      if (field === "matches") {
        const pairs = [...f.querySelectorAll('input[name="match"]:checked')].map((c) => c.value.split(",").map(Number));
        queue(field, pairs, 0);
      } else {
        const c = f.querySelector('input[name="choice"]:checked');
        if (!c) return;
        queue(field, f.dataset.int ? Number(c.value) : c.value, 0);
      }
    });
  }

  // --- extraction review -------------------------------------------------------------------------------
  if (task.dataset.kind !== "extraction") { show(); return; }
  const state = JSON.parse(document.getElementById("state").textContent);
  const info = JSON.parse(document.getElementById("item-info").textContent);
  const paras = [...document.querySelectorAll("#summary p.para")];
  for (const p of paras) p.dataset.text = p.textContent;  // the exact summary slice start..end
  const itemsEl = document.getElementById("items");

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function highlight() {
    const spans = [];
    for (const [key, values] of Object.entries(state)) {
      for (const v of values) for (const ev of v.evidence) {
        if (Number.isInteger(ev.start) && Number.isInteger(ev.end)) spans.push({s: ev.start, e: ev.end, key: key});
      }
    }
    for (const p of paras) {
      const ps = Number(p.dataset.start), pe = Number(p.dataset.end), text = p.dataset.text;
      const cuts = new Set([ps, pe]);
      for (const sp of spans) {
        if (sp.s > ps && sp.s < pe) cuts.add(sp.s);
        if (sp.e > ps && sp.e < pe) cuts.add(sp.e);
      }
      const points = [...cuts].sort((a, b) => a - b);
      p.textContent = "";
      for (let i = 0; i + 1 < points.length; i++) {
        const x = points[i], y = points[i + 1];
        const keys = [...new Set(spans.filter((sp) => sp.s <= x && sp.e >= y).map((sp) => sp.key))];
        const piece = text.slice(x - ps, y - ps);
        if (keys.length) {
          p.appendChild(el("mark", {"data-start": x, "data-end": y, "data-items": keys.join(" "), title: keys.join(", ")}, piece));
        } else {
          p.appendChild(document.createTextNode(piece));
        }
      }
    }
  }

  function offsetIn(p, node, off) {
    const r = document.createRange();
    r.selectNodeContents(p);
    r.setEnd(node, off);
    return Number(p.dataset.start) + r.toString().length;
  }

  function paraOf(node) {
    const e = node.nodeType === 1 ? node : node.parentElement;
    return e ? e.closest("#summary p.para") : null;
  }

  function selectedSpan() {
    const sel = window.getSelection();
    if (!sel || !sel.rangeCount || sel.isCollapsed) return null;
    const r = sel.getRangeAt(0);
    const a = paraOf(r.startContainer), b = paraOf(r.endContainer);
    if (!a || !b) return null;
    const start = offsetIn(a, r.startContainer, r.startOffset), end = offsetIn(b, r.endContainer, r.endOffset);
    return end > start ? {start: start, end: end} : null;
  }

  function textOf(start, end) {
    let out = "";
    for (const p of paras) {
      const ps = Number(p.dataset.start), pe = Number(p.dataset.end);
      const s = Math.max(start, ps), e = Math.min(end, pe);
      if (e > s) out += (out ? "\n" : "") + p.dataset.text.slice(s - ps, e - ps);
    }
    return out;
  }

  function saveItem(key, delay) { queue("item:" + key, state[key], delay); }

  function renderItem(box, key) {
    box.querySelector(".values").replaceChildren(...state[key].map((v, i) => {
      const row = el("div", {class: "value", "data-index": i});
      const input = el("input", {class: "value-text", "aria-label": "value " + (i + 1) + " of " + key});
      input.value = v.value;
      input.addEventListener("input", () => { v.value = input.value; saveItem(key, 800); });
      input.addEventListener("change", () => { v.value = input.value; saveItem(key, 0); });
      const del = el("button", {type: "button", class: "del-value"}, "delete value");
      del.addEventListener("click", () => { state[key].splice(i, 1); saveItem(key, 0); renderItem(box, key); highlight(); });
      const add = el("button", {type: "button", class: "add-evidence"}, "+ evidence");
      add.addEventListener("mousedown", (e) => e.preventDefault());  // keep the text selection
      add.addEventListener("click", () => {
        const span = selectedSpan();
        if (!span) { statusEl.dataset.state = "error"; statusEl.textContent = "Select text in the summary first"; return; }
        v.evidence.push({start: span.start, end: span.end, text: textOf(span.start, span.end)});
        window.getSelection().removeAllRanges();
        saveItem(key, 0); renderItem(box, key); highlight();
      });
      const evs = el("ul", {class: "evidence-list"});
      v.evidence.forEach((ev, k) => {
        const li = el("li", {class: "evidence", "data-start": ev.start === null ? "" : ev.start, "data-end": ev.end === null ? "" : ev.end},
                      (ev.start === null ? "[not found in the summary] " : "") + ev.text);
        const x = el("button", {type: "button", class: "del-evidence", "aria-label": "remove evidence"}, "×");
        x.addEventListener("click", () => { v.evidence.splice(k, 1); saveItem(key, 0); renderItem(box, key); highlight(); });
        li.appendChild(x);
        evs.appendChild(li);
      });
      row.append(input, del, add, evs);
      return row;
    }));
  }

  for (const it of info) {
    const box = el("div", {class: "item", "data-item": it.key});
    box.appendChild(el("h3", {title: it.definition}, it.label));
    box.appendChild(el("div", {class: "values"}));
    const addValue = el("button", {type: "button", class: "add-value"}, "+ value");
    addValue.addEventListener("click", () => {
      state[it.key].push({value: "", evidence: []});
      renderItem(box, it.key);
      box.querySelector(".value:last-child input.value-text").focus();
    });
    box.appendChild(addValue);
    // pointing at an item shows its own evidence in a stronger colour
    box.addEventListener("mouseenter", () => {
      for (const m of document.querySelectorAll("#summary mark")) m.classList.toggle("active", m.dataset.items.split(" ").includes(it.key));
    });
    box.addEventListener("mouseleave", () => { for (const m of document.querySelectorAll("#summary mark.active")) m.classList.remove("active"); });
    itemsEl.appendChild(box);
    renderItem(box, it.key);
  }
  highlight();
  show();
})();
