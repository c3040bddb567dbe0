// gavel report: the views drawn from the page's JSON data. Every text from the data is set as text
// (textContent, createTextNode), never parsed as HTML; links are fragments built here; no eval.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const RUNS = { a: DATA, b: DATA.diff ? {} : null };
  // texts, values, answers and the baseline run: parsed when a view first needs them
  let detailed = false;
  function needDetail() {
    if (detailed) return;
    Object.assign(DATA, JSON.parse(document.getElementById("report-detail").textContent));
    if (DATA.against) Object.assign(RUNS.b, DATA.against);
    detailed = true;
  }
  const PAGE = 200;
  const STYLE_LABELS = {
    readability_jargon: "Readability and jargon", narrative_order: "Narrative order",
    sentence_structure: "Sentence structure", formatting_layout: "Formatting and layout",
    citation_style: "Citations", s_style: "S_style", status: "status", detail: "detail"
  };
  const app = document.getElementById("app");

  // ---------- small helpers ----------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "href") {
        if (typeof v !== "string" || v[0] !== "#") throw new Error("only fragment links");
        el.setAttribute("href", v);
      } else if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else el.setAttribute(k, String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const sep = (...parts) => parts.join("|");
  const fmt = (x, d) => (x === null || x === undefined ? "–" : Number(x).toFixed(d === undefined ? 2 : d));
  const label = (run, s) => (s === "human" ? "Reference" : (run.labels[s] || s));
  const itemName = (run, k) => { const f = run.items.find((i) => i[0] === k); return f ? f[1] : k; };
  function link(state) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) if (v !== null && v !== undefined && v !== "") p.set(k, v);
    return "#" + p.toString();
  }
  function readState() {
    let hash = location.hash.slice(1);
    if (!hash && DATA.start) hash = DATA.start.slice(1);
    const p = new URLSearchParams(hash);
    const s = {};
    for (const [k, v] of p.entries()) s[k] = v;
    if (!s.view) s.view = DATA.diff ? "diff" : "cells";
    return s;
  }
  function go(state) { location.hash = link(state).slice(1); }
  function cellsOf(run) {
    if (!run._cells) {
      const cols = run.cells_columns;
      run._cells = run.cells.map((r) => { const o = {}; cols.forEach((c, i) => { o[c] = r[i]; }); return o; });
      run._flipped = new Set(run.flipped || []);
    }
    return run._cells;
  }
  // unusable: an answer that could not be read (a run), a judgment that could not be read (the release)
  const isUsable = (c) => (DATA.kind === "release" ? c.status !== "unreadable_judgment" : c.status === "ok" || c.status === "gated");
  function verdictText(c) {
    const parts = [`status ${c.status}`];
    if (c.gate) parts.push(`gate ${c.gate}`);
    if (c.relation) parts.push(`relation ${c.relation}`);
    if (c.pairs) parts.push(`matched (model, reference) ${JSON.stringify(c.pairs)}`);
    return parts.join(" · ");
  }
  function table(columns, rows, cls) {
    return h("table", { class: cls || "plain" },
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, r.map((v) => h("td", {}, v === null || v === undefined ? "" : v))))));
  }

  // ---------- highlights at offsets ----------
  // JavaScript strings count UTF-16 units; the offsets count characters (code points), as Python does.
  function unitIndex(text) {
    if (!/[\uD800-\uDBFF]/.test(text)) return null;
    const map = [0];
    let u = 0;
    for (const ch of text) { u += ch.length; map.push(u); }
    return map;
  }
  // spans: [{s, e, id, cls}] in characters; each maximal piece covered by the same spans becomes one <mark>
  // carrying its character offsets (data-start, data-end) and the ids of the spans covering it.
  function highlighted(text, spans) {
    const map = unitIndex(text);
    const length = map ? map.length - 1 : text.length;
    const unit = (i) => (map ? map[i] : i);
    const valid = spans.filter((sp) => Number.isInteger(sp.s) && Number.isInteger(sp.e) && sp.s < sp.e && sp.s >= 0 && sp.e <= length);
    const cuts = new Set([0, length]);
    valid.forEach((sp) => { cuts.add(sp.s); cuts.add(sp.e); });
    const points = [...cuts].sort((x, y) => x - y);
    const box = h("div", { class: "text" });
    for (let i = 0; i + 1 < points.length; i++) {
      const a = points[i], b = points[i + 1];
      const piece = text.slice(unit(a), unit(b));
      const over = valid.filter((sp) => sp.s <= a && sp.e >= b);
      if (!over.length) { box.appendChild(document.createTextNode(piece)); continue; }
      box.appendChild(h("mark", { class: [...new Set(over.map((sp) => sp.cls))].join(" "), "data-start": a, "data-end": b,
        "data-ids": over.map((sp) => sp.id).join(" "), title: over.map((sp) => sp.title).join("; ") }, piece));
    }
    return box;
  }

  // ---------- filters and the list of cells ----------
  const FILTERS = [["subject", "model"], ["item", "item"], ["case", "case"], ["gate", "gate"],
    ["relation", "relation"], ["status", "status"]];
  function filtered(run, st) {
    return cellsOf(run).filter((c) => (!st.subject || c.subject === st.subject) && (!st.item || c.item === st.item) &&
      (!st.case || c.case_id === st.case) && (!st.gate || c.gate === st.gate) &&
      (!st.relation || c.relation === st.relation) &&
      (!st.status || (st.status === "unusable" ? !isUsable(c) : c.status === st.status)) &&
      (!st.flipped || run._flipped.has(sep(c.subject, c.case_id, c.item))));
  }
  function filterForm(run, st) {
    const cells = cellsOf(run);
    const form = h("form", { class: "filters", id: "filters" });
    for (const [field, name] of FILTERS) {
      const col = field === "case" ? "case_id" : field;
      let options = [...new Set(cells.map((c) => c[col]).filter((v) => v !== null && v !== ""))].sort();
      if (field === "status") options = ["unusable", ...options];
      const sel = h("select", { name: field, id: `filter-${field}` }, h("option", { value: "" }, `any ${name}`),
        options.map((v) => h("option", { value: v }, field === "subject" ? label(run, v) : field === "item" ? itemName(run, v) : v)));
      sel.value = st[field] || "";
      sel.addEventListener("change", () => go({ ...st, view: "cells", [field]: sel.value, page: "" }));
      form.appendChild(h("label", {}, name + " ", sel));
    }
    const flip = h("input", { type: "checkbox", id: "filter-flipped", disabled: run.flipped && run.flipped.length ? null : "disabled" });
    flip.checked = !!st.flipped;
    flip.addEventListener("change", () => go({ ...st, view: "cells", flipped: flip.checked ? "1" : "", page: "" }));
    form.appendChild(h("label", { title: "verdicts not the same in every repeat or order (where the run has them)" }, flip, " flipped"));
    form.addEventListener("submit", (ev) => ev.preventDefault());
    return form;
  }
  function cellList(run, st) {
    const rows = filtered(run, st);
    const shown = rows.slice(0, PAGE * (Number(st.page) || 1));
    const out = h("div", { id: "cell-list" }, h("p", { class: "count", id: "cell-count" }, `${rows.length} cells`));
    out.appendChild(table(["Model", "Case", "Item", "Gate", "Relation / pairs", "Score", "Status"], shown.map((c) => [
      h("a", { href: link({ view: "cell", run: st.run, subject: c.subject, case: c.case_id, item: c.item }), class: "cell-link" }, label(run, c.subject)),
      h("a", { href: link({ view: "summary", run: st.run, subject: c.subject, case: c.case_id }) }, c.case_id),
      itemName(run, c.item), c.gate || "", c.relation || (c.pairs ? JSON.stringify(c.pairs) : ""),
      c.low !== undefined && c.low !== c.high && c.low !== null ? `${fmt(c.score)} (${fmt(c.low)}–${fmt(c.high)})` : fmt(c.score),
      c.status]), "plain cells"));
    if (shown.length < rows.length) out.appendChild(h("p", {}, h("a", { href: link({ ...st, page: (Number(st.page) || 1) + 1 }) }, `show ${Math.min(PAGE, rows.length - shown.length)} more`)));
    return out;
  }

  // ---------- one cell ----------
  function side(run, subject, c, which) {
    const vals = run.values[sep(subject, c.case_id, c.item)] || [];
    const text = run.texts[sep(subject, c.case_id)];
    const box = h("div", { class: `side ${which}`, id: `side-${which}` }, h("h4", {}, label(run, subject)));
    const status = run.extract_status[sep(subject, c.case_id, c.item)];
    if (status && status !== "ok") box.appendChild(h("p", { class: "bad" }, `extraction unusable: ${status}`));
    if (DATA.kind === "release" && which === "reference") box.appendChild(h("p", { class: "hint" }, "reference checklist not released (empty file)"));
    const spans = [];
    const list = h("ol", { class: "values" });
    const ungrounded = [];
    vals.forEach(([index, value, evidence, offsets, grounding]) => {
      const li = h("li", { "data-index": index }, h("span", { class: "value" }, value));
      (evidence || []).forEach((snip, k) => {
        const off = (offsets || [])[k];
        const g = (grounding || [])[k] || "";
        if (off && off.length === 2) {
          spans.push({ s: off[0], e: off[1], id: `v${index}e${k + 1}`, cls: `ev ${g}`, title: `value ${index}, evidence ${k + 1} (${g})` });
          li.appendChild(h("span", { class: `badge ${g}`, title: `evidence ${k + 1}: ${g} at ${off[0]}–${off[1]}` }, g));
        } else {
          ungrounded.push([index, snip, g]);
          li.appendChild(h("span", { class: "badge ungrounded", title: "evidence not found in the summary" }, "ungrounded"));
        }
      });
      list.appendChild(li);
    });
    box.appendChild(vals.length ? list : h("p", { class: "hint" }, status && status !== "ok" ? "no values (unusable answer)" : "no values"));
    if (ungrounded.length) {
      box.appendChild(h("div", { class: "ungrounded-list" }, h("p", {}, "Evidence not found in the summary:"),
        h("ul", {}, ungrounded.map(([i, snip, g]) => h("li", { class: "ungrounded" }, `value ${i}: `, h("q", {}, snip), g ? ` (${g})` : "")))));
    }
    if (text !== undefined) box.appendChild(highlighted(text, spans));
    else box.appendChild(h("p", { class: "hint" }, "summary text not in this report"));
    return box;
  }
  function answers(run, stage, subject, caseId, item) {
    const rounds = run.answers[sep(stage, subject, caseId, item || "")] || [];
    if (!rounds.length) return null;
    const box = h("div", { class: "answers" }, h("h4", {}, `${stage} · ${label(run, subject)}: ${rounds.length} answer${rounds.length > 1 ? "s" : ""}${rounds.length > 1 ? " (re-asked)" : ""}`));
    rounds.forEach(([round, status, detail, finish, tin, tout, raw]) => {
      box.appendChild(h("div", { class: `round ${status === "ok" || status === "gated" ? "good" : "bad"}` },
        h("p", {}, `round ${round}: ${status}`, detail ? ` — ${detail}` : "", finish ? ` · finish ${finish}` : "",
          tin !== null && tin !== undefined ? ` · tokens in ${tin}, out ${tout}` : ""),
        raw !== null && raw !== undefined ? h("pre", { class: "raw" }, run.raw[raw]) : null));
    });
    return box;
  }
  function optionalViews(run, scope, k) {
    const out = [];
    for (const [name, t] of Object.entries(run.optional || {})) {
      if (t.scope !== scope || !t.by[k]) continue;
      out.push(h("div", { class: `optional ${name}`, id: `optional-${name}` }, h("h4", {}, `${t.title} (${t.file})`), table(t.columns, t.by[k])));
    }
    return out;
  }
  function cellView(run, st) {
    const c = cellsOf(run).find((x) => x.subject === st.subject && x.case_id === st.case && x.item === st.item);
    if (!c) return h("p", { class: "bad", id: "cell-missing" }, "This cell is not in this report.");
    const k = sep(c.subject, c.case_id, c.item);
    const box = h("article", { class: "cell", id: "cell", "data-key": k },
      h("h3", {}, `${itemName(run, c.item)} — case ${c.case_id} — ${label(run, c.subject)}`),
      h("p", { class: "verdict", id: "verdict" }, verdictText(c), ` · score ${fmt(c.score)}`,
        c.low !== undefined && c.low !== c.high ? ` (bounds ${fmt(c.low)}–${fmt(c.high)})` : ""),
      c.detail ? h("p", { class: "detail" }, c.detail) : null,
      c.problems ? h("p", { class: "bad" }, `problems: ${c.problems}`) : null,
      h("p", {}, h("a", { href: link({ view: "summary", run: st.run, subject: c.subject, case: c.case_id }) }, "this summary's residual facts, style and scores"),
        RUNS.b ? [" · ", h("a", { href: link({ ...st, run: st.run === "b" ? "" : "b" }), id: "other-run" }, st.run === "b" ? "this cell in this run" : "this cell in the baseline run")] : null),
      run._flipped.has(k) ? h("p", { class: "bad" }, "the verdict flips between repeats or orders")
        : run.optional && run.optional.stability_units ? h("p", { class: "hint", id: "same-in-repeats" }, "the same verdict in every repeat") : null,
      h("div", { class: "sides" }, side(run, c.subject, c, "model"), side(run, "human", c, "reference")),
      answers(run, "compare", c.subject, c.case_id, c.item),
      answers(run, "extract", c.subject, c.case_id, c.item), answers(run, "extract", "human", c.case_id, c.item),
      optionalViews(run, "cell", k));
    return box;
  }

  // ---------- one summary: scores, residual facts, style ----------
  function summaryView(run, st) {
    const k = sep(st.subject, st.case);
    const s = run.summaries[k];
    const box = h("article", { class: "summary", id: "summary" }, h("h3", {}, `case ${st.case} — ${label(run, st.subject)}`));
    if (!s) { box.appendChild(h("p", { class: "bad" }, "This summary is not in this report.")); return box; }
    box.appendChild(table(Object.keys(s.scores), [Object.values(s.scores).map((v) => fmt(v, 3))]));
    const res = run.residual[k];
    if (res) {
      const facts = res.facts || [];
      box.appendChild(h("h4", {}, `Residual: r = ${fmt(res.r, 3)}, ${res.spans.length} spans not covered by the checklist, ${facts.length} facts`));
      const spans = res.spans.map((sp, i) => ({ s: sp[0], e: sp[1], id: `r${i + 1}`, cls: "res", title: `residual span ${i + 1}` }));
      if (run.texts[k] !== undefined) box.appendChild(highlighted(run.texts[k], spans));
      box.appendChild(h("ol", { class: "facts" }, facts.map(([i, fact, on]) => h("li", {}, fact, h("small", {}, ` (spans ${(on || []).join(", ")})`)))));
      const m = run.residual_match[k];
      if (m) box.appendChild(h("p", {}, `facts matched with the reference's: gate ${m[0]}, pairs ${JSON.stringify(m[1])}, score ${fmt(m[2])}, status ${m[3]}${m[4] ? " — " + m[4] : ""}`));
      box.appendChild(answers(run, "residual", st.subject, st.case, "") || h("span"));
      box.appendChild(answers(run, "residual_match", st.subject, st.case, "residual_facts") || h("span"));
    } else if (DATA.kind === "release") box.appendChild(h("p", { class: "hint" }, "The release holds no residual facts or style ratings."));
    const sty = run.style[k];
    if (sty) {
      box.appendChild(h("h4", {}, "Style ratings (1 = completely different from the reference, 5 = the same)"));
      box.appendChild(table(["aspect", "rating"], sty.map(([a, v]) => [STYLE_LABELS[a] || a, v])));
      box.appendChild(answers(run, "style", st.subject, st.case, "") || h("span"));
    }
    box.appendChild(h("h4", {}, "Cells"));
    box.appendChild(cellList(run, { subject: st.subject, case: st.case, run: st.run, page: 9 }));
    box.appendChild(h("div", {}, optionalViews(run, "summary", k)));
    return box;
  }

  // ---------- what changed between two runs ----------
  function diffView(st) {
    const d = DATA.diff;
    const box = h("article", { id: "diff" }, h("h3", {}, `Changes from the baseline ${d.b} to ${d.a} (regressions first, the largest first)`));
    const changes = d.changes.filter((c) => !st.kind || c.kind === st.kind);
    const kinds = h("p", {}, "show: ", h("a", { href: link({ view: "diff" }) }, "all"),
      ["regression", "improvement", "changed", "values"].map((k) => [" · ", h("a", { href: link({ view: "diff", kind: k }) }, `${k} (${d.totals[k]})`)]));
    box.appendChild(kinds);
    box.appendChild(table(["Kind", "Model", "Case", "Item", "Baseline", "This run", "Score", "Values changed"], changes.map((c) => [
      c.kind, label(DATA, c.subject), c.case_id,
      h("a", { href: link({ view: "cell", subject: c.subject, case: c.case_id, item: c.item }), class: "change-link" }, itemName(DATA, c.item)),
      c.verdict_b, c.verdict_a, `${fmt(c.score_b)} → ${fmt(c.score_a)}`, c.values_changed ? "yes" : ""]), "plain changes"));
    box.appendChild(h("p", { class: "headline" }, d.headline));
    box.appendChild(h("ul", { class: "run-sentences" }, (d.sentences || []).map((line) => h("li", {}, line))));
    box.appendChild(h("h4", {}, `Summary scores that changed (${d.regressions.summary_scores} regressions, largest first)`));
    box.appendChild(table(["Kind", "Model", "Case", "Score", "Baseline", "This run"], d.summary_changes.map((c) => [
      c.kind, label(DATA, c.subject), h("a", { href: link({ view: "summary", subject: c.subject, case: c.case_id }) }, c.case_id),
      c.score, fmt(c.b), fmt(c.a)]), "plain summary-changes"));
    box.appendChild(h("h4", {}, `Per item (${d.regressions.items} with a regression, most first)`));
    box.appendChild(table(["Item", "Cells in both", "Regressions", "Improvements", "Other verdict changes", "Values only", "Only in this run", "Only in the baseline"],
      d.per_item.map(([it, c]) => [itemName(DATA, it), c.cells, c.regression, c.improvement, c.changed, c.values, c.only_a, c.only_b]), "plain per-item"));
    for (const [which, title] of [["only_a", `Only in this run (${d.a})`], ["only_b", `Only in the baseline (${d.b})`]]) {
      const o = d[which];
      box.appendChild(h("div", { id: `diff-${which}` }, h("h4", {}, `${title}: ${o.cells.length} cells, ${o.summaries.length} summaries`),
        h("ul", { class: "only" }, o.summaries.map((s) => h("li", { class: "summary-key" }, s)), o.cells.map((s) => h("li", { class: "cell-key" }, s)))));
    }
    return box;
  }

  // ---------- the run overview (optional tables of the whole run) ----------
  function runTables(run) {
    const out = [];
    for (const [name, t] of Object.entries(run.optional || {})) {
      if (t.scope === "run") out.push(h("details", { class: `optional ${name}`, id: `optional-${name}` }, h("summary", {}, `${t.title} (${t.file})`), table(t.columns, t.rows)));
      else out.push(h("p", { class: "hint" }, `${t.title}: ${t.rows_total} rows (${t.file}), shown with each ${t.scope}.`));
    }
    if (run.problems && run.problems.length) {
      out.push(h("details", { id: "problems" }, h("summary", {}, `${run.problems.length} inputs left out`),
        table(["subject", "case", "problem"], run.problems.map((p) => [p.subject, p.case_id, p.problem]))));
    }
    return out;
  }

  function render() {
    const st = readState();
    if (st.run === "b" || st.view === "cell" || st.view === "summary") needDetail();
    const run = st.run === "b" && RUNS.b ? RUNS.b : DATA;
    cellsOf(run);
    const nav = h("nav", {}, DATA.diff ? [h("a", { href: link({ view: "diff" }) }, "changes"), " · "] : null,
      h("a", { href: link({ view: "cells", run: st.run }) }, "all cells"),
      RUNS.b ? [" · viewing ", h("strong", {}, st.run === "b" ? `the baseline (${DATA.diff.b})` : `this run (${DATA.source})`)] : null);
    const parts = [nav];
    if (st.view === "diff" && DATA.diff) parts.push(diffView(st));
    else if (st.view === "cell") parts.push(cellView(run, st));
    else if (st.view === "summary") parts.push(summaryView(run, st));
    else parts.push(h("h2", {}, "Cells"), filterForm(run, st), cellList(run, st), runTables(run));
    app.replaceChildren(...parts.flat().filter(Boolean));
    document.body.dataset.view = st.view;
    if (st.view === "cell" || st.view === "summary") {
      (document.getElementById(st.view) || app).scrollIntoView();
      // each text box opens at its first highlight
      for (const box of app.querySelectorAll(".side .text")) {
        const mark = box.querySelector("mark");
        if (mark) box.scrollTop = Math.max(0, mark.offsetTop - 60);  // the box is the offset parent
      }
    }
  }
  window.addEventListener("hashchange", render);
  render();
  document.body.dataset.ready = "1";
})();
