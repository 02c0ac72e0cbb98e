import type {
  Catalog,
  CatalogItem,
  CourseKind,
  ProgressStatus,
  QuizQuestionPublic
} from '../../extension/src/api/types';

export function item(
  kind: CourseKind,
  id: string,
  order: number,
  status: ProgressStatus = 'not_started',
  extra: Partial<CatalogItem> = {}
): CatalogItem {
  return {
    kind,
    id,
    title: `Title of ${id}`,
    order,
    minutes: 45,
    needs: 'cpu',
    cpu_path: null,
    launcher: null,
    lesson: null,
    progress: { kind, id, status, updated_at: null, completed_at: null, quiz_score: null, quiz_total: null },
    ...extra
  };
}

export function catalog(extra: Partial<Catalog> = {}): Catalog {
  return { lessons: [], labs: [], exercises: [], problems: [], gpus: 0, module_test: null, ...extra };
}

export const QUESTIONS: QuizQuestionPublic[] = [
  {
    id: 'q1',
    kind: 'single',
    prompt: 'Which index is global?',
    choices: [
      { id: 'local', text: 'threadIdx.x' },
      { id: 'global', text: 'blockIdx.x * blockDim.x + threadIdx.x' }
    ]
  },
  {
    id: 'q2',
    kind: 'multiple',
    prompt: 'Which are memory spaces?',
    choices: [
      { id: 'sh', text: 'shared' },
      { id: 'gl', text: 'global' },
      { id: 'wa', text: 'warp' }
    ]
  }
];
