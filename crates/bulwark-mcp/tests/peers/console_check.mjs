// Opens Bulwark's web console in headless Chromium (Debian's `chromium`, driven by
// playwright-core from npm), approves one pending request by clicking its button, and
// prints what it saw as one JSON line.
//
// usage: node console_check.mjs URL TOKEN REQUEST_ID
import { createRequire } from "node:module";
const require = createRequire(process.env.NODE_PATH + "/");
const { chromium } = require("playwright-core");

const [url, token, id] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const external = [];
  page.on("request", (r) => { if (!r.url().startsWith(url.replace(/\/$/, ""))) external.push(r.url()); });
  // The token travels in the fragment: never sent to the server, dropped from the address bar.
  await page.goto(url + "#token=" + token);
  const row = page.locator(`#pending tr[data-id="${id}"]`);
  await row.waitFor({ timeout: 15000 });
  const shownArgs = await row.locator("pre").innerText();
  await page.locator(`#feed li`).first().waitFor({ timeout: 15000 });
  await page.locator(`#chart rect`).first().waitFor({ timeout: 15000 });
  await row.locator("button.approve").click();
  await row.waitFor({ state: "detached", timeout: 15000 });
  await page.locator(`#decided tr`).first().waitFor({ timeout: 15000 });
  const decided = await page.locator("#decided tbody").innerText();
  const feed = await page.locator("#feed li").count();
  const bars = await page.locator("#chart rect").count();
  const address = page.url();
  console.log(JSON.stringify({
    approved: decided.includes("approved") || decided.includes("used"),
    shown_args: shownArgs, feed, bars, errors, external,
    token_in_address: address.includes(token),
  }));
  if (errors.length || external.length || address.includes(token)) process.exit(1);
} finally {
  await browser.close();
}
