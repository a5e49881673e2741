"use strict";
// sbx report's page. Every string from the report reaches the document
// through textContent (el() below) or a text node: never as markup.
(function () {
  var D = JSON.parse(document.getElementById("data").textContent);
  var app = document.getElementById("app");
  var BATCH = 200;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      parent.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return parent;
  }
  function fmt(x, digits) {
    if (x === null || x === undefined) return "";
    return typeof x === "number" ? x.toFixed(digits === undefined ? 3 : digits) : String(x);
  }
  function ms(x) {
    if (x === null || x === undefined) return "";
    return x >= 10000 ? (x / 1000).toFixed(1) + " s" : x + " ms";
  }
  function kib(x) {
    if (x === null || x === undefined) return "";
    return x >= 1024 ? (x / 1024).toFixed(1) + " MiB" : x + " KiB";
  }
  function kOf(key) { return parseInt(key.replace("pass@", ""), 10); }
  function passKeys(tasks) {
    var seen = {};
    tasks.forEach(function (t) {
      Object.keys(t).forEach(function (k) { if (/^pass@\d+$/.test(k)) seen[k] = 1; });
    });
    return Object.keys(seen).sort(function (a, b) { return kOf(a) - kOf(b); });
  }

  // The URL hash: #task=ID, or key=value pairs joined by & (filter, q, sort).
  function readHash() {
    var h = decodeURIComponent(location.hash.replace(/^#/, ""));
    var state = {};
    if (h.indexOf("task=") === 0) { state.task = h.slice(5); return state; }
    h.split("&").forEach(function (part) {
      var i = part.indexOf("=");
      if (i > 0) state[part.slice(0, i)] = part.slice(i + 1);
    });
    return state;
  }

  // The headline of one eval: the counts, mean pass@k, anything unjudged.
  function headline(ev, cls) {
    var s = ev.summary;
    var box = el("section", "headline " + (cls || ""));
    box.setAttribute("data-file", ev.file);
    add(box, el("h2", null, ev.file));
    var cards = el("div", "cards");
    [["tasks", "tasks", ""], ["passed", "passed", "pass"], ["failed", "failed", "fail"],
     ["missing", "missing", "missing"], ["errors", "errors", "error"]].forEach(function (c) {
      var card = el("div", "card " + c[2]);
      card.setAttribute("data-count", c[0]);
      add(card, el("b", null, s[c[0]]), el("span", "muted", c[1]));
      cards.append(card);
    });
    var keys = Object.keys(s.pass_at_k || {}).sort(function (a, b) { return kOf(a) - kOf(b); });
    keys.forEach(function (key) {
      var m = s.pass_at_k[key];
      var card = el("div", "card");
      card.setAttribute("data-mean", key);
      add(card, el("b", "mean", fmt(m.mean)),
        el("span", "muted", "mean " + key + " over " + m.tasks + (m.tasks === 1 ? " task" : " tasks")));
      cards.append(card);
    });
    box.append(cards);
    if (s.incomplete) {
      var w = el("div", "warn unjudged");
      var ids = (s.unjudged_tasks || []).slice(0, 5).join(", ");
      add(w, "Not final: " + s.unjudged_samples + " sample(s) not judged, in " +
        (s.unjudged_tasks || []).length + " task(s) (" + ids +
        ((s.unjudged_tasks || []).length > 5 ? ", …" : "") + "). ");
      Object.keys(s.pass_at_k_bounds || {}).forEach(function (key) {
        var b = s.pass_at_k_bounds[key];
        var span = el("span", "bounds", "mean " + key + " between " + fmt(b.lower) + " and " + fmt(b.upper) +
          " over " + b.tasks + " tasks. ");
        span.setAttribute("data-bounds", key);
        w.append(span);
      });
      box.append(w);
    }
    return box;
  }

  // A bar per k (and per eval in the A/B view).
  function chart(evals) {
    var keys = {};
    evals.forEach(function (ev) {
      Object.keys(ev.summary.pass_at_k || {}).forEach(function (k) { keys[k] = 1; });
    });
    var list = Object.keys(keys).sort(function (a, b) { return kOf(a) - kOf(b); });
    if (!list.length) {
      var passed = evals.map(function (ev) {
        return { key: "pass rate", ev: ev, mean: ev.summary.tasks ? ev.summary.passed / ev.summary.tasks : 0 };
      });
      return bars(passed);
    }
    var rows = [];
    list.forEach(function (key) {
      evals.forEach(function (ev) {
        var m = (ev.summary.pass_at_k || {})[key];
        var b = (ev.summary.pass_at_k_bounds || {})[key];
        rows.push({ key: key, ev: ev, mean: m ? m.mean : null, bounds: b });
      });
    });
    return bars(rows);
  }
  function bars(rows) {
    var box = el("div", "chart");
    rows.forEach(function (r, i) {
      var label = r.key + (rows.length > 1 && r.ev !== rows[0].ev || D.view === "two" ? " · " + (r.ev === D.evals[0] ? "A" : "B") : "");
      var bar = el("div", "bar" + (D.view === "two" && r.ev !== D.evals[0] ? " b" : "") + (r.bounds ? " lo" : ""));
      var fill = el("i");
      fill.style.width = r.mean === null ? "0" : (100 * r.mean).toFixed(1) + "%";
      bar.append(fill);
      var value = r.mean === null ? "—" : fmt(r.mean) + (r.bounds ? " (≤ " + fmt(r.bounds.upper) + ")" : "");
      add(box, el("span", null, label), bar, el("span", "num", value));
    });
    return box;
  }

  // What one run said: status, reason, message, diff, stderr, output, source.
  function runDetail(t) {
    var box = el("div");
    var kv = el("dl", "kv");
    function row(k, v) { if (v !== undefined && v !== null && v !== "") add(kv, el("dt", null, k), el("dd", null, v)); }
    var st = el("dd", "s " + t.status, t.status);
    add(kv, el("dt", null, "status"), st);
    row("reason", t.reason);
    row("sample", t.sample);
    row("exit code", t.exit_code);
    if (t.cases_total) row("cases", t.cases_passed + " of " + t.cases_total + " passed" +
      (t.case ? "; first failing: case " + t.case : ""));
    row("time", ms(t.duration_ms));
    row("compile", t.compile_ms === undefined ? null : ms(t.compile_ms));
    row("CPU", t.cpu_ms === undefined ? null : ms(t.cpu_ms));
    row("memory", t.max_rss_kib === undefined ? null : kib(t.max_rss_kib));
    row("judged", t.judged);
    row("engine", t.engine);
    if (t.cached) row("cached", "yes");
    box.append(kv);
    function block(title, text) {
      if (text === undefined || text === null || text === "") return;
      add(box, el("h4", null, title), el("pre", null, text));
    }
    block("message", t.message);
    block("diff", t.diff);
    block("stderr (tail)", t.stderr_tail);
    if (t.output_text) {
      block("saved stdout", t.output_text.stdout);
      block("saved stderr", t.output_text.stderr);
    } else if (t.output) {
      row("saved output", t.output.stdout + ", " + t.output.stderr);
    }
    block("source", t.source_text);
    return box;
  }

  // A task's detail: itself, then each sample (each opened on demand).
  function taskDetail(t) {
    var box = runDetail(t);
    if (t.samples && t.samples.length) {
      add(box, el("h4", null, t.samples.length + " samples"));
      t.samples.forEach(function (s, i) {
        var d = el("details", "sample");
        var sum = el("summary");
        add(sum, el("span", "s " + s.status, s.status), " " + (s.sample || "sample " + (i + 1)) +
          (s.reason ? " · " + s.reason : ""));
        d.append(sum);
        d.addEventListener("toggle", function () {
          if (d.open && d.childNodes.length === 1) d.append(runDetail(s));
        });
        box.append(d);
      });
    }
    return box;
  }

  // A table whose rows are made BATCH at a time, as they scroll into view.
  function table(cols, rows, opts) {
    var wrap = el("section", "tasks");
    var controls = el("div", "controls");
    var sort = opts.sort || null, dir = 1;
    if (sort && sort.charAt(0) === "-") { sort = sort.slice(1); dir = -1; }
    var state = { filter: opts.filter || "all", q: opts.q || "", sort: sort, dir: dir };
    var buttons = {};
    opts.filters.forEach(function (f) {
      var b = el("button", null, f);
      b.setAttribute("data-filter", f);
      b.addEventListener("click", function () { state.filter = f; draw(); });
      buttons[f] = b;
      controls.append(b);
    });
    var input = el("input");
    input.type = "search";
    input.placeholder = "filter by id, reason or message";
    input.value = state.q;
    input.addEventListener("input", function () { state.q = input.value; draw(); });
    controls.append(input);
    var count = el("span", "muted count");
    controls.append(count);
    var t = el("table");
    var thead = el("thead");
    var hr = el("tr");
    cols.forEach(function (c) {
      var th = el("th", c.num ? "num" : "", c.title);
      th.setAttribute("data-col", c.key);
      th.addEventListener("click", function () {
        state.dir = state.sort === c.key ? -state.dir : (c.num ? -1 : 1);
        state.sort = c.key;
        draw();
      });
      hr.append(th);
    });
    thead.append(hr);
    var tbody = el("tbody");
    add(t, thead, tbody);
    var more = el("div", "more");
    add(wrap, controls, t, more);
    var shown = [], drawn = 0, observer = null;

    function draw() {
      Object.keys(buttons).forEach(function (f) { buttons[f].className = f === state.filter ? "on" : ""; });
      Array.prototype.forEach.call(hr.children, function (th) {
        th.classList.remove("asc", "desc");
        if (th.getAttribute("data-col") === state.sort) th.classList.add(state.dir > 0 ? "asc" : "desc");
      });
      var q = state.q.toLowerCase();
      shown = rows.filter(function (r) {
        return opts.match(r, state.filter) && (!q || r.text.toLowerCase().indexOf(q) >= 0);
      });
      if (state.sort) {
        var col = cols.filter(function (c) { return c.key === state.sort; })[0];
        shown = shown.map(function (r, i) { return [r, i]; });
        shown.sort(function (x, y) {
          var a = col.value(x[0]), b = col.value(y[0]);
          var an = a === null || a === undefined || a === "", bn = b === null || b === undefined || b === "";
          if (an || bn) return an === bn ? x[1] - y[1] : an ? 1 : -1;
          var d = a < b ? -1 : a > b ? 1 : 0;
          return d ? d * state.dir : x[1] - y[1];
        });
        shown = shown.map(function (p) { return p[0]; });
      }
      tbody.textContent = "";
      drawn = 0;
      wrap.setAttribute("data-shown", shown.length);
      count.textContent = shown.length + " of " + rows.length + " tasks";
      grow(BATCH);
    }
    function grow(n) {
      var end = Math.min(shown.length, drawn + n);
      for (; drawn < end; drawn++) tbody.append(rowOf(shown[drawn]));
      more.textContent = "";
      if (drawn < shown.length) {
        var b = el("button", null, "show " + Math.min(BATCH, shown.length - drawn) + " more of " + (shown.length - drawn));
        b.addEventListener("click", function () { grow(BATCH); });
        more.append(b);
        if (window.IntersectionObserver) {
          if (observer) observer.disconnect();
          observer = new IntersectionObserver(function (es) {
            if (es.some(function (e) { return e.isIntersecting; })) grow(BATCH);
          });
          observer.observe(more);
        }
      }
    }
    function rowOf(r) {
      var tr = el("tr", "task " + (opts.rowClass ? opts.rowClass(r) : ""));
      tr.setAttribute("data-id", r.id);
      tr.id = "task-" + r.id;
      cols.forEach(function (c) {
        var td = el("td", c.num ? "num" : "");
        var v = c.cell ? c.cell(r) : c.value(r);
        if (v instanceof Node) td.append(v); else td.textContent = v === null || v === undefined ? "" : (c.num && typeof v === "number" && c.fmt ? c.fmt(v) : String(v));
        tr.append(td);
      });
      tr.addEventListener("click", function () { toggle(tr, r); });
      return tr;
    }
    function toggle(tr, r) {
      var next = tr.nextSibling;
      if (next && next.classList.contains("detail-row")) {
        next.remove();
        tr.classList.remove("open");
        return;
      }
      var dr = el("tr", "detail-row");
      var td = el("td", "detail");
      td.colSpan = cols.length;
      td.append(opts.detail(r));
      dr.append(td);
      tr.after(dr);
      tr.classList.add("open");
    }
    function open(id) {
      var i = shown.findIndex(function (r) { return r.id === id; });
      if (i < 0) { state.filter = "all"; state.q = ""; input.value = ""; draw(); i = shown.findIndex(function (r) { return r.id === id; }); }
      if (i < 0) return false;
      if (i >= drawn) grow(i - drawn + 1);
      var tr = tbody.querySelector("tr.task[data-id=\"" + CSS.escape(id) + "\"]");
      if (!tr) return false;
      if (!tr.classList.contains("open")) toggle(tr, shown[i]);
      var box = tr.getBoundingClientRect();
      var detail = tr.nextSibling ? tr.nextSibling.getBoundingClientRect() : box;
      if (box.top < 0 || detail.bottom > window.innerHeight) tr.scrollIntoView({ block: "start" });
      return true;
    }
    draw();
    return { node: wrap, open: open };
  }

  function statusCell(s) { return el("span", "s " + s, s); }
  function textOf(t) {
    return [t.id, t.status, t.reason || "", t.message || ""].join(" ");
  }

  function viewOne() {
    var ev = D.evals[0];
    var header = el("header");
    add(header, el("h1", null, "sbx report"), el("div", "muted", ev.file));
    var main = el("main");
    main.append(headline(ev));
    add(main, el("h2", null, Object.keys(ev.summary.pass_at_k || {}).length ? "mean pass@k" : "pass rate"), chart([ev]));
    var keys = passKeys(ev.tasks);
    var cols = [
      { key: "id", title: "task", value: function (t) { return t.id; },
        cell: function (t) { var a = el("a", null, t.id); a.href = "#task=" + encodeURIComponent(t.id); return a; } },
      { key: "status", title: "status", value: function (t) { return t.status; }, cell: function (t) { return statusCell(t.status); } },
      { key: "reason", title: "reason", value: function (t) { return t.reason || ""; } },
      { key: "n", title: "n", num: true, value: function (t) { return t.n; } },
      { key: "c", title: "c", num: true, value: function (t) { return t.c; } }
    ];
    keys.forEach(function (k) {
      cols.push({ key: k, title: k, num: true, fmt: fmt, value: function (t) { return t[k]; } });
    });
    cols.push({ key: "time", title: "time", num: true, value: function (t) { return t.duration_ms; }, cell: function (t) { return ms(t.duration_ms); } });
    cols.push({ key: "cpu", title: "CPU", num: true, value: function (t) { return t.cpu_ms; }, cell: function (t) { return ms(t.cpu_ms); } });
    cols.push({ key: "mem", title: "memory", num: true, value: function (t) { return t.max_rss_kib; }, cell: function (t) { return kib(t.max_rss_kib); } });
    var rows = ev.tasks.map(function (t) { t.text = textOf(t); return t; });
    var h = readHash();
    var tb = table(cols, rows, {
      filters: ["all", "pass", "fail", "missing", "error"],
      filter: h.filter, q: h.q, sort: h.sort,
      match: function (t, f) { return f === "all" || t.status === f; },
      detail: taskDetail
    });
    add(main, el("h2", null, ev.tasks.length + " tasks"), tb.node);
    add(app, header, main);
    return tb;
  }

  function viewTwo() {
    var A = D.evals[0], B = D.evals[1], d = D.diff;
    var header = el("header");
    add(header, el("h1", null, "sbx report: A against B"), el("div", "muted", "A " + A.file + " · B " + B.file));
    var main = el("main");
    var v = el("div", "verdict" + (d.regressed ? " bad" : d.not_green.length ? " open" : ""));
    v.id = "verdict";
    var words = d.regressed ? "B regressed against A." : d.not_green.length ? "No regression found, but the gate cannot say green." : "B did not regress against A.";
    add(v, el("b", null, words), " ");
    var test = d.pass_at_k ? d.pass_at_k.test : d.mcnemar;
    if (d.pass_at_k) {
      add(v, "mean pass@" + d.pass_at_k.k + " over " + d.pass_at_k.tasks + " shared tasks: " +
        fmt(d.pass_at_k.old_mean) + " → " + fmt(d.pass_at_k.new_mean) + ". ");
    }
    if (test) {
      var t = el("span", "test", (test.method || "exact McNemar") + ": p = " + fmt(test.p, 4) + ". " + (test.interpretation || ""));
      t.setAttribute("data-p", test.p);
      v.append(t);
    }
    d.not_green.forEach(function (why) { add(v, el("div", "muted", "not green: " + why)); });
    main.append(v);
    var cards = el("div", "cards");
    [["shared", d.shared], ["regressions", d.regressions.length], ["fixes", d.fixes.length],
     ["not judged", d.not_judged.length], ["only in A", d.only_old.length], ["only in B", d.only_new.length]].forEach(function (c) {
      var card = el("div", "card");
      card.setAttribute("data-count", c[0]);
      add(card, el("b", null, c[1]), el("span", "muted", c[0]));
      cards.append(card);
    });
    main.append(cards);
    var side = el("div", "side");
    add(side, headline(A, "a"), headline(B, "b"));
    main.append(side);
    add(main, el("h2", null, "pass@k (A green, B blue)"), chart([A, B]));

    // Per task: A's and B's score, the change; flipped tasks first.
    var k = d.pass_at_k ? d.pass_at_k.k : 1;
    var key = "pass@" + k;
    var byA = {}, byB = {};
    A.tasks.forEach(function (t) { byA[t.id] = t; });
    B.tasks.forEach(function (t) { byB[t.id] = t; });
    var per = {};
    if (d.pass_at_k) d.pass_at_k.per_task.forEach(function (s) { per[s.id] = s; });
    var flip = {};
    d.regressions.forEach(function (p) { flip[p.id] = "regression"; });
    d.fixes.forEach(function (p) { flip[p.id] = "fix"; });
    if (d.pass_at_k) d.pass_at_k.per_task.forEach(function (s) {
      if (s.new < s.old && !flip[s.id]) flip[s.id] = "regression";
      if (s.new > s.old && !flip[s.id]) flip[s.id] = "fix";
    });
    d.not_judged.forEach(function (p) { flip[p.id] = flip[p.id] || "not judged"; });
    function score(t) {
      if (!t) return null;
      if (t[key] !== undefined) return t[key];
      if (t.n !== undefined) return null;
      return t.status === "pass" ? 1 : 0;
    }
    var ids = [], seen = {};
    A.tasks.concat(B.tasks).forEach(function (t) { if (!seen[t.id]) { seen[t.id] = 1; ids.push(t.id); } });
    var rows = ids.map(function (id) {
      var a = byA[id], b = byB[id], s = per[id];
      var sa = s ? s.old : score(a), sb = s ? s.new : score(b);
      var r = { id: id, a: a, b: b, sa: sa, sb: sb,
        change: sa === null || sb === null ? null : sb - sa,
        flip: flip[id] || (!a ? "only in B" : !b ? "only in A" : "") };
      r.text = [id, a ? textOf(a) : "", b ? textOf(b) : "", r.flip].join(" ");
      return r;
    });
    var rank = { "regression": 0, "fix": 1, "not judged": 2, "only in A": 3, "only in B": 3, "": 4 };
    rows.sort(function (x, y) {
      return rank[x.flip] - rank[y.flip] || Math.abs(y.change || 0) - Math.abs(x.change || 0) ||
        (x.change || 0) - (y.change || 0);
    });
    var cols = [
      { key: "id", title: "task", value: function (r) { return r.id; },
        cell: function (r) { var a = el("a", null, r.id); a.href = "#task=" + encodeURIComponent(r.id); return a; } },
      { key: "flip", title: "change", value: function (r) { return r.flip; } },
      { key: "sa", title: "A " + key, num: true, fmt: fmt, value: function (r) { return r.sa; } },
      { key: "sb", title: "B " + key, num: true, fmt: fmt, value: function (r) { return r.sb; } },
      { key: "change", title: "Δ", num: true, value: function (r) { return r.change; },
        cell: function (r) { return r.change === null ? "" : (r.change > 0 ? "+" : "") + fmt(r.change); } },
      { key: "stA", title: "A status", value: function (r) { return r.a ? r.a.status : ""; }, cell: function (r) { return r.a ? statusCell(r.a.status) : "—"; } },
      { key: "stB", title: "B status", value: function (r) { return r.b ? r.b.status : ""; }, cell: function (r) { return r.b ? statusCell(r.b.status) : "—"; } }
    ];
    var h = readHash();
    var tb = table(cols, rows, {
      filters: ["all", "flipped", "regression", "fix", "same"],
      filter: h.filter, q: h.q, sort: h.sort,
      match: function (r, f) {
        if (f === "all") return true;
        if (f === "flipped") return r.flip === "regression" || r.flip === "fix";
        if (f === "same") return !r.flip;
        return r.flip === f;
      },
      rowClass: function (r) { return r.flip === "regression" ? "flip" : r.flip === "fix" ? "fix" : ""; },
      detail: function (r) {
        var box = el("div", "side");
        var a = el("div"), b = el("div");
        add(a, el("h3", null, "A: " + A.file), r.a ? taskDetail(r.a) : el("p", "muted", "not in A"));
        add(b, el("h3", null, "B: " + B.file), r.b ? taskDetail(r.b) : el("p", "muted", "not in B"));
        add(box, a, b);
        return box;
      }
    });
    add(main, el("h2", null, rows.length + " tasks, flipped first"), tb.node);
    add(app, header, main);
    return tb;
  }

  app.textContent = "";
  var tb = D.view === "two" ? viewTwo() : viewOne();
  function follow() {
    var h = readHash();
    if (h.task !== undefined) tb.open(h.task);
  }
  window.addEventListener("hashchange", follow);
  follow();
  document.body.setAttribute("data-ready", "1");
})();
