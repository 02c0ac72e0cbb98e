// Browser half of bench_memory.py: opens one memory timeline per fresh Chromium, in gpudojo
// (JupyterLab, command gpudojo:open-memory) or in pytorch.org/memory_viz's MemoryViz.js, and
// measures the time from command to painted picture, hover-to-tooltip latency and the
// renderer's memory. Usage: node memory_browser.mjs CONFIG.json; prints one JSON line.
//
// CONFIG: { chromium, viewport: {width, height}, hovers, timeoutMs,
//           jobs: [{ viewer: "gpudojo", label, lab, token, capture }
//                  | { viewer: "memory_viz", label, page, file }] }

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import { memory, WAIT_DRAWN } from './browser_common.mjs';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const log = (...args) => console.error('[memory_browser]', ...args);

/** In the page: the shared wait for a painted frame, and this benchmark's own helpers. */
const PAGE_HELPERS = WAIT_DRAWN + `
// Arm before a hover: resolves with ms from the pointer's first event timestamp to the frame after
// the tooltip's first DOM change (painted), or null when nothing changed within limitMs.
window.__benchArmHover = (selector, limitMs) => {
  const target = document.querySelector(selector);
  let moveTs = null;
  // Boundary events (pointerover, mouseover) come before the moves: take whichever is first.
  const kinds = ['pointerover', 'pointermove', 'mouseover', 'mousemove'];
  const onMove = ev => { if (moveTs === null) moveTs = ev.timeStamp; };
  for (const k of kinds) document.addEventListener(k, onMove, true);
  window.__benchHover = new Promise(resolve => {
    const done = value => { for (const k of kinds) document.removeEventListener(k, onMove, true); resolve(value); };
    const mo = new MutationObserver(() => {
      if (moveTs === null) return;
      mo.disconnect();
      clearTimeout(timer);
      const changed = performance.now() - moveTs;
      requestAnimationFrame(() => setTimeout(() => done({ painted: performance.now() - moveTs, changed }), 0));
    });
    mo.observe(target, { subtree: true, childList: true, characterData: true, attributes: true });
    const timer = setTimeout(() => { mo.disconnect(); done(null); }, limitMs);
  });
};
`;

const median = xs => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : null;
};

async function hoverSamples(page, tooltipSelector, points, off, n) {
  const samples = [];
  let missed = 0;
  for (let i = 0; i < n; i++) {
    const [x, y] = points[i % points.length];
    await page.mouse.move(off[0], off[1]);
    await page.waitForTimeout(150);
    await page.evaluate(([sel]) => window.__benchArmHover(sel, 3000), [tooltipSelector]);
    await page.mouse.move(x, y);
    const r = await page.evaluate(() => window.__benchHover);
    if (r) samples.push(r);
    else missed += 1;
  }
  return {
    n: samples.length,
    missed,
    median_ms: median(samples.map(s => s.painted)),
    median_to_dom_ms: median(samples.map(s => s.changed)),
    max_ms: samples.length ? Math.max(...samples.map(s => s.painted)) : null
  };
}

async function gpudojo(page, cdp, job) {
  await page.goto(`${job.lab}/lab?reset&token=${job.token}`, { timeout: 120000 });
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.commands.hasCommand('gpudojo:open-memory'), null, {
    timeout: 120000
  });
  await page.evaluate(() => window.jupyterapp.restored);
  await page.waitForTimeout(3000); // let the start-up work settle (sidebar, monitor)
  const before = await memory(cdp);
  const timeoutMs = config.timeoutMs;
  const result = await page.evaluate(
    async ([capture, timeoutMs]) => {
      const drawn = () => {
        const c = document.querySelector('.gpudojo-memory-view canvas.gpudojo-memory-canvas');
        if (!c || c.getAttribute('data-state') !== 'ready' || !c.width || !c.height) return false;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let filled = 0;
        for (let i = 3; i < d.length; i += 16) if (d[i] > 0) filled++;
        return filled > d.length / 16 * 0.05; // the stack covers more than axes and labels do
      };
      const t0 = performance.now();
      const opened = window.jupyterapp.commands.execute('gpudojo:open-memory', { capture });
      const t1 = await window.__benchWaitDrawn(drawn, t0, timeoutMs);
      await opened;
      const c = document.querySelector('.gpudojo-memory-view canvas.gpudojo-memory-canvas');
      return { paint_ms: t1 - t0, bands: Number(c.getAttribute('data-bands')), width: c.width, height: c.height };
    },
    [job.capture, timeoutMs]
  );
  const box = await page.locator('.gpudojo-memory-view canvas.gpudojo-memory-canvas').boundingBox();
  const points = [];
  for (let i = 0; i < 12; i++) {
    points.push([box.x + box.width * (0.15 + (0.7 * i) / 11), box.y + box.height * (i % 2 ? 0.78 : 0.72)]);
  }
  const hover = await hoverSamples(page, '.gpudojo-memory-view .gpudojo-memory-tooltip', points, [box.x + box.width / 2, box.y + box.height + 60], config.hovers);
  await page.mouse.move(box.x + box.width / 2, box.y + box.height + 60);
  const after = await memory(cdp);
  return { ...result, hover, before, after };
}

async function memoryViz(page, cdp, job) {
  await page.goto(job.page, { timeout: 120000 });
  await page.waitForFunction(() => window.__mvz !== undefined, null, { timeout: 60000 });
  await page.waitForTimeout(1000);
  const before = await memory(cdp);
  const result = await page.evaluate(
    async ([file, timeoutMs]) => {
      const errors = [];
      window.addEventListener('error', e => errors.push(String(e.message)));
      window.addEventListener('unhandledrejection', e => errors.push(String(e.reason)));
      const drawn = () => {
        if (errors.length) throw new Error(errors.join('; '));
        return document.querySelectorAll('svg polygon').length > 0;
      };
      const t0 = performance.now();
      window.__mvz.add_remote_files([{ name: file.split('/').pop(), url: file }]);
      const t1 = await window.__benchWaitDrawn(drawn, t0, timeoutMs);
      return { paint_ms: t1 - t0, polygons: document.querySelectorAll('svg polygon').length };
    },
    [job.file, config.timeoutMs]
  );
  // Hover points: over the plotted polygons of the main chart (not the minimap), as found by hit testing.
  const svgBox = await page.locator('svg').first().boundingBox();
  const points = await page.evaluate(box => {
    const out = [];
    for (let i = 0; i < 60 && out.length < 12; i++) {
      const x = box.x + box.width * (0.1 + (0.85 * i) / 59);
      for (const f of [0.9, 0.8, 0.7, 0.6]) {
        const y = box.y + box.height * f;
        const el = document.elementFromPoint(x, y);
        if (el && el.tagName === 'polygon' && el.ownerSVGElement === document.querySelector('svg')) {
          out.push([x, y]);
          break;
        }
      }
    }
    return out;
  }, svgBox);
  const hover = points.length
    ? await hoverSamples(page, 'pre', points, [svgBox.x + svgBox.width / 2, 3], config.hovers)
    : { n: 0, missed: config.hovers, median_ms: null, note: 'no polygon under the probe points' };
  const after = await memory(cdp);
  return { ...result, hover, before, after };
}

const results = [];
for (const job of config.jobs) {
  log(job.viewer, job.label);
  const browser = await chromium.launch({
    executablePath: config.chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  });
  let out;
  try {
    const context = await browser.newContext({ viewport: config.viewport });
    const page = await context.newPage();
    page.on('crash', () => log('renderer crashed'));
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    await page.addInitScript(PAGE_HELPERS);
    out = job.viewer === 'gpudojo' ? await gpudojo(page, cdp, job) : await memoryViz(page, cdp, job);
  } catch (err) {
    out = { error: String(err && err.message ? err.message : err).split('\n')[0] };
    log('failed:', out.error);
  } finally {
    await browser.close();
  }
  results.push({ viewer: job.analysis ? `${job.viewer} (${job.analysis} analysis)` : job.viewer, label: job.label, ...out });
}
console.log(JSON.stringify(results));
