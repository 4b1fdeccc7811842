/* sglang-tracker report: tabs, heatmap sort / filter, cell details, call graph switcher.
   Plain JavaScript inlined into the page (no libraries, nothing fetched): the page must
   work from file:// with the network off. The heatmap itself is HTML; this only adds
   interaction, so the page still shows the colours with scripts disabled. State lives in
   the location hash (#algo=EAGLE3&filter=kimi&cell=Model@v0.5.9) so views can be shared. */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var STATUS = ["broken", "unknown", "ok", "na", "absent"]; // also the sort rank
  var WORDS = { ok: "ok", broken: "broken", unknown: "unknown", na: "n/a", absent: "absent" };
  var EVENT_TEXT = {
    appeared: "first checked here",
    broke: "broke here (ok in the previous release)",
    fixed: "fixed here",
    removed: "no longer registered",
    changed: "still broken, other members missing"
  };

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  // Builds an element; children are nodes or strings (always text, never HTML).
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") { node.textContent = attrs[k]; } else { node.setAttribute(k, attrs[k]); }
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) { continue; }
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function statusOf(td) {
    for (var i = 0; i < STATUS.length; i++) {
      if (td.classList.contains(STATUS[i])) { return STATUS[i]; }
    }
    return "absent";
  }

  function eventOf(td) {
    var m = /(?:^|\s)ev-(\w+)/.exec(td.className);
    return m ? m[1] : "";
  }

  function sectionFor(name) { return $('section.algo[data-algorithm="' + name + '"]'); }

  // ---------------------------------------------------------------- hash state

  function readHash() {
    var raw = decodeURIComponent(location.hash.replace(/^#/, ""));
    var out = {};
    if (raw.indexOf("=") < 0) { out.anchor = raw; return out; }
    raw.split("&").forEach(function (pair) {
      var at = pair.indexOf("=");
      if (at > 0) { out[pair.slice(0, at)] = pair.slice(at + 1); }
    });
    return out;
  }

  function writeHash(state) {
    var parts = [];
    ["algo", "filter", "cell"].forEach(function (k) {
      if (state[k]) { parts.push(k + "=" + encodeURIComponent(state[k]).replace(/%40/g, "@")); }
    });
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname);
  }

  var current = { algo: "", filter: "", cell: "" };
  var heatmaps = {};  // algorithm -> Heatmap, filled below

  // ------------------------------------------------------------------- tabs

  function showAlgorithm(name) {
    var target = sectionFor(name);
    if (!target) { return null; }
    $$("section.algo").forEach(function (s) { s.hidden = s !== target; });
    $$(".tabs .tab").forEach(function (t) {
      t.setAttribute("aria-selected", t.getAttribute("data-algorithm") === name ? "true" : "false");
    });
    current.algo = name;
    // Measured only now: a hidden section's header rows have no height.
    var hm = heatmaps[name];
    if (hm && hm.table) { hm.stickHeader(); }
    return target;
  }

  $$(".tabs .tab").forEach(function (tab) {
    tab.addEventListener("click", function (ev) {
      ev.preventDefault();
      showAlgorithm(tab.getAttribute("data-algorithm"));
      current.cell = "";
      writeHash(current);
    });
  });

  // ---------------------------------------------------------------- heatmap

  function Heatmap(section) {
    var self = this;
    this.section = section;
    this.algo = section.getAttribute("data-algorithm");
    this.info = DATA[this.algo];
    this.table = $("table.heatmap", section);
    this.detail = $("aside.detail", section);
    if (!this.table) { return; }
    this.tbody = this.table.tBodies[0];
    this.rows = $$("tr", this.tbody);
    this.byModel = {};
    this.rows.forEach(function (tr) { self.byModel[tr.getAttribute("data-model")] = tr; });
    this.filter = $("input.filter", section);
    this.sort = $("select.sort", section);
    this.show = $("select.show", section);
    this.counter = $(".counter", section);

    this.filter.addEventListener("input", function () {
      self.apply();
      current.filter = self.filter.value.trim();
      writeHash(current);
    });
    this.show.addEventListener("change", function () { self.apply(); });
    this.sort.addEventListener("change", function () { self.order(self.sort.value); });
    $$("tr.versions th[data-col]", this.table).forEach(function (th) {
      th.addEventListener("click", function () { self.order("col:" + th.getAttribute("data-col")); });
    });
    $(".sort-name", this.table).addEventListener("click", function () { self.order("name"); });

    this.tbody.addEventListener("click", function (ev) {
      var td = ev.target.closest("td");
      if (!td || !self.tbody.contains(td)) { return; }
      self.select(td.parentNode, td.cellIndex - 1, true);
    });
    this.tbody.addEventListener("keydown", function (ev) {
      if ((ev.key === "Enter" || ev.key === " ") && ev.target.matches("td")) {
        ev.preventDefault();
        self.select(ev.target.parentNode, ev.target.cellIndex - 1, true);
      }
    });
    // Tooltips are made on first hover: a title on every cell would double the page.
    this.tbody.addEventListener("mouseover", function (ev) {
      var td = ev.target.closest("td");
      if (td && !td.title) { td.title = self.tooltip(td); }
    });
  }

  // Each sticky header row sits below the ones above it, whatever their rendered height.
  Heatmap.prototype.stickHeader = function () {
    var top = 0;
    $$("thead tr", this.table).forEach(function (tr) {
      $$("th, td", tr).forEach(function (cell) { cell.style.top = top + "px"; });
      top += tr.getBoundingClientRect().height + 2;
    });
  };

  Heatmap.prototype.version = function (col) { return this.info.versions[col]; };

  Heatmap.prototype.detailOf = function (td) {
    var d = td.getAttribute("data-d");
    return d === null ? null : this.info.details[Number(d)];
  };

  Heatmap.prototype.tooltip = function (td) {
    var tr = td.parentNode;
    var status = statusOf(td);
    var text = tr.getAttribute("data-model") + " · " + this.version(td.cellIndex - 1) + " · " + WORDS[status];
    var d = this.detailOf(td);
    if (d && d.missing.length) { text += " — missing " + d.missing.join(", "); }
    var ev = eventOf(td);
    if (ev) { text += " (" + (EVENT_TEXT[ev] || ev) + ")"; }
    return text;
  };

  Heatmap.prototype.apply = function () {
    var terms = this.filter.value.toLowerCase().split(/[\s,|]+/).filter(Boolean);
    var show = this.show.value;
    var visible = 0;
    this.rows.forEach(function (tr) {
      var name = tr.getAttribute("data-model").toLowerCase();
      var ok = !terms.length || terms.some(function (t) { return name.indexOf(t) >= 0; });
      var events = tr.getAttribute("data-events").split(" ");
      if (ok && show === "events") { ok = events.indexOf("broke") >= 0 || events.indexOf("fixed") >= 0; }
      if (ok && show === "ever-broken") { ok = Number(tr.getAttribute("data-broken")) > 0; }
      if (ok && show === "broken-newest") { ok = tr.getAttribute("data-newest") === "broken"; }
      tr.hidden = !ok;
      if (ok) { visible++; }
    });
    this.counter.textContent = visible + " of " + this.rows.length + " models";
  };

  Heatmap.prototype.order = function (key) {
    // Code-point order, as the page is generated: "by name" restores the first view.
    var byName = function (a, b) {
      var x = a.getAttribute("data-model"), y = b.getAttribute("data-model");
      return x < y ? -1 : x > y ? 1 : 0;
    };
    var num = function (tr, attr) { return Number(tr.getAttribute(attr)); };
    var rankAt = function (tr, col) { return STATUS.indexOf(statusOf(tr.cells[col + 1])); };
    var cmp = byName;
    if (key === "broken") {
      cmp = function (a, b) { return num(b, "data-broken") - num(a, "data-broken") || byName(a, b); };
    } else if (key === "newest") {
      var last = this.info.versions.length - 1;
      cmp = function (a, b) { return rankAt(a, last) - rankAt(b, last) || byName(a, b); };
    } else if (key === "first") {
      cmp = function (a, b) { return num(b, "data-first") - num(a, "data-first") || byName(a, b); };
    } else if (key.indexOf("col:") === 0) {
      var col = Number(key.slice(4));
      cmp = function (a, b) { return rankAt(a, col) - rankAt(b, col) || byName(a, b); };
    }
    var sorted = this.rows.slice().sort(cmp);
    var body = this.tbody;
    sorted.forEach(function (tr) { body.appendChild(tr); });
    $$("tr.versions th", this.table).forEach(function (th) {
      th.classList.toggle("sorted", key === "col:" + th.getAttribute("data-col"));
    });
    if (key.indexOf("col:") === 0) {
      var option = $('option[value="col"]', this.sort);
      if (!option) { option = el("option", { value: "col" }); this.sort.appendChild(option); }
      option.textContent = "by status at " + this.version(Number(key.slice(4)));
      this.sort.value = "col";
    } else {
      this.sort.value = key;
    }
  };

  Heatmap.prototype.siteList = function (version, role, member) {
    var per = this.info.sites[version] || {};
    var sites = per[role + ":" + member] || [];
    var ul = el("ul", { "class": "sites" });
    sites.forEach(function (s) {
      var li = el("li", null,
        el("a", { href: s.url, target: "_blank", rel: "noopener", "class": "mono" }, s.path + ":" + s.line),
        " in ", el("code", { text: s.function }),
        s.status !== "required" ? el("span", { "class": "muted" }, " · " + s.status) : null);
      if (s.condition) { li.appendChild(el("span", { "class": "cond" }, "if " + s.condition)); }
      ul.appendChild(li);
    });
    if (!sites.length) { ul.appendChild(el("li", { "class": "muted" }, "no site recorded")); }
    return ul;
  };

  Heatmap.prototype.select = function (tr, col, remember) {
    if (!this.table || col < 0) { return; }
    var td = tr.cells[col + 1];
    $$("td.selected", this.tbody).forEach(function (c) { c.classList.remove("selected"); });
    $$("tr.selected", this.tbody).forEach(function (r) { r.classList.remove("selected"); });
    td.classList.add("selected");
    tr.classList.add("selected");
    this.render(tr, col);
    if (remember) {
      current.algo = this.algo;
      current.cell = tr.getAttribute("data-model") + "@" + this.version(col);
      writeHash(current);
    }
  };

  Heatmap.prototype.render = function (tr, col) {
    var self = this;
    var model = tr.getAttribute("data-model");
    var version = this.version(col);
    var td = tr.cells[col + 1];
    var status = statusOf(td);
    var event = eventOf(td);
    var d = this.detailOf(td);
    var box = this.detail;
    box.textContent = "";
    box.appendChild(el("h3", { text: model }));
    box.appendChild(el("p", { "class": "where" }, version + " · " + this.algo + " · " + (tr.getAttribute("data-kind") || "model")));
    var eventText = EVENT_TEXT[event] || event;
    if (event === "appeared" && (col === 0 || statusOf(tr.cells[col]) === "absent")) {
      eventText = col === 0 ? "first release in this report" : "new class in this release";
    }
    box.appendChild(el("div", { "class": "status-line" },
      el("span", { "class": "badge " + status }, WORDS[status]),
      event ? el("span", { "class": "muted" }, eventText) : null));

    if (d && d.missing.length) {
      box.appendChild(el("h4", { text: "Missing " + (d.missing.length === 1 ? "member" : "members") + " and where " + this.algo + " uses " + (d.missing.length === 1 ? "it" : "them") }));
      var ul = el("ul");
      d.missing.forEach(function (member) {
        ul.appendChild(el("li", { "class": "member" }, el("code", { text: member }), self.siteList(version, d.role, member)));
      });
      box.appendChild(ul);
    }
    if (d && d.unknown.length) {
      box.appendChild(el("h4", { text: "Undecided" }));
      var uu = el("ul");
      d.unknown.forEach(function (u) {
        uu.appendChild(el("li", { "class": "member" }, el("code", { text: u.member }), " ", el("span", { "class": "muted" }, u.why)));
      });
      box.appendChild(uu);
    }
    if (d && d.delegations.length) {
      box.appendChild(el("h4", { text: "Its inner model has them" }));
      // One line per inner model: "self.language_model (DeepseekV3ForCausalLM) provides a, b".
      var dl = el("ul");
      var inner = {};
      var order = [];
      d.delegations.forEach(function (g) {
        var k = g.attribute + " (" + g.inner + ")";
        if (!inner[k]) { inner[k] = { attribute: g.attribute, inner: g.inner, members: [] }; order.push(k); }
        inner[k].members.push(g.member);
      });
      order.forEach(function (k) {
        var g = inner[k];
        dl.appendChild(el("li", null, el("code", { text: "self." + g.attribute }), " (" + g.inner + ") provides " + g.members.join(", ")));
      });
      box.appendChild(dl);
      box.appendChild(el("code", { "class": "fix" }, "tracker fix " + model + " --at " + version + " -a " + this.algo));
    }
    if (status === "ok") {
      var text = "Provides every member " + this.algo + " requires of it at " + version + ".";
      if (event === "fixed" && col > 0) {
        var before = this.detailOf(tr.cells[col]);
        if (before && before.missing.length) { text = "Now provides " + before.missing.join(", ") + ", missing at " + this.version(col - 1) + "."; }
      }
      box.appendChild(el("p", { text: text }));
    } else if (status === "na") {
      box.appendChild(el("p", { text: "Registered, but " + this.algo + " asks nothing of this kind of class at " + version + "." }));
    } else if (status === "absent") {
      box.appendChild(el("p", { text: "Not registered at " + version + "." }));
    }

    // The row's history at a glance, and its events.
    box.appendChild(el("h4", { text: "History" }));
    var strip = el("div", { "class": "history" });
    var events = [];
    for (var i = 1; i < tr.cells.length; i++) {
      var cell = tr.cells[i];
      var st = statusOf(cell);
      var mark = el("span", { "class": st + (i === col + 1 ? " here" : ""), title: this.version(i - 1) + " · " + WORDS[st] });
      strip.appendChild(mark);
      var e = eventOf(cell);
      if (e) { events.push(this.version(i - 1) + " " + e); }
    }
    box.appendChild(strip);
    if (events.length) { box.appendChild(el("p", { "class": "muted" }, events.join(" · "))); }
  };

  Heatmap.prototype.open = function (cellSpec) {
    if (!this.table) { return false; }
    var at = cellSpec.lastIndexOf("@");
    var model = cellSpec.slice(0, at);
    var col = this.info.versions.indexOf(cellSpec.slice(at + 1));
    var tr = this.byModel[model];
    if (!tr || col < 0) { return false; }
    if (tr.hidden) {
      this.filter.value = "";
      this.show.value = "all";
      this.apply();
    }
    this.select(tr, col, false);
    var td = tr.cells[col + 1];
    // Centre the cell inside the grid's own scroll box, without moving the page.
    var scroller = $(".heatmap-scroll", this.section);
    var box = scroller.getBoundingClientRect();
    var rect = td.getBoundingClientRect();
    scroller.scrollTop += rect.top - box.top - scroller.clientHeight / 2;
    scroller.scrollLeft += rect.left - box.left - scroller.clientWidth / 2;
    return true;
  };

  // ------------------------------------------------------------- call graphs

  function showGraph(section, version) {
    var found = false;
    $$("figure.graph", section).forEach(function (f) {
      var on = f.getAttribute("data-version") === version;
      f.hidden = !on;
      found = found || on;
    });
    if (!found) { return null; }
    $$(".graph-nav a", section).forEach(function (a) {
      a.setAttribute("aria-selected", a.getAttribute("data-version") === version ? "true" : "false");
    });
    return $('figure.graph[data-version="' + version + '"]', section);
  }

  $$("section.algo").forEach(function (section) {
    $$(".graph-nav a", section).forEach(function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        showGraph(section, a.getAttribute("data-version"));
      });
    });
  });

  // ------------------------------------------------------------------ wiring

  $$("section.algo").forEach(function (section) {
    heatmaps[section.getAttribute("data-algorithm")] = new Heatmap(section);
  });

  function applyHash() {
    var state = readHash();
    if (state.anchor) {
      // A plain anchor (#tl-EAGLE3-v0.5.9, #graph-EAGLE3-v0.5.9): show its section.
      var target = document.getElementById(state.anchor);
      var section = target && target.closest("section.algo");
      if (section) {
        showAlgorithm(section.getAttribute("data-algorithm"));
        if (target.matches("figure.graph")) { showGraph(section, target.getAttribute("data-version")); }
        target.scrollIntoView({ block: "start" });
      }
      return;
    }
    var name = state.algo && sectionFor(state.algo) ? state.algo : $$("section.algo").length ? $$("section.algo")[0].getAttribute("data-algorithm") : "";
    if (!name) { return; }
    showAlgorithm(name);
    var hm = heatmaps[name];
    if (hm && hm.table) {
      if (state.filter !== undefined) {
        hm.filter.value = state.filter;
        current.filter = state.filter;
      }
      hm.apply();
      if (state.cell && hm.open(state.cell)) {
        current.cell = state.cell;
      }
    }
  }

  window.addEventListener("hashchange", applyHash);
  applyHash();
})();
