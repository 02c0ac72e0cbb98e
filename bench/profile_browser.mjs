// Browser half of bench_profile.py: one measurement per fresh Chromium. gpudojo: JupyterLab's
// command gpudojo:open-profile on a trace whose analysis is cached, to the frame after the
// timeline canvas is drawn and the step chart is in the page, then wheel zooms to the repainted
// window. json_floor: the same trace fetched from a local http server and JSON.parse-d in a blank
// page (what any viewer that loads the whole JSON pays first). chrome_tracing: whether
// chrome://tracing still exists in this Chromium. Renderer memory after each.
// Usage: node profile_browser.mjs CONFIG.json; prints one JSON line.
//
// CONFIG: { chromium, viewport: {width, height}, zooms, timeoutMs,
//           jobs: [{ viewer: "gpudojo", label, shape, lab, token, trace }
//                  | { viewer: "json_floor", label, shape, page, file }
//                  | { viewer: "chrome_tracing", label, shape }] }

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import { memory, WAIT_DRAWN } from './browser_common.mjs';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const log = (...args) => console.error('[profile_browser]', ...args);

/** In the page: the shared wait for a painted frame, and this benchmark's own helpers. */
const PAGE_HELPERS = WAIT_DRAWN + `
window.__benchCanvas = () => document.querySelector('.gpudojo-profile-view canvas.gpudojo-profile-canvas');
// The timeline is drawn: its window arrived (data-state ready) and its spans cover some pixels.
window.__benchTimelineDrawn = () => {
  const c = window.__benchCanvas();
  if (!c || c.getAttribute('data-state') !== 'ready' || !c.width || !c.height) return false;
  if (!(Number(c.getAttribute('data-spans')) > 0)) return false;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let filled = 0;
  for (let i = 3; i < d.length; i += 16) if (d[i] > 0) filled++;
  return filled > (d.length / 16) * 0.02;
};
// Arm before a wheel: resolves with ms from the wheel event's timestamp to the frame after the
// canvas holds a window for the new view range (data-state ready, data-t0 changed).
window.__benchArmZoom = limitMs => {
  const c = window.__benchCanvas();
  const before = c.getAttribute('data-t0') + '/' + c.getAttribute('data-t1');
  let wheelTs = null;
  const onWheel = ev => { if (wheelTs === null) wheelTs = ev.timeStamp; };
  c.addEventListener('wheel', onWheel, { capture: true });
  window.__benchZoom = new Promise(resolve => {
    const start = performance.now();
    const tick = () => {
      const now = c.getAttribute('data-t0') + '/' + c.getAttribute('data-t1');
      if (wheelTs !== null && c.getAttribute('data-state') === 'ready' && now !== before) {
        c.removeEventListener('wheel', onWheel, { capture: true });
        requestAnimationFrame(() => setTimeout(() => resolve({ ms: performance.now() - wheelTs, range: now }), 0));
      } else if (performance.now() - start > limitMs) {
        c.removeEventListener('wheel', onWheel, { capture: true });
        resolve(null);
      } else {
        requestAnimationFrame(tick);
      }
    };
    requestAnimationFrame(tick);
  });
};
`;

const median = xs => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : null;
};

async function zoomSamples(page, n) {
  const canvas = page.locator('.gpudojo-profile-view canvas.gpudojo-profile-canvas');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  // Over the spans, right of the lane labels: the wheel zooms about the pointer.
  await page.mouse.move(box.x + box.width * 0.55, box.y + box.height * 0.4);
  const samples = [];
  let missed = 0;
  for (let i = 0; i < n; i++) {
    await page.waitForTimeout(200);
    await page.evaluate(() => window.__benchArmZoom(10000));
    await page.mouse.wheel(0, -240);
    const r = await page.evaluate(() => window.__benchZoom);
    if (r) samples.push(r.ms);
    else missed += 1;
  }
  const spans = Number(await canvas.getAttribute('data-spans'));
  return { n: samples.length, missed, median_ms: median(samples), max_ms: samples.length ? Math.max(...samples) : null, spans };
}

async function gpudojo(page, cdp, job) {
  await page.goto(`${job.lab}/lab?reset&token=${job.token}`, { timeout: 120000 });
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.commands.hasCommand('gpudojo:open-profile'), null, {
    timeout: 120000
  });
  await page.evaluate(() => window.jupyterapp.restored);
  await page.waitForTimeout(3000); // let the start-up work settle (sidebar, monitor)
  const before = await memory(cdp);
  const result = await page.evaluate(
    async ([trace, timeoutMs]) => {
      const drawn = () =>
        window.__benchTimelineDrawn() && document.querySelector('.gpudojo-profile-view .gpudojo-profile-steps-bars .gpudojo-profile-step') !== null;
      const t0 = performance.now();
      const opened = window.jupyterapp.commands.execute('gpudojo:open-profile', { trace });
      const t1 = await window.__benchWaitDrawn(drawn, t0, timeoutMs);
      await opened;
      const c = window.__benchCanvas();
      return {
        paint_ms: t1 - t0,
        spans: Number(c.getAttribute('data-spans')),
        steps: document.querySelectorAll('.gpudojo-profile-view .gpudojo-profile-step').length,
        width: c.width,
        height: c.height
      };
    },
    [job.trace, config.timeoutMs]
  );
  const zoom = await zoomSamples(page, config.zooms);
  const after = await memory(cdp);
  return { ...result, zoom, before, after };
}

async function jsonFloor(page, cdp, job) {
  await page.goto(job.page, { timeout: 60000 });
  await page.waitForTimeout(500);
  const before = await memory(cdp);
  const result = await page.evaluate(async ([file, timeoutMs]) => {
    const t0 = performance.now();
    const text = await (await fetch(file)).text();
    const fetched = performance.now();
    const trace = JSON.parse(text);
    window.__trace = trace; // a viewer keeps what it loaded
    const events = trace.traceEvents.length;
    const t1 = await window.__benchWaitDrawn(() => true, t0, timeoutMs);
    return { paint_ms: t1 - t0, fetch_ms: fetched - t0, parse_ms: t1 - fetched, events, chars: text.length };
  }, [job.file, config.timeoutMs]);
  const after = await memory(cdp);
  return { ...result, before, after };
}

async function chromeTracing(page) {
  // Debian's Chromium hides debug pages (chrome://tracing among them) until chrome://chrome-urls enables them.
  const notes = [];
  await page.goto('chrome://chrome-urls', { timeout: 30000 });
  await page.waitForTimeout(1000);
  const listed = await page.evaluate(() => (document.querySelector('chrome-urls-app')?.shadowRoot?.textContent ?? '').includes('chrome://tracing'));
  notes.push(`chrome://tracing ${listed ? 'is' : 'is not'} in chrome://chrome-urls`);
  const enable = page.locator('button, cr-button').filter({ hasText: /enable internal debugging pages/i });
  if (await enable.count()) {
    await enable.first().click();
    await page.waitForTimeout(800);
    notes.push('debug pages enabled there');
  }
  try {
    await page.goto('chrome://tracing', { timeout: 30000 });
  } catch (err) {
    return { result: `${notes.join('; ')}; chrome://tracing did not open: ${String(err.message).split('\n')[0]}` };
  }
  await page.waitForTimeout(1500);
  const probe = await page.evaluate(() => ({
    url: location.href,
    title: document.title,
    viewer: !!document.querySelector('tr-ui-timeline-view, #load-button, tr-ui-b-dropdown, profiling-view')
  }));
  const state = probe.viewer ? 'its trace viewer is there (loading a file into it is not automated here)' : 'no trace viewer in the page';
  return { result: `${notes.join('; ')}; ${state} (url ${probe.url}, title ${JSON.stringify(probe.title)})`, probe };
}

const results = [];
for (const job of config.jobs) {
  log(job.viewer, job.shape, job.label);
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
    if (job.viewer === 'gpudojo') out = await gpudojo(page, cdp, job);
    else if (job.viewer === 'json_floor') out = await jsonFloor(page, cdp, job);
    else out = await chromeTracing(page);
  } catch (err) {
    out = { error: String(err && err.message ? err.message : err).split('\n')[0] };
    log('failed:', out.error);
  } finally {
    await browser.close();
  }
  results.push({ viewer: job.viewer, label: job.label, shape: job.shape, ...out });
}
console.log(JSON.stringify(results));
