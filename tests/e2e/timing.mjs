// How long the page makes a person wait, printed by the e2e (tests/e2e/page.mjs) and runnable
// alone for the whole-run figures:
//   node tests/e2e/timing.mjs DIST      (serves DIST itself; about 5 minutes on SwiftShader)
// Every load is in a fresh browser context, so nothing is cached between loads: the wasm is
// fetched, compiled and its kernels built each time, as on a first visit.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launch, serve } from './browser.mjs';

const LOADS = 5;
const OTHER_PRESETS = ['circle-tiny', 'digits-mlp', 'digits-cnn', 'sort-gru', 'sort-lstm'];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const seconds = (ms) => (ms / 1000).toFixed(1);
const isStatus = (wanted) => document.querySelector('#status')?.textContent === wanted;

async function freshPage(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1100 } });
  const page = await context.newPage();
  const started = Date.now();
  await page.goto(url);
  return { context, page, started };
}

/** Press Step and wait for that step's loss; returns the milliseconds. */
async function timeStep(page) {
  const clicked = Date.now();
  await page.$eval('#step', (b) => b.click());
  await page.waitForFunction(isStatus, 'paused', { timeout: 600_000 });
  return Date.now() - clicked;
}

/**
 * Prints the median of LOADS loads of the default page (to the adapter card, and to its first
 * training step from navigation, split into the wasm's download, the device, the data and model,
 * and the step, with a second step beside it: the difference is mostly kernel compilation), then, for each other preset, from pressing Step to that step's
 * loss. With `wholeRuns`, each preset is also resumed to its end, printing its completed ms/step
 * (as the page shows it) and the time from Step to the end. `check` (name, ok) records pass or fail like the e2e's.
 */
export async function timeLoads(browser, base, check, { wholeRuns = false } = {}) {
  const parts = { wasm: [], adapter: [], step: [], device: [], built: [], first: [], second: [] };
  for (let i = 0; i < LOADS; i += 1) {
    const { context, page, started } = await freshPage(browser, base);
    await page.waitForSelector('#shader-f16', { timeout: 120_000 });
    parts.adapter.push(Date.now() - started);
    await page.$eval('#step', (b) => b.click());
    await page.waitForFunction(isStatus, 'paused', { timeout: 600_000 });
    parts.step.push(Date.now() - started);
    parts.second.push(await timeStep(page));
    // The page's own marks (www/src/session.rs), on the navigation's clock.
    const at = await page.evaluate(() => {
      const first = (name) => performance.getEntriesByName(name, 'mark')[0]?.startTime ?? NaN;
      const wasm = performance.getEntriesByType('resource').find((r) => r.name.endsWith('.wasm'));
      return { wasm: wasm?.responseEnd ?? NaN, start: first('vramlab:start'), device: first('vramlab:device'),
        built: first('vramlab:run-built'), step: first('vramlab:step'), stepped: first('vramlab:stepped') };
    });
    parts.wasm.push(at.wasm);
    parts.device.push(at.device - at.start);
    parts.built.push(at.built - at.device);
    parts.first.push(at.stepped - at.step);
    await context.close();
  }
  const m = Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, Math.round(median(v))]));
  console.log(`     load (median of ${LOADS}, ms): adapter card ${m.adapter}, first step ${m.step}`
    + ` (each: ${parts.adapter.join(', ')} / ${parts.step.join(', ')})`);
  console.log(`     where the first step's wait goes (median, ms): wasm downloaded at ${m.wasm};`
    + ` after Step: device ${m.device}, data and model ${m.built}, the step ${m.first} (the second step: ${m.second})`);
  check(m.adapter > 0 && m.step > m.adapter && m.first > 0 && m.built >= 0,
    'page load timed to the adapter card and the first step, split by the page\'s marks');

  for (const preset of OTHER_PRESETS) {
    const { context, page } = await freshPage(browser, `${base}#preset=${preset}&steps=3&eval_every=2`);
    await page.waitForSelector('#shader-f16', { timeout: 120_000 });
    const toFirst = await timeStep(page);
    let line = `     ${preset}: first step ${toFirst} ms after Step`;
    if (wholeRuns) {
      const resumed = Date.now();
      await page.$eval('#start', (b) => b.click());
      await page.waitForFunction(() => ['finished', 'stopped'].includes(document.querySelector('#status')?.textContent),
        null, { timeout: 900_000 });
      const status = await page.textContent('#status');
      const completed = (await page.textContent('#completed-ms')).trim();
      line += `, ${status}, completed ms/step ${completed}, Step to end ${seconds(toFirst + Date.now() - resumed)} s`;
      check(status === 'finished', `${preset} trains to the end`);
    }
    console.log(line);
    await context.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [dist] = process.argv.slice(2);
  if (!dist) {
    console.error('usage: node tests/e2e/timing.mjs DIST');
    process.exit(2);
  }
  const server = await serve({ '/': path.resolve(dist) });
  const browser = await launch();
  let failures = 0;
  const check = (ok, what) => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failures += 1;
  };
  await timeLoads(browser, server.base, check, { wholeRuns: true });
  await browser.close();
  server.close();
  process.exit(failures ? 1 : 0);
}
