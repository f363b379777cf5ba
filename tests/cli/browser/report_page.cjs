// Open a `nemo-lens report` page in headless Chromium and say what a person would see.
//
// node report_page.cjs SPEC.json    (SPEC: {url, screenshot, hovers: [{row, t_ms}]},
//                                    optionally width, and keep_hover: the screenshot
//                                    shows the last hover's tooltip, as docs/ does)
//
// Prints one JSON object: the requests the page made, script errors, the charts and
// figures in its DOM, for each hover the tooltip's text, and the screenshot it saved.
// playwright-core is loaded from NEMO_LENS_BROWSER_TOOLS; the browser is CHROMIUM.
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require(path.join(process.env.NEMO_LENS_BROWSER_TOOLS, "node_modules", "playwright-core"));
const { launchOptions } = require("./launch.cjs");

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf-8"));
  const browser = await chromium.launch(launchOptions());
  const result = { requests: [], errors: [] };
  try {
    const page = await browser.newPage({ viewport: { width: spec.width || 1300, height: 900 } });
    page.on("request", (request) => result.requests.push(request.url()));
    page.on("pageerror", (error) => result.errors.push(String(error)));
    page.on("console", (message) => {
      if (message.type() === "error") result.errors.push(message.text());
    });
    await page.goto(spec.url);
    await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
    Object.assign(result, await page.evaluate(() => {
      const text = (el) => (el ? el.textContent.trim() : null);
      const canvas = document.getElementById("timeline-canvas");
      const box = canvas.getBoundingClientRect();
      return {
        title: document.title,
        meta: text(document.getElementById("meta")),
        goodputHeadings: [...document.querySelectorAll("h3.run-heading")].map(text),
        goodputCharts: [...document.querySelectorAll("svg.goodput-chart")].map((svg) => ({
          run: svg.dataset.run,
          bars: [...svg.querySelectorAll("text.bar-label")].map(text),
          segments: [...svg.querySelectorAll("rect.segment")].map((r) => ({
            bucket: r.dataset.bucket,
            width: r.getBoundingClientRect().width,
          })),
        })),
        goodputTables: [...document.querySelectorAll("table.goodput-table")].map((table) =>
          Object.fromEntries([...table.querySelectorAll("tbody tr")].map((tr) => [
            tr.dataset.bucket,
            [...tr.querySelectorAll("td")].map((td) => td.firstChild.textContent.trim()),
          ]))),
        timeline: {
          width: box.width,
          height: box.height,
          painted: (() => {
            // Count non-blank pixels: the bars were drawn, not only the element laid out.
            const ctx = canvas.getContext("2d");
            const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
            let painted = 0;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) painted++;
            return painted;
          })(),
          rows: [...document.querySelectorAll("#timeline-labels div")].map(text),
          note: text(document.getElementById("timeline-note")),
        },
        steps: {
          series: [...document.querySelectorAll("#steps-chart polyline.series")].map((p) => ({
            process: p.dataset.process,
            points: p.points.length,
          })),
          wasted: document.querySelectorAll("#steps-chart circle.mark.wasted").length,
          slow: document.querySelectorAll("#steps-chart circle.mark.slow").length,
          table: [...document.querySelectorAll("#steps-table tbody tr")].map((tr) => ({
            process: tr.dataset.process,
            straggler: tr.classList.contains("straggler"),
            cells: [...tr.querySelectorAll("td")].map(text),
          })),
        },
      };
    }));
    result.hovers = [];
    for (const hover of spec.hovers || []) {
      const target = await page.evaluate(({ row, t_ms }) => {
        const label = [...document.querySelectorAll("#timeline-labels div")]
          .find((el) => el.textContent === row);
        if (!label) return null;
        // The page may be taller than the window: bring the row into view, as a reader does.
        label.scrollIntoView({ block: "center" });
        const canvas = document.getElementById("timeline-canvas");
        const box = canvas.getBoundingClientRect();
        const t0 = Number(canvas.dataset.t0), t1 = Number(canvas.dataset.t1);
        const lb = label.getBoundingClientRect();
        return { x: box.left + (t_ms - t0) / (t1 - t0) * box.width, y: lb.top + lb.height / 2 };
      }, hover);
      if (!target) { result.hovers.push({ row: hover.row, found: false }); continue; }
      await page.mouse.move(target.x, target.y);
      const tooltip = await page.evaluate(() => {
        const el = document.getElementById("tooltip");
        return { hidden: el.hidden, lines: [...el.children].map((c) => c.textContent) };
      });
      result.hovers.push({ row: hover.row, found: true, ...tooltip });
    }
    if (!spec.keep_hover) await page.mouse.move(0, 0);
    await page.screenshot({ path: spec.screenshot, fullPage: true });
    result.screenshot = spec.screenshot;
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => { console.error(error); process.exit(1); });
