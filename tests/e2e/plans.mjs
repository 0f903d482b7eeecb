// End-to-end test of "Will it fit?": five plans made in the page's wasm, in a worker of their
// own (cubecl's dry run on a planning device with no memory behind it), each exported as `vramlab plan --json` writes it and
// made again natively on the adapter the page modelled (`vramlab plan --compare-page`), which must
// give every phase's and category's figure to the byte. Two of the five models come in as
// config.json files dropped on the panel. Also: the page's wasm memory after the five plans (and
// each worker's), the longest gap between animation frames while each plan runs (the 7B plan's
// within 100 ms), a dropped config's plan reproduced by its link in a fresh tab, the largest
// batch and the longest sequence searched as `vramlab find-batch --plan` searches them, a
// broken config.json refused by field, and two recipes chosen on the panel (Axolotl's and
// torchtune's QLoRA, torchtune's planned in the CI tier, both with --full) planned as `vramlab
// plan --recipe` plans them, and a recipe that does not fit written back by Export recipe as
// `vramlab plan --recipe --write-recipe` writes it.
// Usage: node plans.mjs DIST_DIR OUT_DIR VRAMLAB_BINARY [--full] [--only NAME]
// Without --full (the CI tier) three of the nine plans: the 7B LoRA plan (its wait, its frames,
// Export image), a fully sharded 7B's share of 8 GPUs and a dropped config.json reproduced by its
// link; --full plans all nine. --only NAME plans the plans whose name contains NAME (with
// --full, any of the nine), to time one.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launch, serve } from './browser.mjs';

const full = process.argv.includes('--full');
const onlyAt = process.argv.indexOf('--only');
const only = onlyAt > 0 ? process.argv[onlyAt + 1] : null;
const [distArg, out, vramlab] = process.argv.slice(2)
  .filter((arg, i, all) => arg !== '--full' && arg !== '--only' && all[i - 1] !== '--only');
if (!distArg || !out || !vramlab || (onlyAt > 0 && !only)) {
  console.error('usage: node plans.mjs DIST_DIR OUT_DIR VRAMLAB_BINARY [--full] [--only NAME]');
  process.exit(2);
}
const hf = path.join(path.dirname(fileURLToPath(import.meta.url)), '../data/hf');
const recipes = path.join(path.dirname(fileURLToPath(import.meta.url)), '../data/recipes');
fs.mkdirSync(out, { recursive: true });
const server = await serve({ '/': path.resolve(distArg) });
const browser = await launch();

let failures = 0;
/** The text of `selector`, or null when nothing matches now (no waiting). */
const textOf = async (page, selector) => {
  const element = await page.$(selector);
  return element === null ? null : element.textContent();
};
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures += 1;
};

const lora7b = ['strategies.trainable=lora', 'strategies.lora_rank=16', 'strategies.lora_alpha=32',
  'strategies.weight_dtype=f16', 'strategies.attention=fused', 'strategies.checkpointing=layers'];
// What each plan is: a preset and its fields in the link, then a config.json dropped on the panel.
// `ci`: planned in the CI tier too.
const plans = [
  { name: 'gpt2-small', hash: 'preset=gpt2-small', gpu: 'RTX 4090 (24 GiB)' },
  { name: 'tinyllama-lora', hash: 'preset=tinyllama-1.1b&strategies.trainable=lora&strategies.attention=fused', gpu: 'RTX 4060 (8 GiB)' },
  { name: 'llama2-7b-lora-r16-f16-layers', hash: `preset=llama2-7b&${lora7b.join('&')}`, gpu: 'RTX 4080 (16 GiB)', frames: true, ci: true },
  { name: 'qwen3-0.6b-dropped', hash: 'preset=llama2-7b&strategies.trainable=lora', drop: 'qwen3-0.6b.json', gpu: 'RTX 5090 (32 GiB)', shared: true, ci: true },
  // Issue 55's row: Llama-2-7B fully fine-tuned, each of 8 GPUs planned for its share.
  { name: 'llama2-7b-full-shard-8-gpus', hash: 'preset=llama2-7b&strategies.sharding=full&strategies.checkpointing=layers&strategies.attention=fused&optimizer=adamw&batch_size=1&data.seq_len=2048&gpus=8', gpu: 'RTX 4090 (24 GiB)', gpus: 8, taken: ['strategies.sharding=full', 'gpus=8'], ci: true },
  // The same run with its parameters on the host (FSDP2's CPUOffloadPolicy): the host's
  // stand-in device starts in the page too.
  { name: 'llama2-7b-full-shard-offload-8-gpus', hash: 'preset=llama2-7b&strategies.sharding=full&strategies.checkpointing=layers&strategies.attention=fused&optimizer=adamw&batch_size=1&data.seq_len=2048&strategies.offload=parameters&gpus=8', gpu: 'RTX 4090 (24 GiB)', gpus: 8, taken: ['strategies.sharding=full', 'gpus=8', 'strategies.offload=parameters'] },
  { name: 'mixtral-dropped', hash: `preset=llama2-7b&${lora7b.join('&')}&data.seq_len=512`, drop: 'mixtral-8x7b-v0.1.json', gpu: 'H200 (141 GB)' },
  // Issue 59's sizes for the mixtures of experts (1 x 4,096 tokens, LoRA r16, per-layer
  // checkpointing), their experts' products grouped: each within 60 s in the tab.
  ...['mixtral-8x7b-v0.1.json', 'qwen3-30b-a3b.json'].map((drop) => ({
    name: `${drop.replace(/\.json$/, '')}-4096-tokens-dropped`,
    hash: `preset=llama2-7b&${lora7b.join('&')}&data.seq_len=4096&batch_size=1&eval_batch_size=1`,
    drop,
    gpu: 'H200 (141 GB)',
    within: 60,
  })),
].filter((plan) => (full || plan.ci) && (only === null || plan.name.includes(only)));

try {
  const context = await browser.newContext({ viewport: { width: 1366, height: 768 }, acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

  /** The figures a plan's JSON states that do not depend on when it was made. */
  const figures = (plan) => JSON.stringify([plan.config, plan.params, plan.high_water_in_use_bytes,
    plan.high_water_reserved_bytes, plan.high_water_in_use_by_phase, plan.high_water_by_category,
    plan.reserved_by_phase]);
  let shared = null;
  await page.goto(`${server.base}#preset=spiral-mlp`);
  await page.waitForSelector('[data-testid="plan-start"]', { timeout: 120_000 });
  // All in one tab: each link is loaded as one pasted into the address bar (hashchange).
  for (const [i, plan] of plans.entries()) {
    const loaded = await page.evaluate((hash) => new Promise((resolve) => {
      window.addEventListener('hashchange', () => setTimeout(() => resolve(true), 0), { once: true });
      setTimeout(() => resolve(false), 5_000);
      window.location.hash = hash;
    }), plan.hash);
    check(loaded, `${plan.name}: the link loads in the same tab`);
    // Taken: no note, and the page's own hash (which follows the config and the panel) holds
    // what the link asks (a link with a refused part is left for a reload, unread).
    const want = plan.taken ?? [];
    const taken = await page.waitForFunction((parts) => parts.every((part) => window.location.hash.includes(part)),
      want, { timeout: 5_000 }).then(() => true, () => false);
    const shown = await page.evaluate(() => window.location.hash);
    check(await page.$('#url-note') === null && taken,
      `${plan.name}: the link's fields are taken (${plan.hash})${taken ? '' : `; the page holds ${shown}`}`);
    if (plan.drop) {
      await page.setInputFiles('[data-testid="plan-config"]', path.join(hf, plan.drop));
      await page.waitForSelector('#plan-config-note, #plan-config-error', { timeout: 30_000 });
      const note = await textOf(page, '#plan-config-note');
      check(note !== null && note.startsWith(plan.drop), `${plan.name}: the dropped ${plan.drop} is read: "${(note ?? '').slice(0, 100)}"`);
    }
    await page.selectOption('[data-testid="plan-gpu"]', { label: plan.gpu });
    // The longest wait between two animation frames while the plan runs: how long the page
    // does not answer input.
    await page.evaluate(() => {
      window.__frames = { at: [performance.now()], on: true };
      const tick = (now) => {
        window.__frames.at.push(now);
        if (window.__frames.on) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    });
    const started = Date.now();
    await page.click('[data-testid="plan-start"]');
    await page.waitForSelector('#plan-answer, #plan-error', { timeout: 300_000 });
    const seconds = (Date.now() - started) / 1000;
    // Up to the moment the worker's answer reached the page (what the page does with it after
    // that, reading and drawing it, is not planning).
    const gap = await page.evaluate(() => {
      window.__frames.on = false;
      const answer = document.querySelector('#plan-answer');
      const until = answer ? Number(answer.dataset.receivedAt) : Infinity;
      const at = window.__frames.at.filter((t) => t <= until);
      if (Number.isFinite(until)) at.push(until);
      let longest = 0;
      for (let i = 1; i < at.length; i++) longest = Math.max(longest, at[i] - at[i - 1]);
      return longest;
    });
    const error = await textOf(page, '#plan-error');
    check(error === null, `${plan.name}: planned in the tab in ${seconds.toFixed(1)} s${error ? `: ${error}` : ''}`);
    if (error !== null) continue;
    const verdict = await page.textContent('#plan-answer .verdict');
    console.log(`     ${plan.gpu}: ${verdict}`);
    if (plan.gpus) {
      const count = await page.$eval('[data-testid="plan-gpus"]', (input) => input.value);
      const perGpu = await textOf(page, '#plan-per-gpu');
      check(count === String(plan.gpus) && (perGpu ?? '').startsWith(`One GPU's share of ${plan.gpus}`),
        `${plan.name}: the link sets ${count} GPUs and the answer is one GPU's: "${(perGpu ?? '').slice(0, 90)}..."`);
    }
    console.log(`     longest gap between frames while planning: ${gap.toFixed(0)} ms`);
    const memory = await page.$eval('#plan-answer', (a) => [Number(a.dataset.wasmBytes), Number(a.dataset.workerWasmBytes)]);
    console.log(`     wasm memory: the page's ${(memory[0] / 2 ** 20).toFixed(0)} MiB, the planning worker's ${(memory[1] / 2 ** 20).toFixed(0)} MiB (gone with it)`);
    if (plan.within) {
      check(seconds < plan.within, `${plan.name}: planned within ${plan.within} s in headless Chromium (${seconds.toFixed(1)} s)`);
    }
    if (plan.frames) {
      check(seconds < 60, `the 7B LoRA plan completes within 60 s in headless Chromium (${seconds.toFixed(1)} s)`);
      check(gap < 100, `the page draws a frame at least every 100 ms while the 7B plan runs (longest gap ${gap.toFixed(0)} ms)`);
    }
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="plan-export"]')]);
    const file = path.join(out, `plan-${i + 1}-${plan.name}.json`);
    await download.saveAs(file);
    if (plan.shared) shared = { plan, url: page.url(), file };
    await page.locator('#will-it-fit').screenshot({ path: path.join(out, `plan-${i + 1}-${plan.name}.png`) });
    if (plan.frames) {
      // Export image: the answer as an SVG card, drawn here to a PNG to look at.
      const [image] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="plan-export-image"]')]);
      const svg = path.join(out, `plan-${i + 1}-${plan.name}.svg`);
      await image.saveAs(svg);
      const text = fs.readFileSync(svg, 'utf8');
      check(text.startsWith('<svg') && text.includes(verdict.trim()), `${plan.name}: Export image writes the answer as an SVG card ("${verdict.trim().slice(0, 40)}...")`);
      const card = await browser.newPage();
      await card.goto(`file://${svg}`);
      await card.screenshot({ path: svg.replace(/\.svg$/, '-card.png') });
      await card.close();
    }
    // Made again natively, on the adapter the page modelled: every figure to the byte.
    try {
      const said = execFileSync(vramlab, ['plan', '--compare-page', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      check(true, `${plan.name}: ${said.trim()}`);
    } catch (e) {
      check(false, `${plan.name}: the native plan differs:\n${e.stdout}${e.stderr}`);
    }
  }
  // A shared link reproduces a dropped config.json's plan: its fields and the card travel in
  // the URL (the file itself does not), and a fresh tab plans the same figures to the byte.
  if (shared !== null) {
    const other = await context.newPage();
    await other.goto(shared.url);
    await other.waitForSelector('[data-testid="plan-start"]', { timeout: 120_000 });
    const card = await other.$eval('[data-testid="plan-gpu"]', (s) => s.selectedOptions[0].textContent);
    check(card === shared.plan.gpu && shared.url.includes('gpu='), `${shared.plan.name}: the link names the card (${card})`);
    await other.click('[data-testid="plan-start"]');
    await other.waitForSelector('#plan-answer, #plan-error', { timeout: 300_000 });
    const error = await textOf(other, '#plan-error');
    if (error === null) {
      const [download] = await Promise.all([other.waitForEvent('download'), other.click('[data-testid="plan-export"]')]);
      const file = path.join(out, `plan-${shared.plan.name}-from-its-link.json`);
      await download.saveAs(file);
      const [was, now] = [shared.file, file].map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
      check(figures(was) === figures(now), `${shared.plan.name}: its link, opened in a fresh tab, plans the same config and figures (high-water ${now.high_water_in_use_bytes} B)`);
    } else {
      check(false, `${shared.plan.name}: its link planned: ${error}`);
    }
    await other.close();
  }
  // The plans ran in this one tab.
  const wasm = Number(await page.$eval('#plan-answer', (a) => a.dataset.wasmBytes));
  check(wasm < 2 ** 30, `the page's wasm memory after the ${plans.length} plans is under 1 GiB (${(wasm / 2 ** 20).toFixed(0)} MiB)`);

  // The searches, the recipes and the write-back: not when timing one plan (--only).
  if (only === null) {
    // The largest batch under a typed size: the max-batch finder in the worker, each trial a
    // plan. The batch it finds fits when planned, and the next larger one tried does not.
    {
      const loaded = await page.evaluate(() => new Promise((resolve) => {
        window.addEventListener('hashchange', () => setTimeout(() => resolve(true), 300), { once: true });
        window.location.hash = 'preset=sort-llama';
      }));
      check(loaded, 'sort-llama: the link loads in the same tab');
      check(await page.$('#plan-config-note') === null, "the last dropped config.json's note is gone once the editor holds sort-llama");
      await page.selectOption('[data-testid="plan-gpu"]', { label: 'another size (type it)' });
      await page.fill('#plan-gpu-size', '48MiB');
      const started = Date.now();
      await page.click('[data-testid="plan-largest-batch"]');
      await page.waitForSelector('#plan-search, #plan-error', { timeout: 300_000 });
      const error = await textOf(page, '#plan-error');
      check(error === null, `sort-llama: the largest batch under 48 MiB searched in the tab in ${((Date.now() - started) / 1000).toFixed(1)} s${error ? `: ${error}` : ''}`);
      if (error === null) {
        const found = Number(await page.$eval('#plan-search', (a) => a.dataset.found));
        const rows = await page.$$eval('#plan-search tbody tr', (trs) => trs.map((tr) => [Number(tr.cells[0].textContent), tr.className === 'fits']));
        const above = rows.filter(([batch]) => batch > found).map(([batch, fits]) => [batch, fits]);
        console.log(`     ${await page.textContent('#plan-search .verdict')} trials: ${rows.map(([b, f]) => `${b}${f ? '' : '(no)'}`).join(' ')}`);
        check(found > 0 && rows.some(([batch, fits]) => batch === found && fits) && above.every(([, fits]) => !fits) && above.length > 0,
          `sort-llama: batch ${found} fits and every larger batch tried does not`);
        await page.locator('#will-it-fit').screenshot({ path: path.join(out, 'plan-largest-batch.png') });
        // The same search natively (this machine's adapter modelled, each trial a process).
        const native = JSON.parse(execFileSync(vramlab, ['find-batch', '--plan', '--preset', 'sort-llama', '--budget', '48MiB', '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
        const nativeTrials = native.trials_log.map((t) => [t.batch, t.fits]);
        check(native.max_batch === found && JSON.stringify(nativeTrials) === JSON.stringify(rows),
          `sort-llama: vramlab find-batch --plan finds ${native.max_batch} through the same ${native.trials} trials`);
        await page.click('#plan-use-found');
        await page.click('[data-testid="plan-start"]');
        await page.waitForSelector('#plan-answer, #plan-error', { timeout: 300_000 });
        const fits = await page.$eval('#plan-answer', (a) => a.dataset.fits).catch(() => null);
        check(fits === 'yes', `sort-llama: "Use this batch" then Plan: batch ${found} fits 48 MiB (${fits})`);

        // The longest sequence at that batch: the same search over data.seq_len.
        await page.click('[data-testid="plan-longest-sequence"]');
        await page.waitForSelector('#plan-search, #plan-error', { timeout: 300_000 });
        const longestError = await textOf(page, '#plan-error');
        check(longestError === null, `sort-llama: the longest sequence at batch ${found} searched in the tab${longestError ? `: ${longestError}` : ''}`);
        if (longestError === null) {
          const longest = Number(await page.$eval('#plan-search', (a) => a.dataset.found));
          const tried = await page.$$eval('#plan-search tbody tr', (trs) => trs.map((tr) => [Number(tr.cells[0].textContent), tr.className === 'fits']));
          console.log(`     ${await page.textContent('#plan-search .verdict')} trials: ${tried.map(([l, f]) => `${l}${f ? '' : '(no)'}`).join(' ')}`);
          await page.locator('#will-it-fit').screenshot({ path: path.join(out, 'plan-longest-sequence.png') });
          const native = JSON.parse(execFileSync(vramlab, ['find-batch', '--plan', '--longest-sequence', '--preset', 'sort-llama', '--set', `batch_size=${found}`, '--budget', '48MiB', '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
          const nativeTried = native.trials_log.map((t) => [t.seq_len, t.fits]);
          check(native.max_seq_len === longest && JSON.stringify(nativeTried) === JSON.stringify(tried),
            `sort-llama at batch ${found}: the longest sequence ${longest} tokens, as vramlab find-batch --plan --longest-sequence finds it through the same ${native.trials} trials`);
        }
      }
    }

    // A published config.json vramlab ships, picked instead of dropped.
    await page.selectOption('[data-testid="plan-published"]', { label: 'Qwen3-8B' });
    await page.waitForSelector('#plan-config-note, #plan-config-error', { timeout: 30_000 });
    const picked = await textOf(page, '#plan-config-note');
    check(picked !== null && picked.startsWith('qwen3-8b.json: qwen3 (8190735360 parameters)'), `a published config.json picked from the list is read: "${(picked ?? '').slice(0, 80)}"`);

    // A broken config.json is refused on the panel naming the field; the panel stays usable.
    const broken = path.join(out, 'broken-config.json');
    fs.writeFileSync(broken, JSON.stringify({ model_type: 'qwen3', hidden_size: 'wide' }));
    await page.setInputFiles('[data-testid="plan-config"]', broken);
    await page.waitForSelector('#plan-config-error', { timeout: 30_000 });
    const refusal = await page.textContent('#plan-config-error');
    check(refusal.includes('hidden_size'), `a broken config.json is refused naming the field: "${refusal.slice(0, 120)}"`);
    check(await page.isEnabled('[data-testid="plan-start"]'), 'the panel stays usable after the refusal');
    await page.screenshot({ path: path.join(out, 'plan-panel.png') });

    // Recipes chosen on the panel (issue 56), read as `vramlab plan --recipe` reads them, each
    // refused by name until told to plan without what vramlab does not model. Planned in the tab
    // (torchtune's in the CI tier, both with --full), each gives the command line's plan of the
    // same file, on the adapter the page modelled, to the byte: its config and every figure. The
    // Axolotl recipe names a Hub model, planned with the published Llama-3.1-8B-Instruct picked
    // first. Both fit a 24 GiB card, and Export recipe says so instead of writing a file.
    const recipeRuns = [
      { name: 'axolotl-qlora', file: 'axolotl/qlora.yml', pick: 'Llama-3.1-8B-Instruct', hf: 'llama-3.1-8b-instruct.json', refused: 'lora_dropout (line 27)' },
      { name: 'torchtune-qlora', file: 'torchtune/8B_qlora_single_device.yaml', refused: 'model.lora_attn_modules (line 23)', ci: true },
    ];
    for (const run of recipeRuns) {
      const recipe = path.join(recipes, run.file);
      const base = path.basename(run.file);
      if (run.pick) {
        await page.selectOption('[data-testid="plan-published"]', { label: run.pick });
        await page.waitForSelector('#plan-config-note', { timeout: 30_000 });
      }
      // What the panel says once it has read this file (the last file's note stays until then).
      const said = (selector) => page.waitForFunction(([sel, name]) => {
        const p = document.querySelector(sel);
        return p !== null && p.textContent.startsWith(name);
      }, [selector, base], { timeout: 30_000 }).catch(() => null);
      await page.setChecked('[data-testid="plan-recipe-allow"]', false);
      await page.setInputFiles('[data-testid="plan-recipe"]', recipe);
      await said('#plan-recipe-error p');
      const refusal = await textOf(page, '#plan-recipe-error p');
      check(refusal !== null && refusal.startsWith(`${base}: ${run.refused}`), `${run.name}: refused by name until allowed: "${(refusal ?? '').slice(0, 110)}"`);
      await page.setChecked('[data-testid="plan-recipe-allow"]', true);
      await page.setInputFiles('[data-testid="plan-recipe"]', recipe);
      await said('#plan-recipe-note p');
      const note = await textOf(page, '#plan-recipe-note p');
      check(note !== null && note.startsWith(base) && note.includes(`planned WITHOUT ${run.refused}`), `${run.name}: ${base} is read: "${(note ?? await textOf(page, '#plan-recipe-error') ?? '').slice(0, 160)}"`);
      if (note === null) continue;
      const reading = await page.textContent('#plan-recipe-reading pre');
      check(reading.startsWith(`recipe ${base}, read as `) && reading.includes('REFUSED'), `${run.name}: "How the recipe was read" names each field (${reading.split('\n').length} lines)`);
      if (!(full || run.ci)) continue;
      await page.selectOption('[data-testid="plan-gpu"]', { label: 'RTX 4090 (24 GiB)' });
      const started = Date.now();
      await page.click('[data-testid="plan-start"]');
      await page.waitForSelector('#plan-answer, #plan-error', { timeout: 300_000 });
      const error = await textOf(page, '#plan-error');
      check(error === null, `${run.name}: planned in the tab in ${((Date.now() - started) / 1000).toFixed(1)} s${error ? `: ${error}` : ''}`);
      if (error !== null) continue;
      console.log(`     RTX 4090 (24 GiB): ${await page.textContent('#plan-answer .verdict')}`);
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="plan-export"]')]);
      const file = path.join(out, `recipe-${run.name}-plan.json`);
      await download.saveAs(file);
      await page.click('[data-testid="plan-export-recipe"]');
      const exported = await page.waitForSelector('#plan-recipe-exported', { timeout: 10_000 }).then((e) => e.textContent()).catch(() => null);
      check(exported === `${base} fits 24.00 GiB as it is: nothing to change`, `${run.name}: Export recipe, the plan fitting: "${exported}"`);
      await page.locator('#will-it-fit').screenshot({ path: path.join(out, `recipe-${run.name}.png`) });
      const args = ['plan', '--recipe', recipe, ...(run.hf ? ['--hf-config', path.join(hf, run.hf)] : []),
        '--allow-unmodelled', '--budget', '24GiB', '--model-adapter', file, '--json'];
      try {
        const native = JSON.parse(execFileSync(vramlab, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
        const paged = JSON.parse(fs.readFileSync(file, 'utf8'));
        check(figures(paged) === figures(native), `${run.name}: vramlab plan --recipe ${run.file} plans the page's config and figures to the byte (high-water in use ${native.high_water_in_use_bytes} B)`);
      } catch (e) {
        check(false, `${run.name}: vramlab ${args.join(' ')} failed:\n${e.stdout}${e.stderr}`);
      }
    }
    // A recipe that does not fit, written back (issue 56): Axolotl's 8B LoRA recipe over a
    // two-block Llama-3.1-8B with a 32,000-token vocabulary (a config.json dropped on the panel,
    // so the plans take seconds), on a typed 4 GiB card. Export recipe downloads the recipe with
    // the first fitting change its format can say, byte for byte what `vramlab plan --recipe ...
    // --write-recipe` writes on the adapter the page modelled.
    {
      const small = path.join(out, 'two-block-llama.json');
      const llama = JSON.parse(fs.readFileSync(path.join(hf, 'llama-3.1-8b-instruct.json'), 'utf8'));
      fs.writeFileSync(small, JSON.stringify({ ...llama, num_hidden_layers: 2, vocab_size: 32000 }));
      await page.setInputFiles('[data-testid="plan-config"]', small);
      await page.waitForFunction(() => document.querySelector('#plan-config-note')?.textContent.startsWith('two-block-llama.json'), null, { timeout: 30_000 }).catch(() => null);
      const recipe = path.join(recipes, 'axolotl/lora-8b.yml');
      await page.setChecked('[data-testid="plan-recipe-allow"]', true);
      await page.setInputFiles('[data-testid="plan-recipe"]', recipe);
      const read = await page.waitForFunction(() => document.querySelector('#plan-recipe-note p')?.textContent.startsWith('lora-8b.yml'), null, { timeout: 30_000 }).then(() => true).catch(() => false);
      check(read, `lora-8b.yml is read over two-block-llama.json: "${((await textOf(page, '#plan-recipe-note p')) ?? (await textOf(page, '#plan-recipe-error')) ?? '').slice(0, 120)}"`);
      const held = await textOf(page, '#plan-config-note');
      check(held !== null && held.startsWith('two-block-llama.json: llama (') && held.endsWith("; the recipe's model (its notes below)"), `the config.json's note keeps only what it is once the recipe holds the editor: "${held}"`);
      await page.selectOption('[data-testid="plan-gpu"]', { label: 'another size (type it)' });
      await page.fill('#plan-gpu-size', '4GiB');
      const started = Date.now();
      await page.click('[data-testid="plan-start"]');
      await page.waitForSelector('#plan-answer, #plan-error', { timeout: 300_000 });
      const error = await textOf(page, '#plan-error');
      const fits = await page.$eval('#plan-answer', (a) => a.dataset.fits).catch(() => null);
      check(error === null && fits === 'no', `lora-8b.yml: planned in the tab in ${((Date.now() - started) / 1000).toFixed(1)} s, not fitting 4 GiB (${error ?? fits})`);
      if (error === null && fits === 'no') {
        const [plan] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="plan-export"]')]);
        const planFile = path.join(out, 'recipe-lora-8b-plan.json');
        await plan.saveAs(planFile);
        const [written] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="plan-export-recipe"]')]);
        const pageFile = path.join(out, written.suggestedFilename());
        await written.saveAs(pageFile);
        const said = await textOf(page, '#plan-recipe-exported');
        check(written.suggestedFilename() === 'lora-8b-fits.yml' && (said ?? '').startsWith('lora-8b-fits.yml: with '), `lora-8b.yml: Export recipe downloads ${written.suggestedFilename()}: "${said}"`);
        await page.locator('#will-it-fit').screenshot({ path: path.join(out, 'recipe-axolotl-written.png') });
        const nativeFile = path.join(out, 'native-lora-8b-fits.yml');
        const args = ['plan', '--recipe', recipe, '--hf-config', small, '--allow-unmodelled', '--budget', '4GiB', '--model-adapter', planFile, '--write-recipe', nativeFile, '--json'];
        try {
          const native = JSON.parse(execFileSync(vramlab, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
          const paged = JSON.parse(fs.readFileSync(planFile, 'utf8'));
          check(figures(paged) === figures(native) && JSON.stringify(paged.suggestions) === JSON.stringify(native.suggestions),
            `lora-8b.yml: vramlab plan --recipe plans the page's config, figures and ${native.suggestions.length} planned suggestions to the byte (high-water in use ${native.high_water_in_use_bytes} B)`);
          const [fromPage, fromNative] = [pageFile, nativeFile].map((f) => fs.readFileSync(f, 'utf8'));
          check(fromPage === fromNative && fromPage.includes('# vramlab: was '), `lora-8b.yml: the page's written recipe is vramlab plan --recipe --write-recipe's to the byte (${fromPage.length} bytes)`);
        } catch (e) {
          check(false, `lora-8b.yml: vramlab ${args.join(' ')} failed:\n${e.stdout}${e.stderr}`);
        }
      }
    }
  }
  check(errors.length === 0, `no page errors${errors.length ? `: ${errors.slice(0, 3).join(' | ')}` : ''}`);
} finally {
  await browser.close();
  server.close();
}
console.log(failures === 0 ? 'all plan checks passed' : `${failures} plan check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
