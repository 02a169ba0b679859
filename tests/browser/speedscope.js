// SPDX-License-Identifier: GPL-2.0
/*
 * A perfspy speedscope file in speedscope itself (the npm package's
 * built app, served from 127.0.0.1, the file given by #profileURL=):
 *   node speedscope.js --modules DIR --chromium EXE --json FILE --shot PREFIX
 * Checks: the import ends with speedscope's view of the profile and not
 * its "Something went wrong" page, no script error; the toolbar names the
 * profile the file marks active and counts every profile (one per
 * thread); the Sandwich tab lists the frames that carry the most
 * self weight in that profile (computed here from the file); keys n/p
 * move to another thread's profile. Screenshots: PREFIX.png (time order)
 * and PREFIX-sandwich.png.
 */
'use strict';

const fs = require('fs');
const path = require('path');
const lib = require('./lib');

/* Names of the frames with the most self weight in profile @p. */
function topSelf(file, p, k) {
  const self = new Map();
  p.samples.forEach((s, i) => {
    if (!s.length) return;
    const name = file.shared.frames[s[s.length - 1]].name;
    self.set(name, (self.get(name) || 0) + p.weights[i]);
  });
  return Array.from(self.entries()).sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
    .slice(0, k).map((e) => e[0]);
}

async function bodyText(page) {
  return page.evaluate(() => document.body.innerText);
}

async function main() {
  const a = lib.parseArgs(process.argv.slice(2));
  const file = JSON.parse(fs.readFileSync(a.json, 'utf8'));
  const active = file.profiles[file.activeProfileIndex || 0];
  const n = file.profiles.length;
  const srv = await lib.serve({
    '/speedscope/': path.join(a.modules, 'speedscope', 'dist', 'release'),
    '/profile/': path.dirname(a.json),
  });
  const b = await lib.launch(a.modules, a.chromium, srv.url, { width: 1280, height: 720 });
  try {
    const prof = srv.url + '/profile/' + path.basename(a.json);
    await b.page.goto(srv.url + '/speedscope/index.html#profileURL=' + encodeURIComponent(prof));
    const head = `${active.name} (${(file.activeProfileIndex || 0) + 1}/${n})`;
    let shown = true;
    await b.page.waitForFunction((h) => document.body.innerText.includes(h) ||
      document.body.innerText.includes('Something went wrong'), head, { timeout: 30000 })
      .catch(() => { shown = false; });
    let text = await bodyText(b.page);
    lib.check(shown && !text.includes('Something went wrong'),
      `speedscope imports the file and shows "${head}"`, text.slice(0, 200));
    await b.page.waitForTimeout(500); /* let the flame chart paint */
    await b.page.screenshot({ path: a.shot + '.png' });
    console.log('screenshot: ' + a.shot + '.png');
    await b.page.getByText('Sandwich', { exact: false }).first().click();
    const table = await b.page.waitForFunction(() => document.body.innerText.includes('Symbol Name'),
      null, { timeout: 15000 }).then(() => true, () => false);
    lib.check(table, 'the Sandwich tab shows the frame table');
    text = await bodyText(b.page);
    const names = topSelf(file, active, 5);
    const missing = names.filter((x) => !text.includes(x));
    lib.check(names.length > 0 && missing.length === 0,
      `sandwich view lists the heaviest frames: ${names.join(', ')}`,
      'missing: ' + missing.join(', '));
    await b.page.screenshot({ path: a.shot + '-sandwich.png' });
    if (n > 1) {
      /* speedscope: n = next profile, p = previous; neither wraps. */
      const at = file.activeProfileIndex || 0;
      const key = at + 1 < n ? 'n' : 'p';
      await b.page.keyboard.press(key);
      const next = file.profiles[key === 'n' ? at + 1 : at - 1].name;
      const moved = await b.page.waitForFunction((x) => document.body.innerText.includes(x), next,
        { timeout: 10000 }).then(() => true, () => false);
      lib.check(moved, `key ${key} shows another thread's profile: ${next}`);
    }
    lib.check(b.errors.length === 0, 'no script error', b.errors.join('; '));
    if (b.external.length) console.log('note: external requests refused: ' + b.external.join(' '));
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
