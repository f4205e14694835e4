// Progressive enhancement only: every page works without JavaScript.
(function () {
  "use strict";

  // Plotly figures: each page puts its figure in a json_script element next to its container (no inline script:
  // the Content-Security-Policy forbids it).
  function drawPlots() {
    if (!window.Plotly) return;
    [["heatmap", "heatmap-data"], ["strip", "strip-data"], ["peak", "peak-data"], ["pareto", "pareto-data"]].forEach(function (pair) {
      var el = document.getElementById(pair[0]), data = document.getElementById(pair[1]);
      if (!el || !data) return;
      var fig = JSON.parse(data.textContent);
      window.Plotly.newPlot(el, fig.data, fig.layout, {responsive: true, displaylogo: false});
    });
  }
  window.addEventListener("load", drawPlots);

  // A token shown once: a Copy button (hidden without JavaScript, where selecting the text is the way).
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(source.textContent.trim()).then(function () {
        button.textContent = "Copied";
      }, function () {
        button.textContent = "Copy failed: select the text";
      });
    });
  });

  // The problem list: a header click sorts the rows in place (the link's ?order= does it without JavaScript), and the
  // search box and category filter the rows as one types (the form's submit does it without JavaScript).
  var table = document.getElementById("problem-table");
  if (table) {
    var body = table.tBodies[0];
    table.querySelectorAll("th[data-sort] a").forEach(function (link) {
      link.addEventListener("click", function (event) {
        var th = link.parentNode, key = th.getAttribute("data-sort"), numeric = th.classList.contains("num");
        var descending = th.getAttribute("aria-sort") === "ascending";
        table.querySelectorAll("th[aria-sort]").forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var rows = Array.prototype.slice.call(body.querySelectorAll("tr[data-id]"));
        rows.sort(function (a, b) {
          var x = a.getAttribute("data-" + key), y = b.getAttribute("data-" + key);
          if (x === "" || y === "") return (x === "") - (y === "");  // no value: last either way
          var order = numeric || key === "id" ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
          return (descending ? -order : order) || (parseInt(a.getAttribute("data-id"), 10) - parseInt(b.getAttribute("data-id"), 10));
        });
        rows.forEach(function (row) { body.appendChild(row); });
        event.preventDefault();
      });
    });
    var search = document.getElementById("problem-q"), category = document.getElementById("problem-category");
    var count = document.getElementById("problem-count");
    var filter = function () {
      var words = (search.value || "").toLowerCase().trim(), wanted = category.value, shown = 0, rows = body.querySelectorAll("tr[data-id]");
      rows.forEach(function (row) {
        var ok = (!words || row.getAttribute("data-search").indexOf(words) >= 0) && (!wanted || row.getAttribute("data-category") === wanted);
        row.hidden = !ok;
        shown += ok ? 1 : 0;
      });
      if (count) count.textContent = shown + " of " + count.textContent.split(" of ")[1];
    };
    if (search && category) {
      search.addEventListener("input", filter);
      category.addEventListener("change", filter);
    }
  }

  // Directory uploads: browsers send only base names, so the relative paths travel in a hidden field.
  var dir = document.getElementById("id_dir"), paths = document.getElementById("id_paths");
  if (dir && paths) {
    dir.addEventListener("change", function () {
      var list = [];
      for (var i = 0; i < dir.files.length; i++) {
        var rel = dir.files[i].webkitRelativePath || dir.files[i].name;
        list.push(rel.indexOf("/") >= 0 ? rel.slice(rel.indexOf("/") + 1) : rel);  // drop the chosen folder's name
      }
      paths.value = JSON.stringify(list);
    });
  }

  // Live status of a submission: poll its status.json until every job has finished, then reload once.
  var live = document.getElementById("live");
  if (live && live.dataset.finished === "0") {
    var url = live.dataset.statusUrl;
    var tick = function () {
      fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
        .then(function (r) { return r.json(); })
        .then(function (s) {
          var j = s.jobs, e = s.entry || {};
          document.getElementById("live-correct").textContent = e.correct || 0;
          document.getElementById("live-faster").textContent = e.faster || 0;
          document.getElementById("live-status").textContent = s.finished
            ? "Finished: " + j.done + " evaluated, " + j.failed + " failed by the platform."
            : "Evaluating: " + j.running + " running, " + j.queued + " queued, " + j.done + " done" +
              (j.building ? " (" + j.building + " of them building on CPU before their run)." : ".");
          Object.keys(s.problems).forEach(function (pid) {
            var cell = document.querySelector('tr[data-problem="' + pid + '"] [data-status]');
            if (cell) cell.textContent = s.problems[pid].replace(/_/g, " ");
          });
          if (s.finished) { window.location.reload(); } else { setTimeout(tick, 2000); }
        })
        .catch(function () { setTimeout(tick, 5000); });
    };
    setTimeout(tick, 2000);
  }
})();
