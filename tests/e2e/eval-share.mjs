// How much of a sort preset's "first six steps" on the page is its closing evaluation: each
// named preset trained for six steps (as tests/e2e/kernels.mjs times them) twice, each in a fresh
// context, on its own data (a test split of 1,024 sequences) and on 2,048 sequences with a
// twentieth held out (102): the training steps are the same shapes, so the difference is the
// evaluation of 922 more test sequences. Not part of CI (minutes on SwiftShader).
//   node tests/e2e/eval-share.mjs DIST [PRESET]...
import path from 'node:path';

import { launch, runToEnd, serve, SMALL_TEST_SPLIT } from './browser.mjs';

const [dist, ...named] = process.argv.slice(2);
if (!dist) {
  console.error('usage: node tests/e2e/eval-share.mjs DIST [PRESET]...');
  process.exit(2);
}
const presets = named.length ? named : ['sort-gru', 'sort-llama'];
const server = await serve({ '/': path.resolve(dist) });
const browser = await launch();
let failures = 0;

/** Seconds from Start to the end of a six-step run of `hash`, in a fresh context. */
async function sixSteps(hash) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1100 } });
  const page = await context.newPage();
  await page.goto(`${server.base}#${hash}&steps=6`);
  await page.waitForSelector('#shader-f16', { timeout: 120_000 });
  const started = Date.now();
  const status = await runToEnd(page);
  const seconds = (Date.now() - started) / 1000;
  if (status !== 'finished') failures += 1;
  await context.close();
  return seconds;
}

console.log(`${'preset'.padEnd(18)} ${'own test split'.padStart(15)} ${'102 held out'.padStart(13)} ${'difference'.padStart(11)}`);
for (const preset of presets) {
  const whole = await sixSteps(`preset=${preset}`);
  const small = await sixSteps(`preset=${preset}&${SMALL_TEST_SPLIT}`);
  console.log(`${preset.padEnd(18)} ${whole.toFixed(1).padStart(13)} s ${small.toFixed(1).padStart(11)} s ${(whole - small).toFixed(1).padStart(9)} s`);
}
await browser.close();
server.close();
process.exit(failures ? 1 : 0);
