/** Command ids of the course, shared by the sidebar, lesson links and the palette. */

export namespace CourseCommandIds {
  /** Open (or reveal) a lesson; args `{id}`. */
  export const openLesson = 'gpudojo:open-lesson';
  /** Reload the catalog and progress from the server. */
  export const refreshCourse = 'gpudojo:refresh-course';
}
