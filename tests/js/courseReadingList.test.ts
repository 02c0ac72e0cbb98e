/**
 * @jest-environment jsdom
 */
// jsdom has no DragEvent, which @lumino/dragdrop extends as it loads (the views are lumino widgets):
// set it before the imports below, which the CommonJS build runs in order.
(globalThis as unknown as { DragEvent: unknown }).DragEvent ??= class extends MouseEvent {};
import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';
import type { Catalog, KernelExamples, ReadingEntry, ReadingList } from '../../extension/src/api/types';
import { CourseCommandIds } from '../../extension/src/course/commands';
import { CourseModel } from '../../extension/src/course/model';
import { ReadingListView } from '../../extension/src/course/reading';
import {
  codeSpans,
  emptyReadingText,
  groupReading,
  lessonChoices,
  lessonTitle,
  readingCount
} from '../../extension/src/course/readingList';
import { catalog, item } from './courseFixtures';

function entry(title: string, section: string, deepens: string[]): ReadingEntry {
  return {
    section,
    title,
    by: `Author of ${title}`,
    link: `https://example.org/${encodeURIComponent(title)}`,
    read_for: 'the `NCCL_DEBUG` variable and the rest',
    deepens
  };
}

const ENTRIES: ReadingEntry[] = [
  entry('CUDA guide', 'NVIDIA', ['gpu-intro', 'cuda-basics']),
  entry('NCCL guide', 'NVIDIA', ['multi-gpu']),
  entry('DDP notes', 'PyTorch', ['multi-gpu']),
  entry('ZeRO', 'Papers', ['memory']),
  entry('Roofline', 'NVIDIA', ['gpu-intro'])
];

const CATALOG: Catalog = catalog({
  lessons: [item('lesson', 'multi-gpu', 3), item('lesson', 'gpu-intro', 1), item('lesson', 'cuda-basics', 2)]
});

describe('the reading list rules', () => {
  it('groups every entry by section, sections in first-seen order, entries in the file’s order', () => {
    expect(groupReading(ENTRIES).map(g => [g.section, g.entries.map(e => e.title)])).toEqual([
      ['NVIDIA', ['CUDA guide', 'NCCL guide', 'Roofline']],
      ['PyTorch', ['DDP notes']],
      ['Papers', ['ZeRO']]
    ]);
  });

  it('narrows to the entries that deepen a lesson and drops the sections left empty', () => {
    expect(groupReading(ENTRIES, 'multi-gpu').map(g => [g.section, g.entries.map(e => e.title)])).toEqual([
      ['NVIDIA', ['NCCL guide']],
      ['PyTorch', ['DDP notes']]
    ]);
    expect(groupReading(ENTRIES, 'gpu-intro').flatMap(g => g.entries.map(e => e.title))).toEqual([
      'CUDA guide',
      'Roofline'
    ]);
    expect(groupReading(ENTRIES, 'no-such-lesson')).toEqual([]);
    expect(groupReading([], null)).toEqual([]);
  });

  it('offers the lessons in course order, by title', () => {
    expect(lessonChoices(CATALOG)).toEqual([
      { id: 'gpu-intro', title: 'Title of gpu-intro' },
      { id: 'cuda-basics', title: 'Title of cuda-basics' },
      { id: 'multi-gpu', title: 'Title of multi-gpu' }
    ]);
    expect(lessonChoices(null)).toEqual([]);
    expect(lessonTitle(CATALOG, 'cuda-basics')).toBe('Title of cuda-basics');
    expect(lessonTitle(CATALOG, 'memory')).toBeNull();
  });

  it('counts what is shown and says what to do when nothing is', () => {
    expect(readingCount(5, null, CATALOG)).toBe('5 entries');
    expect(readingCount(1, 'gpu-intro', CATALOG)).toBe('1 entry deepens “Title of gpu-intro”');
    expect(readingCount(2, 'memory', CATALOG)).toBe('2 entries deepen “memory”');
    const empty = emptyReadingText('cuda-basics', CATALOG);
    expect(empty).toContain('No entry of the reading list deepens “Title of cuda-basics” yet');
    expect(empty).toMatch(/Show all .*go back to the lesson/);
    expect(emptyReadingText(null, CATALOG)).toContain('Where next');
  });

  it('splits `code` spans out of the text, leaving an unclosed backtick as text', () => {
    expect(codeSpans('set `NCCL_DEBUG` and `x`.')).toEqual([
      { code: false, text: 'set ' },
      { code: true, text: 'NCCL_DEBUG' },
      { code: false, text: ' and ' },
      { code: true, text: 'x' },
      { code: false, text: '.' }
    ]);
    expect(codeSpans('a ` b')).toEqual([{ code: false, text: 'a ` b' }]);
  });
});

describe('ReadingListView', () => {
  const flush = async () => {
    for (let i = 0; i < 5; i++) {
      await new Promise(resolve => setTimeout(resolve, 0));
    }
  };

  async function view(lesson: string | null = null, entries: ReadingEntry[] = ENTRIES) {
    const model = new CourseModel({
      getCatalog: () => Promise.resolve(CATALOG),
      getKernelExamples: (): Promise<KernelExamples> => Promise.resolve({ examples: [], problems: [] })
    });
    await model.refresh();
    const commands = new CommandRegistry();
    const opened: string[] = [];
    commands.addCommand(CourseCommandIds.openLesson, { execute: args => void opened.push(String(args['id'])) });
    const list: ReadingList = { entries, problems: [] };
    const widget = new ReadingListView({ source: { getReadingList: () => Promise.resolve(list) }, model, commands, lesson });
    Widget.attach(widget, document.body);
    await flush();
    return { widget, opened };
  }

  const titles = (widget: Widget) =>
    [...widget.node.querySelectorAll('.gpudojo-reading-title')].map(a => a.textContent);

  it('shows every entry with a new-tab link, its author, what for and its lessons by title', async () => {
    const { widget, opened } = await view();
    expect(titles(widget)).toEqual(['CUDA guide', 'NCCL guide', 'Roofline', 'DDP notes', 'ZeRO']);
    const link = widget.node.querySelector<HTMLAnchorElement>('.gpudojo-reading-title')!;
    expect([link.getAttribute('href'), link.target, link.rel]).toEqual(['https://example.org/CUDA%20guide', '_blank', 'noopener']);
    const first = widget.node.querySelector('.gpudojo-reading-entry')!;
    expect(first.querySelector('.gpudojo-reading-by')!.textContent).toBe('by Author of CUDA guide');
    expect(first.querySelector('.gpudojo-reading-for code')!.textContent).toBe('NCCL_DEBUG');
    const lessons = [...first.querySelectorAll<HTMLElement>('.gpudojo-reading-lesson')];
    expect(lessons.map(l => l.textContent)).toEqual(['Title of gpu-intro', 'Title of cuda-basics']);
    lessons[1].click();
    expect(opened).toEqual(['cuda-basics']);
    // A lesson the course does not have stays its id, not a link.
    const zero = widget.node.querySelector('[data-title="ZeRO"] .gpudojo-reading-lesson')!;
    expect([zero.tagName, zero.textContent]).toEqual(['CODE', 'memory']);
    widget.dispose();
  });

  it('narrows by the lesson select, and opens narrowed to the lesson it is given', async () => {
    const { widget } = await view();
    const select = widget.node.querySelector<HTMLSelectElement>('.gpudojo-reading-filter-select')!;
    expect([...select.options].map(o => o.text)).toEqual([
      'All lessons',
      'Title of gpu-intro',
      'Title of cuda-basics',
      'Title of multi-gpu'
    ]);
    select.value = 'multi-gpu';
    select.dispatchEvent(new Event('change'));
    expect(widget.lesson).toBe('multi-gpu');
    expect(titles(widget)).toEqual(['NCCL guide', 'DDP notes']);
    expect(widget.node.querySelector('.gpudojo-reading-count')!.textContent).toBe('2 entries deepen “Title of multi-gpu”');

    widget.setLesson('cuda-basics');
    expect(titles(widget)).toEqual(['CUDA guide']);

    widget.setLesson(null);
    expect(titles(widget)).toHaveLength(5);
    widget.dispose();

    const narrowed = await view('gpu-intro');
    expect(titles(narrowed.widget)).toEqual(['CUDA guide', 'Roofline']);
    expect(narrowed.widget.node.querySelector<HTMLSelectElement>('.gpudojo-reading-filter-select')!.value).toBe('gpu-intro');
    narrowed.widget.dispose();
  });

  it('offers all entries or the lesson back when a filter shows nothing', async () => {
    const { widget, opened } = await view('multi-gpu', ENTRIES.slice(0, 1));
    expect(titles(widget)).toEqual([]);
    const empty = widget.node.querySelector('.gpudojo-reading-empty')!;
    expect(empty.textContent).toContain('No entry of the reading list deepens “Title of multi-gpu” yet');
    empty.querySelector<HTMLButtonElement>('.gpudojo-reading-back')!.click();
    expect(opened).toEqual(['multi-gpu']);
    empty.querySelector<HTMLButtonElement>('.gpudojo-reading-show-all')!.click();
    expect(widget.lesson).toBeNull();
    expect(titles(widget)).toEqual(['CUDA guide']);
    widget.dispose();
  });
});
