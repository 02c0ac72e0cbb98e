/**
 * The timeline's colours, read from the JupyterLab theme's CSS variables (the
 * canvas cannot use them directly), so categories stay readable on light and
 * dark themes. Read again after a theme change.
 */

import { readCategoryColors } from '../palette';

export interface MemoryPalette {
  categories: string[];
  /** The remainder under the listed allocations. */
  other: string;
  axis: string;
  grid: string;
  peak: string;
  oom: string;
  /** Outline of the hovered or pinned allocation. */
  highlight: string;
  font: string;
}

function cssVar(style: CSSStyleDeclaration, name: string, fallback: string): string {
  return style.getPropertyValue(name).trim() || fallback;
}

export function readMemoryPalette(element: Element = document.body): MemoryPalette {
  const style = getComputedStyle(element);
  const family = cssVar(style, '--jp-ui-font-family', 'sans-serif');
  return {
    // gpudojo's one categorical palette: twelve distinct colours, so no two categories share one.
    categories: readCategoryColors(element),
    other: cssVar(style, '--jp-layout-color4', '#9e9e9e'),
    axis: cssVar(style, '--jp-ui-font-color1', '#616161'),
    grid: cssVar(style, '--jp-border-color2', '#e0e0e0'),
    peak: cssVar(style, '--jp-error-color1', '#d32f2f'),
    oom: cssVar(style, '--jp-error-color0', '#b71c1c'),
    highlight: cssVar(style, '--jp-ui-font-color0', '#000000'),
    font: `11px ${family}`
  };
}

/** Category c's colour (a band without a category takes the remainder's). */
export function categoryColor(palette: MemoryPalette, c: number): string {
  return c < 0 ? palette.other : palette.categories[c % palette.categories.length];
}
