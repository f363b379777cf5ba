// Load a Chrome trace into speedscope (a third-party viewer, from npm, working offline)
// in headless Chromium, and list the profiles it imported with their total weights.
//
// node speedscope.cjs URL       (URL: speedscope's index.html#profileURL=<the trace>)
//
// Prints one JSON object: the page title, whether speedscope reported a failure, the
// text of its profile list ("#  Name  Total Weight" rows), script errors, and the
// requests made (all must be to the loopback server that serves both).
"use strict";
const path = require("path");
const { chromium } = require(path.join(process.env.NEMO_LENS_BROWSER_TOOLS, "node_modules", "playwright-core"));
const { launchOptions } = require("./launch.cjs");

async function main() {
  const browser = await chromium.launch(launchOptions());
  const result = { requests: [], errors: [], console: [] };
  try {
    const page = await browser.newPage({ viewport: { width: 1300, height: 800 } });
    page.on("request", (request) => result.requests.push(request.url()));
    page.on("pageerror", (error) => result.errors.push(String(error)));
    page.on("console", (message) => result.console.push(message.text()));
    await page.goto(process.argv[2]);
    await page.waitForFunction(
      () => document.title.endsWith(" - speedscope") ||
        document.body.innerText.includes("Something went wrong"),
      null,
      { timeout: 30000 },
    );
    result.title = await page.title();
    result.failed = (await page.evaluate(() => document.body.innerText))
      .includes("Something went wrong");
    if (!result.failed) {
      // The toolbar names the profile shown, "(1/N)"; clicking it lists all of them.
      const selector = page.getByText(/\(1\/\d+\)/);
      result.shown = (await selector.textContent()).trim();
      await selector.click();
      await page.waitForTimeout(300);
      result.profiles = await page.evaluate(() => document.body.innerText.split("\n")
        .map((line) => line.split("\t"))
        .filter((cells) => cells.length === 3 && /^\d+$/.test(cells[0]))
        .map((cells) => ({ name: cells[1], weight: cells[2] })));
    }
    await page.screenshot({ path: process.argv[3] });
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => { console.error(error); process.exit(1); });
