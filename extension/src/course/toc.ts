/**
 * Pure helpers for a lesson's text: matching table-of-contents entries to the
 * rendered headings, and writing code as a markdown fence.
 */

import type { TocEntry } from '../api/types';

/** A rendered heading, as read from the DOM. */
export interface HeadingInfo {
  level: number;
  text: string;
}

/**
 * Heading text reduced for comparison: without JupyterLab's '¶' anchor,
 * markdown emphasis and code marks, case and extra spaces.
 */
export function normalizeHeading(text: string): string {
  return text
    .replace(/¶/g, '')
    .replace(/[`*_]/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

/**
 * For each toc entry, the index of its heading in `headings` (document order), or -1.
 *
 * Matches by level and text, taking headings in order so repeated titles map to
 * successive headings; an entry whose text matches nothing falls back to the
 * next unused heading of its level.
 */
export function locateTocHeadings(toc: TocEntry[], headings: HeadingInfo[]): number[] {
  const used = new Set<number>();
  const normalized = headings.map(h => normalizeHeading(h.text));
  let cursor = 0;
  return toc.map(entry => {
    const want = normalizeHeading(entry.title);
    const find = (accept: (i: number) => boolean): number => {
      for (let i = cursor; i < headings.length; i++) {
        if (!used.has(i) && accept(i)) {
          return i;
        }
      }
      for (let i = 0; i < cursor; i++) {
        if (!used.has(i) && accept(i)) {
          return i;
        }
      }
      return -1;
    };
    let index = find(i => headings[i].level === entry.level && normalized[i] === want);
    if (index < 0) {
      index = find(i => normalized[i] === want);
    }
    if (index < 0) {
      index = find(i => i >= cursor && headings[i].level === entry.level);
    }
    if (index >= 0) {
      used.add(index);
      cursor = index + 1;
    }
    return index;
  });
}

/** `source` as a fenced markdown code block in `language`, with a fence longer than any backtick run inside. */
export function codeFence(source: string, language = 'python'): string {
  const runs = source.match(/`+/g) ?? [];
  const longest = runs.reduce((max, run) => Math.max(max, run.length), 0);
  const fence = '`'.repeat(Math.max(3, longest + 1));
  const body = source.replace(/\n+$/, '');
  return `${fence}${language}\n${body}\n${fence}`;
}

export interface TextSegment {
  text: string;
  /** True for an inline `code` span (shown in monospace). */
  code: boolean;
}

/** Split a one-line text into plain and `code` segments, for choices shown as text. */
export function inlineCodeSegments(text: string): TextSegment[] {
  const segments: TextSegment[] = [];
  const pattern = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g;
  let last = 0;
  let match: RegExpExecArray | null;
  while ((match = pattern.exec(text)) !== null) {
    if (match.index > last) {
      segments.push({ text: text.slice(last, match.index), code: false });
    }
    segments.push({ text: match[2].trim() || match[2], code: true });
    last = match.index + match[0].length;
  }
  if (last < text.length) {
    segments.push({ text: text.slice(last), code: false });
  }
  return segments;
}

/**
 * Markdown with MyST's ```{mermaid} directive fences written as plain ```mermaid
 * fences, which JupyterLab's markdown renderer draws as diagrams.
 */
export function mermaidFences(source: string): string {
  return source.replace(/^([ \t]*)(`{3,}|~{3,})[ \t]*\{mermaid\}[ \t]*$/gm, '$1$2mermaid');
}
