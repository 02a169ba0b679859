// SPDX-License-Identifier: GPL-2.0
/*
 * The flame graph SVG in headless chromium:
 *   node svg.js --modules DIR --chromium EXE --svg FILE --folded FILE
 *               --shot PREFIX --search REGEX
 * FILE.svg must have been written from the folded stacks FILE (same
 * perfspy options). Checks: it loads as an SVG document with no script or
 * console error and no request leaving the file; the number of frame
 * elements is the number of nodes the stacks merge into (computed here
 * independently, with flamegraph.pl's 0.1 px minimum width) plus the root;
 * the frames are drawn (bounding boxes); tooltips carry counts and
 * percentages; hovering fills the details line; clicking a frame zooms
 * it to the full width and hides frames outside it, Reset Zoom undoes
 * it; Search paints matches and prints the share of samples under them,
 * which must equal the share computed from the stacks. Issue 15: native
 * frames with a source line are merged by function (the grouping is
 * computed here again, by its documented rule, docs/output.md §7.1) and
 * their tooltips list the lines with shares adding up to 100%; each
 * native frame's colour class is the family of its library and its fill
 * lies in that family's colour box (§7.2); the details bar sits above
 * the frames and stays at the top of the window when the page scrolls
 * (PREFIX-scrolled.png), and the plot fills the window's width at two
 * window sizes (§7.3). Screenshots: PREFIX.png, PREFIX-zoom.png,
 * PREFIX-search.png, PREFIX-scrolled.png, PREFIX-wide.png.
 */
'use strict';

const fs = require('fs');
const lib = require('./lib');

const PLOT = 1180; /* the written file's plot, for the min-width rule */
let plot = PLOT;  /* the plot in the window, once the script fitted it */

/* docs/output.md §7.1: `f (file:LINE)` that is not a Python frame (file
 * not .py, not a <pseudo-file>), not kernel, not a root, is drawn as
 * `f (file)`. --lineno (@lineno) keeps every frame. */
function group(f, lineno) {
  const m = /^(.*) \(([^()]*):(-?\d+)\)$/.exec(f);
  if (lineno || !m || /\.pyw?$/.test(m[2]) || m[2].startsWith('<') ||
      m[2].startsWith('[kernel') || f.startsWith('thread ') || f.startsWith('process ')) return f;
  return `${m[1]} (${m[2]})`;
}

/* Nodes of the merged tree that the writer draws (its min-width rule). */
function expectedFrames(stacks, lineno) {
  const counts = new Map();
  let total = 0;
  for (const s of stacks) {
    total += s.n;
    let key = '';
    for (const f of s.frames) {
      key += '\u0000' + group(f, lineno);
      counts.set(key, (counts.get(key) || 0) + s.n);
    }
  }
  let drawn = 1; /* "all" */
  for (const c of counts.values()) if (c * PLOT * 10 >= total) drawn++;
  return { drawn, nodes: counts.size + 1, total };
}

/* Share of samples whose stack has a frame matching @re. */
function expectedMatch(stacks, re, total) {
  let hit = 0;
  for (const s of stacks) if (s.frames.some((f) => re.test(f))) hit += s.n;
  return total ? (100 * hit) / total : 0;
}

async function frameState(page) {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll('#frames > g')).map((g) => {
      const r = g.querySelector('rect');
      const b = r.getBoundingClientRect();
      return {
        title: g.querySelector('title').textContent,
        d: +g.getAttribute('data-d'),
        n: +g.getAttribute('data-n'),
        width: +r.getAttribute('width'),
        boxW: b.width,
        hidden: g.classList.contains('hide'),
        label: g.querySelector('text').textContent,
      };
    }));
}

async function checkStatic(page, want) {
  const root = await page.evaluate(() => document.documentElement.nodeName);
  lib.check(root === 'svg', 'the document is an SVG', root);
  const st = await frameState(page);
  lib.check(st.length === want.drawn,
    `frame elements in the DOM: ${st.length}, the stacks make ${want.drawn} ` +
    `(${want.nodes} nodes, ${want.nodes - want.drawn} under 0.1 px)`);
  const vw = await page.evaluate(() => document.documentElement.clientWidth);
  plot = st.length ? st[0].width : 0;
  lib.check(st.length > 0 && Math.abs(plot - (vw - 20)) < 0.02 && Math.abs(st[0].boxW - plot) < 1 &&
    st[0].title.startsWith('all ('),
    `the root frame "all" spans the window's width less the margins (${vw} - 20 px)`,
    st[0] && st[0].boxW);
  const drawn = st.filter((f) => f.boxW > 0).length;
  lib.check(drawn === st.length, `every frame has a drawn box (${drawn}/${st.length})`);
  const tip = st.find((f) => f.d > 0);
  lib.check(tip && /^.+ \(\d+ samples?, \d+\.\d\d%\)$/.test(tip.title.split('\n')[0]),
    'tooltips give samples and percentage: ' + (tip && tip.title));
  lib.check(st.some((f) => f.label.length > 3), 'frames carry text labels');
  await checkColours(page);
  checkLines(st, want);
  return st;
}

/* Merged native frames list their lines, `lines: FILE:LINE (P%), ...`,
 * with shares adding up to 100% (when all are listed). */
function checkLines(st, want) {
  const merged = st.filter((f) => f.title.includes('\nlines: '));
  if (!want.grouped) {
    lib.check(merged.length === 0, `--lineno: no frame lists lines (${merged.length})`);
    return;
  }
  lib.check(merged.length > 0, `${merged.length} merged native frames list their source lines`);
  let bad = 0, multi = null;
  for (const f of merged) {
    const tail = f.title.split('\nlines: ')[1];
    if (/more$/.test(tail)) continue;
    const shares = Array.from(tail.matchAll(/:-?\d+ \((\d+\.\d)%\)/g)).map((m) => +m[1]);
    const sum = shares.reduce((a, b) => a + b, 0);
    if (Math.abs(sum - 100) > 0.1 * shares.length) bad++;
    if (shares.length > 1 && !multi) multi = f.title;
  }
  lib.check(bad === 0, `line shares add up to 100% in every merged frame (${bad} do not)`);
  if (want.multiLine) {
    lib.check(!!multi, 'a function sampled at several lines is one frame: ' + multi);
  }
}

/* Library families by file name (docs/output.md §7.2), written again
 * here from the documented list. */
function libFamily(file) {
  const b = file.replace(/.*\//, '');
  if (/^(libtorch|libc10|libcaffe2|libshm)/.test(b)) return 'torch';
  if (/^(libcu|libnccl|libnv)/.test(b)) return 'cuda';
  if (/^(libpython|python)/.test(b)) return 'pyrt';
  if (/^(libc[.-]|libm[.-]|ld-|ld\.so|libpthread|libdl[.-]|librt[.-]|libstdc\+\+|libgcc_s|libresolv)/.test(b)) {
    return 'crt';
  }
  if (/^(libopenblas|libblas|liblapack|libmkl|libgomp|libiomp|libomp|libdnnl|libgfortran|libsleef|_multiarray)/
    .test(b)) return 'math';
  return 'nat';
}

/* Python green, kernel blue, native frames by library: each family's
 * frames are in its own colour box, and boxes do not overlap. */
async function checkColours(page) {
  const fills = await page.evaluate(() =>
    Array.from(document.querySelectorAll('#frames > g')).map((g) => [
      g.getAttribute('class').split(' ')[1],
      g.querySelector('rect').getAttribute('fill').match(/\d+/g).map(Number),
      g.querySelector('title').textContent]));
  /* The boxes of docs/output.md §7.2: [min, max] of r, g and b. */
  const box = {
    py: [[60, 130], [175, 235], [80, 150]],
    ker: [[70, 120], [140, 185], [215, 255]],
    nat: [[225, 255], [165, 220], [30, 70]],
    crt: [[200, 240], [55, 90], [55, 85]],
    pyrt: [[170, 200], [170, 195], [70, 100]],
    torch: [[235, 255], [105, 135], [0, 25]],
    cuda: [[150, 185], [85, 120], [205, 250]],
    math: [[230, 255], [125, 155], [175, 210]],
    unk: [[165, 185], [140, 160], [120, 140]],
  };
  const family = {};
  for (const k of Object.keys(box)) {
    family[k] = (c) => c.every((v, i) => v >= box[k][i][0] && v <= box[k][i][1]);
  }
  const seen = new Set();
  for (const k of Object.keys(family)) {
    const mine = fills.filter((f) => f[0] === k);
    if (!mine.length) continue;
    seen.add(k);
    const bad = mine.filter((f) => !family[k](f[1]));
    lib.check(bad.length === 0, `${mine.length} ${k} frames in their colour family`,
      bad.length + ' not: ' + JSON.stringify(bad.slice(0, 3)));
    const other = Object.keys(family).filter((o) => o !== k && mine.some((f) => family[o](f[1])));
    lib.check(other.length === 0, `${k} colours are in no other family's box`, other.join(' '));
  }
  /* A native frame that names its library is coloured by that library
   * (a merged frame names its source file, and lists lines). */
  const named = fills.filter((f) => /\((lib[^():]*|python[^():]*)\) \(\d+ samples?/.test(f[2]) &&
    f[0] !== 'ker' && !f[2].includes('\nlines: '));
  const wrong = named.filter((f) => libFamily(/\(([^()]*)\) \(\d+ samples?/.exec(f[2])[1]) !== f[0]);
  lib.check(wrong.length === 0, `${named.length} frames naming a library have its family's class`,
    JSON.stringify(wrong.slice(0, 3)));
  console.log('colour families: ' + Array.from(seen).join(' '));
  return seen;
}

/* The details bar is above the frames, and at the top of the window
 * after scrolling down a deep graph. */
async function checkBar(page, shot) {
  const pos = () => page.evaluate(() => {
    const d = document.querySelector('#bar rect').getBoundingClientRect();
    const f = document.querySelectorAll('#frames > g')[0].querySelector('rect').getBoundingClientRect();
    return { d: d.top, f: f.top, scroll: window.scrollY, h: window.innerHeight,
      doc: +document.documentElement.getAttribute('height') };
  });
  const a = await pos();
  lib.check(a.d < a.f, `the details line (y ${a.d.toFixed(0)}) is above the frames (y ${a.f.toFixed(0)})`);
  if (a.doc <= a.h + 100) return;
  await page.evaluate(() => window.scrollTo(0, document.documentElement.getAttribute('height') / 2));
  await page.waitForTimeout(100);
  /* hover a frame in view, the bar must show it where the user looks */
  const vis = await page.evaluate(() => {
    const all = Array.from(document.querySelectorAll('#frames > g'));
    const i = all.findIndex((x) => {
      const r = x.querySelector('rect').getBoundingClientRect();
      return r.top > 200 && r.bottom < window.innerHeight - 10 && r.width > 20;
    });
    return i;
  });
  if (vis >= 0) await page.locator('#frames > g').nth(vis).locator('rect').hover();
  const b = await pos();
  const text = await page.evaluate(() => document.getElementById('details').textContent);
  lib.check(b.scroll > 100 && Math.abs(b.d) < 1,
    `scrolled to ${b.scroll} px of ${b.doc}: the details bar is at the top of the window (y ${b.d.toFixed(0)})`);
  lib.check(vis < 0 || text.trim().length > 0, 'hovering a frame deep down fills the bar: ' + text);
  await page.screenshot({ path: shot + '-scrolled.png' });
  await page.mouse.move(0, 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.waitForTimeout(100);
}

/* The plot follows the window's width. */
async function checkWidth(page, shot, h) {
  for (const w of [1600, 900]) {
    await page.setViewportSize({ width: w, height: h });
    await page.waitForTimeout(150);
    const r = await page.evaluate(() => ({
      cw: document.documentElement.clientWidth,
      svg: +document.documentElement.getAttribute('width'),
      all: +document.querySelector('#frames > g rect').getAttribute('width'),
    }));
    lib.check(r.svg === r.cw && Math.abs(r.all - (r.cw - 20)) < 0.02,
      `window ${w} px wide: the SVG is ${r.svg} px, the plot ${r.all} px`);
    if (w === 1600) await page.screenshot({ path: shot + '-wide.png' });
  }
}

/* Click the widest frame at depth 2 that is narrower than the plot. */
async function checkZoom(page, shot) {
  const before = await frameState(page);
  let idx = -1;
  before.forEach((f, i) => {
    if (f.d === 2 && f.width < plot - 1 && (idx < 0 || f.n > before[idx].n)) idx = i;
  });
  if (!lib.check(idx >= 0, 'a frame to zoom into (depth 2, narrower than the plot)')) return;
  const box = await page.locator('#frames > g').nth(idx).locator('rect').boundingBox();
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  const after = await frameState(page);
  const z = after[idx];
  lib.check(Math.abs(z.width - plot) < 0.02 && Math.abs(z.boxW - plot) < 1,
    `click zooms: ${before[idx].title.replace(/ \(.*/, '')} ${before[idx].width.toFixed(2)} px -> ` +
    `${z.width.toFixed(2)} px`);
  const hid = after.filter((f) => f.hidden).length;
  lib.check(hid > 0 || before[idx].n === before[0].n, `frames outside the zoomed one hidden (${hid})`);
  const unzoom = await page.evaluate(() => !document.getElementById('unzoom').classList.contains('hide'));
  lib.check(unzoom, 'Reset Zoom shown while zoomed');
  await page.screenshot({ path: shot + '-zoom.png' });
  await page.click('#unzoom');
  const back = await frameState(page);
  lib.check(back.every((f, i) => Math.abs(f.width - before[i].width) < 0.02 && !f.hidden),
    'Reset Zoom restores every frame');
}

async function checkHoverAndSearch(page, stacks, want, term, shot) {
  const g = page.locator('#frames > g').nth(1);
  await g.locator('rect').hover();
  const [details, title] = await page.evaluate(() => [
    document.getElementById('details').textContent,
    document.querySelectorAll('#frames > g')[1].querySelector('title').textContent]);
  lib.check(details === title.replace(/\n/g, '  '), 'hover shows the frame in the details line: ' + details);
  page.once('dialog', (d) => d.accept(term));
  await page.click('#search');
  const res = await page.evaluate(() => ({
    matched: document.getElementById('matched').textContent,
    painted: Array.from(document.querySelectorAll('#frames rect'))
      .filter((r) => r.getAttribute('fill') === 'rgb(230,0,230)').length,
    button: document.getElementById('search').textContent,
  }));
  const exp = expectedMatch(stacks, new RegExp(term), want.total);
  const got = Number((/Matched: ([\d.]+)%/.exec(res.matched) || [])[1]);
  lib.check(res.painted > 0 && Math.abs(got - exp) < 0.006,
    `search /${term}/: ${res.painted} frames painted, "${res.matched}" (stacks: ${exp.toFixed(2)}%)`);
  lib.check(res.button === 'Reset Search', 'the Search button turns into Reset Search');
  await page.screenshot({ path: shot + '-search.png' });
  await page.click('#search');
}

async function main() {
  const a = lib.parseArgs(process.argv.slice(2));
  const stacks = lib.readFolded(a.folded);
  const lineno = a.lineno === 'yes';
  const want = expectedFrames(stacks, lineno);
  const natLines = new Map();
  for (const s of stacks) {
    for (const f of s.frames) {
      const g = group(f, lineno);
      if (g !== f) natLines.set(g, (natLines.get(g) || new Set()).add(f));
    }
  }
  want.grouped = natLines.size > 0;
  want.multiLine = Array.from(natLines.values()).some((v) => v.size > 1);
  const dir = require('path').dirname(a.svg);
  const srv = await lib.serve({ '/': dir });
  const b = await lib.launch(a.modules, a.chromium, srv.url, { width: 1200, height: 600 });
  try {
    const url = srv.url + '/' + require('path').basename(a.svg);
    await b.page.goto(url, { waitUntil: 'load' });
    const h = await b.page.evaluate(() => +document.documentElement.getAttribute('height'));
    await b.page.setViewportSize({ width: 1200, height: Math.min(Math.max(h, 200), 900) });
    await checkStatic(b.page, want);
    await b.page.screenshot({ path: a.shot + '.png' });
    console.log('screenshot: ' + a.shot + '.png');
    await checkBar(b.page, a.shot);
    await checkZoom(b.page, a.shot);
    await checkHoverAndSearch(b.page, stacks, want, a.search, a.shot);
    await checkWidth(b.page, a.shot, Math.min(Math.max(h, 200), 900));
    lib.check(b.errors.length === 0, 'no script or console error', b.errors.join('; '));
    lib.check(b.external.length === 0, 'no request leaves the file', b.external.join(' '));
    lib.check(fs.statSync(a.shot + '.png').size > 1000, 'screenshot written');
  } finally {
    await b.close();
    await srv.close();
  }
  process.exit(lib.failed() ? 1 : 0);
}

main().catch((e) => {
  console.log('FAIL ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
