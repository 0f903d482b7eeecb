// A native run watched on the page: `vramlab train --live` on this machine's GPU (lavapipe here)
// serves the built page; two headless Chromium tabs watch it. The first sees steps arrive and
// closes; the run goes on; the second (which connected late) sees every step, pauses, resumes
// and stops the run. The process must write its files and exit 0, and every figure the page
// drew while the run trained must equal the native timeline.json's.
// Usage: node live.mjs DIST_DIR SCREENSHOT_DIR VRAMLAB_BINARY
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { launch, openTab, WHILE_BUSY } from './browser.mjs';

const [dist, shots, binary] = process.argv.slice(2);
if (!dist || !shots || !binary) {
  console.error('usage: node live.mjs DIST_DIR SCREENSHOT_DIR VRAMLAB_BINARY');
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });
const out = fs.mkdtempSync('/tmp/vramlab-live-');
const started = Date.now();

let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures += 1;
};

// Long enough never to finish by itself here: the page stops it.
const native = spawn(binary, ['train', '--preset', 'circle-tiny', '--steps', '200000', '--live', '--port', '0',
  '--page', path.resolve(dist), '--out', out], { stdio: ['ignore', 'pipe', 'pipe'] });
let stderr = '';
let stdout = '';
native.stdout.on('data', (d) => { stdout += d; });
const exited = new Promise((resolve) => native.on('exit', (code, signal) => resolve({ code, signal })));
const address = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no address printed in 120 s: ${stderr}`)), 120_000);
  native.stderr.on('data', (d) => {
    stderr += d;
    // The whole line: stderr may arrive in pieces, and a piece may end inside the address.
    const found = /watch this run at (http:\/\/\S+) \(/.exec(stderr);
    if (found) {
      clearTimeout(timer);
      resolve(found[1]);
    }
  });
});
console.log(`native run serving ${address}`);

const browser = await launch();
/** What the banner says the charts drew last. */
const drawn = (page) => page.$eval('#native-run', (e) => ({
  steps: Number(e.dataset.steps),
  step: Number(e.dataset.lastStep),
  highWater: Number(e.dataset.lastHighWaterInUse),
  end: Number(e.dataset.lastEndInUse),
}));
const stepsAtLeast = (page, n, timeout = 120_000) => page.waitForFunction(
  (n) => Number(document.querySelector('#native-run')?.dataset.steps) >= n, n, { timeout });
const statusIs = (page, wanted, timeout = 30_000) => page.waitForFunction(
  (w) => document.querySelector('#status')?.textContent === w, wanted, { timeout });

const samples = [];
try {
  const first = await openTab(browser, address, WHILE_BUSY);
  await stepsAtLeast(first.page, 20);
  const banner = await first.page.textContent('#native-run');
  check(/\(vulkan\)/.test(banner), `the page names the native adapter and backend: "${banner.slice(0, 90)}..."`);
  const adapterCard = await first.page.textContent('#adapter-card');
  check(/vulkan/.test(adapterCard), 'the adapter card shows the native adapter');
  check(await first.page.isDisabled('#start'), 'Start is off while the page watches a native run');
  for (let i = 0; i < 5; i += 1) {
    samples.push(await drawn(first.page));
    await first.page.waitForTimeout(300);
  }
  check(samples.at(-1).steps > samples[0].steps, `steps arrive live (${samples[0].steps} then ${samples.at(-1).steps} drawn)`);

  const opening = Date.now();
  const second = await openTab(browser, address, WHILE_BUSY);
  const seen = samples.at(-1).steps;
  await stepsAtLeast(second.page, seen);
  check(true, `a second tab sees the same run from its first step (${seen}+ steps, `
    + `${((Date.now() - opening) / 1000).toFixed(1)} s after it was opened)`);
  await first.page.screenshot({ path: path.join(shots, 'live-native-run.png') });
  check(first.errors.length === 0, `no errors in the first tab${first.errors.length ? ': ' + first.errors.join(' | ') : ''}`);
  await first.context.close();

  const afterClose = (await drawn(second.page)).steps;
  await stepsAtLeast(second.page, afterClose + 20);
  check(native.exitCode === null, 'closing a tab does not stop the run');
  samples.push(await drawn(second.page));

  await second.page.click('#pause');
  await statusIs(second.page, 'paused');
  const paused = (await drawn(second.page)).steps;
  await second.page.waitForTimeout(1500);
  const stillPaused = (await drawn(second.page)).steps;
  check(stillPaused <= paused + 1, `Pause on the page pauses the native run (${paused} then ${stillPaused} steps)`);
  await second.page.click('#resume');
  await statusIs(second.page, 'training');
  await stepsAtLeast(second.page, stillPaused + 10);
  check(true, 'Resume goes on');
  samples.push(await drawn(second.page));

  await second.page.click('#stop');
  const { code, signal } = await Promise.race([exited,
    new Promise((resolve) => setTimeout(() => resolve({ code: 'none in 120 s' }), 120_000))]);
  check(code === 0, `Stop: the native process exits 0 (exit ${code}${signal ? ', ' + signal : ''})`);
  await statusIs(second.page, 'finished');
  const files = ['timeline.json', 'timeline.csv', 'memory.svg', 'categories.svg', 'one-step.svg'];
  check(files.every((f) => fs.existsSync(path.join(out, f))), `it wrote ${files.join(', ')}`);
  const timeline = JSON.parse(fs.readFileSync(path.join(out, 'timeline.json'), 'utf8'));
  const shown = await drawn(second.page);
  check(shown.steps === timeline.steps.length && timeline.steps.length < 200000,
    `the page ends with the run's ${timeline.steps.length} steps (drew ${shown.steps})`);
  const differing = samples.filter((s) => {
    const record = timeline.steps[s.step - 1];
    return !record || record.high_water.in_use_bytes !== s.highWater
      || (record.phases.optimizer?.in_use_bytes ?? 0) !== s.end;
  });
  check(samples.length >= 7 && differing.length === 0,
    `the in-use figures drawn live equal timeline.json's at ${samples.length} steps sampled (${samples.map((s) => s.step).join(' ')})`
    + (differing.length ? `; differing: ${JSON.stringify(differing)}` : ''));
  const summary = await second.page.$('#summary');
  check(summary !== null, 'the finished run shows its summary card (pin and export as a browser run)');
  await second.page.screenshot({ path: path.join(shots, 'live-native-stopped.png') });
  check(second.errors.length === 0, `no errors in the second tab${second.errors.length ? ': ' + second.errors.join(' | ') : ''}`);
} catch (err) {
  check(false, `live: ${err.stack ?? err}`);
} finally {
  if (native.exitCode === null) native.kill();
  await browser.close();
}
console.log(`live.mjs: ${failures} failed, ${((Date.now() - started) / 1000).toFixed(0)} s`);
if (failures) console.log(`native stderr:\n${stderr.slice(-2000)}\nstdout:\n${stdout.slice(-1000)}`);
process.exit(failures ? 1 : 0);
