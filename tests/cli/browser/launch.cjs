// How the browser tests start Debian's chromium: headless, as root (no sandbox), and
// with every background connection off, as the machine has no network to offer them.
"use strict";

function launchOptions() {
  return {
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  };
}

module.exports = { launchOptions };
