// SPDX-License-Identifier: GPL-2.0
/*
 * Shared by the browser checks (svg.js, speedscope.js): argument parsing,
 * ok/FAIL reporting (read by tests/e2e/run-browser.sh), a static file
 * server on 127.0.0.1, and Debian's headless chromium driven by
 * playwright-core (never a downloaded browser), in a fresh profile
 * directory, with every request to anything but our server refused and
 * recorded.
 */
'use strict';

const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

let failures = 0;

function ok(msg) {
  console.log('ok ' + msg);
}

function fail(msg) {
  failures++;
  console.log('FAIL ' + msg);
}

function check(cond, msg, detail) {
  if (cond) ok(msg);
  else fail(msg + (detail !== undefined ? ' (' + detail + ')' : ''));
  return cond;
}

function failed() {
  return failures;
}

/* --key value pairs; repeated keys make arrays. */
function parseArgs(argv) {
  const a = {};
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[i + 1];
    if (a[k] === undefined) a[k] = v;
    else a[k] = [].concat(a[k], v);
  }
  return a;
}

const TYPES = {
  '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
  '.svg': 'image/svg+xml', '.json': 'application/json', '.png': 'image/png',
  '.woff2': 'font/woff2', '.wasm': 'application/wasm', '.txt': 'text/plain',
  '.ico': 'image/x-icon',
};

/* Serve URL prefix -> directory mappings ({'/speedscope/': dir, '/': dir}),
 * longest prefix first. Resolves to {url, close}. */
function serve(mounts) {
  const prefixes = Object.keys(mounts).sort((x, y) => y.length - x.length);
  const server = http.createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
    const pre = prefixes.find((m) => p.startsWith(m));
    const root = pre !== undefined ? mounts[pre] : null;
    const file = root ? path.join(root, p.slice(pre.length)) : null;
    if (!file || !file.startsWith(root) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: 'http://127.0.0.1:' + server.address().port,
        close: () => new Promise((r) => server.close(r)),
      });
    });
  });
}

/* The flags the test plan asks for; playwright adds --headless itself. */
const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/*
 * Launch chromium at @exe with a fresh --user-data-dir (launchPersistentContext
 * is playwright's way to pass one). Returns {page, errors, external, close}:
 * page errors and console errors collect in errors; requests to anything
 * but @origin are aborted and listed in external.
 */
async function launch(modules, exe, origin, viewport) {
  const { chromium } = require(path.join(modules, 'playwright-core'));
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'perfspy-chromium-'));
  const ctx = await chromium.launchPersistentContext(userDir, {
    executablePath: exe,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
  });
  const page = ctx.pages()[0] || (await ctx.newPage());
  const errors = [];
  const external = [];
  page.on('pageerror', (e) => errors.push('page error: ' + e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push('console error: ' + m.text());
  });
  await page.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith(origin + '/') || u.startsWith('data:') || u.startsWith('blob:')) {
      return route.continue();
    }
    external.push(u);
    return route.abort();
  });
  return {
    page,
    errors,
    external,
    close: async () => {
      await ctx.close();
      fs.rmSync(userDir, { recursive: true, force: true });
    },
  };
}

/* Folded stacks `frame;...;frame COUNT` -> [{frames, n}]. */
function readFolded(file) {
  const out = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const i = line.lastIndexOf(' ');
    const stack = line.slice(0, i);
    out.push({ frames: stack === '' ? [] : stack.split(';'), n: Number(line.slice(i + 1)) });
  }
  return out;
}

module.exports = { ok, fail, check, failed, parseArgs, serve, launch, readFolded };
