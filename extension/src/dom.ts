/** A small element builder, so views read as their structure. */

export type Child = Node | string | null | undefined | false;

export interface ElementProps {
  className?: string;
  title?: string;
  text?: string;
  attrs?: Record<string, string>;
}

/** Create `<tag>` with a class, a title, attributes and children (strings become text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: ElementProps = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.className) {
    node.className = props.className;
  }
  if (props.title) {
    node.title = props.title;
  }
  if (props.text !== undefined) {
    node.textContent = props.text;
  }
  if (props.attrs) {
    for (const [name, value] of Object.entries(props.attrs)) {
      node.setAttribute(name, value);
    }
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/**
 * Calls `draw` once on the next animation frame however many times it is asked for
 * before then: views mark themselves dirty on every change and paint at most once a frame.
 */
export class NextFrame {
  constructor(private readonly _draw: () => void) {}

  /** Whether a frame is requested and not yet run. */
  get pending(): boolean {
    return this._frame !== null;
  }

  schedule(): void {
    if (this._frame !== null) {
      return;
    }
    this._frame = requestAnimationFrame(() => {
      this._frame = null;
      this._draw();
    });
  }

  /** Drop a requested frame (on dispose). */
  cancel(): void {
    if (this._frame !== null) {
      cancelAnimationFrame(this._frame);
      this._frame = null;
    }
  }

  private _frame: number | null = null;
}
