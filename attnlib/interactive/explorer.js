/* attnlib explorers: native controls for figures whose every state attnlib computed in Python.
 *
 * Each <figure class="attnlib-explorer"> holds its controls (buttons, range inputs), a plot <div>,
 * the panel of the state it shows (text and data tables), an aria-live region and its data: the spec
 * (the Plotly data and layout, and for each control the Plotly update each option runs) and, in an
 * inert <template>, the panel of every other state. In a notebook the data are inline; the book moves
 * them into a script named by the figure's data-src (book/press/offline_book.py), loaded when the
 * figure comes near the viewport or a control is used. This script only switches between
 * precomputed states; it computes no number.
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
  var scripts = {};  // url -> promise of its load

  function loadScript(url) {
    if (!scripts[url]) {
      scripts[url] = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = url;
        s.async = true;
        s.onload = function () { resolve(); };
        s.onerror = function () { reject(new Error("attnlib explorers: could not load " + url)); };
        document.head.appendChild(s);
      });
    }
    return scripts[url];
  }

  // The book's copy of plotly.js: named by the page's explorer.js tag (an inline copy has none).
  function plotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    var tag = document.querySelector("script[data-plotly]");
    if (!tag) return Promise.reject(new Error("attnlib explorers: plotly.js is not on this page"));
    return loadScript(tag.dataset.plotly).then(function () { return window.Plotly; });
  }

  function Explorer(figure) {
    this.figure = figure;
    this.id = figure.dataset.explorer;
    this.gd = figure.querySelector(".attnlib-plot");
    this.live = figure.querySelector(".attnlib-live");
    this.panels = figure.querySelector(".attnlib-states");
    this.state = [];
    this.drawn = [];  // the option of each control the plot (or, without a plot, the panel) shows
    this.chain = Promise.resolve();
    var self = this;
    var n = 0;
    figure.querySelectorAll("[data-control]").forEach(function (e) {
      n = Math.max(n, Number(e.dataset.control) + 1);
    });
    for (var c = 0; c < n; c++) {
      var input = figure.querySelector('input[data-control="' + c + '"]');
      var pressed = figure.querySelector('button[data-control="' + c + '"][aria-pressed="true"]');
      var k = input ? Number(input.value) : (pressed ? Number(pressed.dataset.option) : 0);
      this.state.push(k);
      this.drawn.push(k);
    }
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

  // The spec and the template of the other states' panels: inline, or from the figure's data-src.
  Explorer.prototype.data = function () {
    if (this.loaded) return this.loaded;
    var self = this, figure = this.figure, id = this.id;
    var inline = figure.querySelector("script.attnlib-spec");
    var found;
    if (inline) {
      found = Promise.resolve({spec: JSON.parse(inline.textContent),
                               more: figure.querySelector("template.attnlib-more")});
    } else if (figure.dataset.src) {
      found = loadScript(figure.dataset.src).then(function () {
        var d = (window.attnlibExplorerData || {})[id];
        if (!d) throw new Error("attnlib explorers: " + figure.dataset.src + " holds no data for " + id);
        var more = document.createElement("template");
        more.innerHTML = d.more;
        return {spec: d.spec, more: more};
      });
    } else {
      found = Promise.reject(new Error("attnlib explorers: figure " + id + " has no spec"));
    }
    this.loaded = found.then(function (d) {
      self.spec = d.spec;
      self.more = d.more;
      return d;
    });
    return this.loaded;
  };

  Explorer.prototype.fail = function (err) {
    this.figure.classList.add("attnlib-failed");
    if (window.console) console.error(err);
  };

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
    var self = this;
    this.data().then(function () {
      self.show();
      self.sync();
    }).catch(function (err) { self.fail(err); });
  };

  // Show the chosen state's panel (cloned from the template the first time) and announce its summary.
  Explorer.prototype.show = function () {
    var key = this.state.join(","), panels = this.panels;
    if (!panels) return;
    var selector = '.attnlib-state[data-state="' + key + '"]';
    var panel = panels.querySelector(":scope > " + selector);
    if (!panel && this.more) {
      var source = this.more.content.querySelector(selector);
      if (source) {
        panel = document.importNode(source, true);
        panels.insertBefore(panel, this.more.parentNode === panels ? this.more : null);
      }
    }
    panels.querySelectorAll(":scope > .attnlib-state").forEach(function (p) {
      p.hidden = p !== panel;
    });
    var summary = panel ? panel.querySelector(".attnlib-state-summary") : null;
    if (this.live) this.live.textContent = summary ? summary.textContent : "";
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

  // A section of the book laid out only near the screen (content-visibility: auto, attnbook.css) is
  // laid out for good before its figure draws: Plotly measures its labels as it draws, and in a section
  // not laid out they measured nothing and vanished.
  function layOut(figure) {
    if (!figure.checkVisibility || figure.checkVisibility({contentVisibilityAuto: true})) return;
    for (var el = figure.parentElement; el; el = el.parentElement) {
      if (getComputedStyle(el).contentVisibility === "auto") el.style.contentVisibility = "visible";
    }
  }

  // Draw the plot once (plotly.js is loaded by the first figure that asks); resolves when drawn.
  Explorer.prototype.draw = function () {
    var self = this;
    if (this.ready) return this.ready;
    if (!this.gd) {
      this.ready = this.data().then(function () { self.sync(); }).catch(function (err) { self.fail(err); });
      return this.ready;
    }
    this.ready = Promise.all([this.data(), plotly()]).then(function (got) {
      var spec = got[0].spec;
      layOut(self.figure);
      return got[1].newPlot(self.gd, spec.data, spec.layout, spec.config);
    }).then(function () {
      self.plotted = true;
      self.figure.classList.add("attnlib-drawn");
      self.sync();
      return self.chain;
    }).catch(function (err) { self.fail(err); });
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
