import { Locator, Page, expect, test } from '@playwright/test';
import { TOKEN, keepScreenshot, openLab, openSidebar } from './helpers';

const LAB = 'lab-02-pytorch-gpu';
/** A small sweep (batches 1 .. max_batch of 32x32 images through an 8-channel CNN) takes a few seconds on the CPU. */
const RUN_TIMEOUT = 60_000;

/** Open lab 2's run form from its Run button in the Course section. */
async function openRunForm(page: Page): Promise<Locator> {
  const panel = await openSidebar(page);
  const button = panel.locator(`#gpudojo-course-section .gpudojo-run-lab[data-lab="${LAB}"]`);
  await expect(button).toBeVisible({ timeout: 30_000 });
  await button.click();
  const form = page.locator(`#gpudojo-run-form-${LAB} .gpudojo-run-form`);
  await expect(form).toBeVisible();
  return form;
}

/**
 * Fill the form for a run that is quick on the CPU and still reaches the profiled passes (the
 * lab profiles its largest batch), tick "Record profile", press Start and return the run view.
 */
async function startProfiledRun(page: Page, maxBatch: number): Promise<{ id: string; view: Locator }> {
  const form = await openRunForm(page);
  await form.locator('input[name="max_batch"]').fill(String(maxBatch));
  await form.locator('select[name="image_size"]').selectOption({ label: '32' });
  await form.locator('select[name="width"]').selectOption({ label: '8' });
  await form.locator('input[name="seconds_per_point"]').fill('0.02');
  const record = form.locator('.gpudojo-run-record-profile-toggle input[name="record_profile"]');
  await record.check();
  await expect(record).toBeChecked();
  await form.locator('.gpudojo-run-start').click();
  await expect(form).toHaveCount(0, { timeout: 30_000 });
  const shown = page.locator('.gpudojo-run-view:visible');
  await expect(shown).toBeVisible();
  const tab = await shown.evaluate(node => node.closest('[id^="gpudojo-run-"]')?.id ?? '');
  const id = /^gpudojo-run-(\d{8}-\d{6}-[0-9a-f]{6})$/.exec(tab)![1];
  const view = page.locator(`#gpudojo-run-${id} .gpudojo-run-view`);
  await expect(view).toBeVisible();
  return { id, view };
}

/** The time range the timeline shows now (µs). */
async function viewSpan(canvas: Locator): Promise<number> {
  return Number(await canvas.getAttribute('data-view-t1')) - Number(await canvas.getAttribute('data-view-t0'));
}

/** The time axis's tick labels as last drawn. */
async function tickLabels(canvas: Locator): Promise<string[]> {
  return JSON.parse((await canvas.getAttribute('data-ticks')) ?? '[]');
}

/** The time range the canvas's last window covers (µs). */
async function windowSpan(canvas: Locator): Promise<number> {
  return Number(await canvas.getAttribute('data-t1')) - Number(await canvas.getAttribute('data-t0'));
}

test('a learner records a profile of lab 2 on the CPU, reads it, zooms the timeline and compares two runs', async ({
  page
}) => {
  test.setTimeout(300_000);
  await openLab(page);

  // First run: batches up to 4, with "Record profile".
  const first = await startProfiledRun(page, 4);
  await expect(first.view.locator('.gpudojo-run-record-profile')).toHaveText('recording profile');
  await expect(first.view).toHaveAttribute('data-status', 'succeeded', { timeout: RUN_TIMEOUT });

  // The run's Profile section lists the trace rank 0 wrote.
  const section = first.view.locator('.gpudojo-run-profile-section');
  await expect(section).toBeVisible();
  await expect(section).toHaveAttribute('data-traces', '1', { timeout: 30_000 });
  const item = section.locator('.gpudojo-profile-traces li[data-trace]');
  await expect(item).toHaveCount(1);
  const trace = (await item.getAttribute('data-trace'))!;
  expect(trace).toContain(first.id);
  // Nothing to compare with yet: this is the lab's first profiled run.
  await expect(section.locator('.gpudojo-profile-compare-previous')).toHaveCount(0);
  await item.locator('.gpudojo-profile-trace-open').click();

  const profile = page.locator(`.gpudojo-profile-view[data-trace="${trace}"]`);
  await expect(profile).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(profile).toHaveAttribute('data-mode', 'cpu');

  // A CPU-only trace says what it cannot show.
  await expect(profile.locator('.gpudojo-profile-cannot-show')).toContainText('GPU kernels');
  await expect(profile.locator('.gpudojo-profile-cannot-show')).toContainText('NCCL');

  // The step chart: one bar per profiled pass (the lab records three), stacked by category.
  const steps = profile.locator('.gpudojo-profile-steps-section');
  await expect(steps).toHaveAttribute('data-steps', '3');
  await expect(steps.locator('.gpudojo-profile-step')).toHaveCount(3);
  await expect(steps.locator('.gpudojo-profile-step .gpudojo-profile-segment[data-category="compute"]')).toHaveCount(3);
  await expect(steps.locator('.gpudojo-profile-mean')).toContainText('compute');

  // The findings the analysis made of this run, each with its evidence and a suggestion. Which
  // pass their thresholds depends on the measured run (a tiny CNN on this CPU may have none; the
  // rendering of each kind is in tests/js/profileViews.test.ts): the view shows exactly the
  // server's, or says that nothing stood out.
  const summary = await (
    await page.request.get(`/gpudojo/api/profile/summary?trace=${encodeURIComponent(trace)}&token=${TOKEN}`)
  ).json();
  const shown = profile.locator('.gpudojo-profile-finding');
  await expect(shown).toHaveCount(summary.findings.length);
  for (const [k, f] of (summary.findings as { title: string; evidence: string; suggestion: string }[]).entries()) {
    await expect(shown.nth(k).locator('.gpudojo-profile-finding-title')).toHaveText(f.title);
    await expect(shown.nth(k).locator('.gpudojo-profile-finding-evidence')).toHaveText(f.evidence);
    await expect(shown.nth(k).locator('.gpudojo-profile-finding-suggestion')).toHaveText(`Try: ${f.suggestion}`);
  }
  if (!summary.findings.length) {
    await expect(profile.locator('.gpudojo-profile-findings-section')).toContainText('Nothing stands out');
  }

  // The top operators, by self time: aten ops of the CNN's forward pass, no device columns on a CPU trace.
  const ops = profile.locator('table.gpudojo-profile-ops');
  await expect(ops).toHaveAttribute('data-sort', 'self_us');
  await expect(ops.locator('tbody tr').first()).toHaveAttribute('data-op', /^aten::/);
  await expect(ops.locator('tbody tr[data-op*="convolution"]').first()).toBeVisible();
  await expect(ops.locator('th[data-key="device_self_us"], th[data-key="device_total_us"]')).toHaveCount(0);

  // The timeline: zoom in with the wheel over the plot, and the server is asked for the narrower window.
  const canvas = profile.locator('canvas.gpudojo-profile-canvas');
  await canvas.scrollIntoViewIfNeeded();
  await expect(canvas).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  expect(Number(await canvas.getAttribute('data-spans'))).toBeGreaterThan(0);
  const whole = await windowSpan(canvas);
  const box = (await canvas.boundingBox())!;
  const plotLeft = 180;
  await page.mouse.move(box.x + plotLeft + (box.width - plotLeft - 10) / 2, box.y + box.height / 2);
  await page.mouse.wheel(0, -400);
  await expect.poll(() => windowSpan(canvas), { timeout: 20_000 }).toBeLessThan(whole * 0.9);
  await expect(canvas).toHaveAttribute('data-state', 'ready');
  const zoomed = await windowSpan(canvas);
  await profile.locator('.gpudojo-profile-zoom-in').click();
  await expect.poll(() => windowSpan(canvas), { timeout: 20_000 }).toBeLessThan(zoomed * 0.9);
  await expect(canvas).toHaveAttribute('data-state', 'ready');
  await expect(profile.locator('.gpudojo-profile-range')).toContainText('shown');

  // Hover an operator (the deepest rows are aten ops): its name and duration at once, then its input shapes.
  const tooltip = profile.locator('.gpudojo-profile-tooltip');
  const area = (await canvas.boundingBox())!;
  await expect(async () => {
    for (const fx of [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8]) {
      for (let y = area.height - 8; y > 28; y -= 6) {
        await page.mouse.move(area.x + plotLeft + fx * (area.width - plotLeft - 10), area.y + y);
        const name = (await tooltip.isVisible()) ? await tooltip.locator('[data-line="name"]').textContent() : null;
        if (name?.startsWith('aten::')) {
          return;
        }
      }
    }
    throw new Error('no aten operator under the cursor');
  }).toPass({ timeout: 30_000 });
  await expect(tooltip.locator('[data-line="duration"]')).toContainText(' at ');
  await expect(tooltip.locator('[data-line="shapes"]')).toContainText('shapes [[');
  await keepScreenshot(page, 'profile-timeline.png');

  // Back to the whole trace, then six wheel notches in: every tick label says where it is, at the zoom's precision.
  await canvas.scrollIntoViewIfNeeded();
  const plot = (await canvas.boundingBox())!;
  const centre = { x: plot.x + plotLeft + (plot.width - plotLeft - 10) / 2, y: plot.y + plot.height / 2 };
  await page.mouse.dblclick(centre.x, centre.y);
  await expect.poll(() => viewSpan(canvas), { timeout: 20_000 }).toBeGreaterThan(whole * 0.99);
  for (let notch = 0; notch < 6; notch++) {
    await page.mouse.wheel(0, -100);
    await page.waitForTimeout(60);
  }
  await expect.poll(() => viewSpan(canvas), { timeout: 20_000 }).toBeLessThan(whole / 10);
  await expect(canvas).toHaveAttribute('data-state', 'ready');
  const ticks = await tickLabels(canvas);
  expect(ticks.length).toBeGreaterThan(2);
  expect(new Set(ticks).size).toBe(ticks.length);
  ticks.forEach(label => expect(label).toMatch(/^[\d,]+(\.\d+)? (s|ms|µs|ns)$/));
  await page.mouse.move(0, 0);
  await keepScreenshot(page, 'profile-zoom-ticks.png');
  // And deeper still, to the narrowest view: still no two ticks alike.
  await page.mouse.move(centre.x, centre.y);
  for (let notch = 0; notch < 12; notch++) {
    await page.mouse.wheel(0, -300);
  }
  await expect.poll(() => viewSpan(canvas), { timeout: 20_000 }).toBeLessThan(10);
  await expect(canvas).toHaveAttribute('data-state', 'ready');
  const deep = await tickLabels(canvas);
  expect(deep.length).toBeGreaterThan(2);
  expect(new Set(deep).size).toBe(deep.length);
  await page.mouse.move(0, 0);
  await keepScreenshot(page, 'profile-zoom-deep.png');
  // The top of the panel: the CPU-only banner, the step chart and the findings.
  await page.mouse.move(0, 0);
  await profile.evaluate(node => node.scrollTo(0, 0));
  await keepScreenshot(page, 'profile-view.png');

  // Second run with a larger largest batch, then "Compare with previous run of this lab".
  const second = await startProfiledRun(page, 8);
  await expect(second.view).toHaveAttribute('data-status', 'succeeded', { timeout: RUN_TIMEOUT });
  const secondSection = second.view.locator('.gpudojo-run-profile-section');
  await expect(secondSection).toHaveAttribute('data-traces', '1', { timeout: 30_000 });
  const secondTrace = (await secondSection.locator('.gpudojo-profile-traces li[data-trace]').getAttribute('data-trace'))!;
  expect(secondTrace).toContain(second.id);
  const compare = second.view.locator('.gpudojo-run-profile-section .gpudojo-profile-compare-previous');
  await expect(compare).toBeVisible({ timeout: 30_000 });
  await expect(compare).toHaveAttribute('data-a', trace);
  await compare.click();

  const diff = page.locator('.gpudojo-profile-diff-view:visible');
  await expect(diff).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(diff).toHaveAttribute('data-a', trace);
  await expect(diff).toHaveAttribute('data-b', new RegExp(second.id));
  const headline = diff.locator('.gpudojo-profile-diff-headline');
  await expect(headline).toBeVisible();
  await expect(headline).toContainText('Step time');
  expect(Number(await headline.getAttribute('data-speedup'))).toBeGreaterThan(0);
  await expect(diff.locator('.gpudojo-profile-diff-breakdown tbody tr[data-key="compute"]')).toBeVisible();
  await expect(diff.locator('.gpudojo-profile-diff-ops tbody tr').first()).toBeVisible();
  // The diff names what differs between the runs (max_batch 4 → 8), not their ids, and its wording reads forward.
  const runs = diff.locator('.gpudojo-profile-diff-runs');
  await expect(runs.locator('li[data-key="param:max_batch"]')).toHaveText('max_batch: 4 → 8');
  await expect(runs).toContainText('What changed: max_batch 4 → 8');
  await expect(runs.locator('.gpudojo-profile-diff-newer-first')).toHaveCount(0);
  const sides = diff.locator('.gpudojo-profile-diff-open');
  await expect(sides.first()).toContainText('started');
  await expect(sides.first()).not.toContainText(first.id);
  await expect(headline).toContainText(/after is [\d.]+× (faster|slower)|no change/);
  await keepScreenshot(page, 'profile-diff.png');

  // The second run's profile, opened from the diff: its picker lists the first run's trace, and puts it before.
  await diff.locator(`.gpudojo-profile-diff-open[data-trace="${secondTrace}"]`).click();
  const secondProfile = page.locator(`.gpudojo-profile-view[data-trace="${secondTrace}"]`);
  await expect(secondProfile).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  const secondPicker = secondProfile.locator('.gpudojo-profile-compare-picker');
  await secondPicker.scrollIntoViewIfNeeded();
  await secondPicker.hover();
  await expect(secondPicker.locator(`option[value="${trace}"]`)).toHaveCount(1, { timeout: 20_000 });
  await secondPicker.locator('select').selectOption(trace);
  await expect(secondPicker).toHaveAttribute('data-before', trace);
  await expect(secondPicker).toHaveAttribute('data-after', secondTrace);
  await expect(secondPicker.locator('.gpudojo-profile-compare-order-text')).toContainText('after: this trace');

  // The first profile, opened before the second run existed, lists the second run's trace once shown again.
  const tab = (run: string) => page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab', { hasText: `Profile: rank 0 · ${run}` });
  await tab(first.id).click();
  await expect(profile).toBeVisible();
  const firstPicker = profile.locator('.gpudojo-profile-compare-picker');
  await firstPicker.scrollIntoViewIfNeeded();
  await firstPicker.hover();
  await expect(firstPicker.locator(`option[value="${secondTrace}"]`)).toHaveCount(1, { timeout: 20_000 });
  await firstPicker.locator('select').selectOption(secondTrace);
  // Older before, newer after; the swap turns it round and back.
  await expect(firstPicker).toHaveAttribute('data-before', trace);
  await expect(firstPicker).toHaveAttribute('data-after', secondTrace);
  await firstPicker.locator('.gpudojo-profile-compare-swap').click();
  await expect(firstPicker).toHaveAttribute('data-before', secondTrace);
  await expect(firstPicker.locator('.gpudojo-profile-compare-order-text')).toContainText('after: this trace');
  await keepScreenshot(page, 'profile-compare-picker.png');
  await firstPicker.locator('.gpudojo-profile-compare-swap').click();
  await expect(firstPicker).toHaveAttribute('data-before', trace);

  // Compare from the newer profile: the same diff (older before); swapped, the newer run is before and it says so.
  await tab(second.id).click();
  await secondPicker.locator('.gpudojo-profile-compare').click();
  const picked = page.locator('.gpudojo-profile-diff-view:visible');
  await expect(picked).toHaveAttribute('data-a', trace);
  await expect(picked).toHaveAttribute('data-b', secondTrace);
  await picked.locator('.gpudojo-profile-diff-swap').click();
  const swapped = page.locator('.gpudojo-profile-diff-view:visible');
  await expect(swapped).toHaveAttribute('data-a', secondTrace);
  await expect(swapped).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  await expect(swapped.locator('.gpudojo-profile-diff-runs li[data-key="param:max_batch"]')).toHaveText('max_batch: 8 → 4');
  await expect(swapped.locator('.gpudojo-profile-diff-newer-first')).toBeVisible();
  await keepScreenshot(page, 'profile-diff-swapped.png');
});
