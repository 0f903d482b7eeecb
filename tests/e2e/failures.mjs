// The page's failure modes, each a test: Reset while a step awaits the GPU, an import while a run
// trains, ten quick preset switches, an out-of-memory followed by a normal run, and the GPU
// device lost under a training run. After each the page must say what happened and keep
// working. Usage: node failures.mjs DIST_DIR SCREENSHOT_DIR (serves DIST_DIR itself).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launch, serve } from './browser.mjs';

const [distArg, shots] = process.argv.slice(2);
if (!distArg || !shots) {
  console.error('usage: node failures.mjs DIST_DIR SCREENSHOT_DIR');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
// A run exported natively (`vramlab train --json-timeline`): 3 steps, an evaluation at step 2.
const exported = path.join(here, '../../src/bin/vramlab/fuzz/seeds/timeline-spiral.json');
fs.mkdirSync(shots, { recursive: true });

const server = await serve({ '/': path.resolve(distArg) });
const base = server.base;
const browser = await launch();
const started = Date.now();

let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures += 1;
};
/** The check each scenario ends with: nothing thrown on the page (beyond what it expects). */
const checkNoPageErrors = (errors, what = 'no page errors') =>
  check(errors.length === 0, `${what}${errors.length ? ': ' + errors.join(' | ') : ''}`);

// A run long enough to be interrupted: small, so a step takes milliseconds once compiled.
const LONG = '#preset=spiral-mlp&steps=400&eval_every=0&batch_size=64&model.hidden=[32,32]';

/** A fresh page (its own wasm instance and GPU device) on `hash`, its adapter up. Every
 * GPUDevice the page asks for is kept in `window.gpuDevices`, so a test can destroy it. */
async function open(hash) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1100 } });
  await context.addInitScript(() => {
    window.gpuDevices = [];
    if (!self.GPUAdapter) return;
    const requestDevice = GPUAdapter.prototype.requestDevice;
    GPUAdapter.prototype.requestDevice = async function (...args) {
      const device = await requestDevice.apply(this, args);
      window.gpuDevices.push(device);
      return device;
    };
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${base}${hash}`);
  await page.waitForSelector('#shader-f16', { timeout: 120_000 });
  return { context, page, errors };
}

const status = (page) => page.textContent('#status');
const points = (page) => page.$eval('#memory-chart svg', (svg) => Number(svg.dataset.points)).catch(() => 0);
const stepsShown = async (page) => Number((await page.textContent('.progress')).match(/step (\d+)/)[1]);
// The DOM click: Playwright's own waits for the page to settle, and a first step compiles
// kernels on the page's thread.
const click = (page, selector) => page.$eval(selector, (b) => b.click());
const untilStatus = (page, wanted, timeout = 120_000) => page.waitForFunction(
  (w) => w.includes(document.querySelector('#status')?.textContent), wanted, { timeout });
const untilStepsShown = (page, n, timeout = 120_000) => page.waitForFunction(
  (k) => Number(document.querySelector('.progress')?.textContent.match(/step (\d+)/)?.[1]) >= k, n, { timeout });
async function setField(page, name, value) {
  await page.fill(`input[name="${name}"]`, value);
  await page.dispatchEvent(`input[name="${name}"]`, 'change');
}
async function trainToEnd(page, label) {
  const t0 = Date.now();
  await click(page, '#start');
  await untilStatus(page, ['finished', 'stopped'], 300_000);
  const s = await status(page);
  console.log(`     ${label}: ${s} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return s;
}

// 1. Reset while a step awaits the GPU: at the first step (kernels compiling) and mid-run.
// The old run must not come back when its step returns, and Start then trains from step 1.
{
  const { context, page, errors } = await open(LONG);
  for (const when of ['starting', 'training']) {
    await click(page, '#start');
    if (when === 'training') await untilStepsShown(page, 3);
    await click(page, '#reset');
    // Longer than a step here, so a step that was awaiting the GPU has returned.
    await page.waitForTimeout(2000);
    const after = { status: await status(page), steps: await stepsShown(page), points: await points(page) };
    check(after.status === 'ready' && after.steps === 0 && after.points === 0,
      `Reset while ${when}: the page is empty and ready (${JSON.stringify(after)})`);
  }
  await setField(page, 'steps', '12');
  check(await trainToEnd(page, 'a run after two resets') === 'finished' && await stepsShown(page) === 12,
    `Start after the resets trains a fresh run of its own 12 steps (${await stepsShown(page)})`);
  checkNoPageErrors(errors);
  await context.close();
}

// 2. Import a run while one trains: the import replaces it, and the training run's in-flight
// step does not bring it back.
{
  const { context, page, errors } = await open(LONG);
  await click(page, '#start');
  await untilStepsShown(page, 3);
  await page.setInputFiles('#import-json', exported);
  await untilStatus(page, ['finished', 'stopped'], 30_000);
  await page.waitForTimeout(2000);
  const after = { status: await status(page), steps: await stepsShown(page), error: await page.$('#run-error') };
  check(after.status === 'finished' && after.steps === 3 && after.error === null,
    `importing while training shows the imported 3-step run, and it stays (${after.status}, ${after.steps} steps)`);
  check(await page.$('#peak-in-use') !== null, 'the imported run has its summary');
  await setField(page, 'steps', '5');
  check(await trainToEnd(page, 'a run after the import') === 'finished' && await stepsShown(page) === 5,
    'Start after the import trains a new run');
  checkNoPageErrors(errors);
  await context.close();
}

// 3. Switch presets quickly ten times while a run trains: the page ends on the last one (its
// fields, its data, its URL) and trains it.
{
  const { context, page, errors } = await open(LONG);
  await click(page, '#start');
  await untilStepsShown(page, 2);
  const presets = await page.$$eval('select[name="preset"] option', (os) => os.map((o) => o.value));
  const sequence = Array.from({ length: 10 }, (_, i) => presets[(i * 3 + 1) % presets.length]);
  sequence[9] = 'circle-tiny';
  for (const name of sequence) {
    await page.$eval('select[name="preset"]', (s, v) => { s.value = v; s.dispatchEvent(new Event('change')); }, name);
  }
  await page.waitForTimeout(500);
  const shown = await page.$eval('select[name="preset"]', (s) => s.value);
  check(shown === 'circle-tiny' && page.url().includes('preset=circle-tiny'),
    `ten quick preset switches (${sequence.join(', ')}) end on circle-tiny, in the URL too`);
  check(await page.$$eval('#scatter circle', (c) => c.length) > 100, 'the data preview draws the last preset\'s data');
  await click(page, '#pause');
  await untilStatus(page, ['paused'], 60_000);
  await setField(page, 'steps', '5');
  check(await trainToEnd(page, 'circle-tiny after the switches') === 'finished' && await stepsShown(page) === 5,
    'Start then trains the last preset');
  checkNoPageErrors(errors);
  await context.close();
}

// 4. An out-of-memory under the page's budget field, then a normal run on the same page.
{
  const { context, page, errors } = await open('#preset=spiral-mlp&steps=3&eval_every=0');
  await setField(page, 'budget', '512KiB');
  check(await trainToEnd(page, 'under a 512 KiB budget') === 'stopped', 'the run under 512 KiB stops');
  const oom = await page.textContent('#run-error');
  check(oom.includes('out of memory') && oom.includes('what would fit'),
    `it says out of memory and what would fit: "${oom.split('\n')[0]}"`);
  await setField(page, 'budget', '');
  check(await trainToEnd(page, 'the same run without a budget') === 'finished' && await page.$('#run-error') === null,
    'the next run, without the budget, trains to the end');
  checkNoPageErrors(errors);
  await context.close();
}

// 5. The GPU device lost under a training run (GPUDevice.destroy()): the page says what
// happened and how to recover instead of freezing, and the way it offers works.
{
  const { context, page, errors } = await open(LONG);
  await click(page, '#start');
  await untilStepsShown(page, 3);
  const devices = await page.evaluate(() => { window.gpuDevices.forEach((d) => d.destroy()); return window.gpuDevices.length; });
  let said = null;
  try {
    await page.waitForSelector('#device-lost', { timeout: 30_000 });
    said = await page.textContent('#device-lost');
  } catch { /* checked below */ }
  const instead = said === null && await page.$('#run-error') ? await page.textContent('#run-error') : null;
  console.log(`     destroyed ${devices} device(s); the page says: ${JSON.stringify(said)}${instead ? ` (its run error: ${JSON.stringify(instead)})` : ''}`);
  check(said !== null && /GPU/.test(said) && /lost/.test(said) && /[Rr]eload/.test(said),
    'after the device is lost the page says so and how to recover');
  check(['stopped'].includes(await status(page)), `the run is stopped, not training (${await status(page)})`);
  // Responsive: an edit still goes through.
  await setField(page, 'steps', '4');
  check(page.url().includes('steps=4'), 'the page still takes edits');
  await page.screenshot({ path: path.join(shots, 'device-lost.png') });
  const deviceErrors = errors.filter((e) => !/lost|destroyed/i.test(e));
  checkNoPageErrors(deviceErrors, 'no page errors but the loss itself');
  await Promise.all([page.waitForNavigation(), click(page, '#reload')]);
  await page.waitForSelector('#shader-f16', { timeout: 120_000 });
  check(await trainToEnd(page, 'after reloading') === 'finished' && await stepsShown(page) === 4,
    'after Reload the page trains again on a new device (the edit kept in the URL)');
  await context.close();
}

console.log(`failure modes: ${((Date.now() - started) / 1000).toFixed(0)} s`);
await browser.close();
server.close();
process.exit(failures ? 1 : 0);
