/**
 * RunEngineSection: the parts of a run's view about where it ran when that
 * is not (only) this machine: the engine's job and state, the rendezvous, the
 * join command up front while nodes are awaited, the Nodes section (each
 * node's state and its ranks, a click away from their logs) and the
 * Generated files section (each artifact with View and Copy). Updated from
 * the run documents the stream sends; artifact texts are fetched once, when
 * first asked for.
 */

import type { Artifact, NodeStatus, Run } from '../api/types';
import { h } from '../dom';
import {
  JOIN_ARTIFACT,
  awaitingNodes,
  joinCommandOf,
  jobLine,
  missingNodes,
  nodeStateLabel,
  ranksLabel,
  rendezvousLine
} from './engineStatus';

export interface RunEngineSectionOptions {
  /** GET runs/{id}/artifacts/{name}: the artifact with its text. */
  fetchArtifact: (name: string) => Promise<Artifact>;
  /** Show one rank's log tab. */
  showRank: (rank: number) => void;
}

/** Copy `text`; without clipboard permission select `fallback`'s text so Ctrl-C copies it. Says which on `button`. */
export async function copyWithFeedback(button: HTMLButtonElement, text: string, fallback: HTMLElement): Promise<void> {
  // The label from before the first click: a second click must not take "Copied" for it.
  const label = button.dataset.label ?? (button.dataset.label = button.textContent ?? 'Copy');
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(fallback);
    const selection = window.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    button.textContent = 'Selected: press Ctrl-C';
  }
  setTimeout(() => (button.textContent = label), 2000);
}

/** Rank colours the CSS defines (gpudojo-rank-c0 … c7), as the log tabs use them. */
const RANK_COLORS = 8;

function smallButton(className: string, text: string, title: string): HTMLButtonElement {
  return h('button', {
    className: `jp-Button jp-mod-styled jp-mod-minimal ${className}`,
    text,
    title,
    attrs: { type: 'button' }
  });
}

export class RunEngineSection {
  constructor(options: RunEngineSectionOptions) {
    this._fetch = options.fetchArtifact;
    this._showRank = options.showRank;
    this._job = h('span', { className: 'gpudojo-run-engine-job' });
    this._rendezvous = h('div', { className: 'gpudojo-run-rendezvous' });
    this._joinCommand = h('code', { className: 'gpudojo-run-join-command' });
    this._joinNote = h('div', { className: 'gpudojo-run-form-help gpudojo-run-join-note' });
    const joinCopy = smallButton('gpudojo-run-join-copy', 'Copy', 'Copy the join command to the clipboard');
    joinCopy.addEventListener('click', () => {
      void copyWithFeedback(joinCopy, this._joinCommand.textContent ?? '', this._joinCommand);
    });
    this._join = h(
      'div',
      { className: 'gpudojo-run-join', attrs: { role: 'region', 'aria-label': 'Join command' } },
      h('div', { className: 'gpudojo-run-join-title', text: 'Waiting for the other nodes' }),
      this._joinNote,
      h('div', { className: 'gpudojo-run-command-row' }, this._joinCommand, joinCopy)
    );
    this.summary = h(
      'div',
      { className: 'gpudojo-run-engine' },
      h('div', { className: 'gpudojo-run-header-row' }, this._job),
      this._rendezvous,
      this._join
    );
    this._nodeList = h('ul', { className: 'gpudojo-run-nodes', attrs: { 'aria-label': 'Nodes' } });
    this.nodes = h(
      'section',
      { className: 'gpudojo-run-section gpudojo-run-nodes-section' },
      h('h3', { text: 'Nodes' }),
      this._nodeList
    );
    this._artifactList = h('ul', { className: 'gpudojo-run-artifacts', attrs: { 'aria-label': 'Generated files' } });
    this.artifacts = h(
      'section',
      { className: 'gpudojo-run-section gpudojo-run-artifacts-section' },
      h('h3', { text: 'Generated files' }),
      this._artifactList
    );
    this.summary.hidden = true;
    this.nodes.hidden = true;
    this.artifacts.hidden = true;
    this._join.hidden = true;
    this._rendezvous.hidden = true;
  }

  /** The engine's line, the rendezvous and the join command: under the header. */
  readonly summary: HTMLElement;
  /** The Nodes section. */
  readonly nodes: HTMLElement;
  /** The Generated files section. */
  readonly artifacts: HTMLElement;

  /** Show `run` (a status event's document). */
  update(run: Run): void {
    const line = jobLine(run);
    this.summary.hidden = line === null;
    this.summary.setAttribute('data-engine', run.engine);
    this._job.textContent = line ?? '';
    this._job.setAttribute('data-job-id', run.job_id ?? '');
    this._job.setAttribute('data-job-state', run.job_state ?? '');
    this._rendezvous.hidden = !run.rendezvous;
    if (run.rendezvous) {
      this._rendezvous.textContent = rendezvousLine(run.rendezvous);
      this._rendezvous.setAttribute('data-state', run.rendezvous.state);
    }
    this._updateJoin(run);
    this._updateNodes(run.nodes);
    this._updateArtifacts(run.artifacts ?? []);
  }

  dispose(): void {
    this._disposed = true;
  }

  private _updateJoin(run: Run): void {
    const awaiting = awaitingNodes(run) && run.artifacts.some(a => a.name === JOIN_ARTIFACT);
    this._join.hidden = !awaiting || !this._joinCommand.textContent;
    if (awaiting && !this._joinAsked) {
      this._joinAsked = true;
      this._text(JOIN_ARTIFACT).then(
        text => {
          if (this._disposed) {
            return;
          }
          const { command, note } = joinCommandOf(text);
          this._joinCommand.textContent = command;
          this._joinNote.textContent = note;
          this._join.hidden = !awaitingNodes(this._lastRun ?? run) || !command;
        },
        () => (this._joinAsked = false)
      );
    }
    this._lastRun = run;
  }

  private _updateNodes(nodes: ReadonlyArray<NodeStatus>): void {
    const key = JSON.stringify(nodes);
    if (key === this._nodesKey) {
      return;
    }
    this._nodesKey = key;
    this.nodes.hidden = !nodes.length;
    this._nodeList.textContent = '';
    const missing = new Set(missingNodes(nodes).map(node => node.name));
    for (const node of nodes) {
      const ranks = h('div', { className: 'gpudojo-run-node-ranks' });
      for (const rank of [...node.ranks].sort((a, b) => a - b)) {
        const button = smallButton(
          `gpudojo-run-node-rank gpudojo-rank-c${rank % RANK_COLORS}`,
          `Rank ${rank}`,
          `Show rank ${rank}’s log`
        );
        button.setAttribute('data-rank', String(rank));
        button.addEventListener('click', () => this._showRank(rank));
        ranks.appendChild(button);
      }
      if (!node.ranks.length) {
        ranks.appendChild(h('span', { className: 'gpudojo-run-node-no-ranks', text: ranksLabel(node.ranks) }));
      }
      this._nodeList.appendChild(
        h(
          'li',
          {
            className: 'gpudojo-run-node',
            attrs: { 'data-node': node.name, 'data-state': node.state, 'data-missing': String(missing.has(node.name)) }
          },
          h(
            'div',
            { className: 'gpudojo-run-node-head' },
            h('span', { className: 'gpudojo-run-node-name', text: node.name }),
            h('span', {
              className: 'gpudojo-node-state',
              text: nodeStateLabel(node.state),
              attrs: { 'data-state': node.state }
            }),
            node.detail ? h('span', { className: 'gpudojo-run-node-detail', text: node.detail }) : null
          ),
          ranks
        )
      );
    }
  }

  private _updateArtifacts(artifacts: ReadonlyArray<Artifact>): void {
    const key = artifacts.map(a => `${a.name}\u0000${a.title}`).join('\u0001');
    if (key === this._artifactsKey) {
      return;
    }
    this._artifactsKey = key;
    this.artifacts.hidden = !artifacts.length;
    this._artifactList.textContent = '';
    for (const artifact of artifacts) {
      this._artifactList.appendChild(this._artifactRow(artifact));
    }
  }

  private _artifactRow(artifact: Artifact): HTMLElement {
    const text = h('pre', { className: 'gpudojo-artifact-text', attrs: { tabindex: '0' } });
    text.hidden = true;
    const problem = h('span', { className: 'gpudojo-field-error', attrs: { role: 'alert' } });
    const view = smallButton('gpudojo-artifact-view', 'View', `Show ${artifact.name}`);
    view.setAttribute('aria-expanded', 'false');
    const copy = smallButton('gpudojo-artifact-copy', 'Copy', `Copy ${artifact.name} to the clipboard`);
    const load = async (): Promise<string | null> => {
      try {
        const content = await this._text(artifact.name);
        text.textContent = content;
        problem.textContent = '';
        return content;
      } catch (error) {
        problem.textContent = `${artifact.name} could not be read: ${(error as Error).message}`;
        return null;
      }
    };
    view.addEventListener('click', async () => {
      const open = text.hidden;
      if (open && (await load()) === null) {
        return;
      }
      text.hidden = !open;
      view.textContent = open ? 'Hide' : 'View';
      view.setAttribute('aria-expanded', String(open));
    });
    copy.addEventListener('click', async () => {
      const content = await load();
      if (content !== null) {
        await copyWithFeedback(copy, content, text);
      }
    });
    return h(
      'li',
      {
        className: 'gpudojo-run-artifact',
        attrs: { 'data-artifact': artifact.name, 'data-media-type': artifact.media_type }
      },
      h(
        'div',
        { className: 'gpudojo-run-artifact-head' },
        h('span', { className: 'gpudojo-run-artifact-title', text: artifact.title }),
        h('code', { className: 'gpudojo-run-artifact-name', text: artifact.name }),
        view,
        copy,
        problem
      ),
      text
    );
  }

  /** An artifact's text, fetched once (an engine writes its files when the run is made). */
  private _text(name: string): Promise<string> {
    let text = this._texts.get(name);
    if (!text) {
      text = this._fetch(name).then(artifact => artifact.content ?? '');
      text.catch(() => this._texts.delete(name));
      this._texts.set(name, text);
    }
    return text;
  }

  private _fetch: (name: string) => Promise<Artifact>;
  private _showRank: (rank: number) => void;
  private _job: HTMLElement;
  private _rendezvous: HTMLElement;
  private _join: HTMLElement;
  private _joinCommand: HTMLElement;
  private _joinNote: HTMLElement;
  private _joinAsked = false;
  private _lastRun: Run | null = null;
  private _nodeList: HTMLElement;
  private _artifactList: HTMLElement;
  private _nodesKey = '';
  private _artifactsKey = '';
  private _texts = new Map<string, Promise<string>>();
  private _disposed = false;
}
