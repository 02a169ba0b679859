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
 * which must equal the share computed from the stacks. Screenshots:
 * PREFIX.png, PREFIX-zoom.png, PREFIX-search.png.
 */
'use strict';

const fs = require('fs');
const lib = require('./lib');

const PLOT = 1180;

/* Nodes of the merged tree that the writer draws (its min-width rule). */
function expectedFrames(stacks) {
  const counts = new Map();
  let total = 0;
  for (const s of stacks) {
    total += s.n;
    let key = '';
    for (const f of s.frames) {
      key += '\u0000' + f;
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
  lib.check(st.length > 0 && Math.abs(st[0].boxW - PLOT) < 1 && st[0].title.startsWith('all ('),
    'the root frame "all" spans the plot', st[0] && st[0].boxW);
  const drawn = st.filter((f) => f.boxW > 0).length;
  lib.check(drawn === st.length, `every frame has a drawn box (${drawn}/${st.length})`);
  const tip = st.find((f) => f.d > 0);
  lib.check(tip && /^.+ \(\d+ samples?, \d+\.\d\d%\)$/.test(tip.title),
    'tooltips give samples and percentage: ' + (tip && tip.title));
  lib.check(st.some((f) => f.label.length > 3), 'frames carry text labels');
  await checkColours(page);
  return st;
}

/* Python green, native warm (red to yellow), kernel blue: each kind's
 * frames are in their own colour family. */
async function checkColours(page) {
  const fills = await page.evaluate(() =>
    Array.from(document.querySelectorAll('#frames > g')).map((g) => [
      g.getAttribute('class').split(' ')[1],
      g.querySelector('rect').getAttribute('fill').match(/\d+/g).map(Number)]));
  const family = {
    py: ([r, g, b]) => g > r && g > b,
    nat: ([r, g, b]) => r > g && r > b,
    ker: ([r, g, b]) => b > r && b > g,
  };
  for (const k of Object.keys(family)) {
    const mine = fills.filter((f) => f[0] === k);
    if (!mine.length) continue;
    const bad = mine.filter((f) => !family[k](f[1]));
    lib.check(bad.length === 0, `${mine.length} ${k} frames in their colour family`,
      bad.length + ' not: ' + JSON.stringify(bad.slice(0, 3)));
  }
}

/* Click the widest frame at depth 2 that is narrower than the plot. */
async function checkZoom(page, shot) {
  const before = await frameState(page);
  let idx = -1;
  before.forEach((f, i) => {
    if (f.d === 2 && f.width < PLOT - 1 && (idx < 0 || f.n > before[idx].n)) idx = i;
  });
  if (!lib.check(idx >= 0, 'a frame to zoom into (depth 2, narrower than the plot)')) return;
  const box = await page.locator('#frames > g').nth(idx).locator('rect').boundingBox();
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  const after = await frameState(page);
  const z = after[idx];
  lib.check(Math.abs(z.width - PLOT) < 0.02 && Math.abs(z.boxW - PLOT) < 1,
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
  lib.check(details === title, 'hover shows the frame in the details line: ' + details);
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
  const want = expectedFrames(stacks);
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
    await checkZoom(b.page, a.shot);
    await checkHoverAndSearch(b.page, stacks, want, a.search, a.shot);
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
