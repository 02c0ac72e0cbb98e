import { Locator, Page, expect } from '@playwright/test';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';

export const TOKEN = 'gpudojo-ui-test';
export const ARTIFACTS = path.resolve(__dirname, 'artifacts');

/** Open JupyterLab on an empty workspace (nothing restored from a previous test). */
export async function openLab(page: Page): Promise<void> {
  await page.goto(`/lab?reset&token=${TOKEN}`);
  await expect(page.locator('#jp-main-dock-panel')).toBeVisible({ timeout: 60_000 });
}

/** Click the gpudojo icon in the left sidebar and return the panel. */
export async function openSidebar(page: Page) {
  const tab = page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="gpudojo-sidebar"]');
  await expect(tab).toBeVisible();
  const panel = page.locator('#gpudojo-sidebar');
  // The layout may still be restoring: click only while the panel is not shown, then look again.
  await expect(async () => {
    if (!(await panel.isVisible())) {
      await tab.click();
    }
    await expect(panel).toBeVisible({ timeout: 3_000 });
  }).toPass({ timeout: 30_000 });
  return panel;
}

/**
 * Put `content` into the server's root as `name` (the contents API) and start it as a
 * script run through the API; returns the run id.
 */
export async function startScriptRun(
  page: Page,
  name: string,
  content: string,
  run: { nproc?: number; args?: string[]; launcher?: 'python' | 'torchrun'; record_memory?: boolean } = {}
): Promise<string> {
  const put = await page.request.put(`/api/contents/${name}?token=${TOKEN}`, {
    data: { type: 'file', format: 'text', content }
  });
  expect(put.ok()).toBe(true);
  const started = await page.request.post(`/gpudojo/api/runs?token=${TOKEN}`, {
    data: { kind: 'script', path: name, nproc: 1, args: [], launcher: 'python', ...run }
  });
  expect(started.status()).toBe(201);
  return (await started.json()).runs[0].id as string;
}

/** Number of samples the monitor has charted so far. */
export async function chartedSamples(page: Page): Promise<number> {
  const value = await page.locator('#gpudojo-gpu-monitor .gpudojo-monitor').getAttribute('data-samples');
  return Number(value ?? '0');
}

export async function keepScreenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, name) });
}

/** Run a command the way a person does: the command palette, by its label. */
export async function runFromPalette(page: Page, label: string): Promise<void> {
  const input = page.locator('.lm-CommandPalette-input:visible');
  await expect(async () => {
    await page.locator('#jp-main-dock-panel').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('Control+Shift+C');
    await expect(input).toBeVisible({ timeout: 2_000 });
  }).toPass({ timeout: 20_000 });
  await input.fill(label);
  await page.locator('.lm-CommandPalette-item:visible', { hasText: label }).first().click();
}

/** Settings > Theme > name, as a person picks a theme. */
export async function chooseTheme(page: Page, name: string): Promise<void> {
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Settings$/ }).click();
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Theme$/ }).hover();
  await page.locator('.lm-Menu-itemLabel', { hasText: new RegExp(`^${name}$`) }).click();
}

/**
 * The right choices' ids per question id of a quiz file under content/, in file order. A choice's
 * id is its own `id`, or, as the server derives it, the first 10 hex digits of the SHA-256 of
 * its question's id, a newline and its text. (A reader for the quiz files' own layout, not TOML.)
 */
export function answerKey(file: string): Map<string, string[]> {
  const text = fs.readFileSync(path.resolve(__dirname, '..', '..', 'content', file), 'utf-8');
  const str = (block: string, key: string) => {
    const m = new RegExp(`^${key} = ("(?:[^"\\\\]|\\\\.)*")`, 'm').exec(block);
    return m ? (JSON.parse(m[1]) as string) : null;
  };
  const key = new Map<string, string[]>();
  for (const question of text.split(/^\[\[questions\]\]$/m).slice(1)) {
    const [head, ...choices] = question.split(/^\[\[questions\.choices\]\]$/m);
    const qid = str(head, 'id')!;
    const id = (c: string) =>
      str(c, 'id') ?? createHash('sha256').update(`${qid}\n${str(c, 'text')}`).digest('hex').slice(0, 10);
    key.set(
      qid,
      choices.filter(c => /^correct = true$/m.test(c)).map(id)
    );
  }
  return key;
}

/**
 * Tick the right choices of every question of a quiz (found by choice id: the server shuffles
 * them for every attempt), a wrong one for `wrong`, only question `only` if given; a choice
 * already ticked is left as it is.
 */
export async function answerQuiz(
  quiz: Locator,
  key: Map<string, string[]>,
  { wrong, only }: { wrong?: string; only?: string } = {}
): Promise<void> {
  for (const [qid, right] of key) {
    if (only && qid !== only) {
      continue;
    }
    const question = quiz.locator(`[data-qid="${qid}"]`);
    if (qid === wrong) {
      const ids = await question.locator('.gpudojo-quiz-choice').evaluateAll(rows =>
        rows.map(r => (r as HTMLElement).dataset.choiceId ?? '')
      );
      await question.locator(`[data-choice-id="${ids.find(id => !right.includes(id))}"] input`).check();
      continue;
    }
    for (const id of right) {
      const input = question.locator(`[data-choice-id="${id}"] input`);
      if (!(await input.isChecked())) {
        await input.check();
      }
    }
  }
}
