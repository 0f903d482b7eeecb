// A native search watched on the page: `vramlab find-batch --live` runs each trial as a process
// of its own and the page shows the trials one after another, lists each trial's outcome and
// the answer exactly as the process prints them, then closes its stream; the process exits 0.
// A second search (the seeds' linear one, a trial for every second batch) is paused, resumed
// and stopped from the page: while paused, neither a trial's steps nor new trials go on, and
// the stop ends the search without an answer (exit 1, saying so on the page and on stderr).
// Usage: node live-search.mjs DIST_DIR SCREENSHOT_DIR VRAMLAB_BINARY
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { launch, openTab, WHILE_BUSY } from './browser.mjs';

const [dist, shots, binary] = process.argv.slice(2);
if (!dist || !shots || !binary) {
  console.error('usage: node live-search.mjs DIST_DIR SCREENSHOT_DIR VRAMLAB_BINARY');
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });
const started = Date.now();

let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures += 1;
};

/** `vramlab find-batch ... --live` on a free port: its process, output and page address. */
const search = (flags) => serve(['find-batch', '--preset', 'circle-tiny', '--budget', '9MiB', ...flags], 'this search');

/** `vramlab ARGS --live` on a free port: its process, output and page address. */
async function serve(args, what) {
  const native = spawn(binary, [...args, '--live', '--port', '0', '--page', path.resolve(dist)],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const run = { native, stdout: '', stderr: '' };
  native.stdout.on('data', (d) => { run.stdout += d; });
  run.exited = new Promise((resolve) => native.on('exit', (code) => resolve(code)));
  run.address = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no address printed in 120 s: ${run.stderr}`)), 120_000);
    native.stderr.on('data', (d) => {
      run.stderr += d;
      // The whole line: stderr may arrive in pieces, and a piece may end inside the address.
      const found = new RegExp(`watch ${what} at (http://\\S+) \\(`).exec(run.stderr);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
  });
  return run;
}

const browser = await launch();
const banner = (page) => page.$eval('#native-run', (e) => ({
  runs: Number(e.dataset.runs),
  steps: Number(e.dataset.steps),
  over: e.dataset.over === 'true',
  notes: [...e.querySelectorAll('#native-notes li')].map((li) => li.textContent),
}));
const overOn = (page, timeout) => page.waitForFunction(
  () => document.querySelector('#native-run')?.dataset.over === 'true', null, { timeout });

const runs = [];
try {
  // A whole search: three trials.
  const whole = await search(['--max-trials', '3']);
  runs.push(whole);
  const tab = await openTab(browser, whole.address, WHILE_BUSY);
  await overOn(tab.page, 240_000);
  const code = await whole.exited;
  check(code === 0, `the search exits 0 (exit ${code})`);
  const shown = await banner(tab.page);
  const trials = shown.notes.filter((n) => /^vramlab: batch +\d+ (fits|out of memory)/.test(n));
  const printed = whole.stdout.trim().split('\n');
  const counted = /\((\d+) trials/.exec(whole.stdout);
  check(counted && trials.length === Number(counted[1]) && shown.runs === trials.length,
    `the page showed each trial as a run (${shown.runs} runs, ${trials.length} trial notes; printed: ${printed[0]})`);
  check(printed.every((line) => shown.notes.includes(line)),
    `the page lists the answer as printed ("${printed[0]}")`);
  check(/find-batch: a search for the largest batch within 9.00 MiB of circle-tiny/.test(shown.notes[0] ?? ''),
    `the first note says what is searched ("${(shown.notes[0] ?? '').slice(0, 80)}...")`);
  await tab.page.screenshot({ path: path.join(shots, 'live-search.png'), fullPage: true });
  check(tab.errors.length === 0, `no errors in the tab${tab.errors.length ? ': ' + tab.errors.join(' | ') : ''}`);
  await tab.context.close();

  // A long search: pause it, resume it and stop it.
  const long = await search(['--method', 'seed-linear']);
  runs.push(long);
  const second = await openTab(browser, long.address, WHILE_BUSY);
  const runsAtLeast = (n) => second.page.waitForFunction(
    (n) => Number(document.querySelector('#native-run')?.dataset.runs) >= n, n, { timeout: 120_000 });
  const statusIs = (wanted) => second.page.waitForFunction(
    (w) => document.querySelector('#status')?.textContent === w, wanted, { timeout: 30_000 });
  await runsAtLeast(2);
  await second.page.click('#pause');
  await statusIs('paused');
  // A step in flight when the pause came ends; the trial's process then waits.
  await second.page.waitForTimeout(2000);
  const paused = await banner(second.page);
  await second.page.waitForTimeout(2500);
  const still = await banner(second.page);
  // As live.mjs allows: a step in flight when the pause reached the trial's process may end.
  check(still.runs === paused.runs && still.steps <= paused.steps + 1,
    `Pause on the page holds the search (${paused.runs} runs, ${paused.steps} steps, then ${still.runs} and ${still.steps})`);
  await second.page.click('#resume');
  await runsAtLeast(still.runs + 2);
  check(true, `Resume goes on (${(await banner(second.page)).runs} runs)`);
  await second.page.click('#stop');
  const stopped = await Promise.race([long.exited,
    new Promise((resolve) => setTimeout(() => resolve('none in 120 s'), 120_000))]);
  check(stopped === 1 && /stopped from the page: the search has no answer/.test(long.stderr),
    `Stop ends the search without an answer: exit ${stopped}, "${long.stderr.trim().split('\n').at(-1)}"`);
  await overOn(second.page, 30_000);
  const end = await banner(second.page);
  check(end.notes.at(-1) === 'stopped from the page: the search has no answer',
    `the page says so last ("${end.notes.at(-1)}")`);
  check(second.errors.length === 0, `no errors in the second tab${second.errors.length ? ': ' + second.errors.join(' | ') : ''}`);
  await second.context.close();

  // One claim, live: its runs without the tip and with it, and its verdict.
  const claims = await serve(['claims', '--only', 'strategies.loss_bookkeeping', '--claim',
    'keeping every step', '--as-page'], 'these claims');
  runs.push(claims);
  const third = await openTab(browser, claims.address, WHILE_BUSY);
  await overOn(third.page, 120_000);
  const claimsExit = await claims.exited;
  const judged = await banner(third.page);
  const verdict = /\*\*([^*]+)\*\*: (.*) \|$/m.exec(claims.stdout);
  check(claimsExit === 0 && judged.runs === 2,
    `claims --live shows the claim's two runs (${judged.runs} runs; exit ${claimsExit})`
    + (judged.runs === 2 ? '' : `; the page noted ${JSON.stringify(judged.notes)}, said "${await third.page.textContent('#run-error').catch(() => '')}"`));
  check(verdict !== null && judged.notes.at(-1)?.endsWith(`${verdict[1]}: ${verdict[2]}`),
    `and lists its verdict as the report prints it ("${judged.notes.at(-1)}")`);
  await third.page.screenshot({ path: path.join(shots, 'live-claims.png'), fullPage: true });
  check(third.errors.length === 0, `no errors in the third tab${third.errors.length ? ': ' + third.errors.join(' | ') : ''}`);
} catch (err) {
  check(false, `live-search: ${err.stack ?? err}`);
} finally {
  for (const run of runs) if (run.native.exitCode === null) run.native.kill();
  await browser.close();
}
console.log(`live-search.mjs: ${failures} failed, ${((Date.now() - started) / 1000).toFixed(0)} s`);
if (failures) {
  for (const run of runs) console.log(`native stderr:\n${run.stderr.slice(-2000)}\nstdout:\n${run.stdout.slice(-1000)}`);
}
process.exit(failures ? 1 : 0);
