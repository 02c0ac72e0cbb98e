/**
 * The course plugin: the course's home (welcome view, Launcher card), the sidebar's Course
 * section and progress line, lesson, exercise, lab README and reading list views, their
 * commands, and live progress from the server's event bus.
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Dialog, ICommandPalette, MainAreaWidget, WidgetTracker, showDialog } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { ILauncher } from '@jupyterlab/launcher';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';
import type { GpudojoClient } from '../api/client';
import type { DevicesModel } from '../gpu/devicesModel';
import { IDevicesModel, IGpudojoClient, IGpudojoSidebar } from '../tokens';
import { CourseCommandIds } from './commands';
import { AcceptanceView } from './acceptance';
import { ExerciseView } from './exercise';
import { LessonView } from './lesson';
import { ModuleTestView } from './moduleTest';
import { ReadingListView } from './reading';
import { CourseModel } from './model';
import { CourseSection } from './section';
import { showInMainArea } from '../shell';
import { gpudojoIcon } from '../icons';
import { nextStep } from './journey';
import { LabReadmeView } from './labReadme';
import { CourseProgressLine } from './progressLine';
import { followProgressEvents } from './progressEvents';
import { WelcomeView, openItemCommand } from './welcome';

/** Rank of the Course section in the sidebar (above GPU, 500). */
const COURSE_SECTION_RANK = 100;

const PALETTE_CATEGORY = 'gpudojo';

export const coursePlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudojo:course',
  description: 'The course: lessons in the sidebar and the main area, with quizzes and progress.',
  autoStart: true,
  requires: [IGpudojoSidebar, IRenderMimeRegistry, IDocumentManager, IGpudojoClient, IDevicesModel],
  optional: [ILayoutRestorer, ICommandPalette, ILauncher],
  activate: (
    app: JupyterFrontEnd,
    sidebar: IGpudojoSidebar,
    rendermime: IRenderMimeRegistry,
    docManager: IDocumentManager,
    client: GpudojoClient,
    devices: DevicesModel,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    launcher: ILauncher | null
  ) => {
    const model = new CourseModel(client);
    sidebar.addHeaderWidget(new CourseProgressLine({ model, commands: app.commands }));
    sidebar.addSection(new CourseSection({ model, commands: app.commands }), {
      rank: COURSE_SECTION_RANK
    });
    // Progress made anywhere (a lab run that passed, a check, a quiz, another tab) reaches
    // every view at once: the server emits it on Jupyter Server's event bus.
    followProgressEvents(app.serviceManager.events.stream, model);

    // Whether GPU cells can run here (else lessons show expected output): from the one devices
    // model, fetched now if nobody has yet (a failed fetch says no, and is tried again next time).
    const gpuMode = async (): Promise<boolean> => {
      if (!devices.devices) {
        await devices.refresh().catch(() => undefined);
      }
      return devices.devices?.mode === 'gpu';
    };

    const tracker = new WidgetTracker<MainAreaWidget<LessonView>>({
      namespace: 'gpudojo-lesson'
    });

    app.commands.addCommand(CourseCommandIds.openLesson, {
      label: args => {
        const id = typeof args['id'] === 'string' ? args['id'] : '';
        const title = id ? model.item('lesson', id)?.title : undefined;
        return title ? `Open Lesson: ${title}` : id ? `Open Lesson ${id}` : 'Open Lesson';
      },
      caption: 'Open a lesson of the course',
      execute: args => {
        const id = typeof args['id'] === 'string' ? args['id'] : '';
        if (!id) {
          return;
        }
        let widget = tracker.find(w => w.content.lessonId === id) ?? null;
        if (!widget || widget.isDisposed) {
          const content = new LessonView({
            lessonId: id,
            source: client,
            model,
            rendermime,
            commands: app.commands,
            openPath: path => {
              docManager.openOrReveal(path);
            },
            canRunGpu: gpuMode
          });
          widget = new MainAreaWidget({ content });
          widget.id = `gpudojo-lesson-${id}`;
          widget.addClass('gpudojo-lesson');
          void tracker.add(widget);
        }
        showInMainArea(app, widget);
        return widget;
      }
    });

    // The module test and the acceptance list: one view each, reopened after a reload.
    const testViews = new WidgetTracker<MainAreaWidget<ModuleTestView>>({ namespace: 'gpudojo-module-test' });
    const goalViews = new WidgetTracker<MainAreaWidget<AcceptanceView>>({ namespace: 'gpudojo-acceptance' });
    const markdown = (source: string) => {
      const renderer = rendermime.createRenderer('text/markdown');
      void renderer.renderModel(new MimeModel({ data: { 'text/markdown': source } }));
      return renderer;
    };
    const openModuleView = <T extends Widget>(
      tracker: WidgetTracker<MainAreaWidget<T>>,
      id: string,
      create: () => T
    ) => {
      let widget = tracker.find(w => w.id === id) ?? null;
      if (!widget || widget.isDisposed) {
        widget = new MainAreaWidget<T>({ content: create() });
        widget.id = id;
        widget.addClass('gpudojo-lesson');
        widget.title.closable = true;
        void tracker.add(widget);
      }
      showInMainArea(app, widget);
      return widget;
    };

    // Exercises: one view per exercise, reopened after a reload.
    const exerciseViews = new WidgetTracker<MainAreaWidget<ExerciseView>>({ namespace: 'gpudojo-exercise' });
    app.commands.addCommand(CourseCommandIds.openExercise, {
      label: args => {
        const id = typeof args['id'] === 'string' ? args['id'] : '';
        const title = id ? model.item('exercise', id)?.title : undefined;
        return title ? `Open Exercise: ${title}` : id ? `Open Exercise ${id}` : 'Open Exercise';
      },
      caption: 'Open an exercise: start it, check your copy, see each requirement',
      execute: args => {
        const id = typeof args['id'] === 'string' ? args['id'] : '';
        if (!id) {
          return;
        }
        return openModuleView(
          exerciseViews,
          `gpudojo-exercise-${id}`,
          () =>
            new ExerciseView({
              exerciseId: id,
              source: client,
              createMarkdown: markdown,
              openPath: (path, preview) => {
                docManager.openOrReveal(path, preview ? 'Markdown Preview' : undefined);
              },
              confirmReset: async path => {
                const result = await showDialog({
                  title: 'Reset the exercise?',
                  body: `Your copy in ${path}/ is moved aside (kept, renamed with the date), and the starters are copied again.`,
                  buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Reset' })]
                });
                return result.button.accept;
              },
              changed: () => void model.refresh()
            })
        );
      }
    });

    app.commands.addCommand(CourseCommandIds.openModuleTest, {
      label: 'Open the Module Test',
      caption: '32 questions across the eight lessons, graded with every choice explained; retakes allowed',
      execute: () =>
        openModuleView(
          testViews,
          'gpudojo-module-test',
          () =>
            new ModuleTestView({
              source: client,
              createMarkdown: markdown,
              graded: () => void model.refresh()
            })
        )
    });

    app.commands.addCommand(CourseCommandIds.openAcceptance, {
      label: 'What You Can Do at the End',
      caption: 'The module’s acceptance list, ticked from your progress',
      execute: () =>
        openModuleView(
          goalViews,
          'gpudojo-acceptance',
          () => new AcceptanceView({ source: client, model, commands: app.commands })
        )
    });

    // The reading list: one view, filtered by lesson, reopened (and filtered alike) after a reload.
    const readingViews = new WidgetTracker<MainAreaWidget<ReadingListView>>({ namespace: 'gpudojo-reading-list' });
    app.commands.addCommand(CourseCommandIds.openReadingList, {
      label: args => {
        const lesson = typeof args['lesson'] === 'string' ? args['lesson'] : '';
        const title = lesson ? model.item('lesson', lesson)?.title : undefined;
        return title ? `Reading List for ${title}` : 'Open Reading List';
      },
      caption: 'What to read next, and what for: papers, guides and docs, by the lessons they deepen',
      execute: args => {
        const lesson = typeof args['lesson'] === 'string' && args['lesson'] ? args['lesson'] : null;
        const widget = openModuleView(readingViews, 'gpudojo-reading-list', () => {
          const view = new ReadingListView({ source: client, model, commands: app.commands, lesson });
          view.lessonChanged.connect(() => {
            const owner = readingViews.find(w => w.content === view);
            if (owner) {
              void readingViews.save(owner);
            }
          });
          return view;
        });
        widget.content.setLesson(lesson);
        return widget;
      }
    });

    // The course's home: one view, reopened after a reload.
    const welcomeViews = new WidgetTracker<MainAreaWidget<WelcomeView>>({ namespace: 'gpudojo-welcome' });
    app.commands.addCommand(CourseCommandIds.openWelcome, {
      label: args => (args['isLauncher'] ? 'gpudojo Course' : 'Open the gpudojo Course Home'),
      caption: 'Your progress, the next step, what this machine can do, and the map of the course',
      icon: args => (args['isPalette'] ? undefined : gpudojoIcon),
      execute: () =>
        openModuleView(
          welcomeViews,
          'gpudojo-welcome',
          () => new WelcomeView({ model, devices, commands: app.commands })
        )
    });

    app.commands.addCommand(CourseCommandIds.continueCourse, {
      label: () => {
        const step = model.catalog ? nextStep(model.catalog) : null;
        return step && step.kind !== 'done' ? `${step.action}: ${step.text}` : 'Continue the Course';
      },
      caption: 'Take the next step of the course: the next lesson, lab or exercise, or the module test',
      execute: async () => {
        if (!model.catalog) {
          await model.refresh();
        }
        const step = model.catalog ? nextStep(model.catalog) : null;
        if (!step || step.kind === 'done') {
          return app.commands.execute(CourseCommandIds.openWelcome);
        }
        if (step.kind === 'module-test') {
          return app.commands.execute(CourseCommandIds.openModuleTest);
        }
        const command = openItemCommand({ kind: step.kind, id: step.id });
        return app.commands.execute(command.id, command.args);
      }
    });

    // Lab READMEs: one view per lab, reopened after a reload.
    const readmeViews = new WidgetTracker<MainAreaWidget<LabReadmeView>>({ namespace: 'gpudojo-lab-readme' });
    app.commands.addCommand(CourseCommandIds.openLabReadme, {
      label: args => {
        const id = typeof args['id'] === 'string' ? args['id'] : '';
        const title = id ? model.item('lab', id)?.title : undefined;
        return title ? `Open Lab: ${title}` : 'Open Lab';
      },
      caption: 'Read a lab: what it does, how to run it, what to look for',
      execute: args => {
        const id = typeof args['id'] === 'string' ? args['id'] : '';
        if (!id) {
          return;
        }
        return openModuleView(
          readmeViews,
          `gpudojo-lab-readme-${id}`,
          () => new LabReadmeView({ labId: id, source: client, model, commands: app.commands, createMarkdown: markdown })
        );
      }
    });

    app.commands.addCommand(CourseCommandIds.refreshCourse, {
      label: 'Refresh Course',
      caption: 'Reload the lessons and your progress',
      execute: () => model.refresh()
    });

    if (palette) {
      palette.addItem({ command: CourseCommandIds.refreshCourse, category: PALETTE_CATEGORY });
      palette.addItem({ command: CourseCommandIds.openModuleTest, category: PALETTE_CATEGORY });
      palette.addItem({ command: CourseCommandIds.openAcceptance, category: PALETTE_CATEGORY });
      palette.addItem({ command: CourseCommandIds.openReadingList, category: PALETTE_CATEGORY });
      palette.addItem({ command: CourseCommandIds.openWelcome, category: PALETTE_CATEGORY });
      palette.addItem({ command: CourseCommandIds.continueCourse, category: PALETTE_CATEGORY });
    }
    if (launcher) {
      // First in gpudojo's Launcher section: where a new learner starts.
      launcher.add({ command: CourseCommandIds.openWelcome, category: 'gpudojo', rank: 0, args: { isLauncher: true } });
    }
    if (restorer) {
      // Reopen the lessons that were open before a reload.
      void restorer.restore(tracker, {
        command: CourseCommandIds.openLesson,
        args: widget => ({ id: widget.content.lessonId }),
        name: widget => widget.content.lessonId
      });
      void restorer.restore(exerciseViews, {
        command: CourseCommandIds.openExercise,
        args: widget => ({ id: widget.content.exerciseId }),
        name: widget => widget.content.exerciseId
      });
      void restorer.restore(testViews, { command: CourseCommandIds.openModuleTest, name: () => 'module-test' });
      void restorer.restore(goalViews, { command: CourseCommandIds.openAcceptance, name: () => 'acceptance' });
      void restorer.restore(readingViews, {
        command: CourseCommandIds.openReadingList,
        args: widget => (widget.content.lesson ? { lesson: widget.content.lesson } : {}),
        name: () => 'reading-list'
      });
      void restorer.restore(welcomeViews, { command: CourseCommandIds.openWelcome, name: () => 'welcome' });
      void restorer.restore(readmeViews, {
        command: CourseCommandIds.openLabReadme,
        args: widget => ({ id: widget.content.labId }),
        name: widget => widget.content.labId
      });
    }
    void model.refresh();
  }
};
