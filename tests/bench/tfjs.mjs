// Benchmark (not a test): the same MLP (2-64-64-2 on the spiral, Adam, batch 64 and 1024)
// trained by vramlab's page and by TensorFlow.js 4.22 (webgpu, webgl, cpu backends) in one
// headless Chromium, one after the other; prints ms/step and the ratios.
//
//   node tests/bench/tfjs.mjs DIST [STEPS]
//
// DIST is the built page (.ci/build-page). vramlab runs twice, with burn's kernels and with its
// own fused ones (strategies.kernels). Its ms/step is wall-clock on the page: the time between
// the progress counter showing step WARMUP and step WARMUP+STEPS (losses are read back every 10
// steps, so all GPU work of those steps is done). TF.js is stepped the same way, after the same
// warm-up (www/bench/tfjs.html).
import path from 'node:path';

import { launch, npmRoot, serve } from '../e2e/browser.mjs';

const [distArg, stepsArg] = process.argv.slice(2);
if (!distArg) {
  console.error('usage: node tests/bench/tfjs.mjs DIST [STEPS]');
  process.exit(2);
}
const steps = Number(stepsArg ?? 50);
// Steps before timing starts, for every implementation: shaders compiled, fusion settled.
const warmup = 20;
const server = await serve({
  '/npm/': path.join(npmRoot, 'node_modules'),
  '/bench/': path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../www/bench'),
  '/': path.resolve(distArg),
});
const base = server.base;
// SwiftShader's WebGL (for the TF.js webgl backend) needs its own permission.
const browser = await launch(['--enable-unsafe-swiftshader']);
const page = await browser.newPage();
const results = [];

async function vramlab(batch, kernels) {
  const total = warmup + steps;
  await page.goto(`${base}#preset=spiral-mlp&model.hidden=[64,64]&batch_size=${batch}&steps=${total}` +
    `&eval_every=0&memory_sampling=step&data.test_fraction=0.05&strategies.kernels=${kernels}`);
  await page.reload();
  await page.waitForSelector('#shader-f16', { timeout: 120_000 });
  await page.$eval('#start', (b) => b.click());
  // The page may run several short steps between two renders: wait for "at least k".
  const at = async (k) => {
    await page.waitForFunction((k) => Number(document.querySelector('.progress')?.textContent.split(' ')[1]) >= k,
      k, { timeout: 600_000, polling: 10 });
    return [Date.now(), await page.$eval('.progress', (e) => Number(e.textContent.split(' ')[1]))];
  };
  const [tStart, sStart] = await at(warmup);
  const [tEnd, sEnd] = await at(total);
  await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'finished', null, { timeout: 600_000 });
  return { impl: `vramlab-${kernels}`, backend: 'webgpu', batch, ms: (tEnd - tStart) / (sEnd - sStart) };
}

for (const kernels of ['burn', 'fused']) {
  for (const batch of [64, 1024]) {
    results.push(await vramlab(batch, kernels));
    console.log(`vramlab (${kernels} kernels) webgpu batch ${batch}: ${results.at(-1).ms.toFixed(1)} ms/step`);
  }
}
await page.goto(`${base}bench/tfjs.html`);
for (const backend of ['webgpu', 'webgl', 'cpu']) {
  for (const batch of [64, 1024]) {
    try {
      const r = await page.evaluate(([b, n, s, w]) => window.benchTfjs(b, n, s, w), [backend, batch, steps, warmup]);
      results.push({ impl: 'tfjs', ...r });
      console.log(`tfjs ${r.backend} batch ${batch}: ${r.ms.toFixed(1)} ms/step (loss ${r.loss.toFixed(3)})`);
    } catch (err) {
      console.log(`tfjs ${backend} batch ${batch}: not available (${String(err).split('\n')[0]})`);
    }
  }
}
await browser.close();
server.close();

console.log(`\nms/step over ${steps} steps after ${warmup} warm-up steps (same Chromium, SwiftShader WebGPU/WebGL):`);
console.log('batch  vramlab-burn  vramlab-fused  tfjs-webgpu  tfjs-webgl  tfjs-cpu   fused speed-up vs tfjs-webgpu / vs best tfjs');
for (const batch of [64, 1024]) {
  const ms = (impl, backend) => results.find((r) => r.impl === impl && r.backend === backend && r.batch === batch)?.ms;
  const burn = ms('vramlab-burn', 'webgpu');
  const v = ms('vramlab-fused', 'webgpu');
  const t = ['webgpu', 'webgl', 'cpu'].map((b) => ms('tfjs', b));
  const best = Math.min(...t.filter((x) => x !== undefined));
  const fmt = (x, w = 11) => (x === undefined ? '-' : x.toFixed(1)).padStart(w);
  const tw = t[0] === undefined ? '-' : (t[0] / v).toFixed(2) + 'x';
  console.log(`${String(batch).padStart(5)} ${fmt(burn, 13)} ${fmt(v, 14)} ${fmt(t[0], 12)} ${fmt(t[1])} ${fmt(t[2], 9)}   ${tw} / ${(best / v).toFixed(2)}x`);
}
