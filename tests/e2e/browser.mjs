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

/** A tab of its own (a fresh context) on `address`, recording the page's errors. */
export async function openTab(browser, address) {
  const context = await browser.newContext({ viewport: { width: 1366, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(address);
  return { context, page, errors };
}
