// Kernels each playground preset compiles on the page in its first six steps (its evaluation at
// the sixth included), as tests/bench/kernels.sh counts them natively: every WGSL shader module
// the page asks WebGPU for (GPUDevice.createShaderModule, wrapped before the page loads: cubecl's
// own compilation logger reads its settings from the environment, which a tab has not), how
// many are distinct, and how many differ from another only in a number (a size or a constant
// baked into the source). Also the seconds from Start to the sixth step's end. Each preset in a
// fresh browser context, so nothing compiled earlier is reused. Not part of CI: SwiftShader
// takes minutes for the sequence presets.
//   node tests/e2e/kernels.mjs DIST [PRESET]...
import path from 'node:path';

import { launch, runToEnd, serve } from './browser.mjs';

const ALL = ['spiral-mlp', 'circle-tiny', 'digits-cnn', 'digits-mlp', 'sort-gru', 'sort-lstm',
  'sort-transformer', 'sort-gpt', 'sort-llama', 'sort-qwen3', 'sort-gemma2', 'sort-gemma3',
  'sort-phi3', 'sort-mixtral', 'sort-qwen3-moe'];
const STEPS = 6;

const [dist, ...named] = process.argv.slice(2);
if (!dist) {
  console.error('usage: node tests/e2e/kernels.mjs DIST [PRESET]...');
  process.exit(2);
}
const presets = named.length ? named : ALL;
const server = await serve({ '/': path.resolve(dist) });
const browser = await launch();
let failures = 0;
console.log(`${'preset'.padEnd(18)} ${'compiled'.padStart(8)} ${'distinct'.padStart(9)} ${'size twins'.padStart(11)} ${'seconds'.padStart(8)}`);
for (const preset of presets) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1100 } });
  await context.addInitScript(() => {
    window.vramlabShaders = [];
    const create = GPUDevice.prototype.createShaderModule;
    GPUDevice.prototype.createShaderModule = function (descriptor) {
      window.vramlabShaders.push(descriptor.code);
      return create.call(this, descriptor);
    };
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.base}#preset=${preset}&steps=${STEPS}`);
  await page.waitForSelector('#shader-f16', { timeout: 120_000 });
  const before = await page.evaluate(() => window.vramlabShaders.length);
  const started = Date.now();
  const status = await runToEnd(page);
  const seconds = (Date.now() - started) / 1000;
  const sources = (await page.evaluate(() => window.vramlabShaders)).slice(before);
  const distinct = new Set(sources);
  // With every number blanked, equal sources are kernels that differ only in a number.
  const shapes = new Set([...distinct].map((code) => code.replace(/[0-9]+/g, 'N')));
  console.log(`${preset.padEnd(18)} ${String(sources.length).padStart(8)} ${String(distinct.size).padStart(9)}`
    + ` ${String(distinct.size - shapes.size).padStart(11)} ${seconds.toFixed(1).padStart(8)}`
    + (status === 'finished' && !errors.length ? '' : `  (${status}${errors.length ? `; ${errors.join(' | ')}` : ''})`));
  if (status !== 'finished' || errors.length || !sources.length) failures += 1;
  await context.close();
}
await browser.close();
server.close();
process.exit(failures ? 1 : 0);
