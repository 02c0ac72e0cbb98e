import { Locator, Page, expect, test } from '@playwright/test';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { ARTIFACTS, TOKEN, keepScreenshot, openLab, openSidebar, startScriptRun } from './helpers';

const repo = path.resolve(__dirname, '..', '..');
const python = path.join(repo, '.venv', 'bin', 'python');

/** Phases labkit would have marked, and the model context that lets the server suggest OOM fixes. */
const SIDECAR = {
  phases: [
    [1_000_000, 'forward'],
    [1_030_000, 'backward'],
    [1_055_000, 'optimizer']
  ],
  context: {
    parameters: 100_000_000,
    optimizer: 'adam',
    precision: 'fp32',
    micro_batch: 8,
    layers: 12,
    activation_bytes_per_sample: 50_000_000
  }
};

/** A snapshot-shaped pickle (what torch.cuda.memory._snapshot() returns), base64, from tests/python/memory_data.py. */
function snapshotBase64(entries: number, seed: number, oom: boolean): string {
  const code = [
    'import sys, base64',
    `sys.path.insert(0, ${JSON.stringify(path.join(repo, 'tests', 'python'))})`,
    'from memory_data import make_snapshot, dump',
    `print(base64.b64encode(dump(make_snapshot(${entries}, seed=${seed}, oom=${oom ? 'True' : 'False'}))).decode())`
  ].join('\n');
  return execFileSync(python, ['-c', code], { encoding: 'utf8', maxBuffer: 64 << 20 }).trim();
}

/** Upload a snapshot and its phases sidecar into the server's root, as the file browser's upload does. */
async function uploadSnapshot(page: Page, name: string, seed: number, oom: boolean): Promise<void> {
  const put = await page.request.put(`/api/contents/${name}.pickle?token=${TOKEN}`, {
    data: { type: 'file', format: 'base64', content: snapshotBase64(3000, seed, oom) }
  });
  expect(put.ok()).toBe(true);
  const sidecar = await page.request.put(`/api/contents/${name}.phases.json?token=${TOKEN}`, {
    data: { type: 'file', format: 'text', content: JSON.stringify(SIDECAR) }
  });
  expect(sidecar.ok()).toBe(true);
}

/** Right-click the file in the file browser, "Open memory timeline", and return its view. */
async function openFromFileBrowser(page: Page, file: string): Promise<Locator> {
  if (!(await page.locator('#filebrowser').isVisible())) {
    await page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="filebrowser"]').click();
  }
  const item = page.locator('.jp-DirListing-item', { hasText: file });
  await expect(async () => {
    await page.locator('#filebrowser [data-command="filebrowser:refresh"]').click();
    await expect(item).toBeVisible({ timeout: 2_000 });
  }).toPass({ timeout: 30_000 });
  await item.click({ button: 'right' });
  await page.locator('.lm-Menu-itemLabel', { hasText: 'Open memory timeline' }).click();
  const view = page.locator(`.gpudojo-memory-view[data-capture="file:${file}"]`);
  await expect(view).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  return view;
}

/** Pixels of the canvas's plot that are not background: the stack was drawn. */
async function drawnPixels(canvas: Locator): Promise<number> {
  return canvas.evaluate((node: HTMLCanvasElement) => {
    const ctx = node.getContext('2d');
    if (!ctx) {
      return 0;
    }
    const dpr = window.devicePixelRatio || 1;
    const x = Math.round(70 * dpr);
    const data = ctx.getImageData(x, 0, node.width - x, node.height - Math.round(30 * dpr)).data;
    let count = 0;
    for (let i = 3; i < data.length; i += 4) {
      count += data[i] > 0 ? 1 : 0;
    }
    return count;
  });
}

async function axisRange(canvas: Locator): Promise<number> {
  return Number(await canvas.getAttribute('data-t1')) - Number(await canvas.getAttribute('data-t0'));
}

test('a learner opens a CUDA snapshot with an OOM: timeline, peak, zoom, stack on hover, fixes, diff and the estimator', async ({
  page
}) => {
  test.setTimeout(240_000);
  await uploadSnapshot(page, 'memory-oom', 0, true);
  await uploadSnapshot(page, 'memory-b', 1, false);
  await openLab(page);
  const view = await openFromFileBrowser(page, 'memory-oom.pickle');

  await expect(view.locator('.gpudojo-memory-mode-label')).toHaveText('CUDA snapshot');
  await expect(view.locator('.gpudojo-memory-download')).toHaveAttribute('href', /memory\/raw\?capture=file%3Amemory-oom\.pickle/);
  await expect(view.locator('.gpudojo-memory-download-row')).toContainText('pytorch.org/memory_viz');
  for (const phase of ['forward', 'backward', 'optimizer']) {
    await expect(view.locator(`.gpudojo-memory-legend li[data-category="${phase}"]`)).toBeVisible();
  }

  // The canvas is drawn: the stack covers pixels of the plot.
  const canvas = view.locator('canvas.gpudojo-memory-canvas');
  await expect(canvas).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  await expect.poll(() => drawnPixels(canvas)).toBeGreaterThan(5_000);

  // The peak: total, by phase, where in the code.
  const peak = view.locator('.gpudojo-memory-peak');
  await expect(peak.locator('.gpudojo-memory-peak-total')).toContainText('live at');
  await expect(peak.locator('.gpudojo-memory-bars li').first()).toBeVisible();
  await expect(peak.locator('.gpudojo-memory-frames')).toContainText('train.py:');

  // Zoom in: the window is asked again for a narrower range.
  const before = await axisRange(canvas);
  await view.locator('.gpudojo-memory-zoom-in').click();
  await view.locator('.gpudojo-memory-zoom-in').click();
  await expect.poll(() => axisRange(canvas), { timeout: 20_000 }).toBeLessThan(before / 2);
  await expect(canvas).toHaveAttribute('data-state', 'ready');
  await expect.poll(() => drawnPixels(canvas)).toBeGreaterThan(1_000);

  // Hover an allocation near the bottom of the stack: its size, address and stack frame.
  const box = (await canvas.boundingBox())!;
  const tooltip = view.locator('.gpudojo-memory-tooltip');
  await expect(async () => {
    for (const fx of [0.5, 0.35, 0.65, 0.2, 0.8, 0.45, 0.55]) {
      await page.mouse.move(box.x + 64 + fx * (box.width - 76), box.y + box.height - 30);
      if ((await tooltip.getAttribute('data-kind')) === 'band' && (await tooltip.isVisible())) {
        return;
      }
    }
    throw new Error('no allocation under the cursor');
  }).toPass({ timeout: 20_000 });
  await expect(tooltip.locator('.gpudojo-memory-tooltip-frame')).toHaveText(/train\.py:(42 forward|57 backward_step)/);
  await expect(tooltip).toContainText('address 0x7f');
  await expect(tooltip).toContainText('live ');
  // A click pins it; a second click lets it go.
  await page.mouse.down();
  await page.mouse.up();
  await expect(tooltip).toHaveClass(/gpudojo-memory-pinned/);
  await view.locator('.gpudojo-memory-zoom-reset').click();

  // Legend: a phase alone, then all again.
  const forward = view.locator('.gpudojo-memory-legend li[data-category="forward"]');
  await forward.locator('.gpudojo-memory-legend-name').click();
  await expect(view.locator('.gpudojo-memory-legend li[data-category="backward"]')).toHaveAttribute('data-visible', 'false');
  await forward.locator('.gpudojo-memory-legend-name').click();
  await expect(view.locator('.gpudojo-memory-legend li[data-category="backward"]')).toHaveAttribute('data-visible', 'true');

  // The OOM: what was asked, what was free, what was live, the ways out with their savings.
  const oom = view.locator('.gpudojo-memory-oom');
  await expect(oom.locator('.gpudojo-memory-oom-asked')).toContainText('8.00 GiB failed with 1.00 GiB free');
  await expect(oom.locator('.gpudojo-memory-fixes li').first()).toContainText('saves');
  await expect(oom.locator('.gpudojo-memory-fixes li[data-action="halve the micro-batch"]')).toBeVisible();

  // Estimator: the bar with one segment per term and the measured peak marked.
  const estimator = view.locator('.gpudojo-estimator');
  await estimator.locator('input[name="parameters"]').fill('100000000');
  await estimator.locator('input[name="micro_batch"]').fill('8');
  await estimator.locator('input[name="activation_bytes_per_sample"]').fill('50000000');
  await estimator.locator('.gpudojo-estimator-run').click();
  await expect(estimator.locator('.gpudojo-estimator-bar .gpudojo-estimator-segment')).not.toHaveCount(0);
  await expect(estimator.locator('.gpudojo-estimator-bar .gpudojo-estimator-segment[data-component="optimizer_states"]')).toBeVisible();
  await expect(estimator.locator('.gpudojo-estimator-marker')).toHaveCount(1);
  await expect(estimator.locator('.gpudojo-estimator-formulas li').first()).toContainText('=');
  await view.evaluate(node => node.scrollTo(0, 0));
  await keepScreenshot(page, 'memory-view.png');
  fs.mkdirSync(path.join(repo, 'docs'), { recursive: true });
  fs.copyFileSync(path.join(ARTIFACTS, 'memory-view.png'), path.join(repo, 'docs', 'memory-view.png'));

  // Diff against a second snapshot, open in its own tab.
  const other = await openFromFileBrowser(page, 'memory-b.pickle');
  await expect(other.locator('canvas.gpudojo-memory-canvas')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  await page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab', { hasText: 'memory-oom' }).click();
  const picker = view.locator('.gpudojo-memory-diff-pick select');
  await expect(async () => {
    await picker.focus();
    await expect(picker.locator('option[value="file:memory-b.pickle"]')).toHaveCount(1, { timeout: 2_000 });
  }).toPass({ timeout: 20_000 });
  await picker.selectOption('file:memory-b.pickle');
  await view.locator('.gpudojo-memory-diff-run').click();
  const diff = view.locator('.gpudojo-memory-diff');
  await expect(diff.locator('.gpudojo-memory-diff-headline')).toContainText('Peak');
  await expect(diff.locator('tr[data-key="forward"]')).toBeVisible();
});

test('a run asked to record memory says so, and its Memory section says what it found', async ({ page }) => {
  test.setTimeout(180_000);
  const id = await startScriptRun(page, 'memory_noop.py', 'print("no capture here")\n', {
    record_memory: true
  });
  await openLab(page);
  const panel = await openSidebar(page);
  await panel.locator(`#gpudojo-runs-list .gpudojo-run-row[data-run="${id}"]`).click();
  const view = page.locator(`#gpudojo-run-${id} .gpudojo-run-view`);
  await expect(view.locator('.gpudojo-run-record-memory')).toHaveText('recording memory');
  await expect(view).toHaveAttribute('data-status', /succeeded|failed/, { timeout: 60_000 });
  const section = view.locator('.gpudojo-run-memory-section');
  await expect(section.locator('.gpudojo-memory-captures-message')).toContainText('wrote no capture');
});
