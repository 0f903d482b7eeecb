// End-to-end test of the page as a new user meets it: Debian Chromium (WebGPU on SwiftShader)
// driven by playwright-core. Usage: node page.mjs DIST_DIR SCREENSHOT_DIR [--full]
// Serves DIST_DIR itself, so nothing else has to be running. The lessons: with --full (`.ci/test
// --full`) "Run all lessons" runs every card; without it (the CI tier) a few cards, one of each
// kind of figure a page judges, run on their own buttons (SOME_LESSONS). Either way the exported
// table is held to the native claims by `vramlab claims --compare-page` (.ci/test).
import fs from 'node:fs';
import path from 'node:path';

import { launch, serve, SMALL_TEST_SPLIT } from './browser.mjs';
import { timeLoads } from './timing.mjs';

const full = process.argv.includes('--full');
const [distArg, shots] = process.argv.slice(2).filter((arg) => arg !== '--full');
if (!distArg || !shots) {
  console.error('usage: node page.mjs DIST_DIR SCREENSHOT_DIR [--full]');
  process.exit(2);
}
const dist = path.resolve(distArg);
fs.mkdirSync(shots, { recursive: true });

const server = await serve({ '/': dist });
const base = server.base;
const browser = await launch();

let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures += 1;
};

// A laptop's screen: the first screen must hold the data and model, Start and the memory chart.
const viewport = { width: 1366, height: 768 };
const context = await browser.newContext({ viewport });
const page = await context.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

const points = (id) => page.$eval(`#${id} svg`, (svg) => Number(svg.dataset.points));
const peakMiB = async () => Number((await page.textContent('#peak-in-use')).split(' ')[0]);
const trainingMiB = async () => Number((await page.textContent('#training-high-water')).split(' ')[0]);
async function trainToEnd(label) {
  const started = Date.now();
  // The DOM click: Playwright's own would wait for the page to settle, and the first step of a
  // new shape compiles kernels on the page's thread.
  await page.$eval('#start', (b) => b.click());
  await page.waitForFunction(() => ['finished', 'stopped'].includes(document.querySelector('#status')?.textContent),
    null, { timeout: 600_000 });
  const status = await page.textContent('#status');
  console.log(`     ${label}: ${status} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return status;
}

// 0. How long a visitor waits: page load to the adapter card and to the first step (median of
// five fresh loads), and each other preset's first step. Whole runs: tests/e2e/timing.mjs alone.
await timeLoads(browser, base, check);

// 0b. The first screen as a newcomer meets it (the default preset, a fresh browser): Start, the
// data and model and the memory chart without scrolling, the guided tour's first line, no
// notice about plans until Plan is pressed. Then mid-run: every chart has data while the run
// goes. The tour closes for good.
{
  const fresh = await browser.newContext({ viewport });
  const first = await fresh.newPage();
  first.on('pageerror', (e) => errors.push(String(e)));
  await first.goto(base);
  await first.waitForSelector('#shader-f16', { timeout: 120_000 });
  await first.screenshot({ path: path.join(shots, '0-first-screen.png') });
  const inView = async (selector) => {
    const box = await first.$eval(selector, (e) => { const r = e.getBoundingClientRect(); return { top: r.top, bottom: r.bottom, left: r.left, right: r.right }; });
    return box.top >= 0 && box.left >= 0 && box.bottom <= viewport.height && box.right <= viewport.width;
  };
  for (const [selector, what] of [['#start', 'Start'], ['#memory-chart', 'the memory chart'], ['#data-panel select[name="preset"]', 'the preset'],
    ['#scatter', 'the data'], ['input[name="model.hidden"]', 'the model'], ['#strategies-panel h3', 'the first strategy group']]) {
    check(await inView(selector), `first screen at 1366x768: ${what} visible without scrolling`);
  }
  check(await first.$eval('#tour', (t) => t.dataset.stop) === 'start', 'the guided first run starts at "press Start"');
  const groups = await first.$$eval('#strategies-panel .group h3', (hs) => hs.map((h) => h.firstChild.textContent.trim()));
  check(['Activations', 'Weights and data', 'Gradients and optimizer state', 'The allocator'].every((g) => groups.includes(g)),
    `strategies grouped by what they shrink (${groups.join(', ')})`);
  const claimLines = await first.$$eval('#strategies-panel .claim', (cs) => cs.map((c) => c.getBoundingClientRect().height));
  check(claimLines.length > 10 && claimLines.every((h) => h < 20), `each claim is one line (${claimLines.length} claims)`);
  await first.$eval('#start', (b) => b.click());
  await first.waitForFunction(() => Number(document.querySelector('#loss-chart svg')?.dataset.points) > 0
    && Number(document.querySelector('#throughput-chart svg')?.dataset.points) > 0, null, { timeout: 600_000 });
  const midRun = { status: await first.textContent('#status'), steps: await first.textContent('.progress') };
  const charts = {};
  for (const id of ['memory-chart', 'category-chart', 'one-step-chart', 'loss-chart', 'throughput-chart']) {
    charts[id] = await first.$eval(`#${id} svg`, (svg) => Number(svg.dataset.points));
  }
  console.log(`     mid-run (${midRun.status}, ${midRun.steps}): points ${JSON.stringify(charts)}`);
  check(midRun.status === 'training' && Object.values(charts).every((n) => n > 0), 'every chart shows data while the run goes');
  check(await first.$eval('#tour', (t) => t.dataset.stop) === 'watch', 'the tour moves on to "watch in use" once the run starts');
  const ticks = await first.$$eval('#memory-chart svg text.tick', (ts) => ts.map((t) => t.textContent));
  const unit = await first.textContent('#memory-chart .unit');
  const numbers = ticks.filter((t) => /^[\d.]+$/.test(t)).map(Number);
  const gap = numbers[1] - numbers[0];
  check(numbers.length >= 3 && numbers.every((n, i) => Math.abs(n - i * gap) < 1e-9) && [1, 2, 5].some((m) => Number((gap / 10 ** Math.floor(Math.log10(gap))).toFixed(6)) === m),
    `memory chart ticks at round steps in one unit (${numbers.join(', ')} ${unit})`);
  await first.screenshot({ path: path.join(shots, '1-mid-run.png') });
  await first.$eval('#reset', (b) => b.click());
  await first.$eval('#tour-close', (b) => b.click());
  await first.reload();
  await first.waitForSelector('#shader-f16', { timeout: 120_000 });
  check(await first.$('#tour') === null, 'a closed tour stays closed after a reload');
  await fresh.close();
}

// 1. First load: the adapter card fills, training runs, the charts fill.
const loadStarted = Date.now();
await page.goto(`${base}#preset=spiral-mlp&steps=6&eval_every=3&batch_size=512&model.hidden=[128,128]`);
// Long tasks (the page's thread busy for 50 ms or more) while training.
await page.evaluate(() => {
  window.longTasks = [];
  new PerformanceObserver((list) => list.getEntries().forEach((e) => window.longTasks.push(e.duration)))
    .observe({ type: 'longtask', buffered: true });
});
await page.waitForSelector('#shader-f16', { timeout: 120_000 });
console.log(`     adapter after ${((Date.now() - loadStarted) / 1000).toFixed(1)} s: ${await page.textContent('#adapter-card dl')}`);
await page.$eval('#step', (b) => b.click());
await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'paused', null, { timeout: 600_000 });
console.log(`     first step done ${((Date.now() - loadStarted) / 1000).toFixed(1)} s after page load`);
check(await points('memory-chart') > 0, 'one step puts a point on the memory chart');
check(await trainToEnd('spiral-mlp 2-128-128-2, 6 steps, batch 512') === 'finished', 'a run trains to the end');
const tasks = await page.evaluate(() => window.longTasks);
console.log(`     long tasks while training: ${tasks.length}, longest ${Math.max(0, ...tasks).toFixed(0)} ms`);
check(await points('memory-chart') >= 12, 'memory chart filled (in use and reserved per step)');
check(await points('loss-chart') >= 6, 'loss chart filled');
const off = await trainingMiB();
const dots = await page.$$eval('#scatter circle', (c) => c.length);
const cells = await page.$$eval('#scatter rect', (r) => r.length);
check(dots > 100, `data preview shows the spiral (${dots} points)`);
check(cells > 1000, `decision boundary drawn behind it (${cells - 1} cells)`);
// Where the memory went: the stacked categories, the analytic stack beside them, and the memory
// of the last step as a line; hovering a point reads out its figures.
check(await points('category-chart') === 6 && await page.$$eval('#category-chart polygon.category-area', (a) => a.length) === 6,
  'stacked chart by category: six categories over 6 steps');
check(await page.$('#predicted-stack rect') !== null, 'the predicted stack stands beside the measured one');
const hillOff = await page.$eval('#one-step-chart svg', (svg) => Number(svg.dataset.peak));
check(await points('one-step-chart') > 10 && hillOff > 0,
  `the memory of one step drawn (${await points('one-step-chart')} readings, peak ${(hillOff / 1048576).toFixed(2)} MiB)`);
async function hover(id, fraction) {
  const svg = await page.$(`#${id} svg`);
  await svg.scrollIntoViewIfNeeded();
  const box = await svg.boundingBox();
  await page.mouse.move(box.x + box.width * fraction, box.y + box.height / 2);
  await page.waitForFunction((rid) => document.querySelector(`#${rid}-readout`)?.textContent.length > 0, id, { timeout: 10_000 });
  return page.textContent(`#${id}-readout`);
}
const memoryReadout = await hover('memory-chart', 0.6);
check(/^step \d+: in use: the step's high-water [\d.]+ (KiB|MiB)/.test(memoryReadout), `hovering the memory chart reads out a step: "${memoryReadout}"`);
const categoryReadout = await hover('category-chart', 0.5);
check(/^step \d+: parameter [\d.]+ · optimizer state [\d.]+ · input [\d.]+ · activation [\d.]+ · gradient [\d.]+ · other [\d.]+ \(total [\d.]+ (KiB|MiB)\)$/.test(categoryReadout),
  `hovering the stacked chart reads out each category: "${categoryReadout}"`);
const stepReadout = await hover('one-step-chart', 0.3);
check(/^reading \d+ \((upload|forward|backward|optimizer|eval)\): [\d.]+ (KiB|MiB) in use$/.test(stepReadout), `hovering one step reads out a launch: "${stepReadout}"`);
// Throughput counts steps the device finished (their losses back), so no point may run ahead
// of the completed ms/step the summary reports (queued steps would, several times over).
const completedMs = Number((await page.textContent('#completed-ms')).match(/[\d.]+/)[0]);
const rates = [];
for (const fraction of [0.1, 0.3, 0.5, 0.7, 0.95]) {
  const readout = await hover('throughput-chart', fraction);
  rates.push(Number(readout.match(/steps\/s \(over \d+ steps\) ([\d.]+)/)?.[1]));
}
check(rates.every((r) => r > 0 && r <= 2 * 1000 / completedMs),
  `throughput read at five points (${rates.map((r) => r.toFixed(2)).join(', ')} steps/s) stays within 2x of the completed ${completedMs} ms/step`);
await page.screenshot({ path: path.join(shots, '1-trained.png'), fullPage: true });
check(await page.$eval('#tour', (t) => t.dataset.stop) === 'accumulate', 'after a finished run the tour asks for gradient accumulation');
await page.mouse.move(0, 0);
await page.$eval('#pin', (b) => b.click());

// 2. Switch a strategy: gradient accumulation over 4 micro-batches lowers the peak.
await page.fill('input[name="strategies.grad_accumulation"]', '4');
await page.dispatchEvent('input[name="strategies.grad_accumulation"]', 'change');
check(page.url().includes('strategies.grad_accumulation=4'), 'the URL carries the strategy');
// Plan takes the reader to the "Will it fit?" panel (tests/e2e/plans.mjs plans there).
await page.$eval('#plan', (b) => b.click());
check(await page.$('#will-it-fit [data-testid="plan-start"]') !== null, 'Plan leads to the Will it fit? panel');
await trainToEnd('with grad_accumulation=4');
check(await page.$eval('#tour', (t) => t.dataset.stop) === 'compare', 'the tour ends at comparing with the pinned run');
const on = await trainingMiB();
console.log(`     high-water in use of the training steps: ${off} MiB -> ${on} MiB with grad_accumulation=4`);
check(on < 0.7 * off, 'the measured peak falls with gradient accumulation');
const ab = await page.$$eval('#comparison tr', (rows) => rows.map((r) => r.textContent));
console.log(`     A/B table: ${JSON.stringify(ab.slice(1, 3))}`);
check(ab.some((r) => r.startsWith('high-water in use: training') && /0\.\d+x$/.test(r)), 'A/B table shows the pinned run and the ratio');
const timing = await page.$$eval('#comparison tr', (rows) => rows.map((r) => r.textContent).find((t) => t.startsWith('ms/step completed')));
console.log(`     A/B timing row: ${timing}`);
check(timing !== undefined, 'the A/B table times completed steps, labelled as such');
const movedMost = await page.$eval('#comparison tr.moved-most', (r) => r.dataset.category).catch(() => null);
check(movedMost === 'activation', `A/B by category: accumulation moved activation most (${movedMost})`);
await page.screenshot({ path: path.join(shots, '2-grad-accumulation.png'), fullPage: true });


// Export the run as JSON, reset, import it back: the same figures return.
const [download] = await Promise.all([page.waitForEvent('download'), page.$eval('#export-json', (b) => b.click())]);
const exported = path.join(shots, 'run.json');
await download.saveAs(exported);
await page.$eval('#reset', (b) => b.click());
await page.setInputFiles('#import-json', exported);
await page.waitForSelector('#peak-in-use', { timeout: 30_000 });
check(await trainingMiB() === on && await points('memory-chart') > 0, `exported run imported back (training high-water ${await trainingMiB()} MiB)`);
await page.setInputFiles('#import-json', { name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from('{"steps": 3}') });
await page.waitForSelector('#run-error', { timeout: 30_000 });
check((await page.textContent('#run-error')).includes('not a vramlab run export'), 'a bad import says so');

// Checkpointing lowers the hill of one step (same run as the first, checkpointing on).
await page.fill('input[name="strategies.grad_accumulation"]', '1');
await page.dispatchEvent('input[name="strategies.grad_accumulation"]', 'change');
await page.selectOption('select[name="strategies.checkpointing"]', 'balanced');
await trainToEnd('with checkpointing=balanced');
const hillOn = await page.$eval('#one-step-chart svg', (svg) => Number(svg.dataset.peak));
console.log(`     one step's peak: ${(hillOff / 1048576).toFixed(3)} MiB -> ${(hillOn / 1048576).toFixed(3)} MiB with checkpointing`);
check(hillOn > 0 && hillOn < hillOff, 'checkpointing lowers the hill of one step');
await page.screenshot({ path: path.join(shots, '2b-checkpointing.png'), fullPage: true });
await page.selectOption('select[name="strategies.checkpointing"]', 'none');
await page.fill('input[name="strategies.grad_accumulation"]', '4');
await page.dispatchEvent('input[name="strategies.grad_accumulation"]', 'change');

// 3. The shared URL reproduces the configuration.
const shared = page.url();
const again = await context.newPage();
await again.goto(shared);
await again.waitForSelector('input[name="batch_size"]');
check(await again.inputValue('input[name="batch_size"]') === '512', 'reloaded URL: batch size');
check(await again.inputValue('input[name="model.hidden"]') === '128,128', 'reloaded URL: model');
check(await again.inputValue('input[name="strategies.grad_accumulation"]') === '4', 'reloaded URL: strategy');
await again.close();

// 3b. Reset while a step is in flight: the old run must not come back when its step returns,
// and Start then trains a fresh run from step 1.
await page.goto(`${base}#preset=spiral-mlp&steps=8&eval_every=0&batch_size=512&model.hidden=[128,128]`);
await page.reload();
await page.waitForSelector('#shader-f16', { timeout: 120_000 });
await page.$eval('#start', (b) => b.click());
await page.waitForFunction(() => Number(document.querySelector('#memory-chart svg')?.dataset.points) > 0,
  null, { timeout: 600_000 });
await page.$eval('#reset', (b) => b.click());
// Longer than a step here, so a step that was awaiting the GPU has returned.
await page.waitForTimeout(3000);
const afterReset = { points: await points('memory-chart'), status: await page.textContent('#status'),
  progress: await page.textContent('.progress') };
console.log(`     reset mid-run: ${JSON.stringify(afterReset)}`);
check(afterReset.points === 0 && afterReset.status === 'ready' && afterReset.progress.startsWith('step 0 /'),
  'reset while a step is in flight leaves an empty chart');
check(await trainToEnd('a fresh run after the reset') === 'finished', 'Start after the reset trains');
const steps = await page.$$eval('#memory-chart polyline', (ls) => ls[0].getAttribute('points').trim().split(/\s+/).length);
check(steps === 8, `the fresh run has its own 8 steps, not the old run's (${steps})`);

// 4. A bad field in the URL falls back to defaults with a note naming the field.
await page.goto(`${base}#preset=spiral-mlp&batch_size=0`);
await page.reload();
await page.waitForSelector('#url-note', { timeout: 60_000 });
const note = await page.textContent('#url-note');
check(note.includes('batch_size') && note.includes('1..='), `bad URL note names the field: "${note}"`);

// 5. f16 on an adapter without shader-f16 runs in f32 and says why.
await page.goto(`${base}#preset=spiral-mlp&steps=2&batch_size=256&strategies.mixed_precision=f16`);
await page.reload();
await page.waitForSelector('#shader-f16', { timeout: 120_000 });
const f16 = await page.textContent('#shader-f16');
await trainToEnd('mixed_precision=f16');
const notes = await page.$$eval('.fallback', (ps) => ps.map((p) => p.textContent));
if (f16 === 'no') {
  check(notes.some((n) => n.includes('no shader-f16')), `f16 fallback reported: ${JSON.stringify(notes)}`);
} else {
  check(notes.length === 0, 'adapter has shader-f16: no fallback');
}
await page.screenshot({ path: path.join(shots, '3-f16-fallback.png'), fullPage: true });

// 5b. Under a tiny budget (the parameters fit, a step does not) the run stops with an
// out-of-memory message naming where and what would fit, and the failed step stays on the
// charts; emptying the budget, the next run on the same page trains to the end.
await page.fill('input[name="budget"]', '512KiB');
await page.dispatchEvent('input[name="budget"]', 'change');
check(page.url().includes('budget=512KiB'), 'the URL carries the budget');
await page.$eval('#start', (b) => b.click());
await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'stopped', null, { timeout: 600_000 });
const oom = await page.textContent('#run-error');
check(oom.includes('out of memory') && oom.includes('budget 0.500 MiB') && oom.includes('what would fit'),
  `out of memory under 512 KiB says where and what would fit: "${oom.split('\n')[0]}"`);
const failedStep = await page.$eval('#one-step-chart svg', (svg) => ({ failed: svg.dataset.failed, points: Number(svg.dataset.points) }));
check(failedStep.failed === 'true' && failedStep.points > 0 && await page.$('#one-step-chart .oom-marker') !== null
  && await page.$('#memory-chart .oom-marker') !== null,
  `after an out-of-memory the failed step stays on the charts, marked (${failedStep.points} readings)`);
await page.screenshot({ path: path.join(shots, '4-out-of-memory.png'), fullPage: true });
await page.fill('input[name="budget"]', '');
await page.dispatchEvent('input[name="budget"]', 'change');
check(await trainToEnd('after the out-of-memory, no budget') === 'finished', 'after an out-of-memory the page trains again');

// The sort presets' runs below end with an evaluation of their test split (1,024 sequences),
// about 30 s on SwiftShader for each run: none of their checks reads it, so they hold out 102
// (SMALL_TEST_SPLIT), and the evaluation still runs, shorter.

// 5a. The sort transformer trains with vramlab's fused attention and loss on WebGPU: the run
// finishes, its exported losses fall, and the page reports no error.
await page.goto(`${base}#preset=sort-transformer&steps=10&eval_every=0&batch_size=32&${SMALL_TEST_SPLIT}&strategies.attention=fused&strategies.cross_entropy=fused`);
await page.reload();
await page.waitForSelector('#shader-f16', { timeout: 120_000 });
check(await trainToEnd('sort-transformer, fused attention and loss, 10 steps at batch 32') === 'finished',
  'the transformer trains with fused attention and loss on WebGPU');
const [fusedDownload] = await Promise.all([page.waitForEvent('download'), page.$eval('#export-json', (b) => b.click())]);
const fusedFile = path.join(shots, 'fused-run.json');
await fusedDownload.saveAs(fusedFile);
const fusedLosses = JSON.parse(fs.readFileSync(fusedFile, 'utf8')).steps.map((s) => s.loss).filter((l) => l !== null);
const fusedMean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const [fusedFirst, fusedLast] = [fusedMean(fusedLosses.slice(0, 3)), fusedMean(fusedLosses.slice(-3))];
check(fusedLosses.length === 10 && fusedLast < fusedFirst,
  `its loss falls (${fusedFirst.toFixed(3)} -> ${fusedLast.toFixed(3)} over ${fusedLosses.length} steps)`);

// 5b. Fine-tuning on WebGPU: the Llama-style preset trained whole, pinned, then with LoRA
// adapters (rank 4): the runs finish, and the A/B table's categories show gradients and
// optimizer state shrinking to the adapters' share while the parameters stay.
await page.goto(`${base}#preset=sort-llama&steps=4&eval_every=0&batch_size=16&${SMALL_TEST_SPLIT}`);
await page.reload();
await page.waitForSelector('#shader-f16', { timeout: 120_000 });
check(await trainToEnd('sort-llama, every weight trains, 4 steps at batch 16') === 'finished',
  'the Llama-style decoder trains on WebGPU');
await page.mouse.move(0, 0);
await page.$eval('#pin', (b) => b.click());
await page.selectOption('select[name="strategies.trainable"]', 'lora');
await page.fill('input[name="strategies.lora_rank"]', '4');
await page.dispatchEvent('input[name="strategies.lora_rank"]', 'change');
check(page.url().includes('strategies.trainable=lora'), 'the URL carries trainable=lora');
check(await trainToEnd('sort-llama with LoRA rank 4') === 'finished', 'the Llama-style decoder trains LoRA adapters on WebGPU');
const categoryMiB = async (name) => page.$eval(`#comparison tr[data-category="${name}"]`,
  (r) => [...r.querySelectorAll('td')].slice(1, 3).map((td) => parseFloat(td.textContent)));
const [gradA, gradB] = await categoryMiB('gradient');
const [stateA, stateB] = await categoryMiB('optimizer_state');
const [paramA, paramB] = await categoryMiB('parameter');
console.log(`     sort-llama all -> lora r4, at the training high-water: gradient ${gradA} -> ${gradB} MiB, `
  + `optimizer state ${stateA} -> ${stateB} MiB, parameters ${paramA} -> ${paramB} MiB`);
check(gradB < 0.3 * gradA && stateB < 0.3 * stateA && paramB >= paramA,
  'LoRA: gradients and optimizer state shrink on the page, the frozen parameters stay');
await page.screenshot({ path: path.join(shots, '5b-lora.png'), fullPage: true });

// 5b2. A mixture of experts on WebGPU: the tiny Mixtral trains a few steps, each block's
// routing read back (awaited) from the GPU; the summary says what its router did and the
// exported run carries the measured tokens per expert.
await page.goto(`${base}#preset=sort-mixtral&steps=3&eval_every=0&batch_size=16&${SMALL_TEST_SPLIT}`);
await page.reload();
await page.waitForSelector('#shader-f16', { timeout: 120_000 });
check(await trainToEnd('sort-mixtral, 3 steps at batch 16') === 'finished', 'the mixture of experts trains on WebGPU');
const routingLine = await page.textContent('#expert-load');
const [moeDownload] = await Promise.all([page.waitForEvent('download'), page.$eval('#export-json', (b) => b.click())]);
const moeFile = path.join(shots, 'moe-run.json');
await moeDownload.saveAs(moeFile);
const moeLoad = JSON.parse(fs.readFileSync(moeFile, 'utf8')).expert_load;
console.log(`     ${routingLine}`);
check(routingLine.startsWith('routing measured') && moeLoad?.source === 'measured'
  && moeLoad.passes >= 3 * 2 && moeLoad.tokens_per_expert.length === 4,
  `the page reports the router's measured load (${JSON.stringify(moeLoad?.tokens_per_expert)} over ${moeLoad?.passes} passes)`);
await page.screenshot({ path: path.join(shots, '5b2-moe.png'), fullPage: true });

// 5c. The max-batch finder: under a budget, its trials appear as they run, some out of memory,
// and its answer goes into the batch size field.
await page.goto(`${base}#preset=circle-tiny&budget=160KiB`);
await page.reload();
await page.waitForSelector('#shader-f16', { timeout: 120_000 });
const findStarted = Date.now();
await page.$eval('#find-batch', (b) => b.click());
await page.waitForSelector('#finder-result, #finder-error', { timeout: 900_000 });
const trialRows = await page.$$eval('#finder-trials tr', (rs) => rs.map((r) => r.className));
const found = await page.textContent('#finder #finder-result, #finder #finder-error');
console.log(`     finder: ${found.trim()} after ${((Date.now() - findStarted) / 1000).toFixed(1)} s`);
check(trialRows.length >= 2 && trialRows.includes('fits') && trialRows.includes('oom'),
  `finder trials listed, fits and out of memory (${trialRows.join(' ')})`);
const best = Number((found.match(/largest batch: (\d+)/) || [])[1]);
check(best > 0, `finder found a batch: "${found.trim()}"`);
await page.$eval('#use-batch', (b) => b.click());
check(Number(await page.inputValue('input[name="batch_size"]')) === best, 'the found batch goes into the batch size field');
await page.screenshot({ path: path.join(shots, '5-finder.png'), fullPage: true });

// 6. A bad edit is refused with the field and range, and the page keeps working.
await page.fill('input[name="batch_size"]', '0');
await page.dispatchEvent('input[name="batch_size"]', 'change');
const refused = await page.textContent('#refused');
check(refused.includes('batch_size') && refused.includes('1..='), `bad edit refused: "${refused}"`);

// 8. The lessons: "Run all lessons" runs every card in turn; each ends with a verdict or "not run
// here" and a reason. The exported table (SHOTS/lessons.json) is held to the native claims by
// `vramlab claims --compare-page` after this script (.ci/test).
await page.$eval('#reset', (b) => b.click());
await page.$eval('.strategy[data-field="strategies.grad_accumulation"] .lesson-link', (b) => b.click());
const linkedCard = await page.$eval('#lessons .lesson[data-field="strategies.grad_accumulation"]', (c) => {
  const b = c.getBoundingClientRect();
  return { open: c.open, seen: b.top >= -1 && b.top < window.innerHeight };
});
check(linkedCard.open && linkedCard.seen, `a strategy's lesson link opens its card in view (${JSON.stringify(linkedCard)})`);
await page.$eval('#lessons .lesson[data-field="strategies.grad_accumulation"]', (c) => { c.open = false; });
// The CI tier's cards, each run on its own button: a saving of activations (a batch), of
// optimizer state (another optimizer), and of weights judged with a second figure (int8's
// evaluation accuracy). Every card runs with --full.
const SOME_LESSONS = [
  ['batch_size', 'halve the batch, halve the activation memory'],
  ['optimizer', 'Adam keeps two numbers per weight: Lion keeps one'],
  ['strategies.weight_dtype', 'int8 weights: a quarter of the bytes, same accuracy'],
];
const lessonsStarted = Date.now();
if (full) {
  await page.$eval('#run-all-lessons', (b) => b.click());
  await page.waitForFunction(() => /all in/.test(document.querySelector('#lessons-status')?.textContent ?? ''),
    null, { timeout: 1_200_000 });
} else {
  for (const [field, claim] of SOME_LESSONS) {
    const card = `#lessons .lesson[data-field="${field}"][data-claim="${claim}"]`;
    check(await page.$(card) !== null, `the lessons have the card "${claim}"`);
    await page.waitForSelector('#run-all-lessons:not([disabled])', { timeout: 60_000 });
    await page.$eval(`${card} .run-lesson`, (b) => b.click());
    await page.waitForFunction((c) => document.querySelector(c)?.dataset.verdict, card, { timeout: 600_000 });
  }
  await page.waitForSelector('#run-all-lessons:not([disabled])', { timeout: 60_000 });
}
const lessonsSeconds = (Date.now() - lessonsStarted) / 1000;
// The cards that ran (all of them after "Run all", the chosen few otherwise).
const lessonRows = await page.$$eval('#lessons .lesson[data-verdict]', (cards) => cards.map((card) => ({
  field: card.dataset.field, claim: card.dataset.claim, verdict: card.dataset.verdict })));
const cardReasons = await page.$$eval('#lessons .lesson[data-verdict] .verdict', (ps) => ps.map((p) => p.textContent.trim()));
console.log(`     ${full ? 'run all lessons' : 'lessons run on their own'}: ${lessonRows.length} cards in ${lessonsSeconds.toFixed(1)} s (${await page.textContent('#lessons-status')})`);
for (const [i, row] of lessonRows.entries()) console.log(`       ${row.field}: ${row.claim}: ${cardReasons[i]}`);
check(lessonRows.length >= (full ? 14 : SOME_LESSONS.length) && lessonRows.every((r) => ['h', 'p', 'd', 'n'].includes(r.verdict))
  && cardReasons.length === lessonRows.length && cardReasons.every((r) => r.includes(': ')),
  `every lesson card run ends with a verdict or "not run here", with its reason (${lessonRows.map((r) => r.verdict).join('')})`);
const charted = await page.$$eval('#lessons .lesson', (cards) => cards.filter((c) => c.querySelector('svg[data-points]')).length);
const ran = lessonRows.filter((r) => r.verdict !== 'n').length;
check(charted === ran, `each lesson that ran draws its two runs (${charted} charts, ${ran} run)`);
if (full) {
  // Fewer cards must not run than the adapter allows: the page counts, with the engine's rules,
  // the cards "Run all" can run on its adapter; the others are "not run here", and
  // `vramlab claims --compare-page` (.ci/test) holds each one's reason to the engine's and each
  // verdict to the native one's.
  const canRun = Number(await page.$eval('#lessons', (l) => l.dataset.canRun));
  check(canRun > 0 && ran === canRun, `as many lessons ran as this adapter allows in Run all (${ran} ran, ${canRun} allowed)`);
} else {
  check(ran === SOME_LESSONS.length, `each chosen card ran on this adapter (${ran} of ${SOME_LESSONS.length})`);
}
const [lessonsDownload] = await Promise.all([page.waitForEvent('download'), page.$eval('#lessons-json', (b) => b.click())]);
const lessonsFile = path.join(shots, 'lessons.json');
await lessonsDownload.saveAs(lessonsFile);
const exportedLessons = JSON.parse(fs.readFileSync(lessonsFile, 'utf8'));
// "Run all" times the whole table; cards run on their own are timed each on its row.
check(exportedLessons.rows.length === lessonRows.length && (full ? exportedLessons.seconds > 0 : exportedLessons.rows.every((r) => r.seconds > 0)),
  `lessons exported as JSON (${exportedLessons.rows.length} rows, ${exportedLessons.seconds.toFixed(1)} s)`);
await page.screenshot({ path: path.join(shots, '7-lessons.png'), fullPage: true });
// The lessons as a visitor opens them: the grid, a few cards open with their runs drawn.
await page.$$eval('#lessons .lesson', (cards) => cards.filter((c) => c.dataset.verdict && c.dataset.verdict !== 'n').slice(0, 2).forEach((c) => { c.open = true; }));
await page.$eval('#lessons', (l) => l.scrollIntoView());
await page.screenshot({ path: path.join(shots, '7-lessons-open.png') });
const shareHref = await page.$eval('#lessons-share', (a) => a.getAttribute('href'));
const sharedPage = await context.newPage();
await sharedPage.goto(`${base}${shareHref}`);
await sharedPage.waitForSelector('#lessons-shared', { timeout: 60_000 });
const sharedVerdicts = await sharedPage.$$eval('#lessons .lesson .badge', (bs) => bs.map((b) => b.textContent));
check(sharedVerdicts.filter((v) => v.includes('from the link')).length === lessonRows.length,
  `the lessons' link shows the same table elsewhere (${shareHref})`);
// A lessons table is read when the page starts: a new lessons hash alone is not a new visit.
await sharedPage.goto(`${base}#lessons=hhx`);
await sharedPage.reload();
await sharedPage.waitForSelector('#url-note', { timeout: 60_000 });
check((await sharedPage.textContent('#url-note')).includes('lessons must be'), 'a bad lessons link is refused with the rule');
await sharedPage.close();
await page.$eval('#lessons .lesson[data-field="strategies.grad_accumulation"] .open-lesson', (b) => b.click());
check(await page.inputValue('input[name="strategies.grad_accumulation"]') === '4',
  'a lesson card opens its run with the tip in the playground');

check(errors.length === 0, `no page errors${errors.length ? ': ' + errors.join(' | ') : ''}`);

// 7. A browser without WebGPU (Chromium on Linux without --enable-unsafe-webgpu, and with the
// API switched off) gets a message, not a blank page.
const plain = await launch(['--disable-features=WebGPU,Vulkan', '--disable-gpu'], { webgpu: false });
const noGpu = await plain.newPage();
await noGpu.goto(base);
await noGpu.waitForSelector('#no-webgpu', { timeout: 60_000 });
const message = await noGpu.textContent('#no-webgpu');
console.log(`     without WebGPU: "${message.slice(0, 90)}..."`);
check(message.includes('WebGPU') && message.includes('enable'), 'no WebGPU: the page says what is missing and how to enable it');
check(await noGpu.$('#start') !== null, 'no WebGPU: the rest of the page still renders');
await noGpu.screenshot({ path: path.join(shots, '6-no-webgpu.png'), fullPage: true });
await plain.close();
console.log(`screenshots: ${path.resolve(shots)}`);
await browser.close();
server.close();
process.exit(failures ? 1 : 0);
