/**
 * @jest-environment jsdom
 */

import { NextFrame } from '../../extension/src/dom';

describe('NextFrame', () => {
  let callbacks: Array<() => void>;
  beforeEach(() => {
    callbacks = [];
    let id = 0;
    jest.spyOn(window, 'requestAnimationFrame').mockImplementation(cb => {
      callbacks.push(() => cb(0));
      return ++id;
    });
    jest.spyOn(window, 'cancelAnimationFrame').mockImplementation(() => {
      callbacks = [];
    });
  });
  afterEach(() => jest.restoreAllMocks());

  it('draws once per frame however often it is asked', () => {
    const draw = jest.fn();
    const frame = new NextFrame(draw);
    frame.schedule();
    frame.schedule();
    frame.schedule();
    expect(callbacks).toHaveLength(1);
    expect(frame.pending).toBe(true);
    callbacks.shift()!();
    expect(draw).toHaveBeenCalledTimes(1);
    expect(frame.pending).toBe(false);
    frame.schedule();
    expect(callbacks).toHaveLength(1);
  });

  it('cancel drops the requested frame', () => {
    const draw = jest.fn();
    const frame = new NextFrame(draw);
    frame.schedule();
    frame.cancel();
    expect(frame.pending).toBe(false);
    expect(callbacks).toHaveLength(0);
    frame.cancel();
    expect(draw).not.toHaveBeenCalled();
  });
});
