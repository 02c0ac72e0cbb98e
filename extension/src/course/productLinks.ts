/**
 * Links to the product in lessons: `[text](gpudojo:action?args)` (FORMAT.md,
 * "Links to the product"). Only the actions listed here become buttons, each
 * running one command with arguments checked here; any other `gpudojo:` link
 * is shown as plain text saying it cannot be followed.
 *
 * JupyterLab's sanitizer drops hrefs with schemes it does not know, so the
 * markdown is rewritten before rendering (`gpudojo:x` becomes `#gpudojo:x`,
 * which survives) and the rendered anchors are then turned into actions.
 */

import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { h } from '../dom';
import { CommandIds as GpuCommandIds } from '../gpu/commands';
import { KernelCommandIds } from '../kernels/commands';
import { MemoryCommandIds } from '../memory/commands';
import { ProfileCommandIds } from '../profile/commands';
import { RunCommandIds } from '../runs/commands';
import { CourseCommandIds } from './commands';

export const PRODUCT_SCHEME = 'gpudojo:';

/** What following a product link does. */
export interface ProductAction {
  command: string;
  args: ReadonlyPartialJSONObject;
  /** The link's tooltip: what it opens. */
  description: string;
}

export type ParsedProductLink = { ok: true; action: ProductAction } | { ok: false; reason: string };

const ITEM_ID = /^[a-z0-9][a-z0-9-]{0,99}$/;
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const SWEEP_VALUE = /^[A-Za-z0-9_.+-]{1,32}$/;

interface ActionSpec {
  /** Query parameters the action takes; `true` marks a required one. */
  params: Record<string, boolean>;
  build: (query: Map<string, string>) => ProductAction | string;
}

const ACTIONS: Record<string, ActionSpec> = {
  'run-lab': {
    params: { lab: true, sweep: false },
    build: query => {
      const lab = query.get('lab') ?? '';
      if (!ITEM_ID.test(lab)) {
        return `"${lab}" is not a lab id`;
      }
      const sweep = query.get('sweep');
      if (sweep === undefined) {
        return { command: RunCommandIds.runLab, args: { lab }, description: `Open the Run form of ${lab}` };
      }
      const colon = sweep.indexOf(':');
      const param = sweep.slice(0, colon);
      const values = sweep
        .slice(colon + 1)
        .split(',')
        .map(v => v.trim());
      if (colon < 0 || !PARAM_NAME.test(param) || !values.length || !values.every(v => SWEEP_VALUE.test(v))) {
        return `sweep must read <parameter>:<value>,<value>, not "${sweep}"`;
      }
      return {
        command: RunCommandIds.runLab,
        args: { lab, sweep: { param, values } },
        description: `Open the Run form of ${lab}, set to sweep ${param} over ${values.join(', ')}`
      };
    }
  },
  'open-runs': {
    params: {},
    build: () => ({ command: RunCommandIds.openRuns, args: {}, description: 'Show your runs' })
  },
  'open-memory': {
    params: { estimator: false },
    build: query => {
      const estimator = query.get('estimator');
      if (estimator !== undefined && estimator !== '1' && estimator !== 'transformer') {
        return 'estimator takes the value 1 or transformer';
      }
      if (estimator === 'transformer') {
        return {
          command: MemoryCommandIds.openMemory,
          args: { estimator: true, mode: 'transformer' },
          description: 'Open the memory estimator in its transformer mode: model shape and parallel layout in, memory per GPU out'
        };
      }
      return estimator
        ? {
            command: MemoryCommandIds.openMemory,
            args: { estimator: true },
            description: 'Open the memory estimator (with your newest memory capture, if you recorded one)'
          }
        : {
            command: MemoryCommandIds.openMemory,
            args: {},
            description: 'Open the memory view of your newest memory capture'
          };
    }
  },
  'open-profile': {
    params: {},
    build: () => ({
      command: ProfileCommandIds.openProfile,
      args: {},
      description: 'Open the profile view of your newest recorded profile'
    })
  },
  'open-gpu-monitor': {
    params: {},
    build: () => ({ command: GpuCommandIds.openMonitor, args: {}, description: 'Open the GPU monitor' })
  },
  'open-kernel-playground': {
    params: { lab: false },
    build: query => {
      const lab = query.get('lab');
      if (lab === undefined) {
        return { command: KernelCommandIds.openPlayground, args: {}, description: 'Open the Kernel Playground' };
      }
      if (!ITEM_ID.test(lab)) {
        return `"${lab}" is not a lab id`;
      }
      return {
        command: KernelCommandIds.openPlayground,
        args: { lab },
        description: `Open ${lab}'s kernels in the Kernel Playground`
      };
    }
  },
  'open-lesson': {
    params: { id: true },
    build: query => {
      const id = query.get('id') ?? '';
      return ITEM_ID.test(id)
        ? { command: CourseCommandIds.openLesson, args: { id }, description: `Open the lesson ${id}` }
        : `"${id}" is not a lesson id`;
    }
  }
};

/** The actions a lesson may link to, e.g. 'run-lab'. */
export const PRODUCT_ACTIONS: readonly string[] = Object.keys(ACTIONS);

/** What `href` (`gpudojo:action?key=value&...`) does, or why it cannot be followed. */
export function parseProductLink(href: string): ParsedProductLink {
  if (!href.startsWith(PRODUCT_SCHEME)) {
    return { ok: false, reason: 'not a gpudojo: link' };
  }
  const rest = href.slice(PRODUCT_SCHEME.length);
  const q = rest.indexOf('?');
  const name = q < 0 ? rest : rest.slice(0, q);
  const spec = Object.prototype.hasOwnProperty.call(ACTIONS, name) ? ACTIONS[name] : undefined;
  if (!spec) {
    return { ok: false, reason: `"${name}" is not an action this version of gpudojo knows` };
  }
  const query = new Map<string, string>();
  if (q >= 0 && rest.length > q + 1) {
    for (const pair of rest.slice(q + 1).split('&')) {
      const eq = pair.indexOf('=');
      let key: string;
      let value: string;
      try {
        key = decodeURIComponent(eq < 0 ? pair : pair.slice(0, eq));
        value = eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1));
      } catch {
        return { ok: false, reason: `"${pair}" is not a valid query` };
      }
      if (!Object.prototype.hasOwnProperty.call(spec.params, key)) {
        return { ok: false, reason: `${name} takes no "${key}"` };
      }
      if (query.has(key)) {
        return { ok: false, reason: `"${key}" is given twice` };
      }
      query.set(key, value);
    }
  }
  for (const [key, required] of Object.entries(spec.params)) {
    if (required && !query.has(key)) {
      return { ok: false, reason: `${name} needs "${key}"` };
    }
  }
  const built = spec.build(query);
  return typeof built === 'string' ? { ok: false, reason: built } : { ok: true, action: built };
}

/** Prefix of the rewritten hrefs the rendered markdown holds. */
const MARK = '#' + PRODUCT_SCHEME;

// A code span, or a [text](gpudojo:...) link (optional "title", not an image), whichever starts
// first: a link written inside a code span stays code, and a link whose text holds code is a link.
const SPAN_OR_LINK = /(`+)(?!`)[\s\S]*?[^`]\1(?!`)|(?<!!)\[([^\]\n]+)\]\(\s*gpudojo:([^)\s]*)(?:\s+"[^"\n]*")?\s*\)/g;
const FENCE = /^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[ \t]*$/gm;

function rewriteLinks(text: string): string {
  return text.replace(SPAN_OR_LINK, (whole: string, _ticks: string, label?: string, target?: string) =>
    label === undefined ? whole : `[${label}](${MARK}${target ?? ''})`
  );
}

/**
 * `markdown` with every `gpudojo:` link's href rewritten so that the sanitizer
 * keeps it (code blocks and code spans are left as written).
 */
export function markProductLinks(markdown: string): string {
  if (!markdown.includes(PRODUCT_SCHEME)) {
    return markdown;
  }
  const fence = new RegExp(FENCE.source, FENCE.flags);
  let out = '';
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = fence.exec(markdown)) !== null) {
    out += rewriteLinks(markdown.slice(last, m.index)) + m[0];
    last = m.index + m[0].length;
  }
  return out + rewriteLinks(markdown.slice(last));
}

/**
 * Turn the rendered product links under `root` into actions run by `run`;
 * unknown ones become plain text whose tooltip says why. Returns how many
 * links were made actions.
 */
export function activateProductLinks(root: HTMLElement, run: (action: ProductAction) => void): number {
  let count = 0;
  for (const anchor of Array.from(root.querySelectorAll<HTMLAnchorElement>('a[href]'))) {
    const href = anchor.getAttribute('href') ?? '';
    if (!href.startsWith(MARK)) {
      continue;
    }
    const target = PRODUCT_SCHEME + href.slice(MARK.length);
    const parsed = parseProductLink(target);
    if (!parsed.ok) {
      const text = h('span', {
        className: 'gpudojo-product-link-unknown',
        text: anchor.textContent ?? '',
        title: `This link (${target}) cannot be followed: ${parsed.reason}.`,
        attrs: { 'data-href': target }
      });
      anchor.replaceWith(text);
      continue;
    }
    const { action } = parsed;
    anchor.classList.add('gpudojo-product-link');
    anchor.title = action.description;
    anchor.dataset.command = action.command;
    anchor.dataset.href = target;
    anchor.removeAttribute('target');
    anchor.setAttribute('role', 'button');
    anchor.addEventListener('click', event => {
      event.preventDefault();
      event.stopPropagation();
      run(action);
    });
    count++;
  }
  return count;
}
