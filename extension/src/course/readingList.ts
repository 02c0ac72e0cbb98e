/** Pure rules of the reading list view: groups by section, the lesson filter, what to say. */

import type { Catalog, ReadingEntry } from '../api/types';

export interface ReadingGroup {
  /** The `##` heading of reading.md the entries are listed under. */
  section: string;
  /** The entries of the section, in the file's order. */
  entries: ReadingEntry[];
}

/** A lesson the list can be narrowed to. */
export interface LessonChoice {
  id: string;
  title: string;
}

/** Whether `entry` takes lesson `lesson` further (every entry does when `lesson` is null). */
export function deepens(entry: ReadingEntry, lesson: string | null): boolean {
  return lesson === null || entry.deepens.includes(lesson);
}

/**
 * The entries that deepen `lesson` (all of them when null), grouped by section: sections in
 * the order they first appear, entries in the file's order, sections left empty dropped.
 */
export function groupReading(entries: ReadingEntry[], lesson: string | null = null): ReadingGroup[] {
  const groups = new Map<string, ReadingEntry[]>();
  for (const entry of entries) {
    if (!deepens(entry, lesson)) {
      continue;
    }
    const group = groups.get(entry.section);
    if (group) {
      group.push(entry);
    } else {
      groups.set(entry.section, [entry]);
    }
  }
  return [...groups].map(([section, list]) => ({ section, entries: list }));
}

/** The lessons of the filter, in course order, with their titles; none before the catalog loads. */
export function lessonChoices(catalog: Catalog | null): LessonChoice[] {
  if (!catalog) {
    return [];
  }
  return [...catalog.lessons]
    .sort((a, b) => a.order - b.order || a.title.localeCompare(b.title))
    .map(lesson => ({ id: lesson.id, title: lesson.title }));
}

/** Lesson `id`'s title, or null when the course has no such lesson (or is not loaded yet). */
export function lessonTitle(catalog: Catalog | null, id: string): string | null {
  return catalog?.lessons.find(lesson => lesson.id === id)?.title ?? null;
}

/** How many entries are shown, e.g. "21 entries" or "3 entries deepen GPU computing". */
export function readingCount(shown: number, lesson: string | null, catalog: Catalog | null): string {
  const noun = `${shown} ${shown === 1 ? 'entry' : 'entries'}`;
  if (lesson === null) {
    return noun;
  }
  const title = lessonTitle(catalog, lesson) ?? lesson;
  return `${noun} ${shown === 1 ? 'deepens' : 'deepen'} “${title}”`;
}

/** What an empty list says, and what to do next. */
export function emptyReadingText(lesson: string | null, catalog: Catalog | null): string {
  if (lesson === null) {
    return 'The reading list has no entries yet: the lessons’ “Where next” sections say what to read.';
  }
  const title = lessonTitle(catalog, lesson) ?? lesson;
  return `No entry of the reading list deepens “${title}” yet. Show all lessons’ reading, or go back to the lesson and its “Where next”.`;
}

/** `text` split into plain runs and `code` spans (a backtick left open stays plain text). */
export function codeSpans(text: string): { code: boolean; text: string }[] {
  const out: { code: boolean; text: string }[] = [];
  const pattern = /`([^`]+)`/g;
  let last = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    if (match.index > last) {
      out.push({ code: false, text: text.slice(last, match.index) });
    }
    out.push({ code: true, text: match[1] });
    last = match.index + match[0].length;
  }
  if (last < text.length) {
    out.push({ code: false, text: text.slice(last) });
  }
  return out;
}
