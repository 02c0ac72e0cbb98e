/**
 * @jest-environment jsdom
 */
import { categoryColor, readMemoryPalette } from '../../extension/src/memory/palette';

describe('memory categories', () => {
  it('each get their own colour: input and temporary, backward and optimizer no longer share one', () => {
    const categories = ['parameter', 'optimizer_state', 'input', 'temporary', 'activation', 'gradient', 'autograd_detail', 'unknown', 'forward', 'backward', 'optimizer'];
    const palette = readMemoryPalette();
    const colours = categories.map((_, c) => categoryColor(palette, c));
    expect(new Set(colours).size).toBe(categories.length);
  });
});
