import type { RepositoryFactory } from '../../db/database.js';
import { runAsPromise } from '../../db/sqlite.js';
import type { Category } from './schemas.js';

/**
 * The categories pets belong to. Contract: `list` returns every category ordered by id; a new database
 * holds DEFAULT_CATEGORIES (inserted by migration 001 of each backend).
 */
export interface CategoryRepository {
  list(): Promise<Category[]>;
}

export const DEFAULT_CATEGORIES: Category[] = [
  { id: 1, name: 'dogs' },
  { id: 2, name: 'cats' },
  { id: 3, name: 'birds' },
  { id: 4, name: 'rabbits' },
  { id: 5, name: 'small mammals' },
  { id: 6, name: 'reptiles' },
  { id: 7, name: 'fish' },
];

// One query each: a file per backend would be mostly boilerplate.
export const categoryRepository: RepositoryFactory<CategoryRepository> = {
  sqlite: ({ db }) => {
    const list = db.prepare<[], Category>('SELECT id, name FROM categories ORDER BY id');
    return { list: () => runAsPromise(() => list.all()) };
  },
  postgres: (db) => ({
    list: () =>
      db.query<Category>({ name: 'categories_list', text: 'SELECT id, name FROM categories ORDER BY id' }),
  }),
};
