import { Locator, Page, expect, test } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';
import { TOKEN, answerKey, answerQuiz, keepScreenshot, openLab, openSidebar, runFromPalette } from './helpers';

test('a learner opens lesson 1, runs it as a notebook, takes the quiz and completes it', async ({ page }) => {
  await openLab(page);
  const panel = await openSidebar(page);
  const course = panel.locator('#gpudojo-course-section');
  const lessons = course.locator('.gpudojo-course-item[data-kind="lesson"]');
  await expect(lessons.first()).toBeVisible();
  expect(await lessons.count()).toBeGreaterThanOrEqual(4);
  const first = course.locator('.gpudojo-course-item[data-id="gpu-intro"]');
  await expect(first).toContainText('GPU computing for AI');
  await expect(first).toContainText('min');
  await expect(first).toHaveAttribute('data-status', /not_started|in_progress|completed/);

  // The lesson opens in the main area, rendered by JupyterLab (a real table, headings, code).
  await first.click();
  const lesson = page.locator('#gpudojo-lesson-gpu-intro');
  await expect(lesson).toBeVisible();
  await expect(lesson.locator('h1').first()).toContainText('GPU computing for AI');
  await expect(lesson.locator('.gpudojo-lesson-body table').first()).toBeVisible();
  await expect(lesson.locator('.gpudojo-lesson-toc a').first()).toBeVisible();
  await expect(lesson.locator('.gpudojo-lesson-code').first()).toBeVisible();
  await keepScreenshot(page, 'lesson-gpu-intro.png');

  // The quiz: answer every question (the first one wrongly), submit, see the score and the
  // explanations. Choices are found by their ids: the server shuffles them for every attempt.
  const quiz = lesson.locator('.gpudojo-quiz');
  await quiz.scrollIntoViewIfNeeded();
  const retry = quiz.locator('.gpudojo-quiz-retry');
  if (await retry.isVisible()) {
    await retry.click(); // an earlier attempt (a retried test) is shown first
    await expect(quiz.locator('.gpudojo-quiz-submit')).toBeVisible();
  }
  const key = answerKey('lessons/01-gpu-intro.quiz.toml');
  const questions = quiz.locator('.gpudojo-quiz-question');
  await expect(questions).toHaveCount(5);
  const [firstQuestion] = [...key.keys()];
  await answerQuiz(quiz, key, { wrong: firstQuestion });
  await quiz.locator('.gpudojo-quiz-submit').click();
  await expect(quiz.locator('.gpudojo-quiz-score')).toContainText('Score: 4 / 5');
  await expect(questions.first()).toHaveAttribute('data-correct', 'false');
  await keepScreenshot(page, 'lesson-quiz.png');
  // Try again keeps the four right answers and clears the wrong one.
  await retry.click();
  await expect(quiz.locator('.gpudojo-quiz-submit')).toBeDisabled();
  await expect(quiz.locator(`[data-qid="${firstQuestion}"] input:checked`)).toHaveCount(0);
  for (const [qid, right] of key) {
    if (qid !== firstQuestion) {
      await expect(quiz.locator(`[data-qid="${qid}"] input:checked`)).toHaveCount(right.length);
    }
  }
  await answerQuiz(quiz, key, { only: firstQuestion });
  await quiz.locator('.gpudojo-quiz-submit').click();
  await expect(quiz.locator('.gpudojo-quiz-score')).toContainText('Score: 5 / 5');

  // Mark complete: the sidebar mark follows.
  const complete = lesson.locator('.gpudojo-mark-complete');
  if ((await complete.getAttribute('data-status')) !== 'completed') {
    await complete.click(); // (already done when this is a retry)
  }
  await expect(lesson.locator('.gpudojo-mark-complete')).toHaveAttribute('data-status', 'completed');
  await expect(first).toHaveAttribute('data-status', 'completed');

  // Open as notebook: a copy in the workspace, its first code cell runs on this machine.
  await lesson.locator('.gpudojo-open-notebook').click();
  const notebook = page.locator('.jp-NotebookPanel:visible');
  await expect(notebook).toBeVisible();
  await expect(page.locator('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current')).toContainText('01-gpu-intro.ipynb');
  // On a loaded machine the kernel can be slow to come up; JupyterLab then asks which to start.
  const pickKernel = page.locator('.jp-Dialog', { hasText: 'Select Kernel' });
  await expect(async () => {
    if (await pickKernel.isVisible()) {
      await pickKernel.locator('.jp-mod-accept').click();
    }
    await expect(notebook.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')).toBeVisible({
      timeout: 2_000
    });
  }).toPass({ timeout: 90_000 });
  const firstCode = notebook.locator('.jp-CodeCell').first();
  const output = firstCode.locator('.jp-OutputArea-output').first();
  const run = notebook.locator('.jp-Toolbar [data-command="notebook:run-cell-and-select-next"]');
  // A kernel that is still connecting can drop the first request on a loaded machine: ask again.
  await expect(async () => {
    if ((await firstCode.locator('.jp-InputPrompt').textContent())?.includes('[ ]')) {
      await firstCode.click();
      await run.click();
    }
    await expect(output).toBeVisible({ timeout: 20_000 });
  }).toPass({ timeout: 120_000 });
  await expect(firstCode.locator('.jp-InputPrompt')).toContainText(/\[\d+\]/);
  await keepScreenshot(page, 'lesson-notebook.png');

  // Reload: progress is still there.
  await page.reload();
  const again = await openSidebar(page);
  await expect(again.locator('.gpudojo-course-item[data-id="gpu-intro"]')).toHaveAttribute('data-status', 'completed');
});

/** The choice ids of every question, in the order shown. */
async function choiceOrder(quiz: Locator): Promise<string[][]> {
  return quiz.locator('.gpudojo-quiz-choices').evaluateAll(sets =>
    sets.map(set => [...set.querySelectorAll<HTMLElement>('.gpudojo-quiz-choice')].map(r => r.dataset.choiceId ?? ''))
  );
}

/** The lessons under content/lessons/ as files: name, id and text. */
function lessonFiles(): Array<{ file: string; id: string; text: string }> {
  const dir = path.resolve(__dirname, '..', '..', 'content', 'lessons');
  return fs
    .readdirSync(dir)
    .filter(name => /^\d\d-.+\.md$/.test(name))
    .sort()
    .map(name => {
      const text = fs.readFileSync(path.join(dir, name), 'utf-8');
      const id = /\n\s+id:\s*([a-z0-9-]+)/.exec(text)?.[1] ?? '';
      return { file: name, id, text };
    });
}

/** Wait for a notebook's kernel to be idle (accepting the kernel dialog a slow start may raise). */
async function waitForIdleKernel(page: Page, notebook: Locator): Promise<void> {
  const pickKernel = page.locator('.jp-Dialog', { hasText: 'Select Kernel' });
  await expect(async () => {
    if (await pickKernel.isVisible()) {
      await pickKernel.locator('.jp-mod-accept').click();
    }
    await expect(notebook.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')).toBeVisible({
      timeout: 2_000
    });
  }).toPass({ timeout: 90_000 });
}

test('Open as notebook keeps GPU cells honest: tagged, skipped here with one line, the copy unmodified', async ({ page }) => {
  test.setTimeout(240_000);
  const file = 'gpudojo-lessons/01-gpu-intro.ipynb';
  // A fresh copy (an earlier test may have made one).
  await page.request.delete(`/api/contents/${file}?token=${TOKEN}`);
  await openLab(page);
  const panel = await openSidebar(page);
  await panel.locator('.gpudojo-course-item[data-id="gpu-intro"]').click();
  const lesson = page.locator('#gpudojo-lesson-gpu-intro');
  await lesson.locator('.gpudojo-open-notebook').click();
  const notebook = page.locator('.jp-NotebookPanel:visible');
  const tab = page.locator('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current');
  await expect(tab).toContainText('01-gpu-intro.ipynb');
  await waitForIdleKernel(page, notebook);
  // Opened and its kernel started: still not modified.
  await page.waitForTimeout(1_000);
  await expect(tab).not.toHaveClass(/jp-mod-dirty/);

  const copy = await page.request.get(`/api/contents/${file}?token=${TOKEN}`);
  const cells = (await copy.json()).content.cells as Array<{ cell_type: string; source: string; metadata: any }>;
  const setupIndex = cells.findIndex(c => (c.metadata.tags ?? []).includes('gpudojo-setup'));
  const gpuIndex = cells.findIndex(c => (c.metadata.tags ?? []).includes('needs-gpu'));
  expect(setupIndex).toBeGreaterThanOrEqual(0);
  expect(gpuIndex).toBeGreaterThan(setupIndex);
  expect(cells[gpuIndex].source.split('\n')[0]).toBe('%%needs_gpu');
  // Its expected output follows it, labelled as such.
  expect(cells[gpuIndex + 1].cell_type).toBe('markdown');
  expect(cells[gpuIndex + 1].source).toContain('The cell above needs a GPU. Expected output for NVIDIA H100');

  const cell = (index: number) => notebook.locator('.jp-Notebook .jp-Cell').nth(index);
  const gpuCell = cell(gpuIndex);
  await expect(gpuCell).toHaveClass(/gpudojo-mod-needs-gpu/);
  await expect(gpuCell.locator('.gpudojo-notebook-gpu-tag')).toHaveText('Needs a GPU');
  // Run the setup cell, then the GPU cell: one line instead of a CUDA traceback.
  const setup = cell(setupIndex);
  await setup.locator('.jp-InputPrompt').click();
  await expect(async () => {
    if ((await setup.locator('.jp-InputPrompt').textContent())?.includes('[ ]')) {
      await setup.locator('.jp-InputPrompt').click();
      await page.keyboard.press('Shift+Enter');
    }
    await expect(setup.locator('.jp-OutputArea-output')).toContainText('This machine has no GPU', { timeout: 20_000 });
  }).toPass({ timeout: 120_000 });
  await gpuCell.scrollIntoViewIfNeeded();
  await gpuCell.locator('.jp-InputPrompt').click();
  await page.keyboard.press('Shift+Enter');
  const out = gpuCell.locator('.jp-OutputArea-output');
  await expect(out).toHaveCount(1, { timeout: 60_000 });
  await expect(out).toHaveText('Skipped: needs a GPU (this machine has none). Expected output below. Run anyway: %%needs_gpu --run');
  await expect(gpuCell.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')).toHaveCount(0);
  await expect(gpuCell).not.toContainText('Torch not compiled with CUDA enabled');
  await keepScreenshot(page, 'lesson-notebook-gpu-cell-skipped.png');
});

test('the Course section at the default sidebar width shows every title in full and what runs each lab here', async ({
  page
}) => {
  await openLab(page);
  const panel = await openSidebar(page);
  const course = panel.locator('#gpudojo-course-section');
  await expect(course.locator('.gpudojo-course-item[data-kind="lab"]').first()).toBeVisible();
  await expect(course.locator('.gpudojo-course-item[data-kind="acceptance"]')).toBeVisible();
  // The sidebar is as JupyterLab opens it for a new user (no width saved: ?reset).
  const width = await panel.evaluate(node => node.getBoundingClientRect().width);
  expect(width).toBeLessThan(400);

  const titles = course.locator('.gpudojo-course-title');
  const count = await titles.count();
  expect(count).toBeGreaterThanOrEqual(4 + 5 + 1);
  const measured = await titles.evaluateAll(nodes =>
    nodes.map(node => ({
      text: node.textContent ?? '',
      scroll: node.scrollWidth,
      client: node.clientWidth,
      height: node.getBoundingClientRect().height
    }))
  );
  for (const title of measured) {
    // Readable in full: text is there, shown, and nothing is cut off to the side.
    expect(title.text.length, JSON.stringify(title)).toBeGreaterThan(3);
    expect(title.height, JSON.stringify(title)).toBeGreaterThan(0);
    expect(title.scroll, JSON.stringify(title)).toBeLessThanOrEqual(title.client);
  }
  const ddp = course.locator('.gpudojo-course-item[data-id="lab-03-ddp"]');
  await expect(ddp.locator('.gpudojo-course-title')).toHaveText('Multi-GPU training with DDP');
  // This machine has no GPU: every lab here has a CPU path, so none reads "GPU".
  const where = course.locator('.gpudojo-course-item[data-kind="lab"] .gpudojo-runs-here');
  await expect(where).toHaveCount(await course.locator('.gpudojo-course-item[data-kind="lab"]').count());
  for (const text of await where.allTextContents()) {
    expect(text).toMatch(/^runs here \(CPU(, gloo)?\)$/);
  }
  await expect(ddp.locator('.gpudojo-runs-here')).toHaveText('runs here (CPU, gloo)');
  await expect(ddp.locator('.gpudojo-runs-here')).toHaveAttribute('title', /gloo over loopback TCP/);
  await expect(course.locator('.gpudojo-needs')).toHaveCount(0);
  // The whole section in one picture: the other sections folded, a taller window, the
  // sidebar's width unchanged.
  const others = panel.locator('.lm-AccordionPanel-title[aria-expanded="true"]').filter({ hasNotText: /course/i });
  while ((await others.count()) > 0) {
    await others.first().click();
  }
  await page.setViewportSize({ width: 1400, height: 2800 });
  await expect.poll(() => panel.evaluate(node => node.getBoundingClientRect().width)).toBe(width);
  await expect
    .poll(() => course.evaluate(node => node.scrollHeight - node.clientHeight), { timeout: 10_000 })
    .toBeLessThanOrEqual(0);
  fs.mkdirSync(path.resolve(__dirname, '..', '..', 'docs'), { recursive: true });
  await page.mouse.move(900, 5); // no row under the pointer
  const box = await course.evaluate(node => {
    const top = node.getBoundingClientRect();
    const last = node.lastElementChild?.getBoundingClientRect();
    return { x: top.x, y: top.y, width: top.width, height: (last ? last.bottom : top.bottom) - top.y + 8 };
  });
  await page.screenshot({ path: path.resolve(__dirname, '..', '..', 'docs', 'course-section.png'), clip: box });
});

test('a learner takes the module test, sees the score, and can retake it', async ({ page }) => {
  await openLab(page);
  const panel = await openSidebar(page);
  const row = panel.locator('.gpudojo-course-item[data-kind="module-test"]');
  await expect(row).toBeVisible();
  await row.click();
  const view = page.locator('#gpudojo-module-test .gpudojo-module-test');
  await expect(view.locator('h1')).toContainText('Module test');
  const retry = view.locator('.gpudojo-quiz-retry');
  if (await retry.isVisible()) {
    await retry.click(); // an earlier attempt (a retried test) is shown first
    await expect(view.locator('.gpudojo-quiz-submit')).toBeVisible();
  }
  const questions = view.locator('.gpudojo-quiz-question');
  const key = answerKey('module-test.toml');
  const n = key.size;
  await expect(questions).toHaveCount(n);
  await expect(view.locator('.gpudojo-quiz-submit')).toBeDisabled();
  // Right answers found by their ids (the order is the server's, new for every attempt),
  // all but the last question's.
  const lastQuestion = [...key.keys()].pop()!;
  await answerQuiz(view, key, { wrong: lastQuestion });
  const served = await choiceOrder(view);
  await view.locator('.gpudojo-quiz-submit').click();
  const score = view.locator('.gpudojo-quiz-score');
  await expect(score).toContainText(`Score: ${n - 1} / ${n}`);
  await expect(view.locator('.gpudojo-module-test-scores')).toContainText(`Last ${n - 1} / ${n}`);
  await expect(view.locator('.gpudojo-module-test-scores')).toContainText('Best');
  // Every choice is explained once graded.
  await expect(questions.first().locator('.gpudojo-quiz-why:not([hidden])').first()).toBeVisible();
  await expect(row).toContainText(`last ${n - 1}/${n}`);
  await keepScreenshot(page, 'module-test.png');
  // A retake is a new attempt: answers cleared, every question's choices in a new order.
  await view.locator('.gpudojo-quiz-retry').click();
  await expect(view.locator('.gpudojo-quiz-submit')).toBeDisabled();
  await expect(view.locator('input:checked')).toHaveCount(0);
  expect(await choiceOrder(view)).not.toEqual(served);

  // The acceptance list opens from the Course section and ticks only from progress.
  await panel.locator('.gpudojo-course-item[data-kind="acceptance"]').click();
  const goals = page.locator('#gpudojo-acceptance .gpudojo-acceptance');
  // The syllabus's five goals, and the LLM training job the newer lessons teach.
  await expect(goals.locator('.gpudojo-acceptance-item')).toHaveCount(6);
  await expect(goals.locator('.gpudojo-acceptance-item').last()).toContainText('LLM training job');
  // Every lesson, lab and exercise it names is in the course now: nothing reads "not available yet".
  await expect(goals.locator('.gpudojo-acceptance-req[data-kind="exercise"]')).toHaveCount(11);
  await expect(goals.locator('.gpudojo-acceptance-req[data-state="unavailable"]')).toHaveCount(0);
  await keepScreenshot(page, 'acceptance.png');
});

test('a gpudojo:run-lab link in a lesson opens the Run form, which closes when the run starts', async ({ page }) => {
  test.setTimeout(240_000);
  const lesson = lessonFiles().find(l => /\]\(gpudojo:run-lab\?lab=lab-03-ddp/.test(l.text));
  test.skip(!lesson, 'no lesson links to lab-03-ddp yet');
  await openLab(page);
  const panel = await openSidebar(page);
  await panel.locator(`.gpudojo-course-item[data-id="${lesson!.id}"]`).click();
  const view = page.locator(`#gpudojo-lesson-${lesson!.id}`);
  // Every gpudojo: link of the lesson is an action (none is unknown), however its text is written.
  await expect(view.locator('.gpudojo-lesson-body a.gpudojo-product-link')).toHaveCount(
    lesson!.text.split('](gpudojo:').length - 1
  );
  await expect(view.locator('.gpudojo-product-link-unknown')).toHaveCount(0);
  // The link with a sweep when the lesson has one: it presets more of the form.
  const links = view.locator('a.gpudojo-product-link[data-href^="gpudojo:run-lab?lab=lab-03-ddp"]');
  await expect(links.first()).toBeAttached();
  const withSweep = view.locator('a.gpudojo-product-link[data-href^="gpudojo:run-lab?lab=lab-03-ddp"][data-href*="sweep="]');
  const link = (await withSweep.count()) ? withSweep.first() : links.first();
  await link.scrollIntoViewIfNeeded();
  const href = (await link.getAttribute('data-href')) ?? '';
  await link.click();
  const form = page.locator('#gpudojo-run-form-lab-03-ddp .gpudojo-run-form');
  await expect(form).toBeVisible();
  await keepScreenshot(page, 'lesson-run-lab-link.png');
  const sweep = /sweep=([^:&]+):([^&]+)/.exec(href);
  if (sweep) {
    await expect(form.locator('input[name="sweep-enabled"]')).toBeChecked();
    await expect(form.locator('select[name="sweep-param"]')).toHaveValue(sweep[1]);
    await expect(form.locator('input[name="sweep-values"]')).toHaveValue(sweep[2].split(',').join(', '));
    await form.locator('input[name="sweep-enabled"]').uncheck(); // one short run is enough here
  }
  await form.locator('input[name="nproc"]').fill('1');
  await form.locator('input[name="epochs"]').fill('1');
  await form.locator('input[name="samples"]').fill('256');
  await form.locator('.gpudojo-run-start').click();
  const run = page.locator('.gpudojo-run-view:visible');
  await expect(run).toBeVisible();
  // The form does not stay behind as a second tab.
  await expect(page.locator('#gpudojo-run-form-lab-03-ddp')).toHaveCount(0);
  await expect(page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab', { hasText: 'Run: ' })).toHaveCount(0);
  await expect(run).toHaveAttribute('data-status', /succeeded|failed|cancelled/, { timeout: 180_000 });
});

test('lesson 6 opens as a notebook and its pipeline cell measures the bubble fraction', async ({ page }) => {
  test.setTimeout(420_000);
  const lesson = lessonFiles().find(l => l.file.startsWith('06-') && l.text.includes('measured bubble fraction'));
  test.skip(!lesson, 'lesson 6 has no cell printing the measured bubble fraction yet');
  await openLab(page);
  const panel = await openSidebar(page);
  await panel.locator(`.gpudojo-course-item[data-id="${lesson!.id}"]`).click();
  const view = page.locator(`#gpudojo-lesson-${lesson!.id}`);
  await expect(view.locator('h1').first()).toBeVisible();
  await view.locator('.gpudojo-open-notebook').click();
  const notebook = page.locator('.jp-NotebookPanel:visible');
  await expect(page.locator('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current')).toContainText(lesson!.file.replace(/\.md$/, '.ipynb'));
  await waitForIdleKernel(page, notebook);
  // The pipeline cell, found in the copy itself (the editor draws only the lines in view, so
  // its text cannot be searched on the page); no GPU cell comes before it.
  const copy = await page.request.get(
    `/api/contents/gpudojo-lessons/${lesson!.file.replace(/\.md$/, '.ipynb')}?token=${TOKEN}`
  );
  const cells = (await copy.json()).content.cells as Array<{ cell_type: string; source: string; metadata: any }>;
  const index = cells.findIndex(c => c.cell_type === 'code' && c.source.includes('measured bubble fraction'));
  expect(index).toBeGreaterThan(0);
  expect(cells.slice(0, index).filter(c => (c.metadata.tags ?? []).includes('needs-gpu'))).toHaveLength(0);
  const cell = notebook.locator('.jp-Notebook .jp-Cell').nth(index);
  await cell.scrollIntoViewIfNeeded();
  await expect(cell).toHaveClass(/jp-CodeCell/);
  await cell.locator('.jp-InputPrompt').click(); // select the cell without editing it
  // The cells above it define what it uses: run them, then the cell itself.
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Run$/ }).click();
  await page.locator('.lm-Menu-itemLabel', { hasText: 'Run All Above Selected Cell' }).click();
  let lastAbove = index - 1;
  while (cells[lastAbove].cell_type !== 'code') {
    lastAbove--;
  }
  const above = notebook.locator('.jp-Notebook .jp-Cell').nth(lastAbove);
  await expect(above.locator('.jp-InputPrompt')).toContainText(/\[\d+\]/, { timeout: 300_000 });
  await cell.locator('.jp-InputPrompt').click();
  await page.keyboard.press('Shift+Enter');
  await expect(cell.locator('.jp-OutputArea-output', { hasText: /measured bubble fraction/ })).toBeVisible({
    timeout: 240_000
  });
  await expect(cell.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]', { hasText: 'Error' })).toHaveCount(0);
  await keepScreenshot(page, 'lesson-6-pipeline.png');
});

test('a lesson link opens the memory estimator', async ({ page }) => {
  const lesson = lessonFiles().find(l => l.text.includes('](gpudojo:open-memory?estimator=1)'));
  test.skip(!lesson, 'no lesson links to the memory estimator yet');
  await openLab(page);
  const panel = await openSidebar(page);
  await panel.locator(`.gpudojo-course-item[data-id="${lesson!.id}"]`).click();
  const view = page.locator(`#gpudojo-lesson-${lesson!.id}`);
  const link = view.locator('a.gpudojo-product-link[data-href="gpudojo:open-memory?estimator=1"]').first();
  await link.scrollIntoViewIfNeeded();
  await expect(link).toHaveAttribute('title', /memory estimator/);
  await link.click();
  // No run of this learner recorded memory: the estimator opens on its own and says why.
  const estimator = page.locator('#gpudojo-memory-estimator .gpudojo-estimator');
  await expect(estimator).toBeVisible();
  await expect(page.locator('#gpudojo-memory-estimator')).toContainText('No memory capture of yours yet');
  await estimator.locator('input[name="parameters"]').fill('1000000000');
  await estimator.locator('.gpudojo-estimator-run').click();
  await expect(estimator.locator('.gpudojo-estimator-bar')).toBeVisible();
});

test('a lesson link opens the memory estimator in its transformer mode', async ({ page }) => {
  const href = 'gpudojo:open-memory?estimator=transformer';
  const lesson = lessonFiles().find(l => l.text.includes(`](${href})`));
  expect(lesson, 'lesson 7 links to the transformer estimator').toBeTruthy();
  await openLab(page);
  const panel = await openSidebar(page);
  await panel.locator(`.gpudojo-course-item[data-id="${lesson!.id}"]`).click();
  const view = page.locator(`#gpudojo-lesson-${lesson!.id}`);
  const link = view.locator(`a.gpudojo-product-link[data-href="${href}"]`).first();
  await link.scrollIntoViewIfNeeded();
  await expect(link).toHaveAttribute('title', /transformer mode/);
  await link.click();
  const estimator = page.locator('#gpudojo-memory-estimator .gpudojo-estimator');
  await expect(estimator).toHaveAttribute('data-mode', 'transformer');
  const form = estimator.locator('.gpudojo-estimator-form[data-mode="transformer"]');
  await expect(form).toBeVisible();
  // GPT-3 175B on 8 x 8 GPUs with sequence parallelism, as the lesson sizes it.
  for (const [name, value] of Object.entries({
    layers: '96',
    hidden: '12288',
    heads: '96',
    sequence: '2048',
    micro_batch: '1',
    vocab: '51200',
    tensor_parallel: '8',
    pipeline_parallel: '8'
  })) {
    await form.locator(`input[name="${name}"]`).fill(value);
  }
  await form.locator('input[name="sequence_parallel"]').check();
  await form.locator('input[name="dropout"]').check();
  await form.locator('.gpudojo-estimator-run').click();
  await expect(estimator.locator('.gpudojo-estimator-facts')).toContainText('174.6B parameters in all');
  await expect(estimator.locator('.gpudojo-estimator-formulas li[data-component="activations"]')).toContainText(
    'sbh(34 + 5as/h)/8'
  );
  await expect(estimator.locator('.gpudojo-estimator-bar .gpudojo-estimator-segment')).toHaveCount(5);
  // A shape the server would refuse is caught in the form, by field.
  await form.locator('input[name="heads"]').fill('100');
  await form.locator('.gpudojo-estimator-run').click();
  await expect(form.locator('.gpudojo-field-error[data-for="heads"]')).toContainText('must divide the hidden size');
  await keepScreenshot(page, 'memory-estimator-transformer.png');
});

test('the reading list narrows to a lesson, opens a lesson by its title, and a lesson opens its reading', async ({
  page
}) => {
  await openLab(page);
  await runFromPalette(page, 'Open Reading List');
  const view = page.locator('#gpudojo-reading-list .gpudojo-reading');
  const entries = view.locator('.gpudojo-reading-entry');
  await expect(entries.first()).toBeVisible();
  const all = await entries.count();
  expect(all).toBeGreaterThanOrEqual(15);
  await expect(view.locator('.gpudojo-reading-section').first()).toHaveAttribute('data-section', /NVIDIA/);
  const link = entries.first().locator('a.gpudojo-reading-title');
  await expect(link).toHaveAttribute('href', /^https:\/\//);
  await expect(link).toHaveAttribute('target', '_blank');
  await expect(link).toHaveAttribute('rel', 'noopener');
  // Lessons are named by their titles, not their ids.
  await expect(entries.first().locator('.gpudojo-reading-lesson').first()).toHaveText('GPU computing for AI');

  // Narrowed to one lesson: fewer entries, every one deepening it.
  const select = view.locator('.gpudojo-reading-filter-select');
  await select.selectOption({ label: 'Multi-GPU training strategies' });
  await expect(view.locator('.gpudojo-reading-count')).toContainText('Multi-GPU training strategies');
  const shown = await entries.count();
  expect(shown).toBeGreaterThan(0);
  expect(shown).toBeLessThan(all);
  await expect(view.locator('.gpudojo-reading-entry:not(:has(.gpudojo-reading-lesson[data-id="multi-gpu"]))')).toHaveCount(0);
  await keepScreenshot(page, 'reading-list.png');

  // A lesson's title opens the lesson; its "Reading for this lesson" comes back here, narrowed to it.
  await entries.first().locator('.gpudojo-reading-lesson[data-id="multi-gpu"]').click();
  const lesson = page.locator('#gpudojo-lesson-multi-gpu');
  await expect(lesson.locator('h1').first()).toContainText('Multi-GPU training strategies');
  const tab = (label: string) => page.locator('#jp-main-dock-panel .lm-TabBar-tab', { hasText: label });
  await tab('Reading list').click();
  await select.selectOption({ label: 'All lessons' });
  await expect(entries).toHaveCount(all);
  await tab('Multi-GPU training strategies').click();
  const reading = lesson.locator('a.gpudojo-lesson-reading-link');
  await reading.scrollIntoViewIfNeeded();
  await reading.click();
  await expect(view).toBeVisible();
  await expect(select).toHaveValue('multi-gpu');
  await expect(entries).toHaveCount(shown);
});
