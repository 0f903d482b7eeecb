// End-to-end test of a user's own table on the page: iris.csv through the data card's file
// input, its preview, 20 steps of training with falling loss, the export naming the file, then a
// broken CSV refused on the card with the iris run kept. Usage: node table.mjs DIST_DIR SCREENSHOT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launch, serve } from './browser.mjs';

const [distArg, shots] = process.argv.slice(2);
if (!distArg || !shots) {
  console.error('usage: node table.mjs DIST_DIR SCREENSHOT_DIR');
  process.exit(2);
}
const iris = path.join(path.dirname(fileURLToPath(import.meta.url)), '../data/iris.csv');
fs.mkdirSync(shots, { recursive: true });
const server = await serve({ '/': path.resolve(distArg) });
const browser = await launch();

let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures += 1;
};

try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 1100 } })).newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

  await page.goto(`${server.base}#preset=spiral-mlp`);
  await page.waitForSelector('#shader-f16', { timeout: 120_000 });

  // The file goes in through the data card's input, as a visitor's would.
  await page.setInputFiles('[data-testid="data-file"]', iris);
  await page.waitForSelector('#table-preview', { timeout: 30_000 });
  const shape = await page.textContent('#table-shape');
  check(shape.startsWith('iris.csv: 150 rows, 5 columns: 4 numeric features and the label species (column 5)'),
    `the preview names the file, rows and columns: "${shape.slice(0, 90)}..."`);
  const head = await page.$$eval('#table-preview th', (th) => th.map((t) => t.textContent));
  check(head.join(',') === 'sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,species',
    `the columns found: ${head.join(', ')}`);
  const first = await page.$$eval('#table-preview tbody tr', (rows) => rows.map((r) => r.textContent));
  check(first.length === 5 && first[0] === '5.13.51.40.2setosa', `the first rows as in the file (${first.length}: "${first[0]}")`);
  const classes = await page.$$eval('#table-classes li', (li) => li.map((l) => l.textContent));
  check(classes.join(', ') === 'setosa: 50, versicolor: 50, virginica: 50', `the classes and their counts: ${classes.join(', ')}`);
  const note = await page.textContent('#table-link-note');
  check(note.includes('carries these settings, not the table') && note.includes('iris.csv'),
    'the page says the link cannot carry the table');
  check(page.url().includes('data.kind=csv') && page.url().includes('data.path=iris.csv'), 'the URL names the file');
  await page.locator('#data-preview').screenshot({ path: path.join(shots, 'table-data-card.png') });

  // 20 steps, evaluated at the end.
  await page.fill('input[name="steps"]', '20');
  await page.dispatchEvent('input[name="steps"]', 'change');
  const started = Date.now();
  await page.$eval('#start', (b) => b.click());
  await page.waitForFunction(() => ['finished', 'stopped'].includes(document.querySelector('#status')?.textContent),
    null, { timeout: 600_000 });
  const status = await page.textContent('#status');
  console.log(`     iris, 20 steps: ${status} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  check(status === 'finished', 'the table trains to the end');
  const [download] = await Promise.all([page.waitForEvent('download'), page.$eval('#export-json', (b) => b.click())]);
  const exported = path.join(shots, 'table-run.json');
  await download.saveAs(exported);
  const run = JSON.parse(fs.readFileSync(exported, 'utf8'));
  const losses = run.steps.map((s) => s.loss);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const [early, late] = [mean(losses.slice(0, 5)), mean(losses.slice(-5))];
  check(losses.length === 20 && late < 0.7 * early,
    `loss falls over 20 steps (first five ${early.toFixed(3)}, last five ${late.toFixed(3)})`);
  const table = run.summary.table;
  check(table?.source?.name === 'iris.csv' && table.rows === 150 && table.columns === 5 && /^[0-9a-f]{64}$/.test(table.source.sha256),
    `the export records the file, rows, columns and SHA-256 (${table?.source?.name}, ${table?.rows}, ${table?.columns}, ${table?.source?.sha256?.slice(0, 12)}...)`);
  check(run.config.data.kind === 'csv' && run.config.data.path === 'iris.csv', 'the exported config names the data');
  const peak = await page.textContent('#peak-in-use');
  await page.screenshot({ path: path.join(shots, 'table-trained.png'), fullPage: true });

  // A broken file is refused on the card; the iris data and its run stay.
  await page.setInputFiles('[data-testid="data-file"]',
    { name: 'broken.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b,label\n1,2,x\n3,oops,y\n') });
  await page.waitForSelector('#data-error', { timeout: 30_000 });
  const refusal = await page.textContent('#data-error');
  check(refusal.startsWith('broken.csv: line 3, column 2 (b): "oops" is not a number'), `the error on the data card: "${refusal.slice(0, 80)}..."`);
  check((await page.textContent('#table-shape')).startsWith('iris.csv: 150 rows'), 'the preview still shows iris');
  check(await page.textContent('#status') === 'finished' && await page.textContent('#peak-in-use') === peak,
    'the iris run and its summary are kept');
  check(page.url().includes('data.path=iris.csv'), 'the configuration still names iris.csv');
  await page.locator('#data-preview').screenshot({ path: path.join(shots, 'table-broken.png') });

  // The link names the file but cannot carry it: opened elsewhere, the page says so.
  const other = await (await browser.newContext()).newPage();
  await other.goto(page.url());
  await other.waitForSelector('#url-note', { timeout: 60_000 });
  const linkNote = await other.textContent('#url-note');
  check(linkNote.includes('data.kind = csv needs its table') && linkNote.includes('a link cannot carry it'),
    `opened from the link, the page asks for the file: "${linkNote.slice(0, 100)}..."`);
  await other.close();
  check(errors.length === 0, `no page errors${errors.length ? `: ${errors.join(' | ')}` : ''}`);
} finally {
  await browser.close();
  await server.close();
}
console.log(failures === 0 ? 'table e2e: all passed' : `table e2e: ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
