/** The course plugin: the sidebar's Course section, lesson views and their commands. */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Dialog, ICommandPalette, MainAreaWidget, WidgetTracker, showDialog } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
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
import { CourseModel } from './model';
import { CourseSection } from './section';
import { showInMainArea } from '../shell';

/** Rank of the Course section in the sidebar (above GPU, 500). */
const COURSE_SECTION_RANK = 100;

const PALETTE_CATEGORY = 'gpudojo';

export const coursePlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpudojo:course',
  description: 'The course: lessons in the sidebar and the main area, with quizzes and progress.',
  autoStart: true,
  requires: [IGpudojoSidebar, IRenderMimeRegistry, IDocumentManager, IGpudojoClient, IDevicesModel],
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    sidebar: IGpudojoSidebar,
    rendermime: IRenderMimeRegistry,
    docManager: IDocumentManager,
    client: GpudojoClient,
    devices: DevicesModel,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const model = new CourseModel(client);
    sidebar.addSection(new CourseSection({ model, commands: app.commands }), {
      rank: COURSE_SECTION_RANK
    });

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
      caption: '25 questions across the eight lessons, graded with every choice explained; retakes allowed',
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

    app.commands.addCommand(CourseCommandIds.refreshCourse, {
      label: 'Refresh Course',
      caption: 'Reload the lessons and your progress',
      execute: () => model.refresh()
    });

    if (palette) {
      palette.addItem({ command: CourseCommandIds.refreshCourse, category: PALETTE_CATEGORY });
      palette.addItem({ command: CourseCommandIds.openModuleTest, category: PALETTE_CATEGORY });
      palette.addItem({ command: CourseCommandIds.openAcceptance, category: PALETTE_CATEGORY });
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
    }
    void model.refresh();
  }
};
