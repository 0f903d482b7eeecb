// A static file server for the built page: `.ci/play` runs it on DIST, and the tests import
// `serve`. A file's .br or .gz sibling (www/compress.mjs) is sent when the browser accepts it,
// as a web host would; no-cache makes every load revalidate, so a rebuilt page is never stale.
//   node www/serve.mjs DIST [PORT]     (PORT 0-65535, default 8080; 0 picks a free one)
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
  '.json': 'application/json',
};
const encodings = [['br', '.br'], ['gzip', '.gz']];

function accepted(header, coding) {
  return (header ?? '').split(',').some((part) => {
    const [name, ...params] = part.trim().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return name === coding && (q === undefined || Number(q.slice(2)) > 0);
  });
}

/** Serve `roots` ({ '/prefix/': dir }, longest prefix first; '/' last) on `port` (0: a free one). */
export async function serve(roots, port = 0) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const match = Object.entries(roots).find(([p]) => url.pathname.startsWith(p));
    if (!match) return res.writeHead(404).end();
    const [prefix, rootDir] = match;
    const root = path.resolve(rootDir);
    let rel;
    try {
      rel = decodeURIComponent(url.pathname.slice(prefix.length)) || 'index.html';
    } catch {
      return res.writeHead(400).end();
    }
    const file = path.join(root, rel);
    if (!file.startsWith(root + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      return res.writeHead(404).end();
    }
    const headers = { 'content-type': types[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache', vary: 'accept-encoding' };
    let body = file;
    for (const [coding, suffix] of encodings) {
      if (accepted(req.headers['accept-encoding'], coding) && fs.existsSync(file + suffix)) {
        body = file + suffix;
        headers['content-encoding'] = coding;
        break;
      }
    }
    headers['content-length'] = fs.statSync(body).size;
    res.writeHead(200, headers);
    if (req.method === 'HEAD') return res.end();
    fs.createReadStream(body).pipe(res);
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', ok);
  });
  return { base: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [dist, portArg = '8080'] = process.argv.slice(2);
  const port = Number(portArg);
  if (!dist) {
    console.error('usage: node www/serve.mjs DIST [PORT]');
    process.exit(2);
  }
  if (!fs.existsSync(path.join(dist, 'index.html'))) {
    console.error(`serve: ${dist} has no index.html; build the page first (bash .ci/build-page ${dist})`);
    process.exit(2);
  }
  if (!/^\d+$/.test(portArg) || port > 65535) {
    console.error(`serve: PORT must be a whole number from 0 to 65535, not '${portArg}'`);
    process.exit(2);
  }
  try {
    const { base } = await serve({ '/': dist }, port);
    console.error(`[serve] ${path.resolve(dist)} at ${base} (open it in a browser with WebGPU; Ctrl-C stops)`);
  } catch (e) {
    console.error(`serve: cannot listen on 127.0.0.1:${port}: ${e.message}`);
    process.exit(1);
  }
}
