/**
 * One categorical palette for everything gpudojo colours by kind: one colour per GPU in
 * the monitor and its cards, one per memory category in the timeline.
 *
 * Twelve colours (Tableau 10 and two more), told apart with the common colour-vision
 * deficiencies and readable on light and dark backgrounds. They are defined once, as
 * CSS variables in style/base.css (`--gpudojo-category-color-N`), so a theme can
 * override them; canvas code reads them with `readCategoryColors`.
 */

/** The palette when the stylesheet is missing (same values as style/base.css). */
export const CATEGORY_FALLBACKS: ReadonlyArray<string> = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
  '#499894',
  '#d37295'
];

/** Position of colour `i` in the palette (cycling after twelve). */
function slot(i: number): number {
  const n = CATEGORY_FALLBACKS.length;
  return ((Math.trunc(i) % n) + n) % n;
}

/** The CSS variable of colour `i`. */
export function categoryVar(i: number): string {
  return `--gpudojo-category-color-${slot(i)}`;
}

/** `var(...)` of colour `i`, for inline styles. */
export function categoryCss(i: number): string {
  return `var(${categoryVar(i)}, ${CATEGORY_FALLBACKS[slot(i)]})`;
}

/** The palette's colours as computed for `element` (call again after a theme change). */
export function readCategoryColors(element: Element = document.body): string[] {
  const style = getComputedStyle(element);
  return CATEGORY_FALLBACKS.map((fallback, i) => style.getPropertyValue(categoryVar(i)).trim() || fallback);
}
