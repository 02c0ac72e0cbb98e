/**
 * Which categories the timeline draws: the legend hides some, or isolates one.
 * Isolating wins over hiding, so one click shows a category alone and a second
 * click gives back exactly the set the learner had hidden before.
 */

export class LegendState {
  constructor(readonly count: number) {}

  /** The category shown alone, or null. */
  get isolated(): number | null {
    return this._isolated;
  }

  /** Whether category `c` is drawn. A band without a category (-1) is drawn unless one is isolated. */
  visible(c: number): boolean {
    if (this._isolated !== null) {
      return c === this._isolated;
    }
    return c < 0 || !this._hidden.has(c);
  }

  hidden(c: number): boolean {
    return this._hidden.has(c);
  }

  /** Whether every category is drawn (the server's own remainder can be used as is). */
  get allVisible(): boolean {
    return this._isolated === null && this._hidden.size === 0;
  }

  /** Show category `c` alone; the same again shows the others as before. */
  isolate(c: number): void {
    this._isolated = this._isolated === c ? null : c;
  }

  /** Hide or show category `c` (ends an isolation, which would hide the change). */
  toggleHidden(c: number): void {
    this._isolated = null;
    if (this._hidden.has(c)) {
      this._hidden.delete(c);
    } else {
      this._hidden.add(c);
    }
  }

  /** Visibility of every category, in order (what the layout takes). */
  mask(): boolean[] {
    return Array.from({ length: this.count }, (_, c) => this.visible(c));
  }

  private _hidden = new Set<number>();
  private _isolated: number | null = null;
}
