"""The course: catalog of lessons, labs and exercises, quizzes, progress, notebook copies."""
