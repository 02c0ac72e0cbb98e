import { expect, test } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';
import { ARTIFACTS, chartedSamples, keepScreenshot, openLab, openSidebar } from './helpers';

const repo = path.resolve(__dirname, '..', '..');

test('the replayed 8-GPU node tells the truth: recording time, eight colours, names, topology, MIG, cards', async ({
  page
}) => {
  const errors: string[] = [];
  page.on('pageerror', e => errors.push(String(e)));
  await openLab(page);
  const panel = await openSidebar(page);

  // A replay of a synthetic recording, and said so.
  await expect(panel.locator('.gpudojo-mode-badge')).toContainText('Replay');
  await expect(panel.locator('.gpudojo-synthetic')).toHaveText('synthetic recording');
  const cards = panel.locator('.gpudojo-gpu-card');
  await expect(cards).toHaveCount(8);

  // The whole model name, never cut by an ellipsis.
  const name = cards.nth(0).locator('.gpudojo-gpu-name');
  await expect(name).toHaveText('NVIDIA A100-SXM4-80GB');
  expect(await name.evaluate(el => el.scrollWidth <= el.clientWidth + 1)).toBe(true);

  // GPU 0's three MIG instances are listed, by profile.
  const mig = cards.nth(0).locator('.gpudojo-mig-instance');
  await expect(mig).toHaveCount(3);
  await expect(mig.nth(0)).toContainText('MIG 3g.40gb');
  await expect(mig.nth(2)).toContainText('MIG 1g.10gb');

  // The topology matrix scrolls: its last column (GPU7) can be brought into view.
  const lastColumn = panel.locator('.gpudojo-topology thead th').last();
  await expect(lastColumn).toHaveText('GPU7');
  await lastColumn.scrollIntoViewIfNeeded();
  const inBox = await page.locator('.gpudojo-topology-scroll').evaluate(box => {
    const cell = box.querySelector('thead th:last-child')!.getBoundingClientRect();
    const frame = box.getBoundingClientRect();
    return cell.right <= frame.right + 1 && cell.left >= frame.left - 1;
  });
  expect(inBox).toBe(true);
  await keepScreenshot(page, 'replay-8gpu-sidebar.png');

  // A card click opens the monitor on that GPU.
  const card4 = panel.locator('.gpudojo-gpu-card[data-gpu-index="4"]');
  await card4.scrollIntoViewIfNeeded();
  await card4.locator('.gpudojo-gpu-card-header').click();
  const monitor = page.locator('#gpudojo-gpu-monitor');
  await expect(monitor).toBeVisible();
  const body = monitor.locator('.gpudojo-monitor');
  await expect(body).toHaveAttribute('data-shown-gpus', '4');
  await expect(monitor.locator('.gpudojo-gpu-chip[data-gpu-index="4"]')).toHaveAttribute('aria-pressed', 'true');
  await expect(monitor.locator('.gpudojo-gpu-chip[data-gpu-index="0"]')).toHaveAttribute('aria-pressed', 'false');
  const legend = monitor.locator('.gpudojo-chart[data-metric="utilization"] .u-legend .u-series');
  await expect(legend).toHaveCount(9);
  await expect(legend.nth(5)).not.toHaveClass(/u-off/); // GPU 4 (series 0 is time)
  await expect(legend.nth(1)).toHaveClass(/u-off/);

  // "Replay", never "Live"; the recording's own time on the axis.
  await expect(monitor.locator('.gpudojo-status')).toContainText('Replay');
  await expect(monitor.locator('.gpudojo-status')).not.toContainText('Live');
  await expect(monitor.locator('.gpudojo-synthetic')).toHaveText('synthetic recording');
  await expect(monitor.locator('.gpudojo-recording-line')).toContainText('time into the recording');
  await expect(body).toHaveAttribute('data-time-axis', 'recording');
  await expect.poll(() => chartedSamples(page)).toBeGreaterThan(4);

  // Eight GPUs, eight different colours (the legend markers carry the series' strokes).
  await monitor.locator('.gpudojo-gpu-chip-all').click();
  await expect(body).toHaveAttribute('data-shown-gpus', 'all');
  const colours = await legend.evaluateAll(items =>
    items.slice(1).map(item => getComputedStyle(item.querySelector('.u-marker')!).borderColor)
  );
  expect(colours).toHaveLength(8);
  expect(new Set(colours).size).toBe(8);

  // Hovering says the time as the axis does: m:ss into the recording, not a clock time.
  const plot = monitor.locator('.gpudojo-chart[data-metric="utilization"] .u-over');
  const box = (await plot.boundingBox())!;
  await page.mouse.move(box.x + box.width - 20, box.y + box.height / 2);
  const hover = monitor.locator('.gpudojo-chart[data-metric="utilization"] .u-legend .u-series').first();
  await expect(hover).toContainText('Recording');
  await expect(hover.locator('.u-value')).toHaveText(/^\d+:\d\d(\.\d)?( · pass \d+)?$/);

  // The picture for the docs: a minute's window with half a minute of the recording in it.
  await page.locator('.gpudojo-window').selectOption('60');
  await expect.poll(() => chartedSamples(page), { timeout: 40_000 }).toBeGreaterThan(60);
  await page.mouse.move(box.x + box.width - 40, box.y + box.height / 2);
  await keepScreenshot(page, 'replay-monitor.png');
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.copyFileSync(path.join(ARTIFACTS, 'replay-monitor.png'), path.join(repo, 'docs', 'replay-monitor.png'));
  expect(errors).toEqual([]);
});
