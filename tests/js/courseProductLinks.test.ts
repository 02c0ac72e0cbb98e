/**
 * @jest-environment jsdom
 */
import {
  PRODUCT_ACTIONS,
  activateProductLinks,
  markProductLinks,
  parseProductLink
} from '../../extension/src/course/productLinks';

function action(href: string) {
  const parsed = parseProductLink(href);
  if (!parsed.ok) {
    throw new Error(`${href}: ${parsed.reason}`);
  }
  return { command: parsed.action.command, args: parsed.action.args };
}

function reason(href: string): string {
  const parsed = parseProductLink(href);
  if (parsed.ok) {
    throw new Error(`${href} should not parse`);
  }
  return parsed.reason;
}

describe('parseProductLink', () => {
  it('maps every allowed link to its command and arguments', () => {
    expect(action('gpudojo:run-lab?lab=lab-03-ddp')).toEqual({
      command: 'gpudojo:run-lab',
      args: { lab: 'lab-03-ddp' }
    });
    expect(action('gpudojo:run-lab?lab=lab-03-ddp&sweep=nproc:1,2')).toEqual({
      command: 'gpudojo:run-lab',
      args: { lab: 'lab-03-ddp', sweep: { param: 'nproc', values: ['1', '2'] } }
    });
    expect(action('gpudojo:open-runs')).toEqual({ command: 'gpudojo:open-runs', args: {} });
    expect(action('gpudojo:open-memory')).toEqual({ command: 'gpudojo:open-memory', args: {} });
    expect(action('gpudojo:open-profile')).toEqual({ command: 'gpudojo:open-profile', args: {} });
    expect(action('gpudojo:open-memory?estimator=1')).toEqual({
      command: 'gpudojo:open-memory',
      args: { estimator: true }
    });
    expect(action('gpudojo:open-gpu-monitor')).toEqual({ command: 'gpudojo:open-gpu-monitor', args: {} });
    expect(action('gpudojo:open-kernel-playground')).toEqual({
      command: 'gpudojo:open-kernel-playground',
      args: {}
    });
    expect(action('gpudojo:open-kernel-playground?lab=lab-01-cuda-hello').args).toEqual({ lab: 'lab-01-cuda-hello' });
    expect(action('gpudojo:open-lesson?id=parallelism')).toEqual({
      command: 'gpudojo:open-lesson',
      args: { id: 'parallelism' }
    });
    expect(PRODUCT_ACTIONS).toEqual([
      'run-lab',
      'open-runs',
      'open-memory',
      'open-profile',
      'open-gpu-monitor',
      'open-kernel-playground',
      'open-lesson'
    ]);
  });

  it('decodes percent-encoded values', () => {
    expect(action('gpudojo:run-lab?lab=lab-02-pytorch-gpu&sweep=batch%3A8%2C64').args).toEqual({
      lab: 'lab-02-pytorch-gpu',
      sweep: { param: 'batch', values: ['8', '64'] }
    });
  });

  it('refuses anything off the allow-list, and says why', () => {
    expect(reason('gpudojo:delete-everything')).toMatch(/not an action/);
    expect(reason('gpudojo:toString')).toMatch(/not an action/);
    expect(reason('gpudojo:open-runs?x=1')).toMatch(/takes no "x"/);
    expect(reason('gpudojo:run-lab')).toMatch(/needs "lab"/);
    expect(reason('gpudojo:run-lab?lab=../../etc')).toMatch(/not a lab id/);
    expect(reason('gpudojo:run-lab?lab=a&lab=b')).toMatch(/twice/);
    expect(reason('gpudojo:run-lab?lab=lab-03-ddp&sweep=nproc')).toMatch(/sweep must read/);
    expect(reason('gpudojo:run-lab?lab=lab-03-ddp&sweep=nproc:1,,2')).toMatch(/sweep must read/);
    expect(reason('gpudojo:run-lab?lab=lab-03-ddp&sweep=n%20proc:1')).toMatch(/sweep must read/);
    expect(reason('gpudojo:open-memory?estimator=yes')).toMatch(/estimator takes the value 1/);
    expect(reason('gpudojo:open-lesson?id=Lesson%201')).toMatch(/not a lesson id/);
    expect(reason('gpudojo:open-lesson?id=%E0%A4%A')).toMatch(/not a valid query/);
    expect(reason('https://example.com')).toMatch(/not a gpudojo: link/);
  });
});

describe('markProductLinks', () => {
  it('rewrites gpudojo: links so that the sanitizer keeps them, and nothing else', () => {
    expect(markProductLinks('Run [lab 3](gpudojo:run-lab?lab=lab-03-ddp&sweep=nproc:1,2) now.')).toBe(
      'Run [lab 3](#gpudojo:run-lab?lab=lab-03-ddp&sweep=nproc:1,2) now.'
    );
    expect(markProductLinks('[runs](gpudojo:open-runs "Your runs")')).toBe('[runs](#gpudojo:open-runs)');
    expect(markProductLinks('[web](https://pytorch.org)')).toBe('[web](https://pytorch.org)');
    expect(markProductLinks('![img](gpudojo:open-runs)')).toBe('![img](gpudojo:open-runs)');
    // Link text may hold code.
    expect(markProductLinks('Back to [lesson `memory`](gpudojo:open-lesson?id=memory), or `x`.')).toBe(
      'Back to [lesson `memory`](#gpudojo:open-lesson?id=memory), or `x`.'
    );
    expect(markProductLinks('`a` [`b`](gpudojo:open-runs) `c`')).toBe('`a` [`b`](#gpudojo:open-runs) `c`');
  });

  it('leaves code spans and fenced code as written', () => {
    const source = [
      'Write `[x](gpudojo:open-runs)` to link the runs: [like this](gpudojo:open-runs).',
      '```markdown',
      '[in a fence](gpudojo:open-memory)',
      '```'
    ].join('\n');
    expect(markProductLinks(source)).toBe(
      [
        'Write `[x](gpudojo:open-runs)` to link the runs: [like this](#gpudojo:open-runs).',
        '```markdown',
        '[in a fence](gpudojo:open-memory)',
        '```'
      ].join('\n')
    );
  });
});

describe('activateProductLinks', () => {
  function rendered(html: string): HTMLElement {
    const root = document.createElement('div');
    root.innerHTML = html;
    document.body.appendChild(root);
    return root;
  }

  it('makes allowed links run their command on click, without navigating', () => {
    const root = rendered(
      '<p><a href="#gpudojo:run-lab?lab=lab-03-ddp&amp;sweep=nproc:1,2">lab 3</a> and <a href="https://x.org">web</a></p>'
    );
    const runs: string[] = [];
    expect(activateProductLinks(root, a => runs.push(`${a.command} ${JSON.stringify(a.args)}`))).toBe(1);
    const link = root.querySelector('a.gpudojo-product-link') as HTMLAnchorElement;
    expect(link.title).toBe('Open the Run form of lab-03-ddp, set to sweep nproc over 1, 2');
    expect(link.dataset.command).toBe('gpudojo:run-lab');
    const click = new MouseEvent('click', { bubbles: true, cancelable: true });
    link.dispatchEvent(click);
    expect(click.defaultPrevented).toBe(true);
    expect(runs).toEqual(['gpudojo:run-lab {"lab":"lab-03-ddp","sweep":{"param":"nproc","values":["1","2"]}}']);
    expect(root.querySelector('a[href="https://x.org"]')?.classList.contains('gpudojo-product-link')).toBe(false);
  });

  it('shows unknown gpudojo: links as plain text with a title saying so', () => {
    const root = rendered('<p>Try <a href="#gpudojo:launch-rockets?now=1">this</a>.</p>');
    expect(activateProductLinks(root, () => undefined)).toBe(0);
    expect(root.querySelector('a')).toBeNull();
    const text = root.querySelector('.gpudojo-product-link-unknown') as HTMLElement;
    expect(text.textContent).toBe('this');
    expect(text.title).toBe(
      'This link (gpudojo:launch-rockets?now=1) cannot be followed: "launch-rockets" is not an action this version of gpudojo knows.'
    );
    expect(root.textContent).toBe('Try this.');
  });
});
