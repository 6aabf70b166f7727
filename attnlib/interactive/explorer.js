/* attnlib explorers: native controls for figures whose every state attnlib computed in Python.
 *
 * Each <figure class="attnlib-explorer"> holds its controls (buttons, range inputs), a plot <div>,
 * one panel per state (text and data tables), an aria-live region and its spec as JSON: the Plotly
 * data and layout, and for each control the Plotly update each option runs. This script only
 * switches between precomputed states; it computes no number.
 *
 * plotly.js is loaded when the first figure comes near the viewport (the book names its copy in
 * data-plotly on the page's explorer.js tag), so it never delays the page's first paint. In Colab the
 * output loads plotly.js itself, before this script runs inline; an explorer without a plot carries
 * this script inline too, so its buttons work in any Jupyter. A second copy only scans for figures.
 */
(function () {
  "use strict";
  if (window.attnlibExplorers) {
    window.attnlibExplorers.scan();
    return;
  }
  var loading = null;

  // The book's copy of plotly.js: named by the page's explorer.js tag (an inline copy has none).
  function plotlyUrl() {
    var tag = document.querySelector("script[data-plotly]");
    return tag ? tag.dataset.plotly : null;
  }

  function plotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var url = plotlyUrl();
        if (!url) {
          reject(new Error("attnlib explorers: plotly.js is not on this page"));
          return;
        }
        var s = document.createElement("script");
        s.src = url;
        s.async = true;
        s.onload = function () { resolve(window.Plotly); };
        s.onerror = function () { reject(new Error("attnlib explorers: could not load " + url)); };
        document.head.appendChild(s);
      });
    }
    return loading;
  }

  function Explorer(figure) {
    this.figure = figure;
    var specNode = figure.querySelector("script.attnlib-spec");
    this.spec = JSON.parse(specNode.textContent);
    this.gd = figure.querySelector(".attnlib-plot");
    this.live = figure.querySelector(".attnlib-live");
    this.state = [];
    this.drawn = [];  // the option of each control the plot shows
    this.chain = Promise.resolve();
    var self = this;
    this.spec.controls.forEach(function (_, c) {
      var input = figure.querySelector('input[data-control="' + c + '"]');
      var pressed = figure.querySelector('button[data-control="' + c + '"][aria-pressed="true"]');
      var k = input ? Number(input.value) : (pressed ? Number(pressed.dataset.option) : 0);
      self.state.push(k);
      self.drawn.push(k);
    });
    figure.querySelectorAll("button[data-control]").forEach(function (b) {
      b.addEventListener("click", function () {
        self.select(Number(b.dataset.control), Number(b.dataset.option));
      });
    });
    figure.querySelectorAll('input[type="range"][data-control]').forEach(function (input) {
      input.addEventListener("input", function () {
        self.select(Number(input.dataset.control), Number(input.value));
      });
    });
  }

  Explorer.prototype.select = function (c, k) {
    if (this.state[c] === k) return;
    this.state[c] = k;
    var figure = this.figure;
    figure.querySelectorAll('button[data-control="' + c + '"]').forEach(function (b) {
      b.setAttribute("aria-pressed", Number(b.dataset.option) === k ? "true" : "false");
    });
    var input = figure.querySelector('input[data-control="' + c + '"]');
    if (input) {
      var text = this.optionLabel(c, k);
      input.value = String(k);
      input.setAttribute("aria-valuetext", text);
      var out = input.parentNode.querySelector("output");
      if (out) out.textContent = text;
    }
    var key = this.state.join(",");
    var summary = "";
    figure.querySelectorAll(".attnlib-state").forEach(function (panel) {
      var on = panel.dataset.state === key;
      panel.hidden = !on;
      if (on) {
        var p = panel.querySelector(".attnlib-state-summary");
        summary = p ? p.textContent : "";
      }
    });
    if (this.live) this.live.textContent = summary;
    this.sync();
  };

  Explorer.prototype.optionLabel = function (c, k) {
    var ends = this.figure.querySelector('input[data-control="' + c + '"]');
    var labels = ends && ends.dataset.labels ? JSON.parse(ends.dataset.labels) : null;
    return labels ? labels[k] : String(k + 1);
  };

  // Bring the plot to the chosen state: run, in order, the update of every control whose option changed.
  Explorer.prototype.sync = function () {
    var self = this;
    if (!this.gd) {
      this.drawn = this.state.slice();  // nothing to draw: the panels are the state
      return;
    }
    if (!this.plotted) return;  // draw() syncs once the plot exists
    this.chain = this.chain.then(function () {
      var steps = [];
      self.state.forEach(function (k, c) {
        if (self.drawn[c] !== k) {
          steps.push([c, k]);
        }
      });
      return steps.reduce(function (p, step) {
        return p.then(function () {
          var option = self.spec.controls[step[0]][step[1]];
          self.drawn[step[0]] = step[1];
          if (!option[0]) return null;
          return window.Plotly[option[0]].apply(null, [self.gd].concat(option[1]));
        });
      }, Promise.resolve());
    });
  };

  // Draw the plot once (plotly.js is loaded by the first figure that asks); resolves when drawn.
  Explorer.prototype.draw = function () {
    var self = this;
    if (this.ready) return this.ready;
    if (!this.gd) {
      this.ready = Promise.resolve();
      return this.ready;
    }
    this.ready = plotly().then(function (Plotly) {
      return Plotly.newPlot(self.gd, self.spec.data, self.spec.layout, self.spec.config);
    }).then(function () {
      self.plotted = true;
      self.figure.classList.add("attnlib-drawn");
      self.sync();
      return self.chain;
    }).catch(function (err) {
      self.figure.classList.add("attnlib-failed");
      if (window.console) console.error(err);
    });
    return this.ready;
  };

  var explorers = [];
  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) {
        observer.unobserve(entry.target);
        entry.target.attnlibExplorer.draw();
      }
    });
  }, {rootMargin: "800px 0px"}) : null;

  function scan() {
    document.querySelectorAll("figure.attnlib-explorer").forEach(function (figure) {
      if (figure.attnlibExplorer) return;
      var ex = new Explorer(figure);
      figure.attnlibExplorer = ex;
      explorers.push(ex);
      if (observer) observer.observe(figure);
      else ex.draw();
    });
  }

  // Every plot at once: for printing, where no figure scrolls into view.
  function drawAll() {
    scan();
    return Promise.all(explorers.map(function (ex) { return ex.draw(); }));
  }

  window.addEventListener("beforeprint", drawAll);
  window.attnlibExplorers = {scan: scan, drawAll: drawAll, all: explorers, plotly: plotly};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", scan);
  else scan();
})();
