// Shared by the page's end-to-end test and the TF.js benchmark: a static file server over
// URL-prefix roots, and Debian's Chromium launched with the flags measured to keep WebGPU
// (SwiftShader) working.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

export const npmRoot = process.env.VRAMLAB_NPM ?? path.join(process.env.HOME, '.cache/vramlab/npm');
const { chromium } = createRequire(path.join(npmRoot, 'package.json'))('playwright-core');

const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };

/** Serve `roots` ({ '/prefix/': dir }, longest prefix first; '/' last) on a free port. */
export async function serve(roots) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const [prefix, root] = Object.entries(roots).find(([p]) => url.pathname.startsWith(p));
    const rel = decodeURIComponent(url.pathname.slice(prefix.length)) || 'index.html';
    const file = path.join(root, rel);
    if (!file.startsWith(root) || !fs.existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { base: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

/** Headless Chromium, with WebGPU unless `webgpu` is false. Playwright's own default flags are
 * replaced: it only needs the pipe it talks over. `--disable-software-rasterizer` must never be
 * among the flags (it takes WebGPU's SwiftShader away). */
export function launch(extraArgs = [], { webgpu = true } = {}) {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    ignoreDefaultArgs: true,
    timeout: 60_000,
    args: ['--remote-debugging-pipe', '--headless', '--no-sandbox', ...(webgpu ? ['--enable-unsafe-webgpu'] : []),
      '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', `--user-data-dir=${fs.mkdtempSync('/tmp/vramlab-chromium-')}`, ...extraArgs],
  });
}
