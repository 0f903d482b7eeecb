// Shared by the page's end-to-end test and the TF.js benchmark: the page's static file server
// (www/serve.mjs), and Debian's Chromium launched with the flags measured to keep WebGPU
// (SwiftShader) working.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

export const npmRoot = process.env.VRAMLAB_NPM ?? path.join(process.env.HOME, '.cache/vramlab/npm');
export { serve } from '../../www/serve.mjs';

const { chromium } = createRequire(path.join(npmRoot, 'package.json'))('playwright-core');

/** Headless Chromium, with WebGPU unless `webgpu` is false. Playwright's own default flags are
 * replaced: it only needs the pipe it talks over. `--disable-software-rasterizer` must never be
 * among the flags (it takes WebGPU's SwiftShader away). */
export function launch(extraArgs = [], { webgpu = true } = {}) {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    ignoreDefaultArgs: true,
    timeout: 60_000,
    args: ['--remote-debugging-pipe', '--headless', '--no-sandbox', ...(webgpu ? ['--enable-unsafe-webgpu'] : []),
      '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', `--user-data-dir=${fs.mkdtempSync('/tmp/vramlab-chromium-')}`, ...extraArgs],
  });
}

/** Fields for a sort preset's link that hold out 102 sequences instead of 1,024: the closing
 * evaluation of the test split is about 30 s of a short run on SwiftShader. */
export const SMALL_TEST_SPLIT = 'data.samples=2048&data.test_fraction=0.05';

/** Press Start on `page` and wait for its run to end (15 minutes at most); the status it ended
 * with. */
export async function runToEnd(page) {
  await page.$eval('#start', (b) => b.click());
  await page.waitForFunction(() => ['finished', 'stopped'].includes(document.querySelector('#status')?.textContent),
    null, { timeout: 900_000, polling: 200 });
  return page.textContent('#status');
}

/** Navigation for a tab opened while a native process trains on every core: the tests wait for
 * what the tab shows (steps, 120 s at most), not for its load event, which waits for the 3 MB
 * wasm preload and came after Playwright's 30 s once on a slow CI machine (live.mjs's second
 * tab, 2026-11-27). */
export const WHILE_BUSY = { waitUntil: 'domcontentloaded', timeout: 120_000 };

/** A tab of its own (a fresh context) on `address`, recording the page's errors. `goto` is
 * Playwright's navigation options (by default it waits for the load event, 30 s at most). */
export async function openTab(browser, address, goto = {}) {
  const context = await browser.newContext({ viewport: { width: 1366, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(address, goto);
  return { context, page, errors };
}
