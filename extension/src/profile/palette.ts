/**
 * Colours of the profile view. Each breakdown category has one colour, set in
 * profile.css from the JupyterLab theme's variables, so the step chart (CSS)
 * and the timeline (canvas, which reads the same variables) agree on light and
 * dark themes. Timeline spans take the colour of what they are: a kernel is
 * compute, an NCCL kernel communication, a DataLoader span data loading...
 */

import type { ProfileCategory, Span } from '../api/types';

/** What a span is drawn as: a breakdown category, or one of the host-side kinds. */
export type SpanKind = ProfileCategory | 'cpu_op' | 'runtime' | 'python' | 'annotation' | 'step' | 'other';

const COMMUNICATION = /nccl|gloo|c10d::|all_?reduce|all_?gather|reduce_?scatter|broadcast|all_to_all|alltoall|send_?recv/i;
const DATA_LOADING = /dataloader|_MultiProcessingDataLoaderIter|_SingleProcessDataLoaderIter/i;
const SYNC =
  /^(aten::item|aten::_local_scalar_dense|aten::cpu|cudaStreamSynchronize|cudaDeviceSynchronize|cudaEventSynchronize|cudaMemcpy\b)$/;
const MEMCPY = /^(memcpy|memset)\b/i;

/** The kind a span is drawn as, from its Kineto category and name. */
export function spanKind(span: Pick<Span, 'name' | 'cat'>): SpanKind {
  const cat = span.cat.toLowerCase();
  const { name } = span;
  if (/^ProfilerStep#/.test(name)) {
    return 'step';
  }
  if (COMMUNICATION.test(name)) {
    return 'communication';
  }
  if (cat === 'gpu_memcpy' || cat === 'gpu_memset' || (cat === 'kernel' && MEMCPY.test(name))) {
    return 'memcpy';
  }
  if (DATA_LOADING.test(name)) {
    return 'data_loading';
  }
  if (SYNC.test(name)) {
    return 'sync';
  }
  switch (cat) {
    case 'kernel':
      return 'compute';
    case 'cpu_op':
    case 'operator':
      return 'cpu_op';
    case 'cuda_runtime':
    case 'cuda_driver':
      return 'runtime';
    case 'python_function':
      return 'python';
    case 'user_annotation':
    case 'gpu_user_annotation':
      return 'annotation';
    default:
      return 'other';
  }
}

/** The CSS variable of each kind (profile.css sets them from the theme) and a fallback. */
const KIND_VARS: Record<SpanKind, [string, string]> = {
  compute: ['--gpudojo-profile-compute', '#1976d2'],
  communication: ['--gpudojo-profile-communication', '#7b1fa2'],
  data_loading: ['--gpudojo-profile-data_loading', '#f57c00'],
  memcpy: ['--gpudojo-profile-memcpy', '#00897b'],
  sync: ['--gpudojo-profile-sync', '#d32f2f'],
  idle: ['--gpudojo-profile-idle', '#bdbdbd'],
  cpu_op: ['--gpudojo-profile-cpu_op', '#64b5f6'],
  runtime: ['--gpudojo-profile-runtime', '#a5d6a7'],
  python: ['--gpudojo-profile-python', '#ce93d8'],
  annotation: ['--gpudojo-profile-annotation', '#ffcc80'],
  step: ['--gpudojo-profile-step', '#e0e0e0'],
  other: ['--gpudojo-profile-other', '#9e9e9e']
};

export interface ProfilePalette {
  kinds: Record<SpanKind, string>;
  /** Merged spans: their colour is greyed towards this and hatched. */
  merged: string;
  text: string;
  /** The two text colours of the theme (dark on light, light on dark): span names take the one that reads on their fill. */
  spanTexts: [string, string];
  axis: string;
  grid: string;
  laneBand: string;
  highlight: string;
  font: string;
}

function cssVar(style: CSSStyleDeclaration, name: string, fallback: string): string {
  return style.getPropertyValue(name).trim() || fallback;
}

/** The timeline's colours as the theme sets them now (read again after a theme change). */
export function readProfilePalette(element: Element = document.body): ProfilePalette {
  const style = getComputedStyle(element);
  const kinds = {} as Record<SpanKind, string>;
  for (const [kind, [name, fallback]] of Object.entries(KIND_VARS) as Array<[SpanKind, [string, string]]>) {
    kinds[kind] = cssVar(style, name, fallback);
  }
  return {
    kinds,
    merged: cssVar(style, '--jp-layout-color4', '#9e9e9e'),
    text: cssVar(style, '--jp-ui-font-color1', '#616161'),
    spanTexts: [cssVar(style, '--jp-ui-font-color0', '#000000'), cssVar(style, '--jp-ui-inverse-font-color0', '#ffffff')],
    axis: cssVar(style, '--jp-ui-font-color2', '#757575'),
    grid: cssVar(style, '--jp-border-color2', '#e0e0e0'),
    laneBand: cssVar(style, '--jp-layout-color2', '#eeeeee'),
    highlight: cssVar(style, '--jp-ui-font-color0', '#000000'),
    font: `11px ${cssVar(style, '--jp-ui-font-family', 'sans-serif')}`
  };
}

/** Relative luminance (0 black - 1 white) of a CSS colour in #rgb, #rrggbb or rgb()/rgba() form; null otherwise. */
export function luminance(color: string): number | null {
  const c = color.trim();
  let rgb: number[] | null = null;
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(c);
  if (hex) {
    const h = hex[1].length === 3 ? [...hex[1]].map(d => d + d).join('') : hex[1];
    rgb = [0, 2, 4].map(i => parseInt(h.slice(i, i + 2), 16));
  } else {
    const fn = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)/i.exec(c);
    rgb = fn ? [fn[1], fn[2], fn[3]].map(Number) : null;
  }
  if (!rgb || rgb.some(v => !Number.isFinite(v))) {
    return null;
  }
  const [r, g, b] = rgb.map(v => {
    const x = Math.min(255, Math.max(0, v)) / 255;
    return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4);
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** Of `texts`, the colour that contrasts most with `fill` (the first when a colour cannot be read). */
export function readableOn(fill: string, texts: readonly [string, string]): string {
  const bg = luminance(fill);
  const lum = texts.map(luminance);
  if (bg === null || lum[0] === null || lum[1] === null) {
    return texts[0];
  }
  const contrast = (l: number) => (Math.max(l, bg) + 0.05) / (Math.min(l, bg) + 0.05);
  return contrast(lum[0]) >= contrast(lum[1]) ? texts[0] : texts[1];
}
