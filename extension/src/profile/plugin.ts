/**
 * The profile plugin: profile views and diff views in the main area (restored
 * after a reload), "Open profile" on trace files in the file browser, and the
 * Profile section the run view embeds (through IProfileViewer, so the runs
 * plugin needs no profile code).
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IThemeManager, MainAreaWidget, WidgetTracker, showErrorMessage } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import type { GpudojoClient } from '../api/client';
import type { Run, Trace } from '../api/types';
import { IGpudojoClient, IProfileViewer } from '../tokens';
import { addOpenFileCommand, followTheme, showTracked } from '../shell';
import {
  ProfileCommandIds,
  isTraceFile,
  newestTrace,
  profileDiffId,
  profileViewId,
  readTraceId,
  recordsProfile
} from './commands';
import type { TraceChoice } from './comparePicker';
import { runTime } from './compareOrder';
import { ProfileDiffView } from './diffView';
import { ProfileView } from './profileView';
import { RunProfileSection } from './runProfile';

/** The newest runs whose traces the compare picker lists (the run list's own limit). */
const RECENT_RUNS = 100;

export const profilePlugin: JupyterFrontEndPlugin<IProfileViewer> = {
  id: 'gpudojo:profile',
  description: 'Profiles of torch.profiler traces: step time and its breakdown, findings, operators, a timeline, comparisons.',
  autoStart: true,
  provides: IProfileViewer,
  requires: [IGpudojoClient],
  optional: [ICommandPalette, ILayoutRestorer, IFileBrowserFactory, IThemeManager],
  activate: (
    app: JupyterFrontEnd,
    client: GpudojoClient,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browsers: IFileBrowserFactory | null,
    themeManager: IThemeManager | null
  ): IProfileViewer => {
    const views = new WidgetTracker<MainAreaWidget<ProfileView>>({ namespace: 'gpudojo-profile' });
    const diffs = new WidgetTracker<MainAreaWidget<ProfileDiffView>>({ namespace: 'gpudojo-profile-diff' });

    const openDiff = (a: string, b: string): void =>
      void app.commands.execute(ProfileCommandIds.openProfileDiff, { a, b });

    /**
     * Every trace of every profiled run among the newest RECENT_RUNS (this trace's run
     * among them, so its time orders before and after), then the profiles open in this page.
     */
    const candidates = async (): Promise<TraceChoice[]> => {
      const choices = new Map<string, TraceChoice>();
      const add = (t: Trace, run?: Run) => {
        if (!choices.has(t.id)) {
          choices.set(t.id, { id: t.id, label: choiceLabel(t, run), createdAt: run?.created_at ?? null });
        }
      };
      const recorded = (await client.listRuns({ limit: RECENT_RUNS }).catch(() => ({ runs: [] as Run[] }))).runs
        .filter(recordsProfile)
        .sort((x, y) => y.created_at - x.created_at);
      const listed = await Promise.all(
        recorded.map(run => client.listTraces(run.id).catch(() => ({ traces: [] as Trace[] })))
      );
      recorded.forEach((run, i) => listed[i].traces.forEach(t => add(t, run)));
      views.forEach(w => {
        const open = w.content.summary?.trace;
        if (open) {
          add(open);
        }
      });
      return [...choices.values()];
    };

    const open = (trace: string): MainAreaWidget<ProfileView> =>
      showTracked(
        app,
        views,
        view => view.trace === trace,
        () => {
          const widget = new MainAreaWidget({ content: new ProfileView({ trace, client, candidates, compare: openDiff }) });
          widget.id = profileViewId(trace);
          widget.addClass('gpudojo-profile-panel');
          return widget;
        }
      );

    app.commands.addCommand(ProfileCommandIds.openProfile, {
      label: args => {
        const trace = readTraceId(args);
        return trace ? `Open Profile of ${trace.replace(/^(file|run):/, '')}` : 'Open Profile';
      },
      caption: "A trace's step time, breakdown, findings, top operators and timeline",
      execute: async args => {
        let trace = readTraceId(args);
        if (!trace) {
          // A lesson's link names no trace: the newest one the user recorded.
          trace = (await newestTrace(client).catch(() => null))?.id ?? null;
        }
        if (trace) {
          return open(trace);
        }
        void showErrorMessage(
          'No profile yet',
          'Your runs have not recorded a profile. Run a lab with "Record profile" ticked (lab-02 offers it), or open a trace file from the file browser, then follow this link again.'
        );
      }
    });

    addOpenFileCommand(app, browsers, palette, {
      id: ProfileCommandIds.openProfileFile,
      label: 'Open profile',
      caption: 'Analyse this Chrome/Kineto trace (prof.export_chrome_trace, *.pt.trace.json) and show its profile',
      accept: isTraceFile,
      // The view opens at once and shows the analysis's progress; a file that is no trace says so inside it.
      open: path => open(`file:${path}`),
      rank: 62
    });

    app.commands.addCommand(ProfileCommandIds.openProfileDiff, {
      label: 'Open Profile Diff',
      caption: 'Two traces compared: step time, breakdown, operators and findings, biggest changes first',
      execute: args => {
        const a = readTraceId(args, 'a');
        const b = readTraceId(args, 'b');
        if (!a || !b) {
          return;
        }
        return showTracked(
          app,
          diffs,
          view => view.a === a && view.b === b,
          () => {
            const content = new ProfileDiffView({
              a,
              b,
              diff: (x, y) => client.diffProfiles(x, y),
              open: trace => void open(trace),
              swap: () => openDiff(b, a)
            });
            const widget = new MainAreaWidget({ content });
            widget.id = profileDiffId(a, b);
            widget.addClass('gpudojo-profile-diff-panel');
            return widget;
          }
        );
      }
    });

    palette?.addItem({ command: ProfileCommandIds.openProfile, category: 'gpudojo' });
    followTheme(themeManager, () => views.forEach(w => w.content.refreshTheme()));
    if (restorer) {
      void restorer.restore(views, {
        command: ProfileCommandIds.openProfile,
        args: widget => ({ trace: widget.content.trace }),
        name: widget => widget.content.trace
      });
      void restorer.restore(diffs, {
        command: ProfileCommandIds.openProfileDiff,
        args: widget => ({ a: widget.content.a, b: widget.content.b }),
        name: widget => `${widget.content.a}\n${widget.content.b}`
      });
    }

    return {
      createRunSection: () =>
        new RunProfileSection({
          client,
          openTrace: trace => void app.commands.execute(ProfileCommandIds.openProfile, { trace }),
          compare: openDiff,
          // A run that ended with a profile is one more trace every open picker offers.
          listed: () => views.forEach(w => w.content.refreshCompare())
        })
    };
  }
};

/** How the compare picker lists a trace: "PyTorch on the GPU · 14:05:09 · rank 0", or its path. */
function choiceLabel(trace: Trace, run?: Run): string {
  if (!trace.run) {
    return trace.label;
  }
  return run ? `${run.title} · ${runTime(run.created_at)} · ${trace.label}` : `${trace.run} · ${trace.label}`;
}
