/** Command ids of the course, shared by the sidebar, lesson links and the palette. */

export namespace CourseCommandIds {
  /** Open (or reveal) a lesson; args `{id}`. */
  export const openLesson = 'gpudojo:open-lesson';
  /** Open (or reveal) an exercise; args `{id}`. */
  export const openExercise = 'gpudojo:open-exercise';
  /** Open (or reveal) the module test. */
  export const openModuleTest = 'gpudojo:open-module-test';
  /** Open (or reveal) the acceptance list: what a learner can do at the end, ticked. */
  export const openAcceptance = 'gpudojo:open-acceptance';
  /** Open (or reveal) the reading list; args `{lesson}` filter it to what deepens that lesson. */
  export const openReadingList = 'gpudojo:open-reading-list';
  /** Open (or reveal) the course's home: progress, the next step, this machine, the map. */
  export const openWelcome = 'gpudojo:open-welcome';
  /** Take the next step of the course (open the next lesson, lab or exercise, or the module test). */
  export const continueCourse = 'gpudojo:continue-course';
  /** Open (or reveal) a lab's README; args `{id}`. */
  export const openLabReadme = 'gpudojo:open-lab-readme';
  /** Reload the catalog and progress from the server. */
  export const refreshCourse = 'gpudojo:refresh-course';
}
