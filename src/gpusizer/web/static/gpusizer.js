// gpusizer's local page: the live YAML of the sheet form, the phase chart's offer choice, and
// sortable, filterable tables. Vanilla JS shipped with the package; nothing is loaded from
// elsewhere. Every value is written with textContent or setAttribute (never innerHTML).
"use strict";

(function () {
  // ---- the sheet form: the YAML the fields make (the server's rule: keys that differ from
  // their default, blocks with at least one key; the server builds the same sheet itself)
  function scalar(kind, text) {
    if (kind === "string") return text;
    if (kind === "list") return text.split(",").map(function (s) { return s.trim(); })
      .filter(function (s) { return s; });
    if (text === "true") return true;
    if (text === "false") return false;
    if (/^-?\d+$/.test(text)) return parseInt(text, 10);
    if (/^-?\d*\.\d+(e-?\d+)?$/i.test(text) || /^-?\d+e-?\d+$/i.test(text)) return parseFloat(text);
    return text;
  }

  function differs(kind, value, def) {
    if (def === "") return true;
    if (typeof value === "number") return value !== parseFloat(def);
    if (typeof value === "boolean") return String(value) !== def;
    return String(value) !== def;
  }

  function setKey(obj, dotted, value) {
    var parts = dotted.split(".");
    var node = obj;
    for (var i = 0; i < parts.length - 1; i++) {
      if (typeof node[parts[i]] !== "object" || node[parts[i]] === null) node[parts[i]] = {};
      node = node[parts[i]];
    }
    node[parts[parts.length - 1]] = value;
  }

  function sheetOf(form) {
    var out = {};
    form.querySelectorAll("[data-kind]").forEach(function (el) {
      var kind = el.getAttribute("data-kind");
      var def = el.getAttribute("data-default") || "";
      if (kind === "upload") {
        if (el.files && el.files.length) {
          var folder = el.hasAttribute("multiple");
          var dir = el.name.replace(/\./g, "_");
          setKey(out, el.name, folder ? dir : dir + "/" + el.files[0].name);
        }
        return;
      }
      if (kind === "bool") {
        if (String(el.checked) !== def) setKey(out, el.name, el.checked);
        return;
      }
      var text = (el.value || "").trim();
      if (!text) return;
      var value = scalar(kind === "enum" && !/^(true|false)$/.test(text) ? "string" : kind, text);
      if (differs(kind, value, def)) setKey(out, el.name, value);
    });
    if (out.model && out.model.path) delete out.model.id;
    return out;
  }

  function quoted(s) {
    if (s === "" || /^[\s]|[\s]$|[:#\[\]{},&*!|>'"%@`]|^(true|false|yes|no|on|off|null|~|-?[\d.]+(e-?\d+)?)$/i.test(s) || /^-/.test(s))
      return JSON.stringify(s);
    return s;
  }

  function yaml(obj, indent) {
    var pad = "  ".repeat(indent);
    var lines = [];
    Object.keys(obj).forEach(function (k) {
      var v = obj[k];
      if (v !== null && typeof v === "object" && !Array.isArray(v)) {
        lines.push(pad + k + ":");
        lines.push(yaml(v, indent + 1));
      } else if (Array.isArray(v)) {
        lines.push(pad + k + ":");
        v.forEach(function (x) { lines.push(pad + "- " + quoted(String(x))); });
      } else {
        lines.push(pad + k + ": " + (typeof v === "string" ? quoted(v) : String(v)));
      }
    });
    return lines.join("\n");
  }

  var form = document.getElementById("sheet-form");
  if (form) {
    var preview = document.getElementById("yaml-preview");
    var download = document.getElementById("yaml-download");
    var pasted = document.getElementById("f-sheet_yaml");
    var url = null;
    var update = function () {
      var text = pasted && pasted.value.trim() ? pasted.value.trim() + "\n"
        : yaml(sheetOf(form), 0) + "\n";
      preview.textContent = text;
      if (url) URL.revokeObjectURL(url);
      url = URL.createObjectURL(new Blob([text], { type: "application/yaml" }));
      download.setAttribute("href", url);
    };
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    update();
  }

  // ---- the phase chart: another offer's device and margin lines (bars rescaled)
  var chart = document.getElementById("phase-chart");
  var choice = document.getElementById("chart-offer");
  function fmt(n) { return (n / 1073741824).toFixed(2) + " GiB"; }
  if (chart && choice) {
    choice.addEventListener("change", function () {
      var opt = choice.options[choice.selectedIndex];
      var device = parseInt(opt.getAttribute("data-device"), 10);
      var margin = parseInt(opt.getAttribute("data-margin"), 10);
      var H = parseFloat(chart.getAttribute("data-height"));
      var totals = Array.prototype.map.call(chart.querySelectorAll(".bar"), function (b) {
        return parseInt(b.getAttribute("data-total"), 10);
      });
      var top = Math.floor(Math.max.apply(null, totals.concat([device, 1])) * 1.1);
      var y = function (n) { return H - H * n / top; };
      chart.querySelectorAll("rect.seg").forEach(function (r) {
        var lo = parseInt(r.getAttribute("data-lo"), 10), n = parseInt(r.getAttribute("data-bytes"), 10);
        r.setAttribute("y", y(lo + n).toFixed(2));
        r.setAttribute("height", (H * n / top).toFixed(2));
      });
      chart.querySelectorAll("text.seg-label").forEach(function (t) {
        var lo = parseInt(t.getAttribute("data-lo"), 10), n = parseInt(t.getAttribute("data-bytes"), 10);
        t.setAttribute("y", ((y(lo + n) + y(lo)) / 2 + 4).toFixed(2));
        if (H * n / top >= 14) t.removeAttribute("display"); else t.setAttribute("display", "none");
      });
      var line = function (id, labelId, n, text, dy) {
        var l = document.getElementById(id), t = document.getElementById(labelId);
        if (!l || !t) return;
        l.setAttribute("y1", y(n).toFixed(2)); l.setAttribute("y2", y(n).toFixed(2));
        t.setAttribute("y", (y(n) + dy).toFixed(2)); t.textContent = text;
      };
      line("device-line", "device-label", device, "device " + fmt(device) + " (" + opt.value + ")", -4);
      line("margin-line", "margin-label", device - margin,
        "device − margin " + fmt(device - margin) + " (margin " + fmt(margin) + ")", 12);
      chart.setAttribute("data-top", String(top));
    });
  }

  // ---- sortable tables (a click on a header's button) and the offers' filter
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var buttons = table.querySelectorAll("thead button.sort");
    buttons.forEach(function (btn) {
      btn.addEventListener("click", function () {
        var th = btn.parentElement;
        var col = Array.prototype.indexOf.call(th.parentElement.children, th);
        var numeric = btn.getAttribute("data-type") === "num";
        var asc = btn.getAttribute("aria-sort") !== "ascending";
        buttons.forEach(function (b) { b.removeAttribute("aria-sort"); });
        btn.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var key = function (row) {
          var cell = row.cells[col];
          var v = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
          return numeric ? parseFloat(v) : v.toLowerCase();
        };
        rows.sort(function (a, b) {
          var x = key(a), z = key(b);
          return (x < z ? -1 : x > z ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  var filter = document.getElementById("offer-filter");
  var verdict = document.getElementById("verdict-filter");
  var count = document.getElementById("offer-count");
  var offers = document.getElementById("offers");
  function applyFilter() {
    var text = (filter.value || "").toLowerCase();
    var want = verdict.value;
    var shown = 0;
    Array.prototype.forEach.call(offers.tBodies[0].rows, function (row) {
      var hay = [row.querySelector(".offer-id"), row.querySelector(".provider"), row.querySelector(".card")]
        .map(function (c) { return c ? c.textContent.toLowerCase() : ""; }).join(" ");
      var ok = (!text || hay.indexOf(text) >= 0) && (!want || row.getAttribute("data-verdict") === want);
      row.hidden = !ok;
      if (ok) shown++;
    });
    count.textContent = shown + " shown";
  }
  if (filter && verdict && offers) {
    filter.addEventListener("input", applyFilter);
    verdict.addEventListener("change", applyFilter);
  }
})();
