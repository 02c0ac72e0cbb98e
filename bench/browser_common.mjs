// What the browser halves of the benchmarks share (memory_browser.mjs, profile_browser.mjs):
// the renderers' memory and a page helper that waits for a painted frame.

import fs from 'node:fs';

/** VmRSS (bytes) of each Chromium renderer started by this Node process. */
export function rendererRss() {
  const parentOf = pid => {
    try {
      return Number(/^PPid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
    } catch {
      return 0;
    }
  };
  const found = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let cmdline;
    try {
      cmdline = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.includes('--type=renderer') || cmdline.includes('--extension-process')) continue;
    let p = Number(name);
    for (let i = 0; i < 8 && p > 1; i++) {
      p = parentOf(p);
      if (p === process.pid) {
        try {
          found.push(Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${name}/status`, 'utf8'))[1]) * 1024);
        } catch {
          // exited meanwhile
        }
        break;
      }
    }
  }
  return found;
}

/** The page's JS heap after two collections, its DOM nodes and the largest renderer's RSS. */
export async function memory(cdp) {
  // Two collections: the second frees what finalisers of the first released.
  await cdp.send('HeapProfiler.collectGarbage');
  await cdp.send('HeapProfiler.collectGarbage');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const m = Object.fromEntries(metrics.map(x => [x.name, x.value]));
  return {
    js_heap_used: m.JSHeapUsedSize,
    js_heap_total: m.JSHeapTotalSize,
    dom_nodes: m.Nodes,
    renderer_rss: Math.max(0, ...rendererRss())
  };
}

/** In the page: resolve with performance.now() once `drawn()` holds and that frame has painted. */
export const WAIT_DRAWN = `
window.__benchWaitDrawn = (drawn, t0, timeoutMs) => new Promise((resolve, reject) => {
  const tick = () => {
    let ok = false;
    try { ok = drawn(); } catch (e) { reject(e); return; }
    if (ok) {
      requestAnimationFrame(() => setTimeout(() => resolve(performance.now()), 0));
    } else if (performance.now() - t0 > timeoutMs) {
      reject(new Error('not drawn within ' + timeoutMs + ' ms'));
    } else {
      requestAnimationFrame(tick);
    }
  };
  requestAnimationFrame(tick);
});
`;
