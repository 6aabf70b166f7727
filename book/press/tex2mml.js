/* TeX to MathML with the book's own MathJax (book/press/mathml_pages.py runs this with Node.js at build time).
 *
 * argv[2]: the MathJax folder of the build (_static/mathjax, with node-main.js and adaptors/liteDOM.js).
 * stdin: JSON, a list of [tex, display] pairs. stdout: JSON, a list of the same length, each item the
 * MathML of its formula or {"error": message} (MathJax's own message for TeX it cannot parse).
 */
"use strict";
const mathjax = process.argv[2];
// MathJax's loader logs notes with console.log; stdout carries only the JSON answer.
console.log = (...args) => process.stderr.write(args.join(" ") + "\n");
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const items = JSON.parse(input);
  require(mathjax + "/node-main.js").init({
    loader: { paths: { mathjax: mathjax }, load: ["input/tex", "adaptors/liteDOM"] },
    // Unknown macros and TeX errors are errors here, not red text in a page.
    tex: { formatError: (jax, err) => { throw err; } },
  }).then((MathJax) => {
    const out = items.map(([tex, display]) => {
      try {
        return MathJax.tex2mml(tex, { display: display });
      } catch (err) {
        return { error: String(err.message || err) };
      }
    });
    process.stdout.write(JSON.stringify(out));
  }).catch((err) => {
    process.stderr.write(String(err.stack || err) + "\n");
    process.exit(1);
  });
});
