// The page left training: spiral-mlp for 2,000 steps on WebGPU (SwiftShader) in headless
// Chromium, reading every 100 steps the tab's JS heap (CDP Performance.getMetrics, after a
// garbage collection), its DOM node count and the wasm instance's linear memory; at the end the
// run's own allocator readings (bytes in use at each step's end) come from its exported JSON.
// Verdict: JS heap and DOM nodes at the last reading within 10% of step 200, and in use within
// 4 KiB from step 500 on (as `vramlab soak` asks natively; over the records the export keeps,
// the first 1,000 steps' and the last); and the wasm memory's growth per
// step from step 1,000 to the end, under 512 B. Not part of CI: minutes long.
//   node tests/e2e/soak.mjs DIST_DIR [STEPS] [PRESET]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { launch, serve } from './browser.mjs';

const [distArg, stepsArg, presetArg] = process.argv.slice(2);
if (!distArg) {
  console.error('usage: node soak.mjs DIST_DIR [STEPS] [PRESET]');
  process.exit(2);
}
const steps = Number(stepsArg ?? 2000);
const EVERY = 100;
const SETTLED = 500;
const IN_USE_SLACK = 4096;
// The page's wasm memory may grow by less than half a KiB a step past step 1,000 (issue 40).
const WASM_PER_STEP = 512;

const server = await serve({ '/': path.resolve(distArg) });
const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 1100 } });
// The wasm instance's memory, for its size: the page keeps it to itself.
await context.addInitScript(() => {
  const keep = (result) => {
    const exports = (result.instance ?? result).exports;
    if (exports?.memory) window.wasmMemory = exports.memory;
    return result;
  };
  const instantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = (...args) => instantiate(...args).then(keep);
  const streaming = WebAssembly.instantiateStreaming;
  WebAssembly.instantiateStreaming = (...args) => streaming(...args).then(keep);
});
const page = await context.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
const cdp = await context.newCDPSession(page);
await cdp.send('Performance.enable');

async function reading() {
  await cdp.send('HeapProfiler.collectGarbage');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const metric = (name) => metrics.find((m) => m.name === name)?.value;
  const progress = await page.textContent('.progress');
  return {
    step: Number(progress.match(/step (\d+)/)[1]),
    heap: metric('JSHeapUsedSize'),
    nodes: metric('Nodes'),
    wasm: await page.evaluate(() => window.wasmMemory?.buffer.byteLength ?? 0),
  };
}

await page.goto(`${server.base}#preset=${presetArg ?? 'spiral-mlp'}&steps=${steps}`);
await page.waitForSelector('#shader-f16', { timeout: 120_000 });
const started = Date.now();
await page.$eval('#start', (b) => b.click());
const readings = [];
for (let mark = EVERY; mark <= steps; mark += EVERY) {
  await page.waitForFunction((m) => Number(document.querySelector('.progress')?.textContent.match(/step (\d+)/)?.[1]) >= m
    || ['finished', 'stopped'].includes(document.querySelector('#status')?.textContent), mark, { timeout: 600_000, polling: 100 });
  const r = await reading();
  readings.push(r);
  console.log(`step ${String(r.step).padStart(5)}: JS heap ${(r.heap / 1048576).toFixed(2)} MiB, ${r.nodes} DOM nodes, wasm memory ${(r.wasm / 1048576).toFixed(1)} MiB (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}
await page.waitForFunction(() => ['finished', 'stopped'].includes(document.querySelector('#status')?.textContent), null, { timeout: 600_000 });
const status = await page.textContent('#status');
const seconds = (Date.now() - started) / 1000;

const [download] = await Promise.all([page.waitForEvent('download'), page.$eval('#export-json', (b) => b.click())]);
const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'vramlab-soak-')), 'run.json');
await download.saveAs(file);
const timeline = JSON.parse(fs.readFileSync(file, 'utf8'));
// A run past 1,000 steps exports the records it kept (the first 1,000 and the last): the page
// lets go of the rest once drawn, and the export names them in steps_left_out.
const records = timeline.steps.filter((s) => s.step >= SETTLED);
const inUse = records.map((s) => s.phases.optimizer?.in_use_bytes ?? null);
const reserved = records.map((s) => s.phases.optimizer?.reserved_bytes ?? null);
for (const s of records.filter((r) => r.step % EVERY === 0 || r === records[records.length - 1])) {
  console.log(`step ${String(s.step).padStart(5)}: in use ${s.phases.optimizer?.in_use_bytes} B, reserved ${s.phases.optimizer?.reserved_bytes} B (the run's allocator readings)`);
}
const leftOut = timeline.steps_left_out;
console.log(`records exported: ${timeline.steps.length} of ${timeline.summary.steps} steps${leftOut ? ` (left out: steps ${leftOut.first}..${leftOut.last})` : ''}`);

const spread = (xs) => Math.max(...xs) - Math.min(...xs);
const settled = inUse.filter((b) => b !== null);
const settledReserved = reserved.filter((b) => b !== null);
const at200 = readings.find((r) => r.step >= 200);
const last = readings[readings.length - 1];
const ratio = (a, b) => a / b;
const heapOk = Math.abs(ratio(last.heap, at200.heap) - 1) <= 0.1;
const nodesOk = Math.abs(ratio(last.nodes, at200.nodes) - 1) <= 0.1;
const inUseOk = settled.length > 0 && spread(settled) <= IN_USE_SLACK;
const stepsRun = timeline.summary.steps;
console.log(`\n${status} ${stepsRun} steps in ${seconds.toFixed(0)} s (${(1000 * seconds / stepsRun).toFixed(1)} ms/step with the readings)`);
console.log(`JS heap: ${(at200.heap / 1048576).toFixed(2)} MiB at step ${at200.step}, ${(last.heap / 1048576).toFixed(2)} MiB at step ${last.step} (x${ratio(last.heap, at200.heap).toFixed(3)}, within 10%: ${heapOk})`);
console.log(`DOM nodes: ${at200.nodes} at step ${at200.step}, ${last.nodes} at step ${last.step} (x${ratio(last.nodes, at200.nodes).toFixed(3)}, within 10%: ${nodesOk})`);
console.log(`wasm memory: ${(at200.wasm / 1048576).toFixed(1)} MiB at step ${at200.step}, ${(last.wasm / 1048576).toFixed(1)} MiB at step ${last.step}`);
const at1000 = readings.find((r) => r.step >= 1000);
let wasmOk = true;
if (at1000 && last.step > at1000.step) {
  const perStep = (last.wasm - at1000.wasm) / (last.step - at1000.step);
  wasmOk = perStep < WASM_PER_STEP;
  console.log(`wasm memory per step from step ${at1000.step} to ${last.step}: ${perStep.toFixed(0)} B (under ${WASM_PER_STEP}: ${wasmOk})`);
}
console.log(`in use at the step's end from step ${SETTLED}: ${Math.min(...settled)}..${Math.max(...settled)} B, varies by ${spread(settled)} B (at most ${IN_USE_SLACK}: ${inUseOk}); reserved varies by ${spread(settledReserved)} B`);
if (errors.length) console.log(`page errors: ${errors.join(' | ')}`);
const ok = status === 'finished' && heapOk && nodesOk && inUseOk && wasmOk && errors.length === 0;
console.log(ok ? 'flat' : 'NOT FLAT');
await browser.close();
server.close();
process.exit(ok ? 0 : 1);
