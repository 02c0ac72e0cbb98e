/**
 * CodeMirror extensions of the playground's editor: diagnostic marks (a line
 * decoration with data-diag-line and a wavy underline), the highlighted line
 * an assembly line came from, the lines a run's memory-access report found
 * wasteful, and a listener for text and cursor changes.
 *
 * @codemirror/state and /view are JupyterLab's shared singletons, so these
 * fields and effects work in the editor JupyterLab created.
 */

import { EditorState, Extension, Range, StateEffect, StateEffectType, StateField } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView, ViewUpdate } from '@codemirror/view';
import type { Diagnostic } from '../api/types';
import type { AccessMark } from './accessReport';
import { LineSource, diagnosticMarks } from './diagnostics';

/** Replace the diagnostics shown in the editor. */
export const setDiagnostics = StateEffect.define<ReadonlyArray<Diagnostic>>();

/** The editor's document as diagnosticMarks reads it. */
function lineSource(state: EditorState): LineSource {
  return {
    lines: state.doc.lines,
    line: n => state.doc.line(n)
  };
}

/** The decorations of `diagnostics` in `state`'s document. */
export function diagnosticDecorations(state: EditorState, diagnostics: ReadonlyArray<Diagnostic>): DecorationSet {
  const ranges: Range<Decoration>[] = [];
  for (const mark of diagnosticMarks(diagnostics, lineSource(state))) {
    const title = mark.messages.join('\n');
    ranges.push(
      Decoration.line({
        class: `gpudojo-diag-line gpudojo-diag-${mark.severity}`,
        attributes: { 'data-diag-line': String(mark.line), title }
      }).range(mark.lineFrom)
    );
    for (const underline of mark.underlines) {
      ranges.push(
        Decoration.mark({
          class: `gpudojo-diag-underline gpudojo-diag-${underline.severity}`,
          attributes: { title }
        }).range(underline.from, underline.to)
      );
    }
  }
  return Decoration.set(ranges, true);
}

/**
 * A field of line decorations that edits move with the text and that `effect`
 * replaces with `build(state, value)`: the next compile's or run's marks.
 */
function replacedByEffect<T>(
  effect: StateEffectType<T>,
  build: (state: EditorState, value: T) => DecorationSet
): StateField<DecorationSet> {
  return StateField.define<DecorationSet>({
    create: () => Decoration.none,
    update(marks, tr) {
      let next = marks.map(tr.changes);
      for (const e of tr.effects) {
        if (e.is(effect)) {
          next = build(tr.state, e.value);
        }
      }
      return next;
    },
    provide: field => EditorView.decorations.from(field)
  });
}

const diagnosticsField = replacedByEffect(setDiagnostics, diagnosticDecorations);

/** Highlight one source line (1-based), or none with null: the line of a clicked assembly line. */
export const setLinkedLine = StateEffect.define<number | null>();

const linkedLineField = replacedByEffect(setLinkedLine, (state, line) =>
  line && line >= 1 && line <= state.doc.lines
    ? Decoration.set([Decoration.line({ class: 'gpudojo-linked-line' }).range(state.doc.line(line).from)])
    : Decoration.none
);

/** A bar beside each of `marks`' lines of `state`'s document (lines past its end are skipped), the figures as its title. */
export function accessDecorations(state: EditorState, marks: ReadonlyArray<AccessMark>): DecorationSet {
  const lines = state.doc.lines;
  return Decoration.set(
    marks
      .filter(mark => mark.line >= 1 && mark.line <= lines)
      .map(mark =>
        Decoration.line({
          class: 'gpudojo-access-mark',
          attributes: { 'data-access-line': String(mark.line), title: mark.title }
        }).range(state.doc.line(mark.line).from)
      ),
    true
  );
}

/** Mark the source lines whose memory accesses spend more than the ideal (a CPU-emulated run's report). */
export const setAccessMarks = StateEffect.define<ReadonlyArray<AccessMark>>();

const accessMarksField = replacedByEffect(setAccessMarks, accessDecorations);

/** What the playground hears from its editor. */
export interface EditorListener {
  /** The text changed. */
  onText(text: string): void;
  /** The cursor moved to `line` (1-based). */
  onCursorLine(line: number): void;
}

/** The playground's editor extensions: marks, the linked line, and a listener. */
export function playgroundExtensions(listener: EditorListener): Extension {
  let lastLine = 0;
  return [
    diagnosticsField,
    linkedLineField,
    accessMarksField,
    EditorView.updateListener.of((update: ViewUpdate) => {
      if (update.docChanged) {
        listener.onText(update.state.doc.toString());
      }
      if (update.selectionSet || update.docChanged) {
        const line = update.state.doc.lineAt(update.state.selection.main.head).number;
        if (line !== lastLine) {
          lastLine = line;
          listener.onCursorLine(line);
        }
      }
    })
  ];
}

/** The diagnostic marks alone, for an editor that is not the playground's (a .cu file's). */
export function diagnosticsExtension(): Extension {
  return diagnosticsField;
}
